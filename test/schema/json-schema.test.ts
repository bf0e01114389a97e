import { describe, expect, test } from 'vitest'
import { ToolErrorCode } from '../../src/errors.ts'
import { assertObjectJsonSchema, assertSupportedJsonSchema, JsonSchemaError, MAX_SCHEMA_DEPTH } from '../../src/schema/json-schema.ts'
import { parseJsonText } from '../../src/json-boundary.ts'
import type { JsonSchemaNode } from '../../src/schema/types.ts'
import { validateJsonSchemaValue } from '../../src/schema/validate.ts'
import { z } from 'zod'
import { mcpFixture } from '../fixtures/mcp-schemas.ts'

function issuesOf(schema: unknown): Array<{ path: string; message: string }> {
  try {
    assertSupportedJsonSchema(schema)
  } catch (error) {
    expect(error).toBeInstanceOf(JsonSchemaError)
    return [...(error as JsonSchemaError).issues]
  }
  return []
}

function pathsOf(schema: unknown): string[] {
  return issuesOf(schema).map((issue) => issue.path)
}

function nestedItems(depth: number): unknown {
  let schema: unknown = { type: 'string' }
  for (let level = 1; level < depth; level += 1) schema = { type: 'array', items: schema }
  return schema
}

describe('assertSupportedJsonSchema accepts', () => {
  test.each([
    ['an empty node (any JSON value)', {}],
    ['an annotation-only node', { description: 'anything', title: 'Any', default: { a: [1] }, examples: [1, 'x'] }],
    ['a scalar root', { type: 'string', enum: ['a', 'b'] }],
    ['a null root', { type: 'null' }],
    ['an array root with items', { type: 'array', items: { type: 'integer', const: 3 } }],
    ['an object with required names', { type: 'object', properties: { a: {} }, required: ['a'], additionalProperties: false }],
    ['a typeless enum of mixed scalars', { enum: ['a', 1, true, null] }],
    ['a two-branch oneOf', { oneOf: [{ type: 'string' }, { type: 'number' }] }],
    ['a null-prototype node', Object.assign(Object.create(null), { type: 'boolean' })],
  ])('%s', (_name, schema) => {
    expect(() => assertSupportedJsonSchema(schema)).not.toThrow()
  })

  test('a schema nested exactly MAX_SCHEMA_DEPTH levels', () => {
    expect(() => assertSupportedJsonSchema(nestedItems(MAX_SCHEMA_DEPTH))).not.toThrow()
  })
})

describe('assertSupportedJsonSchema rejects', () => {
  test('with code UNSUPPORTED_SCHEMA', () => {
    expect(() => assertSupportedJsonSchema({ $ref: '#/x' })).toThrow(expect.objectContaining({ code: ToolErrorCode.UNSUPPORTED_SCHEMA }))
  })

  test('every branch of a oneOf beside a hole, not only the hole', () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(pathsOf({ oneOf: [{ not: {} }, , { type: 'strin' }] })).toEqual(['$.oneOf[1]', '$.oneOf[0].not', '$.oneOf[2].type'])
  })

  test('a const that is not among the enum values, which nothing could match', () => {
    expect(pathsOf({ type: 'integer', enum: [1, 2], const: 3 })).toEqual(['$.const'])
    expect(() => assertSupportedJsonSchema({ enum: [1, 'a'], const: 'a' })).not.toThrow()
  })

  test('every bad path of one schema at once', () => {
    expect(
      pathsOf({
        type: 'object',
        properties: {
          a: { type: 'string', not: { const: '' } },
          b: { type: 'array', items: { $ref: '#/a' } },
          c: { oneOf: [{ type: 'string' }] },
        },
        required: ['a', 'missing'],
        patternProperties: { '^x': { type: 'string' } },
      }).sort(),
    ).toEqual(['$.patternProperties', '$.properties.a.not', '$.properties.b.items.$ref', '$.properties.c.oneOf', '$.required[1]'])
  })

  test('every bad path under a broken or misplaced parent too, in declaration order', () => {
    expect(pathsOf({ type: 'obect', properties: { a: { $ref: 'https://example.com/a' }, b: { type: 'string', pattern: '(' } } })).toEqual([
      '$.type',
      '$.properties.a.$ref',
      '$.properties.b.pattern',
    ])
    expect(pathsOf({ oneOf: [{ type: 'string', not: {} }] })).toEqual(['$.oneOf', '$.oneOf[0].not'])
    expect(pathsOf({ properties: { a: { minLength: 1 } } })).toEqual(['$.properties', '$.properties.a.minLength'])
    expect(pathsOf({ type: ['object', 'nul'], properties: { a: { not: {} } } })).toEqual(['$.type[1]', '$.properties.a.not'])
    expect(pathsOf({ type: 'string', items: { $ref: '#/x' } })).toEqual(['$.items', '$.items.$ref'])
    expect(pathsOf({ type: 'array', prefixItems: [{}], items: [{ type: 'string' }, { not: {} }] })).toEqual(['$.items', '$.items[1].not'])
    expect(pathsOf({ type: 'string', anyOf: [{ type: 'string', if: {} }], additionalProperties: { type: 'strin' } })).toEqual([
      '$.additionalProperties',
      '$.anyOf[0].if',
      '$.additionalProperties.type',
    ])
  })

  test('unknown keywords, naming them', () => {
    expect(issuesOf({ type: 'string', contentMediaType: 'text/plain' })).toEqual([
      { path: '$.contentMediaType', message: expect.stringContaining('unsupported keyword "contentMediaType"') },
    ])
  })

  test('a $ref to another document, saying only local references are followed', () => {
    expect(issuesOf({ $ref: 'https://example.com/schema.json#/$defs/x' })[0]?.message).toMatch(/only local references/)
  })

  test('a $id below the root (an embedded schema resource)', () => {
    expect(pathsOf({ $id: 'https://example.com/root', type: 'object', properties: { a: { $id: 'a', type: 'string' } } })).toEqual(['$.properties.a.$id'])
  })

  test('type arrays that are empty, repeat a type or name an unknown one', () => {
    expect(pathsOf({ type: [] })).toEqual(['$.type'])
    expect(pathsOf({ type: ['string', 'string'] })).toEqual(['$.type[1]'])
    expect(pathsOf({ type: ['string', 'date'] })).toEqual(['$.type[1]'])
  })

  test('an unknown type name', () => {
    expect(pathsOf({ type: 'date' })).toEqual(['$.type'])
  })

  test('properties, required and additionalProperties without type object', () => {
    expect(pathsOf({ type: 'array', properties: {}, required: [], additionalProperties: false })).toEqual([
      '$.properties',
      '$.required',
      '$.additionalProperties',
    ])
  })

  test('properties on a typeless node', () => {
    expect(pathsOf({ properties: { a: {} } })).toEqual(['$.properties'])
  })

  test('items without type array', () => {
    expect(pathsOf({ type: 'object', items: {} })).toEqual(['$.items'])
  })

  test('an items array beside prefixItems, and additionalItems without an items array', () => {
    expect(pathsOf({ type: 'array', prefixItems: [{ type: 'string' }], items: [{ type: 'string' }] })).toEqual(['$.items'])
    expect(pathsOf({ type: 'array', items: { type: 'string' }, additionalItems: false })).toEqual(['$.additionalItems'])
  })

  test('enum and const on object and array nodes', () => {
    expect(pathsOf({ type: 'object', enum: [null] })).toEqual(['$.enum'])
    expect(pathsOf({ type: 'array', const: null })).toEqual(['$.const'])
  })

  test('enum values of the wrong type, each by index', () => {
    expect(pathsOf({ type: 'integer', enum: [1, 1.5, 'two', 3] })).toEqual(['$.enum[1]', '$.enum[2]'])
  })

  test('an empty enum', () => {
    expect(issuesOf({ type: 'string', enum: [] })).toEqual([{ path: '$.enum', message: expect.stringContaining('at least one') }])
  })

  test('duplicate enum values', () => {
    expect(pathsOf({ enum: ['a', 'b', 'a'] })).toEqual(['$.enum[2]'])
  })

  test('non-scalar enum values', () => {
    expect(pathsOf({ enum: [{}, []] })).toEqual(['$.enum[0]', '$.enum[1]'])
  })

  test('a const of the wrong type', () => {
    expect(pathsOf({ type: 'boolean', const: 'true' })).toEqual(['$.const'])
  })

  test('NaN and -0 in enum', () => {
    expect(pathsOf({ type: 'number', enum: [Number.NaN, -0, 1] })).toEqual(['$.enum[0]', '$.enum[1]'])
  })

  test('required names missing from properties', () => {
    expect(issuesOf({ type: 'object', properties: { a: {} }, required: ['b'] })).toEqual([
      { path: '$.required[0]', message: 'required name "b" is not declared in properties' },
    ])
  })

  test('duplicate required names', () => {
    expect(pathsOf({ type: 'object', properties: { a: {} }, required: ['a', 'a'] })).toEqual(['$.required[1]'])
  })

  test('additionalProperties given as neither a boolean nor a schema', () => {
    expect(issuesOf({ type: 'object', additionalProperties: 'no' })).toEqual([
      { path: '$.additionalProperties', message: expect.stringMatching(/expected a schema node/) },
    ])
  })

  test('a single-branch oneOf', () => {
    expect(issuesOf({ oneOf: [{}] })).toEqual([{ path: '$.oneOf', message: 'oneOf needs at least two branches, found 1' }])
  })

  test('unsupported keywords inside oneOf branches, by branch index', () => {
    expect(pathsOf({ oneOf: [{ type: 'string', not: {} }, { allOf: [] }] })).toEqual(['$.oneOf[0].not', '$.oneOf[1].allOf'])
  })

  test('a default that is not lossless JSON, at its inner path', () => {
    expect(pathsOf({ default: { when: new Date(0) } })).toEqual(['$.default.when'])
    expect(pathsOf({ examples: [1, undefined] })).toEqual(['$.examples[1]'])
    expect(pathsOf({ default: -0 })).toEqual(['$.default'])
    expect(pathsOf({ default: Number.NaN })).toEqual(['$.default'])
  })

  test('non-string description and title', () => {
    expect(pathsOf({ description: 1, title: null })).toEqual(['$.description', '$.title'])
  })

  test('boolean schemas', () => {
    expect(pathsOf(true)).toEqual(['$'])
    expect(pathsOf({ type: 'object', properties: { a: false } })).toEqual(['$.properties.a'])
  })

  test('roots that are not schema objects', () => {
    expect(pathsOf(null)).toEqual(['$'])
    expect(pathsOf([])).toEqual(['$'])
    expect(pathsOf('string')).toEqual(['$'])
    expect(pathsOf(new Map())).toEqual(['$'])
  })

  test('accessor keywords without running the getter', () => {
    let ran = false
    const schema = {
      get type() {
        ran = true
        return 'string'
      },
    }
    expect(pathsOf(schema)).toEqual(['$.type'])
    expect(ran).toBe(false)
  })

  test('proxies without running a trap', () => {
    let trapped = false
    const proxy = new Proxy({ type: 'string' }, {
      get() {
        trapped = true
        return undefined
      },
      ownKeys() {
        trapped = true
        return []
      },
    })
    expect(pathsOf({ type: 'array', items: proxy })).toEqual(['$.items'])
    expect(trapped).toBe(false)
  })

  test("non-enumerable keys other than zod's ~standard member on the root", () => {
    const nested = { type: 'object', properties: { a: { type: 'string' } } }
    Object.defineProperty(nested.properties.a, '~standard', { value: {}, enumerable: false })
    expect(pathsOf(nested)).toEqual(['$.properties.a["~standard"]'])
  })

  test('symbol keys and non-enumerable keys', () => {
    const schema: Record<string | symbol, unknown> = { [Symbol('x')]: 1 }
    Object.defineProperty(schema, 'type', { value: 'string', enumerable: false })
    expect(pathsOf(schema).sort()).toEqual(['$', '$.type'])
  })

  test('a sparse oneOf array, naming the hole', () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(pathsOf({ oneOf: [{}, , {}] })).toEqual(['$.oneOf[1]'])
  })

  test('schema nodes that are class instances', () => {
    class Node {
      type = 'string'
    }
    expect(pathsOf({ type: 'array', items: new Node() })).toEqual(['$.items'])
  })

  test('a property named __proto__, which the validator could not enforce', () => {
    expect(pathsOf(JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}'))).toEqual(['$.properties.__proto__'])
  })

  test('a schema one level deeper than MAX_SCHEMA_DEPTH', () => {
    const issues = issuesOf(nestedItems(MAX_SCHEMA_DEPTH + 1))
    expect(issues).toHaveLength(1)
    expect(issues[0]?.message).toBe(`schema nested deeper than ${MAX_SCHEMA_DEPTH} levels`)
  })

  test('a schema nested 100,000 levels deep with one clear issue instead of a stack overflow', () => {
    const issues = issuesOf(nestedItems(100_000))
    expect(issues).toEqual([{ path: `$${'.items'.repeat(MAX_SCHEMA_DEPTH)}`, message: `schema nested deeper than ${MAX_SCHEMA_DEPTH} levels` }])
  })

  test('and lists every issue in the error message', () => {
    expect(() => assertSupportedJsonSchema({ type: 'string', minimum: 1, enum: [2] })).toThrow(
      /^Unsupported JSON Schema: \$\.minimum: .*; \$\.enum\[0\]: expected a string, found number 2$/,
    )
  })
})

describe('assertObjectJsonSchema', () => {
  test('accepts an object root', () => {
    expect(() => assertObjectJsonSchema({ type: 'object' })).not.toThrow()
  })

  test('rejects a supported schema whose root is not an object', () => {
    expect(() => assertObjectJsonSchema({ type: 'array' })).toThrow(expect.objectContaining({ issues: [{ path: '$.type', message: 'the root must be type "object", found type "array"' }] }))
  })

  test('rejects a typeless root', () => {
    expect(() => assertObjectJsonSchema({})).toThrow(JsonSchemaError)
  })

  test('reports unsupported keywords of an object root', () => {
    expect(() => assertObjectJsonSchema({ type: 'object', patternProperties: {} })).toThrow(/patternProperties/)
  })
})

describe('the grown subset', () => {
  test.each([
    ['the annotations servers send', { $schema: 'http://json-schema.org/draft-07/schema#', $id: 'https://example.com/s', $comment: 'c', type: 'object', title: 'T', description: 'd', deprecated: true, properties: { a: { type: 'string', readOnly: true, writeOnly: false, examples: ['x'], default: 'x' } } }],
    ['string constraints', { type: 'string', minLength: 1, maxLength: 9, pattern: '^[a-z]+$', format: 'email' }],
    ['an unknown format, as an annotation', { type: 'integer', format: 'int32' }],
    ['number constraints', { type: 'number', minimum: -1, maximum: 9007199254740991, exclusiveMinimum: -2, exclusiveMaximum: 1e300, multipleOf: 0.5 }],
    ['array constraints', { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3, uniqueItems: true }],
    ['object constraints', { type: 'object', minProperties: 1, maxProperties: 2, propertyNames: { type: 'string', pattern: '^[A-Z]+$' }, additionalProperties: { type: 'number' } }],
    ['a type array with enum values of either type', { type: ['string', 'null'], enum: ['a', null] }],
    ['object keywords beside a type array that includes object', { type: ['object', 'null'], properties: { a: {} }, required: ['a'] }],
    ['anyOf and allOf', { anyOf: [{ type: 'string' }, { allOf: [{ type: 'object', properties: { a: {} } }, { type: 'object', required: [] }] }] }],
    ['a 2020-12 tuple', { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false }],
    ['a draft-07 tuple', { type: 'array', items: [{ type: 'string' }, { type: 'boolean' }], additionalItems: false, minItems: 2 }],
    ['a record with required keys its additionalProperties schema describes', { type: 'object', propertyNames: { enum: ['a', 'b'] }, required: ['a', 'b'], additionalProperties: { type: 'string' } }],
    ['a recursive $ref through an item', { $ref: '#/$defs/node', $defs: { node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/$defs/node' } } } } } }],
    ['a reference to the root through a property', { type: 'object', properties: { next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } } }],
    ['draft-07 definitions', { type: 'object', properties: { a: { allOf: [{ $ref: '#/definitions/x' }] } }, definitions: { x: { type: 'string' } } }],
    ['a percent-encoded reference with an escaped key', { $ref: '#/$defs/a~1b%20c', $defs: { 'a/b c': { type: 'string' } } }],
  ])('%s', (_name, schema) => {
    expect(() => assertSupportedJsonSchema(schema)).not.toThrow()
  })

  test('refuses a pattern the validator cannot compile with the u flag, at its path', () => {
    expect(issuesOf({ type: 'object', properties: { a: { type: 'string', pattern: '\\-[' } } })).toEqual([
      { path: '$.properties.a.pattern', message: expect.stringContaining('"u" flag') },
    ])
    // Without the u flag `\-` outside a class is an identity escape; with it, a syntax error.
    expect(pathsOf({ type: 'string', pattern: 'a\\-b' })).toEqual(['$.pattern'])
  })

  test('refuses keywords for one kind of value where the type does not name it', () => {
    expect(issuesOf({ type: 'string', minimum: 1 })).toEqual([{ path: '$.minimum', message: '"minimum" is only allowed when the type includes "number" or "integer"' }])
    expect(issuesOf({ maxItems: 1 })).toEqual([{ path: '$.maxItems', message: '"maxItems" needs a "type" that includes "array"' }])
    expect(pathsOf({ type: ['string', 'null'], properties: {} })).toEqual(['$.properties'])
  })

  test('refuses malformed constraint values, every one at once', () => {
    expect(
      pathsOf({
        type: ['string', 'number', 'array', 'object'],
        minLength: -1,
        maxLength: 1.5,
        minimum: '1',
        exclusiveMaximum: true,
        multipleOf: 0,
        uniqueItems: 'yes',
        maxProperties: Number.NaN,
        format: 1,
        deprecated: 'no',
      }),
    ).toEqual(['$.minLength', '$.maxLength', '$.minimum', '$.exclusiveMaximum', '$.multipleOf', '$.uniqueItems', '$.maxProperties', '$.format', '$.deprecated'])
  })

  test('names the draft-04 boolean form of exclusiveMinimum', () => {
    expect(issuesOf({ type: 'number', minimum: 0, exclusiveMinimum: true })[0]?.message).toMatch(/draft-04 boolean form/)
  })

  test('refuses a $ref that points to no schema of the document', () => {
    expect(issuesOf({ type: 'object', properties: { a: { $ref: '#/$defs/missing' } } })).toEqual([
      { path: '$.properties.a.$ref', message: '$ref "#/$defs/missing" does not point to a schema in this document' },
    ])
    expect(pathsOf({ type: 'object', properties: { a: { $ref: '#/properties' } } })).toEqual(['$.properties.a.$ref'])
    expect(pathsOf({ $ref: '#anchor' })).toEqual(['$.$ref'])
  })

  test('refuses reference cycles that never go into a property or an item', () => {
    expect(pathsOf({ $ref: '#' })).toEqual(['$.$ref'])
    expect(pathsOf({ $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { anyOf: [{ type: 'string' }, { $ref: '#/$defs/a' }] } } })).toEqual([
      '$.$defs.b.anyOf[1].$ref',
    ])
  })

  test('refuses a chain of references deeper than the validator can compile, with one issue and no stack overflow', () => {
    const chain = (length: number): unknown => {
      const defs: Record<string, unknown> = {}
      for (let index = 0; index < length; index += 1) defs[`d${index}`] = { type: 'array', items: { $ref: `#/$defs/d${index + 1}` } }
      // The last one refers back to the first: recursion, which counts once.
      defs[`d${length}`] = { type: 'array', items: { $ref: '#/$defs/d0' } }
      return { $ref: '#/$defs/d0', $defs: defs }
    }
    expect(issuesOf(chain(5000))).toEqual([{ path: '$', message: expect.stringMatching(/^schema nested 15004 levels deep once its references are followed; at most 128/) }])
    expect(() => assertSupportedJsonSchema(chain(40))).not.toThrow()
    expect(validateJsonSchemaValue(chain(40) as JsonSchemaNode, [[[]]])).toEqual([])
  })

  test('accepts every input schema of the published MCP servers and of zod 4, unchanged', () => {
    for (const [source, tools] of Object.entries(mcpFixture)) {
      for (const tool of tools) {
        const before = JSON.stringify(tool.inputSchema)
        expect(() => assertObjectJsonSchema(tool.inputSchema), `${source} ${tool.name}`).not.toThrow()
        if (tool.outputSchema !== undefined) expect(() => assertSupportedJsonSchema(tool.outputSchema), `${source} ${tool.name} output`).not.toThrow()
        expect(JSON.stringify(tool.inputSchema)).toBe(before)
      }
    }
  })
})

describe("zod's numeric bounds", () => {
  test('integer bounds cross the lossless JSON boundary as text and pass the subset unchanged', () => {
    const schema = z.toJSONSchema(z.object({ n: z.int(), u: z.uint32(), i: z.int32() }))
    const parsed = parseJsonText(JSON.stringify(schema), 'inputSchema')
    expect(parsed).toEqual(schema)
    expect(() => assertObjectJsonSchema(parsed)).not.toThrow()
    const value = { n: Number.MAX_SAFE_INTEGER, u: 4294967295, i: -2147483648 }
    expect(validateJsonSchemaValue(parsed as JsonSchemaNode, value)).toEqual([])
    expect(validateJsonSchemaValue(parsed as JsonSchemaNode, { ...value, u: -1, i: 2147483648 }).map((issue) => issue.path)).toEqual(['$.u', '$.i'])
  })

  test('float bounds, in the object z.toJSONSchema returns, pass the subset unchanged', () => {
    const schema = z.toJSONSchema(z.object({ f: z.float32(), d: z.float64() }))
    // zod attaches a non-enumerable Standard Schema member to the root; it is not a keyword.
    expect(Object.getOwnPropertyDescriptor(schema, '~standard')?.enumerable).toBe(false)
    expect(() => assertObjectJsonSchema(schema)).not.toThrow()
    expect(validateJsonSchemaValue(schema as JsonSchemaNode, { f: 1.5, d: Number.MAX_VALUE })).toEqual([])
    expect(validateJsonSchemaValue(schema as JsonSchemaNode, { f: 3.5e38, d: 0 }).map((issue) => issue.path)).toEqual(['$.f'])
  })
})
