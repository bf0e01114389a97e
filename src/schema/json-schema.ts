import { isProxy } from 'node:util/types'
import { ToolError, ToolErrorCode } from '../errors.ts'
import { isFrozenJson, JsonBoundaryError, snapshotJson } from '../json-boundary.ts'
import type { JsonValue } from '../json-boundary.ts'
import type { JsonSchemaNode, JsonSchemaScalar, JsonSchemaType, ObjectJsonSchema } from './types.ts'

/**
 * The deepest schema nesting the library accepts, counting the root node as level 1 and every
 * subschema (a `properties` or `$defs` entry, `items`, a branch, ...) as one more level. Deeper schemas are rejected with
 * a clear error instead of reaching the validator compiler, which recurses once per level. A `$ref`
 * adds no level: references are resolved after the walk, never followed by it.
 */
export const MAX_SCHEMA_DEPTH = 64

/**
 * The deepest nesting accepted once `$ref`s are followed (each reference one more level; recursion
 * counts once), for the same reason as {@link MAX_SCHEMA_DEPTH}: the validator compiler recurses
 * once per level, references included.
 */
export const MAX_REFERENCED_DEPTH = 128

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

/** The type a node declares: one name, a list of names, or none. */
export type DeclaredTypes = JsonSchemaType | readonly JsonSchemaType[] | undefined

function typeList(type: DeclaredTypes): readonly JsonSchemaType[] | undefined {
  return type === undefined ? undefined : typeof type === 'string' ? [type] : type
}

function scalarMatchesOne(value: unknown, type: JsonSchemaType): boolean {
  switch (type) {
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

/** @internal True when `value` is a scalar of (one of) the given JSON Schema type(s) (a lossless number). */
export function scalarMatchesType(value: unknown, type: DeclaredTypes): boolean {
  if (typeof value === 'number' && (!Number.isFinite(value) || Object.is(value, -0))) return false
  const types = typeList(type)
  if (types === undefined) return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
  return types.some((one) => scalarMatchesOne(value, one))
}

function scalarWord(type: JsonSchemaType): string {
  switch (type) {
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

/** @internal Names the scalar values a node of `type` may list in `enum`/`const`. */
export function scalarTypeWord(type: DeclaredTypes): string {
  const types = typeList(type)
  if (types === undefined) return 'a JSON scalar (string, finite number, boolean or null)'
  const words = types.map(scalarWord)
  return words.length <= 1 ? (words[0] ?? 'nothing') : `${words.slice(0, -1).join(', ')} or ${words.at(-1) ?? ''}`
}

/**
 * @internal Checks an `enum` list against a node type: non-empty, dense, scalar, of the node's
 * type, no duplicates.
 */
export function readEnum(
  value: unknown,
  type: DeclaredTypes,
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
  type: DeclaredTypes,
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

/**
 * The formats the validator enforces (through ajv-formats): those JSON Schema 2020-12 defines that
 * ajv-formats implements. Any other name (`int32`, `json`, `idn-email`) is an annotation only, as
 * the 2020-12 default says; it is kept in the schema the model sees and never validated.
 */
export const ENFORCED_FORMATS: readonly string[] = Object.freeze([
  'date-time',
  'date',
  'time',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uri',
  'uri-reference',
  'uri-template',
  'uuid',
  'json-pointer',
  'relative-json-pointer',
  'regex',
])
const ENFORCED_FORMAT_SET: ReadonlySet<string> = new Set(ENFORCED_FORMATS)

/** The kind of value a keyword applies to; the node's `type` must name it. */
type Family = 'string' | 'number' | 'array' | 'object'

const FAMILY_OF: Readonly<Record<string, Family>> = {
  pattern: 'string',
  minLength: 'string',
  maxLength: 'string',
  minimum: 'number',
  maximum: 'number',
  exclusiveMinimum: 'number',
  exclusiveMaximum: 'number',
  multipleOf: 'number',
  items: 'array',
  prefixItems: 'array',
  additionalItems: 'array',
  minItems: 'array',
  maxItems: 'array',
  uniqueItems: 'array',
  properties: 'object',
  required: 'object',
  additionalProperties: 'object',
  propertyNames: 'object',
  minProperties: 'object',
  maxProperties: 'object',
}

/** Keywords allowed on any node. */
const GENERAL_KEYWORDS: ReadonlySet<string> = new Set([
  'type',
  'enum',
  'const',
  'format',
  'oneOf',
  'anyOf',
  'allOf',
  '$ref',
  '$defs',
  'definitions',
  '$schema',
  '$id',
  '$comment',
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
])

const COUNT_KEYWORDS: ReadonlySet<string> = new Set(['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'])
const BOUND_KEYWORDS: ReadonlySet<string> = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'])
/** Keywords whose value holds schemas. */
const SCHEMA_KEYWORDS: ReadonlySet<string> = new Set([
  'properties',
  'additionalProperties',
  'propertyNames',
  'items',
  'prefixItems',
  'additionalItems',
  'oneOf',
  'anyOf',
  'allOf',
  '$defs',
  'definitions',
])
const COMBINATORS: Readonly<Record<string, number>> = { oneOf: 2, anyOf: 1, allOf: 1 }

function unsupportedKeywordMessage(keyword: string): string {
  if (keyword === '$anchor' || keyword === '$dynamicRef' || keyword === '$dynamicAnchor' || keyword === '$recursiveRef' || keyword === '$recursiveAnchor') {
    return `unsupported keyword "${keyword}": reference a schema with a local "$ref" JSON Pointer ("#/$defs/Name") instead`
  }
  return `unsupported keyword "${keyword}" (the enforced subset never admits a keyword it does not enforce)`
}

function familyWords(family: Family): string {
  return family === 'number' ? '"number" or "integer"' : `"${family}"`
}

function includesFamily(types: readonly JsonSchemaType[], family: Family): boolean {
  return family === 'number' ? types.includes('number') || types.includes('integer') : types.includes(family)
}

/** Escapes one JSON Pointer segment (`~` → `~0`, `/` → `~1`). */
function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1')
}

/** A `$ref` as JSON Pointer segments, or why it is not a local reference this subset follows. */
function parseLocalRef(ref: string): { readonly segments: string[] } | { readonly problem: string } {
  if (!ref.startsWith('#')) {
    return { problem: `only local references into this schema are supported ("#", "#/$defs/Name", "#/definitions/Name"), found ${JSON.stringify(ref)}` }
  }
  let fragment: string
  try {
    fragment = decodeURIComponent(ref.slice(1))
  } catch {
    return { problem: `${JSON.stringify(ref)} is not a valid URI fragment (bad percent-encoding)` }
  }
  if (fragment === '') return { segments: [] }
  if (!fragment.startsWith('/')) return { problem: `${JSON.stringify(ref)} is not a JSON Pointer fragment; anchors are not supported (use "#/$defs/Name")` }
  const segments: string[] = []
  for (const raw of fragment.slice(1).split('/')) {
    if (/~(?![01])/.test(raw)) return { problem: `${JSON.stringify(ref)} has an invalid JSON Pointer escape (only ~0 and ~1)` }
    segments.push(raw.replace(/~1/g, '/').replace(/~0/g, '~'))
  }
  return { segments }
}

function pointerKey(segments: readonly string[]): string {
  return segments.map((segment) => `/${escapePointer(segment)}`).join('')
}

/** A `$ref` fragment the validator resolves: each segment escaped, then percent-encoded. */
function refOf(segments: readonly string[]): string {
  // Characters a URI fragment allows as they are (`$`, `:`, `@`, ...) stay readable.
  const encode = (segment: string): string =>
    encodeURIComponent(escapePointer(segment)).replace(/%(24|26|27|28|29|2A|2B|2C|3A|3B|3D|40)/gi, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)))
  return `#${segments.map((segment) => `/${encode(segment)}`).join('')}`
}

interface RawFrame {
  readonly value: unknown
  readonly path: string
  /** Where the node sits in the raw schema (JSON Pointer segments), which `$ref`s name. */
  readonly pointer: readonly string[]
  /** Where its copy sits in the checked copy, which `$ref`s are rewritten to. */
  readonly copyPointer: readonly string[]
  readonly depth: number
  readonly place: (node: JsonSchemaNode) => void
}

/** A visited schema node: its same-value subschemas and its reference, for the cycle check. */
interface VisitedNode {
  readonly path: string
  readonly copyPointer: readonly string[]
  /** Pointer keys of the `oneOf`/`anyOf`/`allOf` branches, which judge the same value. */
  readonly branches: string[]
  /** Pointer keys of every subschema, branches included. */
  readonly children: string[]
  ref?: { readonly target: string; readonly text: string; readonly path: string; readonly node: Record<string, unknown> }
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

/** The Standard Schema member zod 4 attaches, non-enumerable, to the root `z.toJSONSchema` returns. */
const STANDARD_MARKER = '~standard'

/**
 * @internal `schema` without the non-enumerable `~standard` member zod 4 attaches to the root of
 * `z.toJSONSchema(...)` (a Standard Schema interface, never a keyword: JSON text and the model
 * never see it). Any other shape is returned as it is, for the walker or the JSON boundary to
 * judge. Copies property descriptors, so no getter runs.
 */
export function withoutStandardMarker(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema) || isProxy(schema)) return schema
  const marker = Object.getOwnPropertyDescriptor(schema, STANDARD_MARKER)
  if (marker === undefined || marker.enumerable === true || !('value' in marker)) return schema
  const descriptors: PropertyDescriptorMap = Object.getOwnPropertyDescriptors(schema)
  delete descriptors[STANDARD_MARKER]
  return Object.create(Object.getPrototypeOf(schema) as object | null, descriptors) as unknown
}

/**
 * @internal Walks a raw schema iteratively, collecting every issue, and builds a fresh deep-frozen
 * copy holding only the checked keywords. The copy is what a validator compiler may see.
 */
export function checkJsonSchema(schema: unknown): { readonly node: JsonSchemaNode | undefined; readonly issues: SchemaDefinitionIssue[] } {
  const issues: SchemaDefinitionIssue[] = []
  const created: object[] = []
  const visited = new Map<string, VisitedNode>()
  let root: JsonSchemaNode | undefined
  const stack: RawFrame[] = [{ value: withoutStandardMarker(schema), path: '$', pointer: [], copyPointer: [], depth: 1, place: (node) => (root = node) }]
  while (stack.length > 0) {
    const frame = stack.pop() as RawFrame
    // Children of this node, in declaration order; pushed in reverse at the end so they are
    // visited, and their issues reported, in that order.
    const children: RawFrame[] = []
    visitRawNode(frame, children, issues, created, visited)
    for (let index = children.length - 1; index >= 0; index -= 1) stack.push(children[index] as RawFrame)
  }
  resolveReferences(visited, issues)
  if (issues.length > 0) return { node: undefined, issues }
  for (const object of created) Object.freeze(object)
  if (root !== undefined) markBuiltSchema(root)
  return { node: root, issues }
}

/** Checks every `$ref` target and refuses reference cycles that never reach a property or an item. */
function resolveReferences(visited: ReadonlyMap<string, VisitedNode>, issues: SchemaDefinitionIssue[]): void {
  let hasRefs = false
  for (const node of visited.values()) {
    if (node.ref === undefined) continue
    hasRefs = true
    const target = visited.get(node.ref.target)
    if (target === undefined) {
      issues.push({ path: node.ref.path, message: `$ref ${JSON.stringify(node.ref.text)} does not point to a schema in this document` })
    } else {
      node.ref.node['$ref'] = refOf(target.copyPointer)
    }
  }
  if (!hasRefs) return
  // A cycle of references and branches judges the same value forever: the validator would
  // overflow its stack. Iterative depth-first search; 1 = on the current path, 2 = done.
  const state = new Map<string, 1 | 2>()
  for (const start of visited.keys()) {
    if (state.has(start)) continue
    const path: Array<{ key: string; next: string[] }> = []
    const enter = (key: string): void => {
      const node = visited.get(key) as VisitedNode
      const next = [...node.branches]
      if (node.ref !== undefined && visited.has(node.ref.target)) next.push(node.ref.target)
      state.set(key, 1)
      path.push({ key, next })
    }
    enter(start)
    while (path.length > 0) {
      const top = path[path.length - 1] as { key: string; next: string[] }
      const key = top.next.shift()
      if (key === undefined) {
        state.set(top.key, 2)
        path.pop()
        continue
      }
      const seen = state.get(key)
      if (seen === undefined) {
        enter(key)
      } else if (seen === 1) {
        const from = visited.get(top.key) as VisitedNode
        const at = from.ref !== undefined && from.ref.target === key ? from.ref.path : from.path
        issues.push({
          path: at,
          message: 'this reference leads back to the same schema without going into a property or an item: no value could ever finish being checked',
        })
      }
    }
  }
  if (issues.length === 0) checkReferencedDepth(visited, issues)
}

/**
 * Refuses a schema nested deeper than {@link MAX_REFERENCED_DEPTH} levels once its references are
 * followed (each reference one more level; a reference back to a schema on the way counts
 * nothing, as the validator compiles recursion once). The validator compiler recurses once per
 * such level: a long chain of definitions would overflow its stack on a tool's first call.
 * Iterative, memoized: linear in the schema.
 */
function checkReferencedDepth(visited: ReadonlyMap<string, VisitedNode>, issues: SchemaDefinitionIssue[]): void {
  interface Frame {
    readonly key: string
    /** Subschemas still to visit, and whether each is reached through a reference. */
    readonly next: Array<[key: string, viaRef: boolean]>
    /** Reached through a reference: one level more for the node that refers. */
    readonly viaRef: boolean
    deepest: number
  }
  const depth = new Map<string, number>()
  const onPath = new Set<string>()
  const stack: Frame[] = []
  const enter = (key: string, viaRef: boolean): void => {
    const node = visited.get(key) as VisitedNode
    const next: Array<[string, boolean]> = node.children.map((child) => [child, false])
    if (node.ref !== undefined && visited.has(node.ref.target)) next.push([node.ref.target, true])
    onPath.add(key)
    stack.push({ key, next, viaRef, deepest: 0 })
  }
  enter('', false)
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as Frame
    const edge = top.next.pop()
    if (edge === undefined) {
      stack.pop()
      onPath.delete(top.key)
      const own = top.deepest + 1
      depth.set(top.key, own)
      const parent = stack[stack.length - 1]
      if (parent !== undefined) parent.deepest = Math.max(parent.deepest, own + (top.viaRef ? 1 : 0))
      continue
    }
    const [key, viaRef] = edge
    // Recursion: the validator compiles a schema already on the way once, by reference.
    if (onPath.has(key)) continue
    const known = depth.get(key)
    if (known === undefined) enter(key, viaRef)
    else top.deepest = Math.max(top.deepest, known + (viaRef ? 1 : 0))
  }
  const total = depth.get('') ?? 0
  if (total > MAX_REFERENCED_DEPTH) {
    issues.push({ path: '$', message: `schema nested ${total} levels deep once its references are followed; at most ${MAX_REFERENCED_DEPTH} are supported` })
  }
}

/** Checks one raw node, builds its copy and queues its subschemas into `children`. */
function visitRawNode(
  frame: RawFrame,
  children: RawFrame[],
  issues: SchemaDefinitionIssue[],
  created: object[],
  visited: Map<string, VisitedNode>,
): void {
  const { path } = frame
  if (frame.depth > MAX_SCHEMA_DEPTH) {
    issues.push({ path, message: `schema nested deeper than ${MAX_SCHEMA_DEPTH} levels` })
    return
  }
  if (typeof frame.value === 'boolean') {
    issues.push({ path, message: 'boolean schemas are not supported; use {} for any JSON value' })
    return
  }
  const entries = readRecord(frame.value, path, issues, 'a schema node')
  if (entries === undefined) return
  const fields = new Map(entries)
  const node: Record<string, unknown> = {}
  created.push(node)
  frame.place(node as JsonSchemaNode)
  const info: VisitedNode = { path, copyPointer: frame.copyPointer, branches: [], children: [] }
  visited.set(pointerKey(frame.pointer), info)

  /** Queues a subschema at raw key path `keys` (below this node), copied to `copyKeys`. */
  const child = (value: unknown, at: string, keys: readonly string[], copyKeys: readonly string[], place: (node: JsonSchemaNode) => void): string => {
    const pointer = [...frame.pointer, ...keys]
    children.push({ value, path: at, pointer, copyPointer: [...frame.copyPointer, ...copyKeys], depth: frame.depth + 1, place })
    const key = pointerKey(pointer)
    info.children.push(key)
    return key
  }
  /** Queues the schemas of a refused keyword, so every bad path below it is reported at once. */
  const checkOnly = (keyword: string, value: unknown, at: string): void => {
    if (!SCHEMA_KEYWORDS.has(keyword)) return
    if (Array.isArray(value)) {
      value.forEach((item, index) => {
        if (typeof item === 'object' && item !== null) child(item, appendIndex(at, index), [keyword, String(index)], [], discard)
      })
    } else if (keyword === 'properties' || keyword === '$defs' || keyword === 'definitions') {
      for (const [key, item] of readRecord(value, at, [], 'a map') ?? []) child(item, appendKey(at, key), [keyword, key], [], discard)
    } else if (typeof value === 'object' && value !== null) {
      child(value, at, [keyword], [], discard)
    }
  }

  let types: JsonSchemaType[] | undefined
  if (fields.has('type')) {
    const raw = fields.get('type')
    const at = `${path}.type`
    const expected = 'one of "object" | "array" | "string" | "number" | "integer" | "boolean" | "null"'
    if (typeof raw === 'string' && JSON_SCHEMA_TYPES.has(raw)) {
      types = [raw as JsonSchemaType]
      node['type'] = raw
    } else if (Array.isArray(raw)) {
      const names = readDenseArray(raw, at, issues, 'an array of type names')
      if (names !== undefined) {
        let ok = names.length > 0
        if (!ok) issues.push({ path: at, message: 'a type array must name at least one type' })
        const seen = new Set<unknown>()
        names.forEach((name, index) => {
          if (typeof name !== 'string' || !JSON_SCHEMA_TYPES.has(name)) {
            issues.push({ path: appendIndex(at, index), message: `expected ${expected}, found ${describeDeclared(name)}` })
            ok = false
          } else if (seen.has(name)) {
            issues.push({ path: appendIndex(at, index), message: `duplicate type ${JSON.stringify(name)}` })
            ok = false
          }
          seen.add(name)
        })
        if (ok) {
          types = [...(names as JsonSchemaType[])]
          created.push(types)
          node['type'] = types
        }
      }
    } else {
      issues.push({ path: at, message: `expected ${expected} or an array of them, found ${describeDeclared(raw)}` })
    }
  }
  // Under a broken type, misplaced keywords are not reported again: the type is the issue.
  const typeKnown = !fields.has('type') || types !== undefined
  const applies = (keyword: string, at: string): boolean => {
    const family = FAMILY_OF[keyword]
    if (family === undefined || (types !== undefined && includesFamily(types, family))) return true
    if (typeKnown) {
      issues.push({
        path: at,
        message: types === undefined
          ? `"${keyword}" needs a "type" that includes ${familyWords(family)}`
          : `"${keyword}" is only allowed when the type includes ${familyWords(family)}`,
      })
    }
    return false
  }

  for (const [keyword, value] of entries) {
    const at = appendKey(path, keyword)
    if (!GENERAL_KEYWORDS.has(keyword) && FAMILY_OF[keyword] === undefined) {
      issues.push({ path: at, message: unsupportedKeywordMessage(keyword) })
      continue
    }
    if (!applies(keyword, at)) {
      checkOnly(keyword, value, at)
      continue
    }
    switch (keyword) {
      case 'type':
      case 'required':
        // `required` is checked once `properties` and `additionalProperties` are known.
        break
      case 'description':
      case 'title':
      case '$comment':
      case '$schema':
      case '$id':
      case 'format':
        if (typeof value !== 'string') {
          issues.push({ path: at, message: `expected a string, found ${describeDeclared(value)}` })
        } else if (keyword === '$id' && frame.pointer.length > 0) {
          issues.push({ path: at, message: '"$id" is only supported on the root (embedded schema resources are not supported)' })
        } else if (keyword === 'description' || keyword === 'title' || (keyword === 'format' && ENFORCED_FORMAT_SET.has(value))) {
          // `$schema`, `$id` and `$comment` stay out of the copy: the subset's own semantics apply
          // whatever dialect is named. An unknown format is an annotation: the validator never sees it.
          node[keyword] = value
        }
        break
      case 'default':
      case 'examples': {
        const copy = readAnnotationJson(value, at, issues)
        if (copy !== undefined) node[keyword] = copy
        break
      }
      case 'deprecated':
      case 'readOnly':
      case 'writeOnly':
      case 'uniqueItems':
        if (typeof value === 'boolean') node[keyword] = value
        else issues.push({ path: at, message: `expected true or false, found ${describeDeclared(value)}` })
        break
      case 'enum':
      case 'const':
        if (typeKnown && types !== undefined && !types.every((one) => SCALAR_TYPES.has(one))) {
          issues.push({ path: at, message: `"${keyword}" is only supported on scalar types or typeless nodes, not on type ${JSON.stringify(node['type'])}` })
        } else if (keyword === 'enum') {
          const values = readEnum(value, types, at, issues)
          if (values !== undefined) node['enum'] = values
        } else if (readConst(value, types, at, issues)) {
          node['const'] = value
        }
        break
      case 'pattern':
        if (typeof value !== 'string') {
          issues.push({ path: at, message: `expected a regular expression string, found ${describeDeclared(value)}` })
        } else {
          try {
            // The validator compiles patterns with the `u` flag: the same check, the same meaning.
            new RegExp(value, 'u')
            node['pattern'] = value
          } catch (error) {
            issues.push({ path: at, message: `not a valid regular expression with the "u" flag (as the validator compiles it): ${(error as Error).message}` })
          }
        }
        break
      case 'multipleOf':
        if (typeof value === 'number' && Number.isFinite(value) && value > 0) node[keyword] = value
        else issues.push({ path: at, message: `expected a positive finite number, found ${describeDeclared(value)}` })
        break
      case 'oneOf':
      case 'anyOf':
      case 'allOf': {
        const minimum = COMBINATORS[keyword] as number
        const readable: [unknown, string][] = []
        const branches = readDenseArray(value, at, issues, 'an array of branch schemas', readable)
        if (branches === undefined || branches.length < minimum) {
          if (branches !== undefined) {
            issues.push({ path: at, message: `${keyword} needs at least ${minimum === 1 ? 'one branch' : 'two branches'}, found ${branches.length}` })
          }
          // Beside a hole or an accessor, the other branches are still checked.
          readable.forEach(([item, itemAt], index) => child(item, itemAt, [keyword, String(index)], [], discard))
          break
        }
        const copy: JsonSchemaNode[] = new Array<JsonSchemaNode>(branches.length)
        created.push(copy)
        node[keyword] = copy
        branches.forEach((item, index) => {
          info.branches.push(child(item, appendIndex(at, index), [keyword, String(index)], [keyword, String(index)], (built) => (copy[index] = built)))
        })
        break
      }
      case '$ref': {
        if (typeof value !== 'string') {
          issues.push({ path: at, message: `expected a reference string ("#/$defs/Name"), found ${describeDeclared(value)}` })
          break
        }
        const parsed = parseLocalRef(value)
        if ('problem' in parsed) issues.push({ path: at, message: parsed.problem })
        else info.ref = { target: pointerKey(parsed.segments), text: value, path: at, node }
        break
      }
      case '$defs':
      case 'definitions':
      case 'properties': {
        const what = keyword === 'properties' ? 'a map of property schemas' : 'a map of named schemas'
        const members = readRecord(value, at, issues, what)
        if (members === undefined) break
        const copy: Record<string, JsonSchemaNode> = {}
        created.push(copy)
        node[keyword] = copy
        // Placeholders first keep the declared key order.
        for (const [key, item] of members) {
          if (keyword === 'properties' && key === '__proto__') issues.push({ path: appendKey(at, key), message: UNENFORCEABLE_PROTO_KEY })
          defineEntry(copy, key, undefined)
          child(item, appendKey(at, key), [keyword, key], [keyword, key], (built) => defineEntry(copy, key, built))
        }
        break
      }
      case 'additionalProperties':
        if (typeof value === 'boolean') node[keyword] = value
        else child(value, at, [keyword], [keyword], (built) => (node[keyword] = built))
        break
      case 'propertyNames':
        child(value, at, [keyword], [keyword], (built) => (node[keyword] = built))
        break
      case 'prefixItems': {
        const readable: [unknown, string][] = []
        const items = readDenseArray(value, at, issues, 'an array of item schemas', readable)
        if (items === undefined || items.length === 0) {
          if (items !== undefined) issues.push({ path: at, message: 'prefixItems needs at least one item schema' })
          readable.forEach(([item, itemAt], index) => child(item, itemAt, [keyword, String(index)], [], discard))
          break
        }
        const copy: JsonSchemaNode[] = new Array<JsonSchemaNode>(items.length)
        created.push(copy)
        node['prefixItems'] = copy
        items.forEach((item, index) => child(item, appendIndex(at, index), [keyword, String(index)], ['prefixItems', String(index)], (built) => (copy[index] = built)))
        break
      }
      case 'items':
        if (Array.isArray(value)) {
          // The draft-07 tuple: the copy says it the 2020-12 way (prefixItems, then items for the rest).
          if (fields.has('prefixItems')) {
            issues.push({ path: at, message: 'an items array (the draft-07 tuple) beside prefixItems; give the tuple once, as prefixItems' })
            checkOnly(keyword, value, at)
            break
          }
          const readable: [unknown, string][] = []
          const items = readDenseArray(value, at, issues, 'an array of item schemas', readable)
          if (items === undefined || items.length === 0) {
            if (items !== undefined) issues.push({ path: at, message: 'a tuple needs at least one item schema' })
            readable.forEach(([item, itemAt], index) => child(item, itemAt, [keyword, String(index)], [], discard))
            break
          }
          const copy: JsonSchemaNode[] = new Array<JsonSchemaNode>(items.length)
          created.push(copy)
          node['prefixItems'] = copy
          items.forEach((item, index) => child(item, appendIndex(at, index), [keyword, String(index)], ['prefixItems', String(index)], (built) => (copy[index] = built)))
        } else if (typeof value === 'boolean') {
          if (fields.has('prefixItems')) node['items'] = value
          else issues.push({ path: at, message: `items: ${String(value)} is only supported after prefixItems; use {} for any item` })
        } else {
          child(value, at, [keyword], ['items'], (built) => (node['items'] = built))
        }
        break
      case 'additionalItems':
        if (!Array.isArray(fields.get('items')) || fields.has('prefixItems')) {
          issues.push({ path: at, message: 'additionalItems only applies after an items array (the draft-07 tuple); after prefixItems, use items' })
          checkOnly(keyword, value, at)
        } else if (typeof value === 'boolean') {
          node['items'] = value
        } else {
          child(value, at, [keyword], ['items'], (built) => (node['items'] = built))
        }
        break
      default:
        if (COUNT_KEYWORDS.has(keyword)) {
          if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) node[keyword] = value
          else issues.push({ path: at, message: `expected a non-negative integer, found ${describeDeclared(value)}` })
        } else if (BOUND_KEYWORDS.has(keyword)) {
          if (typeof value === 'number' && Number.isFinite(value) && !Object.is(value, -0)) {
            node[keyword] = value
          } else {
            const hint = typeof value === 'boolean' ? ' (the draft-04 boolean form is not supported: give the bound itself, e.g. "exclusiveMinimum": 0)' : ''
            issues.push({ path: at, message: `expected a finite number, found ${describeDeclared(value)}${hint}` })
          }
        }
    }
  }
  constOutsideEnum(node, path, issues)

  if (fields.has('required') && types !== undefined && includesFamily(types, 'object')) {
    const at = `${path}.required`
    const names = readDenseArray(fields.get('required'), at, issues, 'an array of property names')
    if (names !== undefined) {
      const declared = node['properties'] as Record<string, unknown> | undefined
      const additional = fields.get('additionalProperties')
      // A required key an `additionalProperties` schema describes (a record with known keys) is
      // meaningful; anywhere else an undeclared required name is almost surely a typo.
      const describedByAdditional = typeof additional === 'object' && additional !== null
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
        } else if (!(declared !== undefined && Object.hasOwn(declared, name)) && !describedByAdditional) {
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

/**
 * Asserts that `schema` is a JSON Schema inside the enforced subset (see {@link JsonSchemaNode}).
 * Any JSON root is accepted: object, array, scalar, null or unconstrained (`{}` plus annotations).
 * Every keyword admitted is enforced by the validator, or is an annotation; every unsupported or
 * malformed place is reported at once: unknown or misplaced keywords (a keyword for one kind of
 * value where `type` does not name that kind), non-local `$ref`s or ones that point nowhere,
 * reference cycles that never reach a property or an item, patterns the validator cannot compile
 * (`u` flag), `required` names missing from `properties`, `oneOf` with fewer than two branches,
 * empty or mistyped `enum`/`const`, annotations that are not lossless JSON, accessors, sparse
 * arrays, proxies, and nesting deeper than {@link MAX_SCHEMA_DEPTH}. Never runs a getter and never
 * follows a `$ref` while walking; iterative, so any depth gives an error.
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
