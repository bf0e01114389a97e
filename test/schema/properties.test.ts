import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { JsonSchemaNode } from '../../src/schema/types.ts'
import { validateJsonSchemaValue } from '../../src/schema/validate.ts'

const schemas: JsonSchemaNode[] = [
  {},
  { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false },
  { type: 'array', items: { oneOf: [{ type: 'integer' }, { type: 'string', enum: ['x', 'y'] }] } },
  { oneOf: [{ type: 'null' }, { type: 'object' }, { type: 'array' }] },
]

function withKey(key: string, value: unknown): Record<string, unknown> {
  const object: Record<string, unknown> = {}
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true })
  return object
}

describe('validateJsonSchemaValue properties', () => {
  test('never throws, whatever the value', () => {
    fc.assert(
      fc.property(fc.constantFrom(...schemas), fc.anything({ withMap: true, withSet: true, withDate: true, withTypedArray: true, withSparseArray: true, withBigInt: true, withNullPrototype: true }), (schema, value) => {
        expect(Array.isArray(validateJsonSchemaValue(schema, value))).toBe(true)
      }),
    )
  })

  test('accepts every lossless JSON value against the unconstrained schema', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (raw) => {
        const value: unknown = JSON.parse(JSON.stringify(raw))
        expect(validateJsonSchemaValue({}, value)).toEqual([])
      }),
    )
  })

  test('enforces a declared property whatever its name', () => {
    fc.assert(
      fc.property(
        fc.string().filter((key) => key !== '__proto__'),
        (key) => {
          const schema: JsonSchemaNode = { type: 'object', properties: withKey(key, { type: 'string' }) as Record<string, JsonSchemaNode>, required: [key], additionalProperties: false }
          expect(validateJsonSchemaValue(schema, withKey(key, 'ok'))).toEqual([])
          expect(validateJsonSchemaValue(schema, withKey(key, 1))).toHaveLength(1)
          expect(validateJsonSchemaValue(schema, {})).toHaveLength(1)
        },
      ),
    )
  })
})
