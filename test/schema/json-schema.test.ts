import { describe, expect, test } from 'vitest'
import { ToolErrorCode } from '../../src/errors.ts'
import { assertObjectJsonSchema, assertSupportedJsonSchema, JsonSchemaError, MAX_SCHEMA_DEPTH } from '../../src/schema/json-schema.ts'

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
    expect(pathsOf({ oneOf: [{ $ref: '#' }, , { type: 'strin' }] })).toEqual(['$.oneOf[1]', '$.oneOf[0].$ref', '$.oneOf[2].type'])
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
          a: { type: 'string', format: 'email' },
          b: { type: 'array', items: { $ref: '#/a' } },
          c: { oneOf: [{ type: 'string' }] },
        },
        required: ['a', 'missing'],
        additionalProperties: { type: 'string' },
      }).sort(),
    ).toEqual(['$.additionalProperties', '$.properties.a.format', '$.properties.b.items.$ref', '$.properties.c.oneOf', '$.required[1]'])
  })

  test('every bad path under a broken or misplaced parent too, in declaration order', () => {
    expect(pathsOf({ type: 'obect', properties: { a: { $ref: '#/x' }, b: { type: 'string', pattern: 'x' } } })).toEqual([
      '$.type',
      '$.properties.a.$ref',
      '$.properties.b.pattern',
    ])
    expect(pathsOf({ oneOf: [{ type: 'string', format: 'email' }] })).toEqual(['$.oneOf', '$.oneOf[0].format'])
    expect(pathsOf({ properties: { a: { minLength: 1 } } })).toEqual(['$.properties', '$.properties.a.minLength'])
    expect(pathsOf({ type: ['object', 'null'], properties: { a: { format: 'uri' } } })).toEqual(['$.type', '$.properties.a.format'])
    expect(pathsOf({ type: 'string', items: { $ref: '#/x' } })).toEqual(['$.items', '$.items.$ref'])
    expect(pathsOf({ type: 'array', items: [{ type: 'string' }, { $ref: '#/x' }] })).toEqual(['$.items', '$.items[1].$ref'])
  })

  test('unknown keywords, naming them', () => {
    expect(issuesOf({ type: 'string', minLength: 1 })).toEqual([
      { path: '$.minLength', message: expect.stringContaining('unsupported keyword "minLength"') },
    ])
  })

  test('$ref with a hint to inline the schema', () => {
    expect(issuesOf({ $ref: '#/definitions/x' })[0]?.message).toMatch(/references are not supported/)
  })

  test('$schema, which is never enforced', () => {
    expect(pathsOf({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' })).toEqual(['$.$schema'])
  })

  test('type arrays', () => {
    expect(issuesOf({ type: ['string', 'null'] })[0]).toEqual({ path: '$.type', message: expect.stringContaining('type arrays are not supported') })
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

  test('tuple items', () => {
    expect(pathsOf({ type: 'array', items: [{ type: 'string' }] })).toEqual(['$.items'])
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

  test('additionalProperties given as a schema', () => {
    expect(issuesOf({ type: 'object', additionalProperties: {} })[0]?.message).toMatch(/expected true or false/)
  })

  test('a single-branch oneOf', () => {
    expect(issuesOf({ oneOf: [{}] })).toEqual([{ path: '$.oneOf', message: 'oneOf needs at least two branches, found 1' }])
  })

  test('unsupported keywords inside oneOf branches, by branch index', () => {
    expect(pathsOf({ oneOf: [{ type: 'string', pattern: 'x' }, { allOf: [] }] })).toEqual(['$.oneOf[0].pattern', '$.oneOf[1].allOf'])
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
