import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { openaiParameters, restoreStrictArguments, STRICT_LIMITS } from '../../adapters/openai-strict.ts'
import type { StrictRestore } from '../../adapters/openai-strict.ts'
import { parseJsonText, validateJsonSchemaValue } from '../../src/index.ts'
import type { JsonSchemaNode, JsonValue, ObjectJsonSchema } from '../../src/index.ts'

const closed = (properties: Record<string, JsonSchemaNode>, required: string[] = []): ObjectJsonSchema => ({ type: 'object', properties, required, additionalProperties: false })

function strictPlan(schema: ObjectJsonSchema): { parameters: Record<string, unknown>; restore: StrictRestore | undefined } {
  const plan = openaiParameters(schema)
  if (!plan.strict) throw new Error(`expected strict, got: ${plan.reason}`)
  return plan
}

function reason(schema: ObjectJsonSchema): string {
  const plan = openaiParameters(schema)
  if (plan.strict) throw new Error('expected non-strict')
  return plan.reason
}

describe('openaiParameters', () => {
  it('adds null to the enum and the type of an optional enum', () => {
    const { parameters } = strictPlan(closed({ level: { type: 'string', enum: ['low', 'high'] } }))
    expect(parameters.properties).toEqual({ level: { type: ['string', 'null'], enum: ['low', 'high', null] } })
    expect(parameters.required).toEqual(['level'])
  })

  it('wraps an optional const in anyOf with null', () => {
    const { parameters } = strictPlan(closed({ kind: { type: 'string', const: 'file' } }))
    expect(parameters.properties).toEqual({ kind: { anyOf: [{ type: 'string', const: 'file' }, { type: 'null' }] } })
  })

  it('adds a null branch to an optional anyOf', () => {
    const { parameters } = strictPlan(closed({ id: { anyOf: [{ type: 'string' }, { type: 'integer' }] } }))
    expect(parameters.properties).toEqual({ id: { anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] } })
  })

  it('makes nested closed objects and array items strict, with a plan reaching them', () => {
    const schema = closed({ files: { type: 'array', items: closed({ path: { type: 'string' }, mode: { type: 'string' } }, ['path']) } }, ['files'])
    const { parameters, restore } = strictPlan(schema)
    expect(parameters.properties).toEqual({
      files: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, mode: { type: ['string', 'null'] } }, required: ['path', 'mode'], additionalProperties: false } },
    })
    expect(restoreStrictArguments({ files: [{ path: 'a', mode: null }, { path: 'b', mode: 'x' }] }, restore as StrictRestore)).toEqual({ files: [{ path: 'a' }, { path: 'b', mode: 'x' }] })
  })

  it('needs no plan when every property is required', () => {
    expect(strictPlan(closed({ a: { type: 'string' } }, ['a'])).restore).toBeUndefined()
  })

  it.each([
    ['an open object', { type: 'object', properties: { a: { type: 'string' } } }, '$: an open object (additionalProperties is not false) cannot be strict'],
    ['a nested open object', closed({ o: { type: 'object' } }, ['o']), '$.o: an open object (additionalProperties is not false) cannot be strict'],
    ['a value of any type', closed({ v: {} }, ['v']), '$.v: a value of any type cannot be strict'],
    ['oneOf', closed({ v: { oneOf: [{ type: 'string' }, { type: 'integer' }] } }, ['v']), '$.v: strict mode does not take "oneOf"'],
    ['default', closed({ v: { type: 'integer', default: 1 } }), '$.v: strict mode does not take "default"'],
    ['pattern', closed({ v: { type: 'string', pattern: '^a' } }, ['v']), '$.v: strict mode does not take "pattern"'],
    ['an array without items', closed({ v: { type: 'array' } }, ['v']), '$.v: an array needs one items schema to be strict'],
    ['an optional that accepts null', closed({ v: { type: ['string', 'null'] } }), '$.v: optional and already accepts null, so an absent value and null could not be told apart'],
    ['an optional inside anyOf', closed({ v: { anyOf: [closed({ a: { type: 'string' } }), { type: 'string' }] } }, ['v']), '$.v.anyOf[0]: an optional property inside anyOf cannot be mapped back from null'],
  ] as [string, ObjectJsonSchema, string][])('keeps a schema with %s non-strict, naming the place', (_label, schema, expected) => {
    expect(reason(schema)).toBe(expected)
  })

  it('keeps a schema nested deeper than OpenAI allows non-strict', () => {
    let schema: ObjectJsonSchema = closed({ leaf: { type: 'string' } }, ['leaf'])
    for (let depth = 1; depth < STRICT_LIMITS.maxObjectDepth + 1; depth++) schema = closed({ next: schema }, ['next'])
    expect(reason(schema)).toMatch(/objects nested deeper than 10 levels cannot be strict/)
  })

  it('keeps a schema with more enum values than OpenAI allows non-strict', () => {
    const values = Array.from({ length: STRICT_LIMITS.maxEnumValues + 1 }, (_, i) => `v${i}`)
    expect(reason(closed({ v: { type: 'string', enum: values } }, ['v']))).toBe('$.v: more than 1000 enum values in one strict schema')
  })

  it('leaves the tool schema it was given unchanged', () => {
    const schema = closed({ a: { type: 'string' } })
    const before = structuredClone(schema)
    strictPlan(schema)
    expect(schema).toEqual(before)
  })
})

describe('restoreStrictArguments', () => {
  const plan = strictPlan(closed({ a: { type: 'string' }, b: { type: ['string', 'null'] } }, ['b'])).restore as StrictRestore

  it('keeps a null the schema allows for a required property', () => {
    expect(restoreStrictArguments({ a: null, b: null }, plan)).toEqual({ b: null })
  })

  it('leaves a value without the planned shape for the tool schema to report', () => {
    expect(restoreStrictArguments([1, 2], plan)).toEqual([1, 2])
    expect(restoreStrictArguments('text', plan)).toBe('text')
  })

  it('keeps a "__proto__" key as an own property and does not touch the frozen input', () => {
    const input = parseJsonText('{"__proto__":{"x":1},"a":null,"b":"y"}')
    const out = restoreStrictArguments(input, plan) as Record<string, unknown>
    expect(Object.keys(out)).toEqual(['__proto__', 'b'])
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype)
    expect(Object.isFrozen(input)).toBe(true)
  })

  it('turns every value of a strict schema back into a value the original schema accepts', () => {
    // Property: for closed objects of optional scalars, a strict answer (each optional present or
    // null) restored is valid against the original schema and keeps exactly the non-null keys.
    const names = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { minLength: 1 })
    fc.assert(
      fc.property(names, fc.array(fc.option(fc.string(), { nil: null }), { minLength: 5, maxLength: 5 }), (keys, values) => {
        const schema = closed(Object.fromEntries(keys.map((key) => [key, { type: 'string' }])))
        const { restore } = strictPlan(schema)
        const answer: Record<string, JsonValue> = Object.fromEntries(keys.map((key, i) => [key, values[i] ?? null]))
        const restored = restoreStrictArguments(answer, restore as StrictRestore) as Record<string, JsonValue>
        expect(validateJsonSchemaValue(schema, restored)).toEqual([])
        expect(Object.keys(restored)).toEqual(keys.filter((_key, i) => values[i] !== null))
      }),
    )
  })
})
