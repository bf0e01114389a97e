import { describe, expectTypeOf, test } from 'vitest'
import type { JsonValue } from '../../src/json-boundary.ts'
import type { InferArgs, InferValue, ParameterPropertySpec, ParameterSchemaSpec, ValueSchemaSpec } from '../../src/schema/dsl.ts'
import type { ToolDefinition } from '../../src/tool.ts'

/** Wraps `S` in `N` array specs, the way an author would nest them by hand. */
type NestArrays<S, N extends number, Acc extends unknown[] = []> = Acc['length'] extends N
  ? S
  : NestArrays<{ readonly type: 'array'; readonly items: S }, N, [...Acc, unknown]>

/** `T` inside `N` array types. */
type ArrayOf<T, N extends number, Acc extends unknown[] = []> = Acc['length'] extends N ? T : ArrayOf<T[], N, [...Acc, unknown]>

/** A self-referential spec type: without the level bound, inferring it never terminates. */
interface TreeSpec {
  readonly type: 'object'
  readonly additionalProperties: false
  readonly properties: {
    readonly label: { readonly type: 'string'; readonly required: true }
    readonly children: { readonly type: 'array'; readonly items: TreeSpec }
  }
}

interface SelfArray {
  readonly type: 'array'
  readonly items: SelfArray
}

describe('InferValue', () => {
  test('scalars infer their TypeScript primitive', () => {
    expectTypeOf<InferValue<{ type: 'string' }>>().toEqualTypeOf<string>()
    expectTypeOf<InferValue<{ type: 'number' }>>().toEqualTypeOf<number>()
    expectTypeOf<InferValue<{ type: 'integer' }>>().toEqualTypeOf<number>()
    expectTypeOf<InferValue<{ type: 'boolean' }>>().toEqualTypeOf<boolean>()
    expectTypeOf<InferValue<{ type: 'null' }>>().toEqualTypeOf<null>()
  })

  test('enum infers a literal union and const a single literal', () => {
    expectTypeOf<InferValue<{ type: 'string'; enum: readonly ['fast', 'slow'] }>>().toEqualTypeOf<'fast' | 'slow'>()
    expectTypeOf<InferValue<{ type: 'integer'; enum: readonly [1, 2, 3] }>>().toEqualTypeOf<1 | 2 | 3>()
    expectTypeOf<InferValue<{ type: 'boolean'; const: true }>>().toEqualTypeOf<true>()
    expectTypeOf<InferValue<{ type: 'string'; const: 'x' }>>().toEqualTypeOf<'x'>()
  })

  test('json infers JsonValue', () => {
    expectTypeOf<InferValue<{ type: 'json'; description: 'anything' }>>().toEqualTypeOf<JsonValue>()
  })

  test('arrays infer their item type, and arrays without items hold any JSON', () => {
    expectTypeOf<InferValue<{ type: 'array'; items: { type: 'string' } }>>().toEqualTypeOf<string[]>()
    expectTypeOf<InferValue<{ type: 'array' }>>().toEqualTypeOf<JsonValue[]>()
  })

  test('a closed object has exactly its keys, required ones required', () => {
    type Value = InferValue<{
      type: 'object'
      additionalProperties: false
      properties: { id: { type: 'integer'; required: true }; note: { type: 'string' } }
    }>
    expectTypeOf<Value>().toEqualTypeOf<{ id: number; note?: string }>()
  })

  test('an open object adds a JsonValue index signature', () => {
    type Value = InferValue<{ type: 'object'; additionalProperties: true; properties: { id: { type: 'integer'; required: true } } }>
    expectTypeOf<Value>().toEqualTypeOf<{ [key: string]: JsonValue; id: number }>()
  })

  test('an object without properties is any JSON object when open and empty when closed', () => {
    expectTypeOf<InferValue<{ type: 'object'; additionalProperties: true }>>().toEqualTypeOf<{ [key: string]: JsonValue }>()
    expectTypeOf<InferValue<{ type: 'object'; additionalProperties: false }>>().toEqualTypeOf<{ [key: string]: never }>()
    // An empty properties map says the same: not `{}`, which would accept a string.
    expectTypeOf<InferValue<{ type: 'object'; properties: {}; additionalProperties: false }>>().toEqualTypeOf<{ [key: string]: never }>()
    expectTypeOf<'text'>().not.toMatchTypeOf<InferValue<{ type: 'object'; properties: {}; additionalProperties: false }>>()
  })

  test('oneOf infers the union of its branches', () => {
    type Value = InferValue<{ oneOf: readonly [{ type: 'string' }, { type: 'array'; items: { type: 'integer'; enum: readonly [7] } }] }>
    expectTypeOf<Value>().toEqualTypeOf<string | 7[]>()
  })

  test('sixteen nested containers infer exactly', () => {
    expectTypeOf<InferValue<NestArrays<{ type: 'string' }, 16>>>().toEqualTypeOf<ArrayOf<string, 16>>()
  })

  test('the seventeenth nested container falls back to JsonValue', () => {
    expectTypeOf<InferValue<NestArrays<{ type: 'string' }, 17>>>().toEqualTypeOf<ArrayOf<JsonValue, 16>>()
  })

  test('a value deeper than sixteen containers is not exact any more', () => {
    expectTypeOf<InferValue<NestArrays<{ type: 'string' }, 17>>>().not.toEqualTypeOf<ArrayOf<string, 17>>()
  })

  test('a self-referential array spec stops at sixteen levels instead of exhausting the compiler', () => {
    expectTypeOf<InferValue<SelfArray>>().toEqualTypeOf<ArrayOf<JsonValue, 16>>()
  })

  test('a recursive tree spec infers exact levels and then JsonValue', () => {
    type Tree = InferValue<TreeSpec>
    expectTypeOf<Tree['label']>().toEqualTypeOf<string>()
    type Child = NonNullable<Tree['children']>[number]
    expectTypeOf<Child['label']>().toEqualTypeOf<string>()
    // Objects and arrays alternate: tree n sits at level 2n - 1, so the eighth tree (level 15) and
    // its children array (level 16) are exact and the ninth tree (level 17) is JsonValue.
    type Next<T extends { children?: unknown }> = NonNullable<T['children']> extends readonly (infer C)[] ? C : never
    type Eighth = Next<Next<Next<Next<Next<Next<Next<Tree>>>>>>>
    expectTypeOf<Eighth['label']>().toEqualTypeOf<string>()
    expectTypeOf<Eighth['children']>().toEqualTypeOf<JsonValue[] | undefined>()
  })

  test('the widened ValueSchemaSpec infers a JSON-compatible type without blowing up', () => {
    expectTypeOf<InferValue<ValueSchemaSpec>>().toExtend<JsonValue>()
  })
})

describe('InferArgs', () => {
  test('required properties become required keys and the others optional', () => {
    type Args = InferArgs<{ path: { type: 'string'; required: true }; limit: { type: 'integer' } }>
    expectTypeOf<Args>().toEqualTypeOf<{ path: string; limit?: number }>()
  })

  test('nested objects keep literal enums and their own openness', () => {
    type Args = InferArgs<{
      opts: {
        type: 'object'
        additionalProperties: false
        required: true
        properties: { mode: { type: 'string'; enum: readonly ['a', 'b']; required: true } }
      }
    }>
    expectTypeOf<Args>().toEqualTypeOf<{ opts: { mode: 'a' | 'b' } }>()
  })

  test('infers each parameter like a value root (InferProperties<S, []>): exact to 16 containers below the map', () => {
    type Args = InferArgs<{ deep: NestArrays<{ type: 'string' }, 16> & { required: true } }>
    expectTypeOf<Args>().toEqualTypeOf<{ deep: ArrayOf<string, 16> }>()
    expectTypeOf<Args['deep']>().toEqualTypeOf<InferValue<NestArrays<{ type: 'string' }, 16>>>()
    type Deeper = InferArgs<{ deep: NestArrays<{ type: 'string' }, 17> & { required: true } }>
    expectTypeOf<Deeper>().toEqualTypeOf<{ deep: ArrayOf<JsonValue, 16> }>()
  })

  test('the widened ParameterSchemaSpec infers a record of optional JSON values', () => {
    expectTypeOf<InferArgs<ParameterSchemaSpec>>().toExtend<{ [key: string]: JsonValue | undefined }>()
  })
})

describe("the spec's type-equiv blocks", () => {
  test('ParameterPropertySpec, ParameterSchemaSpec and ToolDefinition.timeoutMs are the spec types exactly, modifiers included', () => {
    type SpecParameterPropertySpec = ValueSchemaSpec & { required?: true }
    type SpecParameterSchemaSpec = { [key: string]: SpecParameterPropertySpec; [key: symbol]: never }
    expectTypeOf<ParameterPropertySpec>().toEqualTypeOf<SpecParameterPropertySpec>()
    expectTypeOf<ParameterSchemaSpec>().toEqualTypeOf<SpecParameterSchemaSpec>()
    expectTypeOf<Pick<ToolDefinition, 'timeoutMs'>>().toEqualTypeOf<{ timeoutMs?: number }>()
  })
})
