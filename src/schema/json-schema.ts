import { isProxy } from 'node:util/types'
import { ToolError, ToolErrorCode } from '../errors.ts'
import { isFrozenJson, JsonBoundaryError, snapshotJson } from '../json-boundary.ts'
import type { JsonValue } from '../json-boundary.ts'
import type { JsonSchemaNode, JsonSchemaScalar, JsonSchemaType, ObjectJsonSchema } from './types.ts'

/**
 * The deepest schema nesting the library accepts, counting the root node as level 1 and every
 * `properties` entry, `items` and `oneOf` branch as one more level. Deeper schemas are rejected with
 * a clear error instead of reaching the validator compiler, which recurses once per level.
 */
export const MAX_SCHEMA_DEPTH = 64

/** One problem found in a schema declaration: where it is and what is wrong with it. */
export interface SchemaDefinitionIssue {
  /** Path of the offending place inside the schema, `$` for the root (`$.properties.name.type`). */
  readonly path: string
  /** What is wrong, in words an author can act on. */
  readonly message: string
}

/**
 * A raw JSON Schema is outside the enforced subset or malformed (`UNSUPPORTED_SCHEMA`). `issues`
 * lists every bad path found in one pass; the message lists them too.
 */
export class JsonSchemaError extends ToolError {
  readonly issues: readonly SchemaDefinitionIssue[]

  constructor(issues: readonly SchemaDefinitionIssue[], subject = 'JSON Schema') {
    super(ToolErrorCode.UNSUPPORTED_SCHEMA, `Unsupported ${subject}: ${describeDefinitionIssues(issues)}`)
    this.issues = Object.freeze(issues.map((issue) => Object.freeze({ ...issue })))
  }
}

/** Joins definition issues into one message line (`path: message; path: message`). */
export function describeDefinitionIssues(issues: readonly SchemaDefinitionIssue[]): string {
  return issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** Appends an object key to a `$`-rooted path: `.name` for identifiers, `["a b"]` otherwise. */
export function appendKey(path: string, key: string): string {
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`
}

/** Appends an array index to a `$`-rooted path. */
export function appendIndex(path: string, index: number): string {
  return `${path}[${index}]`
}

/** Re-roots a `$`-rooted path found inside a nested value at `base`. */
export function rebasePath(base: string, inner: string): string {
  return inner.startsWith('$') ? base + inner.slice(1) : base
}

/** @internal Short description of a declared value for issue messages; never recurses. */
export function describeDeclared(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  switch (typeof value) {
    case 'string':
      return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`
    case 'number':
      return Object.is(value, -0) ? 'number -0' : `number ${String(value)}`
    case 'object':
      return 'an object'
    default:
      return typeof value
  }
}

/**
 * @internal Reads a schema record by its own enumerable string data keys, never running a getter or
 * a proxy trap. Reports every other shape (arrays, class instances, proxies, symbol keys,
 * non-enumerable keys, accessors) into `issues` and skips those entries.
 * @returns the entries in own-key order, or `undefined` when `value` is not a plain record.
 */
export function readRecord(
  value: unknown,
  path: string,
  issues: SchemaDefinitionIssue[],
  what: string,
): Array<[string, unknown]> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || isProxy(value)) {
    issues.push({ path, message: `expected ${what} (a plain object), found ${isProxy(value) ? 'a proxy' : describeDeclared(value)}` })
    return undefined
  }
  const proto: unknown = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) {
    issues.push({ path, message: `expected ${what} (a plain object), found an instance of another class` })
    return undefined
  }
  const entries: Array<[string, unknown]> = []
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key === 'symbol') {
      issues.push({ path, message: `symbol key ${String(key)} is not allowed in a schema` })
      continue
    }
    const descriptor = Object.getOwnPropertyDescriptor(value, key)
    if (descriptor === undefined) continue
    const at = appendKey(path, key)
    if (!('value' in descriptor)) {
      issues.push({ path: at, message: 'accessor properties are not allowed in a schema; use a plain data property' })
    } else if (descriptor.enumerable !== true) {
      issues.push({ path: at, message: 'non-enumerable properties are not allowed in a schema' })
    } else {
      entries.push([key, descriptor.value])
    }
  }
  return entries
}

/**
 * @internal Reads a schema array: a dense, built-in array of data elements, never running a getter
 * or a proxy trap. Reports holes, accessors and foreign shapes into `issues`.
 * @returns the elements, or `undefined` when `value` is not a usable array.
 */
export function readDenseArray(
  value: unknown,
  path: string,
  issues: SchemaDefinitionIssue[],
  what: string,
  /** When the array is refused, its readable elements and their paths, to be checked all the same. */
  readable?: [unknown, string][],
): unknown[] | undefined {
  if (!Array.isArray(value) || isProxy(value)) {
    issues.push({ path, message: `expected ${what}, found ${isProxy(value) ? 'a proxy' : describeDeclared(value)}` })
    return undefined
  }
  if (Object.getPrototypeOf(value) !== Array.prototype) {
    issues.push({ path, message: `expected ${what} (a built-in array), found an array subclass` })
    return undefined
  }
  const items: unknown[] = []
  let ok = true
  for (const key of Reflect.ownKeys(value)) {
    if (key === 'length') continue
    const index = typeof key === 'string' ? Number(key) : Number.NaN
    if (!(Number.isInteger(index) && String(index) === key && index >= 0)) {
      issues.push({ path, message: `array has an extra own property ${String(key)}; schema arrays hold only elements` })
      ok = false
    }
  }
  const length = value.length
  for (let index = 0; index < length; index += 1) {
    const descriptor = Object.getOwnPropertyDescriptor(value, index)
    const at = appendIndex(path, index)
    if (descriptor === undefined) {
      issues.push({ path: at, message: 'hole in a sparse array; schema arrays must be dense' })
      ok = false
    } else if (!('value' in descriptor)) {
      issues.push({ path: at, message: 'accessor elements are not allowed in a schema' })
      ok = false
    } else {
      items.push(descriptor.value)
      readable?.push([descriptor.value, at])
    }
  }
  return ok ? items : undefined
}

/** @internal A `const` that is not among the node's `enum` values: nothing could match the node. */
export function constOutsideEnum(node: Record<string, unknown>, path: string, issues: SchemaDefinitionIssue[]): void {
  const values = node['enum']
  if (!Object.hasOwn(node, 'const') || !Array.isArray(values) || values.includes(node['const'])) return
  issues.push({ path: `${path}.const`, message: `const ${JSON.stringify(node['const'])} is not one of the enum values: no value could match` })
}

/**
 * @internal Copies an annotation (`default`, `examples`) through the JSON boundary, or reports why
 * it is not lossless JSON.
 */
export function readAnnotationJson(value: unknown, path: string, issues: SchemaDefinitionIssue[]): JsonValue | undefined {
  try {
    return snapshotJson(value, path)
  } catch (error) {
    const inner = error instanceof JsonBoundaryError ? error.path : '$'
    const reason = error instanceof JsonBoundaryError ? error.reason : 'not lossless JSON'
    issues.push({ path: rebasePath(path, inner), message: `annotation must be lossless JSON: ${reason}` })
    return undefined
  }
}

/** @internal True when `value` is a scalar of the given JSON Schema type (a lossless number). */
export function scalarMatchesType(value: unknown, type: JsonSchemaType | undefined): boolean {
  if (typeof value === 'number' && (!Number.isFinite(value) || Object.is(value, -0))) return false
  switch (type) {
    case undefined:
      return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    case 'string':
      return typeof value === 'string'
    case 'number':
      return typeof value === 'number'
    case 'integer':
      return Number.isInteger(value)
    case 'boolean':
      return typeof value === 'boolean'
    case 'null':
      return value === null
    default:
      return false
  }
}

/** @internal Names the scalar values a node of `type` may list in `enum`/`const`. */
export function scalarTypeWord(type: JsonSchemaType | undefined): string {
  switch (type) {
    case undefined:
      return 'a JSON scalar (string, finite number, boolean or null)'
    case 'integer':
      return 'an integer'
    case 'number':
      return 'a finite number (not -0)'
    case 'null':
      return 'null'
    default:
      return `a ${type}`
  }
}

/**
 * @internal Checks an `enum` list against a node type: non-empty, dense, scalar, of the node's
 * type, no duplicates.
 */
export function readEnum(
  value: unknown,
  type: JsonSchemaType | undefined,
  path: string,
  issues: SchemaDefinitionIssue[],
): JsonSchemaScalar[] | undefined {
  const items = readDenseArray(value, path, issues, 'an array of allowed values')
  if (items === undefined) return undefined
  if (items.length === 0) {
    issues.push({ path, message: 'enum must list at least one value' })
    return undefined
  }
  const seen = new Set<unknown>()
  let ok = true
  items.forEach((item, index) => {
    const at = appendIndex(path, index)
    if (!scalarMatchesType(item, type)) {
      issues.push({ path: at, message: `expected ${scalarTypeWord(type)}, found ${describeDeclared(item)}` })
      ok = false
    } else if (seen.has(item)) {
      issues.push({ path: at, message: `duplicate enum value ${JSON.stringify(item)}` })
      ok = false
    }
    seen.add(item)
  })
  return ok ? (items as JsonSchemaScalar[]) : undefined
}

/** @internal Checks a `const` value against a node type. */
export function readConst(
  value: unknown,
  type: JsonSchemaType | undefined,
  path: string,
  issues: SchemaDefinitionIssue[],
): value is JsonSchemaScalar {
  if (scalarMatchesType(value, type)) return true
  issues.push({ path, message: `expected ${scalarTypeWord(type)}, found ${describeDeclared(value)}` })
  return false
}

/** @internal Defines an own enumerable data property, so keys like `__proto__` stay ordinary keys. */
export function defineEntry(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/**
 * @internal The validator skips a property schema named `__proto__`, so declaring one would admit
 * a constraint it never enforces.
 */
export const UNENFORCEABLE_PROTO_KEY = 'a property named "__proto__" cannot be enforced; rename it'

const JSON_SCHEMA_TYPES: ReadonlySet<string> = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'])
const SCALAR_TYPES: ReadonlySet<string> = new Set(['string', 'number', 'integer', 'boolean', 'null'])
const KEYWORDS: ReadonlySet<string> = new Set([
  'type',
  'oneOf',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'description',
  'title',
  'default',
  'examples',
])

function unsupportedKeywordMessage(keyword: string): string {
  if (keyword === '$ref' || keyword === '$defs' || keyword === 'definitions') {
    return `unsupported keyword "${keyword}": references are not supported; inline the schema`
  }
  if (keyword === 'anyOf' || keyword === 'allOf') return `unsupported keyword "${keyword}"; use oneOf`
  return `unsupported keyword "${keyword}" (the enforced subset never admits a keyword it does not enforce)`
}

interface RawFrame {
  readonly value: unknown
  readonly path: string
  readonly depth: number
  readonly place: (node: JsonSchemaNode) => void
}

/**
 * @internal Where a node checked only for its issues goes: nowhere (a schema with issues builds no
 * copy). The DSL's walker uses it too.
 */
export const discard = (): void => undefined

/** Schemas this module and the DSL compiler built: deep-frozen, so their identity stands for their content. */
const builtSchemas = new WeakSet<object>()

/** @internal Records `node` as a deep-frozen schema built by this library. */
export function markBuiltSchema(node: object): void {
  builtSchemas.add(node)
}

/**
 * @internal True for a schema that cannot change: one this library built, or a deep-frozen JSON
 * value from the JSON boundary. Compiled forms may be cached by such a schema's identity; a
 * caller's own object may be edited between calls and must be read again each time.
 */
export function isImmutableSchema(value: object): boolean {
  return builtSchemas.has(value) || isFrozenJson(value)
}

/**
 * @internal Per caller-owned source object, the copy compiled from it last time. {@link sameAsLast}
 * hands that copy back while a fresh compilation reads the same, so an unchanged source keeps one
 * identity (and one compiled validator), and an edited one is compiled and enforced anew.
 */
export type CompiledMemo<T> = WeakMap<object, { readonly text: string; readonly copy: T }>

/** @internal See {@link CompiledMemo}. `fresh` is a built schema (depth-bounded plain JSON). */
export function sameAsLast<T extends object>(memo: CompiledMemo<T>, source: object, fresh: T, text = JSON.stringify(fresh)): T {
  const last = memo.get(source)
  if (last !== undefined && last.text === text) return last.copy
  memo.set(source, { text, copy: fresh })
  return fresh
}

/**
 * @internal Walks a raw schema iteratively, collecting every issue, and builds a fresh deep-frozen
 * copy holding only the checked keywords. The copy is what a validator compiler may see.
 */
export function checkJsonSchema(schema: unknown): { readonly node: JsonSchemaNode | undefined; readonly issues: SchemaDefinitionIssue[] } {
  const issues: SchemaDefinitionIssue[] = []
  const created: object[] = []
  let root: JsonSchemaNode | undefined
  const stack: RawFrame[] = [{ value: schema, path: '$', depth: 1, place: (node) => (root = node) }]
  // Schemas checked only for their issues, pushed in reverse so they are reported in declaration order.
  const checkOnly = (children: readonly (readonly [unknown, string])[], depth: number): void => {
    for (let index = children.length - 1; index >= 0; index -= 1) {
      const [value, path] = children[index] as readonly [unknown, string]
      stack.push({ value, path, depth, place: discard })
    }
  }
  while (stack.length > 0) {
    const frame = stack.pop() as RawFrame
    const { path } = frame
    if (frame.depth > MAX_SCHEMA_DEPTH) {
      issues.push({ path, message: `schema nested deeper than ${MAX_SCHEMA_DEPTH} levels` })
      continue
    }
    if (typeof frame.value === 'boolean') {
      issues.push({ path, message: 'boolean schemas are not supported; use {} for any JSON value' })
      continue
    }
    const entries = readRecord(frame.value, path, issues, 'a schema node')
    if (entries === undefined) continue
    const fields = new Map(entries)
    const node: Record<string, unknown> = {}
    created.push(node)
    frame.place(node as JsonSchemaNode)

    let type: JsonSchemaType | undefined
    if (fields.has('type')) {
      const raw = fields.get('type')
      if (typeof raw === 'string' && JSON_SCHEMA_TYPES.has(raw)) {
        type = raw as JsonSchemaType
        node['type'] = type
      } else if (Array.isArray(raw)) {
        issues.push({ path: `${path}.type`, message: 'type arrays are not supported; use oneOf with one branch per type' })
      } else {
        issues.push({
          path: `${path}.type`,
          message: `expected one of "object" | "array" | "string" | "number" | "integer" | "boolean" | "null", found ${describeDeclared(raw)}`,
        })
      }
    }
    const typeKnown = !fields.has('type') || type !== undefined

    for (const [keyword, value] of entries) {
      const at = appendKey(path, keyword)
      if (!KEYWORDS.has(keyword)) {
        issues.push({ path: at, message: unsupportedKeywordMessage(keyword) })
        continue
      }
      switch (keyword) {
        case 'type':
          break
        case 'description':
        case 'title':
          if (typeof value === 'string') node[keyword] = value
          else issues.push({ path: at, message: `expected a string, found ${describeDeclared(value)}` })
          break
        case 'default':
        case 'examples': {
          const copy = readAnnotationJson(value, at, issues)
          if (copy !== undefined) node[keyword] = copy
          break
        }
        case 'enum':
        case 'const':
          if (typeKnown && type !== undefined && !SCALAR_TYPES.has(type)) {
            issues.push({ path: at, message: `"${keyword}" is only supported on scalar types or typeless nodes, not on type "${type}"` })
          } else if (keyword === 'enum') {
            const values = readEnum(value, type, at, issues)
            if (values !== undefined) node['enum'] = values
          } else if (readConst(value, type, at, issues)) {
            node['const'] = value
          }
          break
        case 'additionalProperties':
          if (type !== 'object') {
            if (typeKnown) issues.push({ path: at, message: '"additionalProperties" is only allowed with type "object"' })
          } else if (typeof value === 'boolean') {
            node['additionalProperties'] = value
          } else {
            issues.push({ path: at, message: `expected true or false (schemas for additional properties are not supported), found ${describeDeclared(value)}` })
          }
          break
        case 'required':
        case 'properties':
          if (type !== 'object') {
            if (typeKnown) issues.push({ path: at, message: `"${keyword}" is only allowed with type "object"` })
            // Misplaced or under a broken type, the property schemas are still checked: every
            // bad path is reported at once, not one layer per attempt.
            if (keyword === 'properties') {
              const children = readRecord(value, at, issues, 'a map of property schemas') ?? []
              checkOnly(children.map(([key, child]) => [child, appendKey(at, key)]), frame.depth + 1)
            }
          }
          break
        case 'items': {
          const tuple = Array.isArray(value)
          if (type === 'array' && !tuple) {
            node['items'] = undefined
            stack.push({ value, path: at, depth: frame.depth + 1, place: (child) => (node['items'] = child) })
            break
          }
          if (type !== 'array') {
            if (typeKnown) issues.push({ path: at, message: '"items" is only allowed with type "array"' })
          } else {
            issues.push({ path: at, message: 'tuple items (an array of schemas) are not supported; give one item schema' })
          }
          // Misplaced, a tuple, or under a broken type, the item schemas are still checked.
          checkOnly(tuple ? value.map((child, index) => [child, appendIndex(at, index)]) : [[value, at]], frame.depth + 1)
          break
        }
        case 'oneOf': {
          const readable: [unknown, string][] = []
          const branches = readDenseArray(value, at, issues, 'an array of branch schemas', readable)
          if (branches === undefined) {
            // Beside a hole or an accessor, the other branches are still checked.
            checkOnly(readable, frame.depth + 1)
            break
          }
          if (branches.length < 2) {
            issues.push({ path: at, message: `oneOf needs at least two branches, found ${branches.length}` })
            checkOnly(branches.map((child, index) => [child, appendIndex(at, index)]), frame.depth + 1)
            break
          }
          const copy: JsonSchemaNode[] = new Array<JsonSchemaNode>(branches.length)
          created.push(copy)
          node['oneOf'] = copy
          // Pushed in reverse so branches are visited, and issues reported, in declaration order.
          for (let index = branches.length - 1; index >= 0; index -= 1) {
            stack.push({ value: branches[index], path: appendIndex(at, index), depth: frame.depth + 1, place: (child) => (copy[index] = child) })
          }
          break
        }
      }
    }
    constOutsideEnum(node, path, issues)

    if (type === 'object') {
      const properties = new Map<string, true>()
      if (fields.has('properties')) {
        const at = `${path}.properties`
        const propertyEntries = readRecord(fields.get('properties'), at, issues, 'a map of property schemas')
        if (propertyEntries !== undefined) {
          const copy: Record<string, JsonSchemaNode> = {}
          created.push(copy)
          node['properties'] = copy
          // Placeholders first keep the declared key order; children are pushed in reverse so they
          // are visited, and their issues reported, in declaration order.
          for (const [key] of propertyEntries) {
            if (key === '__proto__') issues.push({ path: appendKey(at, key), message: UNENFORCEABLE_PROTO_KEY })
            properties.set(key, true)
            defineEntry(copy, key, undefined)
          }
          for (let index = propertyEntries.length - 1; index >= 0; index -= 1) {
            const [key, value] = propertyEntries[index] as [string, unknown]
            stack.push({ value, path: appendKey(at, key), depth: frame.depth + 1, place: (child) => defineEntry(copy, key, child) })
          }
        }
      }
      if (fields.has('required')) {
        const at = `${path}.required`
        const names = readDenseArray(fields.get('required'), at, issues, 'an array of property names')
        if (names !== undefined) {
          const seen = new Set<string>()
          let ok = true
          names.forEach((name, index) => {
            const nameAt = appendIndex(at, index)
            if (typeof name !== 'string') {
              issues.push({ path: nameAt, message: `expected a property name string, found ${describeDeclared(name)}` })
              ok = false
            } else if (seen.has(name)) {
              issues.push({ path: nameAt, message: `duplicate required name ${JSON.stringify(name)}` })
              ok = false
            } else if (!properties.has(name)) {
              issues.push({ path: nameAt, message: `required name ${JSON.stringify(name)} is not declared in properties` })
              ok = false
            }
            if (typeof name === 'string') seen.add(name)
          })
          if (ok) {
            const copy = [...(names as string[])]
            created.push(copy)
            node['required'] = copy
          }
        }
      }
    }
  }
  if (issues.length > 0) return { node: undefined, issues }
  for (const object of created) Object.freeze(object)
  if (root !== undefined) markBuiltSchema(root)
  return { node: root, issues }
}

/**
 * Asserts that `schema` is a JSON Schema inside the enforced subset (see {@link JsonSchemaNode}).
 * Any JSON root is accepted: object, array, scalar, null or unconstrained (`{}` plus annotations).
 * Every unsupported or malformed place is reported at once: unknown or misplaced keywords, `type`
 * arrays, `$ref`, schema-valued `additionalProperties`, `required` names missing from
 * `properties` or repeated, `oneOf` with fewer than two branches, empty or mistyped `enum`/`const`,
 * annotations that are not lossless JSON, accessors, sparse arrays, proxies, and nesting deeper
 * than {@link MAX_SCHEMA_DEPTH}. Never runs a getter; iterative, so any depth gives an error.
 * @throws JsonSchemaError (`UNSUPPORTED_SCHEMA`) listing every issue.
 */
export function assertSupportedJsonSchema(schema: unknown): asserts schema is JsonSchemaNode {
  const { issues } = checkJsonSchema(schema)
  if (issues.length > 0) throw new JsonSchemaError(issues)
}

/**
 * Asserts that `schema` is a supported JSON Schema whose root is `type: "object"`, for consumers
 * (tool parameters, structured outputs) that need an object root.
 * @throws JsonSchemaError (`UNSUPPORTED_SCHEMA`) listing every issue.
 */
export function assertObjectJsonSchema(schema: unknown): asserts schema is ObjectJsonSchema {
  const { node, issues } = checkJsonSchema(schema)
  if (issues.length === 0 && node?.type !== 'object') {
    issues.push({ path: '$.type', message: `the root must be type "object", found ${node?.type === undefined ? 'no type' : `type "${node.type}"`}` })
  }
  if (issues.length > 0) throw new JsonSchemaError(issues)
}
