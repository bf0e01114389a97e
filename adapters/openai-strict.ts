/**
 * OpenAI strict function schemas, decided per tool. Strict mode makes the model follow the schema
 * exactly, but only for a subset: every object closed (`additionalProperties: false`) with every
 * property listed in `required`. A tool's parameters qualify when every node uses only keywords
 * that subset is known to take (`type`, `properties`, `required`, `additionalProperties: false`,
 * one `items` schema, `enum`, `const`, `anyOf`, `description`, `title`) within OpenAI's limits;
 * anything else (an open object, a value of any type, `oneOf`, `default`, `pattern`, a tuple, ...)
 * sends the schema unchanged with `strict: false`.
 *
 * The transformation: an optional property becomes required and nullable (`type: [T, "null"]`,
 * or `anyOf: [S, {type: "null"}]`), so the model sends `null` where it means "absent". The
 * {@link StrictRestore} plan maps those `null`s back to absent keys before the tool's own schema
 * sees them. A tool is kept non-strict when that mapping could be wrong: an optional property that
 * already accepts `null` (absent and null could not be told apart), or an optional property
 * inside an `anyOf` branch (which branch the value took is unknown).
 */
import type { JsonValue, ObjectJsonSchema } from '../src/index.ts'

/** OpenAI's documented limits of a strict schema. */
export const STRICT_LIMITS = { maxObjectDepth: 10, maxProperties: 5000, maxEnumValues: 1000 } as const

const STRICT_KEYWORDS: ReadonlySet<string> = new Set(['type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf', 'description', 'title'])

/** How to map a strict call's arguments back: which `null`s mean "absent", at every depth. */
export type StrictRestore =
  | { readonly kind: 'object'; readonly optional: ReadonlySet<string>; readonly properties: ReadonlyMap<string, StrictRestore> }
  | { readonly kind: 'array'; readonly items: StrictRestore }

/** One tool's parameters as OpenAI gets them. */
export type OpenAIParameters =
  | {
      readonly strict: true
      /** The strict schema: closed objects, every property required, optionals nullable. */
      readonly parameters: Record<string, unknown>
      /** Undefined when no optional property was made nullable (arguments pass unchanged). */
      readonly restore: StrictRestore | undefined
    }
  | {
      readonly strict: false
      /** The tool's own schema, unchanged. */
      readonly parameters: Record<string, unknown>
      /** Why strict mode cannot take this schema, with the path of the first reason. */
      readonly reason: string
    }

class NotStrict extends Error {}

interface Budget {
  properties: number
  enumValues: number
}

type Node = Record<string, unknown>

/** Decide strict mode for one tool's parameters and build what OpenAI gets. Never throws. */
export function openaiParameters(schema: ObjectJsonSchema): OpenAIParameters {
  try {
    const budget: Budget = { properties: 0, enumValues: 0 }
    if ((schema as unknown as Node).anyOf !== undefined) throw new NotStrict('$: the root of a strict schema must be an object, not anyOf')
    const { node, restore } = convert(schema, '$', 0, budget)
    if (node.type !== 'object') throw new NotStrict('$: the root of a strict schema must be an object')
    return { strict: true, parameters: node, restore }
  } catch (error) {
    if (!(error instanceof NotStrict)) throw error
    return { strict: false, parameters: schema as unknown as Record<string, unknown>, reason: error.message }
  }
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function typesOf(node: Node): readonly unknown[] | undefined {
  const { type } = node
  return type === undefined ? undefined : Array.isArray(type) ? type : [type]
}

function convert(schema: unknown, at: string, depth: number, budget: Budget): { node: Node; restore: StrictRestore | undefined } {
  if (!isNode(schema)) throw new NotStrict(`${at}: a boolean schema cannot be strict`)
  for (const key of Object.keys(schema)) {
    if (!STRICT_KEYWORDS.has(key)) throw new NotStrict(`${at}: strict mode does not take "${key}"`)
  }
  if (Array.isArray(schema.enum)) {
    budget.enumValues += schema.enum.length
    if (budget.enumValues > STRICT_LIMITS.maxEnumValues) throw new NotStrict(`${at}: more than ${STRICT_LIMITS.maxEnumValues} enum values in one strict schema`)
  }
  if (schema.anyOf !== undefined) {
    if (schema.type !== undefined || !Array.isArray(schema.anyOf)) throw new NotStrict(`${at}: anyOf beside type cannot be strict`)
    const anyOf = schema.anyOf.map((branch, index) => {
      const converted = convert(branch, `${at}.anyOf[${index}]`, depth, budget)
      // Which branch a value took is unknown, so its nulls could not be mapped back safely.
      if (converted.restore !== undefined) throw new NotStrict(`${at}.anyOf[${index}]: an optional property inside anyOf cannot be mapped back from null`)
      return converted.node
    })
    return { node: { ...schema, anyOf }, restore: undefined }
  }
  const types = typesOf(schema)
  if (types === undefined) {
    if (schema.enum === undefined && schema.const === undefined) throw new NotStrict(`${at}: a value of any type cannot be strict`)
    return { node: schema, restore: undefined }
  }
  if (types.includes('object')) return convertObject(schema, types, at, depth, budget)
  if (types.includes('array')) {
    if (!isNode(schema.items)) throw new NotStrict(`${at}: an array needs one items schema to be strict`)
    const items = convert(schema.items, `${at}[]`, depth, budget)
    return { node: { ...schema, items: items.node }, restore: items.restore === undefined ? undefined : { kind: 'array', items: items.restore } }
  }
  return { node: schema, restore: undefined }
}

function convertObject(schema: Node, types: readonly unknown[], at: string, depth: number, budget: Budget): { node: Node; restore: StrictRestore | undefined } {
  if (types.length > 1 && !(types.length === 2 && types.includes('null'))) throw new NotStrict(`${at}: an object that may be another type cannot be strict`)
  if (schema.additionalProperties !== false) throw new NotStrict(`${at}: an open object (additionalProperties is not false) cannot be strict`)
  if (depth + 1 > STRICT_LIMITS.maxObjectDepth) throw new NotStrict(`${at}: objects nested deeper than ${STRICT_LIMITS.maxObjectDepth} levels cannot be strict`)
  const properties = isNode(schema.properties) ? schema.properties : {}
  const required = new Set(Array.isArray(schema.required) ? (schema.required as unknown[]) : [])
  const names = Object.keys(properties)
  budget.properties += names.length
  if (budget.properties > STRICT_LIMITS.maxProperties) throw new NotStrict(`${at}: more than ${STRICT_LIMITS.maxProperties} properties in one strict schema`)
  const outProperties: Node = {}
  const optional = new Set<string>()
  const nested = new Map<string, StrictRestore>()
  for (const name of names) {
    const path = `${at}.${name}`
    const converted = convert(properties[name], path, depth + 1, budget)
    if (converted.restore !== undefined) nested.set(name, converted.restore)
    if (required.has(name)) {
      define(outProperties, name, converted.node)
      continue
    }
    if (admitsNull(converted.node)) throw new NotStrict(`${path}: optional and already accepts null, so an absent value and null could not be told apart`)
    define(outProperties, name, nullable(converted.node))
    optional.add(name)
  }
  const node: Node = { ...schema, properties: outProperties, required: names, additionalProperties: false }
  const restore: StrictRestore | undefined = optional.size === 0 && nested.size === 0 ? undefined : { kind: 'object', optional, properties: nested }
  return { node, restore }
}

/** Whether a (strict-eligible) node accepts `null`. */
function admitsNull(node: Node): boolean {
  if (typesOf(node)?.includes('null') === true) return true
  if (Array.isArray(node.enum) && node.enum.includes(null)) return true
  if ('const' in node && node.const === null) return true
  if (Array.isArray(node.anyOf)) return node.anyOf.some((branch) => isNode(branch) && admitsNull(branch))
  return false
}

/** The node, also accepting `null`. */
function nullable(node: Node): Node {
  if (Array.isArray(node.anyOf)) return { ...node, anyOf: [...node.anyOf, { type: 'null' }] }
  if ('const' in node) return { anyOf: [node, { type: 'null' }] }
  const types = typesOf(node)
  const out: Node = { ...node }
  if (types !== undefined) out.type = [...types, 'null']
  if (Array.isArray(node.enum)) out.enum = [...node.enum, null]
  return out
}

/**
 * Undo the strict transformation on parsed arguments: a `null` the model sent for an optional
 * property becomes an absent key, at every depth the plan names. Values that do not have the
 * planned shape pass unchanged (the tool's own schema then reports them). Returns a new value;
 * the input (frozen JSON from the boundary) is not modified.
 */
export function restoreStrictArguments(value: JsonValue, restore: StrictRestore): JsonValue {
  if (restore.kind === 'array') {
    return Array.isArray(value) ? value.map((item) => restoreStrictArguments(item, restore.items)) : value
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value
  const out: Record<string, JsonValue> = {}
  for (const key of Object.keys(value)) {
    const item = value[key] as JsonValue
    if (item === null && restore.optional.has(key)) continue
    const nested = restore.properties.get(key)
    define(out, key, nested === undefined ? item : restoreStrictArguments(item, nested))
  }
  return out
}

/** Set an own data property; unlike assignment, a "__proto__" key stays a key. */
function define(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}
