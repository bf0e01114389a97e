import { describe, expect, test } from 'vitest'
import { ToolErrorCode } from '../../src/errors.ts'
import { parameterSchemaSpecToJsonSchema, SchemaSpecError, valueSchemaSpecToJsonSchema } from '../../src/schema/dsl.ts'
import type { ParameterSchemaSpec, ValueSchemaSpec } from '../../src/schema/dsl.ts'
import { assertSupportedJsonSchema, MAX_SCHEMA_DEPTH } from '../../src/schema/json-schema.ts'

function valueIssues(spec: unknown): Array<{ path: string; message: string }> {
  try {
    valueSchemaSpecToJsonSchema(spec as ValueSchemaSpec)
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaSpecError)
    return [...(error as SchemaSpecError).issues]
  }
  return []
}

function valuePaths(spec: unknown): string[] {
  return valueIssues(spec).map((issue) => issue.path)
}

function parameterPaths(spec: unknown): string[] {
  try {
    parameterSchemaSpecToJsonSchema(spec as unknown as ParameterSchemaSpec)
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaSpecError)
    return (error as SchemaSpecError).issues.map((issue) => issue.path)
  }
  return []
}

function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true
  return Object.isFrozen(value) && Object.values(value).every(isDeepFrozen)
}

describe('parameterSchemaSpecToJsonSchema', () => {
  test('compiles a parameter map into an open object root with required names in declaration order', () => {
    expect(
      parameterSchemaSpecToJsonSchema({
        pattern: { type: 'string', description: 'regex', required: true },
        limit: { type: 'integer', default: 10 },
        path: { type: 'string', required: true },
      }),
    ).toEqual({
      type: 'object',
      properties: { pattern: { type: 'string', description: 'regex' }, limit: { type: 'integer', default: 10 }, path: { type: 'string' } },
      required: ['pattern', 'path'],
    })
  })

  test('omits required when no property is required', () => {
    expect(parameterSchemaSpecToJsonSchema({ a: { type: 'null' } })).toEqual({ type: 'object', properties: { a: { type: 'null' } } })
  })

  test('compiles an empty map to an object root with no properties', () => {
    expect(parameterSchemaSpecToJsonSchema({})).toEqual({ type: 'object', properties: {} })
  })

  test('returns a deep-frozen schema inside the enforced subset', () => {
    const schema = parameterSchemaSpecToJsonSchema({ a: { type: 'array', items: { type: 'object', additionalProperties: true, properties: { b: { type: 'json' } } } } })
    expect(isDeepFrozen(schema)).toBe(true)
    expect(() => assertSupportedJsonSchema(schema)).not.toThrow()
  })

  test('returns the same schema object for the same spec object', () => {
    const spec: ParameterSchemaSpec = { a: { type: 'string' } }
    expect(parameterSchemaSpecToJsonSchema(spec)).toBe(parameterSchemaSpecToJsonSchema(spec))
  })

  test('rejects a parameter map that is not a plain object', () => {
    expect(parameterPaths([])).toEqual(['$'])
    expect(parameterPaths(null)).toEqual(['$'])
  })

  test('rejects required values other than true', () => {
    expect(parameterPaths({ a: { type: 'string', required: false } })).toEqual(['$.a.required'])
  })
})

describe('compiling a spec object again', () => {
  test('gives the same schema object while the spec reads the same, and a new one after an edit', () => {
    const spec: Record<string, Record<string, unknown>> = { q: { type: 'string', required: true } }
    const first = parameterSchemaSpecToJsonSchema(spec as unknown as ParameterSchemaSpec)
    expect(parameterSchemaSpecToJsonSchema(spec as unknown as ParameterSchemaSpec)).toBe(first)
    spec.q!.enum = ['a', 'b']
    const edited = parameterSchemaSpecToJsonSchema(spec as unknown as ParameterSchemaSpec)
    expect(edited).not.toBe(first)
    expect(edited.properties?.q).toEqual({ type: 'string', enum: ['a', 'b'] })
    const value: Record<string, unknown> = { type: 'integer' }
    const compiled = valueSchemaSpecToJsonSchema(value as unknown as ValueSchemaSpec)
    expect(valueSchemaSpecToJsonSchema(value as unknown as ValueSchemaSpec)).toBe(compiled)
    value.enum = [1, 2]
    expect(valueSchemaSpecToJsonSchema(value as unknown as ValueSchemaSpec)).toEqual({ type: 'integer', enum: [1, 2] })
  })
})

describe('valueSchemaSpecToJsonSchema', () => {
  test('compiles json to an annotation-only node', () => {
    expect(valueSchemaSpecToJsonSchema({ type: 'json', description: 'anything', examples: [1] })).toEqual({ description: 'anything', examples: [1] })
  })

  test('keeps explicit additionalProperties on object nodes and lifts required marks', () => {
    expect(
      valueSchemaSpecToJsonSchema({
        type: 'object',
        additionalProperties: false,
        properties: { id: { type: 'integer', required: true }, tags: { type: 'array', items: { type: 'string' } } },
      }),
    ).toEqual({
      type: 'object',
      properties: { id: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
      required: ['id'],
      additionalProperties: false,
    })
  })

  test('compiles oneOf, enum and const nodes', () => {
    expect(
      valueSchemaSpecToJsonSchema({ oneOf: [{ type: 'string', enum: ['a', 'b'] }, { type: 'boolean', const: true }, { type: 'null' }], title: 'T' }),
    ).toEqual({ title: 'T', oneOf: [{ type: 'string', enum: ['a', 'b'] }, { type: 'boolean', const: true }, { type: 'null' }] })
  })

  test('compiles scalar roots', () => {
    expect(valueSchemaSpecToJsonSchema({ type: 'number' })).toEqual({ type: 'number' })
  })

  test('copies default and examples as frozen lossless JSON', () => {
    const fallback = { a: [1, 2] }
    const schema = valueSchemaSpecToJsonSchema({ type: 'json', default: fallback })
    expect(schema.default).toEqual(fallback)
    expect(schema.default).not.toBe(fallback)
    expect(isDeepFrozen(schema.default)).toBe(true)
  })

  test('accepts a schema nested exactly MAX_SCHEMA_DEPTH levels', () => {
    let spec: unknown = { type: 'string' }
    for (let level = 1; level < MAX_SCHEMA_DEPTH; level += 1) spec = { type: 'array', items: spec }
    expect(valuePaths(spec)).toEqual([])
  })
})

describe('a malformed value spec fails with SchemaSpecError', () => {
  test('with code UNSUPPORTED_SCHEMA and every issue in the message', () => {
    expect(() => valueSchemaSpecToJsonSchema({ type: 'text' } as never)).toThrow(
      expect.objectContaining({ code: ToolErrorCode.UNSUPPORTED_SCHEMA, message: expect.stringContaining('$.type: expected one of "string"') }),
    )
  })

  test('checking every branch of a oneOf beside a hole, and a const outside its enum', () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(valuePaths({ oneOf: [{ type: 'strin' }, , { type: 'string', enum: ['a'], const: 'b' }] })).toEqual([
      '$.oneOf[1]',
      '$.oneOf[0].type',
      '$.oneOf[2].const',
    ])
  })

  test('listing every bad path at once', () => {
    expect(
      valuePaths({
        type: 'object',
        properties: {
          a: { type: 'string', enum: [1] },
          b: { type: 'object', properties: {} },
          c: { oneOf: [{ type: 'string' }] },
          d: { type: 'integer', const: 1.5 },
          e: { type: 'string', minLength: 2 },
        },
      }).sort(),
    ).toEqual(['$.additionalProperties', '$.properties.a.enum[0]', '$.properties.b.additionalProperties', '$.properties.c.oneOf', '$.properties.d.const', '$.properties.e.minLength'])
  })

  test('listing the bad paths under a broken type or a one-branch oneOf too', () => {
    expect(valuePaths({ type: 'obect', properties: { a: { type: 'strin' } } } as never)).toEqual(['$.type', '$.properties.a.type'])
    expect(valuePaths({ type: 'aray', items: { type: 'strin' } } as never)).toEqual(['$.type', '$.items.type'])
    expect(valuePaths({ oneOf: [{ type: 'strin' }] } as never)).toEqual(['$.oneOf', '$.oneOf[0].type'])
  })

  test('saying where requiredness goes when it is given as a list of names', () => {
    const listed = { type: 'object', additionalProperties: false, required: ['mode'], properties: { mode: { type: 'string' } } }
    expect(valueIssues(listed as never)).toEqual([
      { path: '$.required', message: expect.stringContaining('put required: true on every required property (properties.<name>.required)') },
    ])
  })

  test('for a node without type or oneOf', () => {
    expect(valueIssues({ description: 'x' })).toEqual([{ path: '$', message: expect.stringContaining('missing "type"') }])
  })

  test('for an unknown node kind', () => {
    expect(valuePaths({ type: 'date' })).toEqual(['$.type'])
  })

  test('for an object node that omits additionalProperties', () => {
    expect(valueIssues({ type: 'object' })).toEqual([
      { path: '$.additionalProperties', message: 'object nodes must declare additionalProperties: true or false' },
    ])
  })

  test('for additionalProperties given as a schema', () => {
    expect(valuePaths({ type: 'object', additionalProperties: { type: 'string' } })).toEqual(['$.additionalProperties'])
  })

  test('for enum values of the wrong type', () => {
    expect(valuePaths({ type: 'boolean', enum: [true, 'false'] })).toEqual(['$.enum[1]'])
  })

  test('for integer enum values that are not integers', () => {
    expect(valuePaths({ type: 'integer', enum: [1, 2.5] })).toEqual(['$.enum[1]'])
  })

  test('for an empty enum', () => {
    expect(valuePaths({ type: 'string', enum: [] })).toEqual(['$.enum'])
  })

  test('for enum or const on a container or json node', () => {
    expect(valuePaths({ type: 'array', enum: [[]] })).toEqual(['$.enum'])
    expect(valuePaths({ type: 'json', const: 1 })).toEqual(['$.const'])
  })

  test('for a single-branch oneOf', () => {
    expect(valuePaths({ oneOf: [{ type: 'string' }] })).toEqual(['$.oneOf'])
  })

  test('for a oneOf node that also has a type', () => {
    expect(valuePaths({ type: 'string', oneOf: [{ type: 'string' }, { type: 'null' }] })).toEqual(['$.type'])
  })

  test('for required outside a property', () => {
    expect(valuePaths({ type: 'string', required: true })).toEqual(['$.required'])
    expect(valuePaths({ type: 'array', items: { type: 'string', required: true } })).toEqual(['$.items.required'])
  })

  test('for defaults and examples that are not lossless JSON, at their inner path', () => {
    expect(valuePaths({ type: 'json', default: { at: new Date(0) }, examples: [Number.NaN] }).sort()).toEqual(['$.default.at', '$.examples[0]'])
  })

  test('for a non-string description', () => {
    expect(valuePaths({ type: 'null', description: 3 })).toEqual(['$.description'])
  })

  test('for a sparse oneOf array', () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(valuePaths({ oneOf: [{ type: 'string' }, , { type: 'null' }] })).toEqual(['$.oneOf[1]'])
  })

  test('for an enum array that is not a built-in array', () => {
    class Values extends Array<string> {}
    expect(valuePaths({ type: 'string', enum: Values.from(['a']) })).toEqual(['$.enum'])
  })

  test('for symbol keys on a node', () => {
    expect(valuePaths({ type: 'string', [Symbol('meta')]: 1 })).toEqual(['$'])
  })

  test('for properties inherited from a prototype', () => {
    const inherited = Object.create({ type: 'string' }) as object
    expect(valuePaths(inherited)).toEqual(['$'])
  })

  test('for accessor properties, without running the getter', () => {
    let ran = false
    const spec = {
      type: 'object',
      additionalProperties: true,
      properties: {
        get a() {
          ran = true
          return { type: 'string' }
        },
      },
    }
    expect(valuePaths(spec)).toEqual(['$.properties.a'])
    expect(ran).toBe(false)
  })

  test('for a property named __proto__', () => {
    expect(parameterPaths(JSON.parse('{"__proto__":{"type":"string"}}'))).toEqual(['$.__proto__'])
  })

  test('for a spec nested 100,000 levels deep, with one clear issue instead of a stack overflow', () => {
    let spec: unknown = { type: 'string' }
    for (let level = 0; level < 100_000; level += 1) spec = { type: 'array', items: spec }
    expect(valueIssues(spec)).toEqual([{ path: `$${'.items'.repeat(MAX_SCHEMA_DEPTH)}`, message: `schema nested deeper than ${MAX_SCHEMA_DEPTH} levels` }])
  })
})
