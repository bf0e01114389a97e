import { Ajv } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import formatsPlugin from 'ajv-formats'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { generateSdk, typeCheckDeclarations } from '../../sdk-gen/index.ts'
import { assertSupportedJsonSchema, ENFORCED_FORMATS } from '../../src/schema/json-schema.ts'
import type { JsonSchemaNode } from '../../src/schema/types.ts'
import { validateJsonSchemaValue } from '../../src/schema/validate.ts'

// The reference: ajv's plain compilation of the raw schema as a server wrote it, with every format
// ajv-formats knows, in the dialect the schema names. Our validator must agree on every value.
// `ownProperties` is the one option that changes what is accepted: without it ajv reads inherited keys, and `{}` would
// have a "constructor" (JSON objects have own keys only).
// Plain ajv warns of every unknown format it ignores, which generated schemas have on purpose.
const plain2020 = new Ajv2020({ strict: false, ownProperties: true, logger: false })
const plainDraft07 = new Ajv({ strict: false, ownProperties: true, logger: false })
formatsPlugin.default(plain2020)
formatsPlugin.default(plainDraft07)
const DRAFT_07 = 'http://json-schema.org/draft-07/schema#'

function plainAccepts(schema: JsonSchemaNode, value: unknown): boolean {
  const ajv = schema.$schema === DRAFT_07 ? plainDraft07 : plain2020
  const validate = ajv.compile(schema)
  ajv.removeSchema(schema)
  return validate(value)
}

type Dialect = '2020-12' | 'draft-07'

const KEYS = ['a', 'b', 'c', 'x y', 'constructor']
const PATTERNS = ['^[a-z]*$', 'b', '^\\d+$', '\\p{Lu}', '^.{2}$']
const FORMAT_SAMPLES = [
  'a@b.co',
  'not an email',
  '2020-02-29',
  '2021-02-29',
  '2020-01-01T00:00:00Z',
  '2020-01-01T00:00:00',
  '12:30:00Z',
  'P1D',
  'https://example.com/a?b#c',
  '/relative',
  'example.com',
  '127.0.0.1',
  '::1',
  '123e4567-e89b-12d3-a456-426614174000',
  '/a/b',
  '0/a',
  '{+x}',
  '[',
  '',
]

function optional<T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.option(arbitrary, { nil: undefined, freq: 2 })
}

/** Drops undefined fields, so the schema holds only what was generated. */
function node(fields: Record<string, unknown>): JsonSchemaNode {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as JsonSchemaNode
}

const count = fc.integer({ min: 0, max: 3 })
const bound = fc.oneof(fc.integer({ min: -5, max: 5 }), fc.constantFrom(-9007199254740991, 9007199254740991, 0.5, 2.5))

const stringSchema = fc
  .record({ minLength: optional(count), maxLength: optional(count), pattern: optional(fc.constantFrom(...PATTERNS)), format: optional(fc.constantFrom(...ENFORCED_FORMATS, 'int32', 'json')) })
  .map((fields) => node({ type: 'string', ...fields }))

const numberSchema = fc
  .record({
    type: fc.constantFrom('number', 'integer'),
    minimum: optional(bound),
    maximum: optional(bound),
    exclusiveMinimum: optional(bound),
    exclusiveMaximum: optional(bound),
    multipleOf: optional(fc.constantFrom(1, 2, 0.5)),
  })
  .map((fields) => node(fields))

const scalarSchema = fc.oneof(
  stringSchema,
  numberSchema,
  fc.constant<JsonSchemaNode>({ type: 'boolean' }),
  fc.constant<JsonSchemaNode>({ type: 'null' }),
  fc.constant<JsonSchemaNode>({ type: ['string', 'null'], enum: ['a', null] }),
  fc.constant<JsonSchemaNode>({ type: ['integer', 'string'] }),
  fc.constant<JsonSchemaNode>({ const: 2 }),
  fc.constant<JsonSchemaNode>({ type: 'string', enum: ['a', 'b'] }),
)

/** Schemas of the grown subset, up to `depth` containers deep. */
function schemaArbitrary(dialect: Dialect): fc.Arbitrary<JsonSchemaNode> {
  const { tree } = fc.letrec<{ tree: JsonSchemaNode }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      scalarSchema,
      // Arrays: plain items, or a tuple in the dialect's spelling.
      fc
        .record({ items: optional(tie('tree')), minItems: optional(count), maxItems: optional(count), uniqueItems: optional(fc.boolean()) })
        .map((fields) => node({ type: 'array', ...fields })),
      fc
        .record({ prefix: fc.array(tie('tree'), { minLength: 1, maxLength: 2 }), rest: fc.oneof(fc.constant(false), fc.constant(undefined), tie('tree')), minItems: optional(count) })
        .map(({ prefix, rest, minItems }) =>
          dialect === '2020-12'
            ? node({ type: 'array', prefixItems: prefix, items: rest, minItems })
            : node({ type: 'array', items: prefix, additionalItems: rest, minItems }),
        ),
      // Objects: properties, required names among them, a closed, open or schema-valued rest.
      fc
        .record({
          properties: fc.dictionary(fc.constantFrom(...KEYS), tie('tree'), { maxKeys: 3 }),
          additional: fc.oneof(fc.constant(undefined), fc.boolean(), tie('tree')),
          propertyNames: optional(fc.constantFrom<JsonSchemaNode>({ type: 'string', pattern: '^[a-z ]+$' }, { maxLength: 1 } as JsonSchemaNode)),
          minProperties: optional(count),
          maxProperties: optional(count),
          requiredCount: fc.nat(3),
        })
        .map(({ properties, additional, propertyNames, minProperties, maxProperties, requiredCount }) => {
          const names = Object.keys(properties).slice(0, requiredCount)
          return node({
            type: 'object',
            properties,
            required: names.length === 0 ? undefined : names,
            additionalProperties: additional,
            // A propertyNames schema needs its own type to say maxLength; a typeless one is refused.
            propertyNames: propertyNames !== undefined && propertyNames.type === undefined ? { type: 'string', maxLength: 1 } : propertyNames,
            minProperties,
            maxProperties,
          })
        }),
      fc.tuple(tie('tree'), tie('tree')).map(([a, b]) => ({ anyOf: [a, b] })),
      fc.tuple(tie('tree'), tie('tree')).map(([a, b]) => ({ allOf: [a, b] })),
      fc.tuple(tie('tree'), tie('tree')).map(([a, b]) => ({ oneOf: [a, b] })),
      fc.tuple(tie('tree'), tie('tree')).map(([a, b]) => ({ type: ['object', 'null'], properties: { a, b }, required: ['a'] }) as JsonSchemaNode),
    ),
  }))
  // Roots: the tree, or the tree referenced through definitions, or a recursive list of it.
  const defs = dialect === '2020-12' ? '$defs' : 'definitions'
  return fc
    .tuple(tree, fc.constantFrom('plain', 'ref', 'recursive'))
    .map(([schema, shape]) => {
      let root: JsonSchemaNode
      if (shape === 'plain') root = { ...schema }
      else if (shape === 'ref') root = { allOf: [{ $ref: `#/${defs}/d` }], [defs]: { d: schema } }
      else {
        root = {
          $ref: `#/${defs}/list`,
          [defs]: { list: { type: 'object', properties: { head: schema, tail: { anyOf: [{ $ref: `#/${defs}/list` }, { type: 'null' }] } }, required: ['head'] } },
        }
      }
      return dialect === 'draft-07' ? { $schema: DRAFT_07, ...root } : root
    })
}

const scalarValue = fc.oneof(
  fc.constantFrom<unknown>(...FORMAT_SAMPLES, 'A', 'ab', 'abc', '12', 'ÀB', 'x y'),
  fc.integer({ min: -6, max: 6 }),
  fc.constantFrom(0.5, 2.5, -9007199254740991, 9007199254740991, 1e21),
  fc.boolean(),
  fc.constant(null),
)

/** Values shaped like the schemas above (keys, lengths, nesting), valid and invalid alike. */
const valueArbitrary: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarValue,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom(...KEYS, 'head', 'tail', 'Z'), tie('value'), { maxKeys: 4 }),
  ),
})).value

describe('the grown subset: our validator agrees with ajv', () => {
  for (const dialect of ['2020-12', 'draft-07'] as const) {
    test(`on generated ${dialect} schemas and values, every schema accepted unchanged`, () => {
      fc.assert(
        fc.property(schemaArbitrary(dialect), fc.array(valueArbitrary, { minLength: 1, maxLength: 8 }), (schema, values) => {
          const before = JSON.stringify(schema)
          assertSupportedJsonSchema(schema)
          for (const raw of values) {
            // Through JSON text first, as a value from a model arrives (no -0, no undefined).
            const value: unknown = JSON.parse(JSON.stringify(raw))
            expect(validateJsonSchemaValue(schema, value).length === 0).toBe(plainAccepts(schema, value))
          }
          expect(JSON.stringify(schema)).toBe(before)
        }),
        { numRuns: 300 },
      )
    })
  }

  test('every generated schema renders as declarations the TypeScript compiler accepts', () => {
    fc.assert(
      fc.property(fc.array(schemaArbitrary('2020-12'), { minLength: 1, maxLength: 6 }), (schemas) => {
        const tools = schemas.map((schema, index) => ({
          name: `t${index}`,
          description: 'generated',
          // References are absolute from the root: the definitions go to the root that holds them.
          parameters: { type: 'object', properties: { value: schema }, ...(schema.$defs === undefined ? {} : { $defs: schema.$defs }) } as JsonSchemaNode,
          output: schema,
        }))
        expect(typeCheckDeclarations(generateSdk(tools).declarations).diagnostics).toEqual([])
      }),
      { numRuns: 15 },
    )
  })
})
