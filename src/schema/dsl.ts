import { ToolError, ToolErrorCode } from '../errors.ts'
import type { JsonValue } from '../json-boundary.ts'
import {
  appendIndex,
  appendKey,
  constOutsideEnum,
  defineEntry,
  describeDeclared,
  describeDefinitionIssues,
  discard,
  markBuiltSchema,
  MAX_SCHEMA_DEPTH,
  readAnnotationJson,
  readConst,
  readDenseArray,
  readEnum,
  readRecord,
  sameAsLast,
  UNENFORCEABLE_PROTO_KEY,
} from './json-schema.ts'
import type { CompiledMemo } from './json-schema.ts'
import type { SchemaDefinitionIssue } from './json-schema.ts'
import type { JsonSchemaNode, JsonSchemaType, ObjectJsonSchema } from './types.ts'

/**
 * A lossless JSON value as an author writes it in a schema annotation; readonly so that literals
 * inferred through `const` type parameters (readonly tuples and objects) are accepted.
 */
export type ReadonlyJsonValue =
  | null
  | boolean
  | number
  | string
  | readonly ReadonlyJsonValue[]
  | { readonly [key: string]: ReadonlyJsonValue }

/** Annotations every schema node may carry. They never constrain values but must be lossless JSON. */
export interface SchemaAnnotationSpec {
  readonly description?: string
  readonly title?: string
  readonly default?: ReadonlyJsonValue
  readonly examples?: ReadonlyJsonValue
}

/** A string; `enum`/`const` restrict it to literal strings. */
export interface StringValueSchemaSpec extends SchemaAnnotationSpec {
  readonly type: 'string'
  readonly enum?: readonly string[]
  readonly const?: string
}

/** A finite number; `enum`/`const` restrict it to literal numbers. */
export interface NumberValueSchemaSpec extends SchemaAnnotationSpec {
  readonly type: 'number'
  readonly enum?: readonly number[]
  readonly const?: number
}

/** An integer; `enum`/`const` values must be integers themselves. */
export interface IntegerValueSchemaSpec extends SchemaAnnotationSpec {
  readonly type: 'integer'
  readonly enum?: readonly number[]
  readonly const?: number
}

/** A boolean; `enum`/`const` restrict it to `true` or `false`. */
export interface BooleanValueSchemaSpec extends SchemaAnnotationSpec {
  readonly type: 'boolean'
  readonly enum?: readonly boolean[]
  readonly const?: boolean
}

/** `null`. */
export interface NullValueSchemaSpec extends SchemaAnnotationSpec {
  readonly type: 'null'
  readonly enum?: readonly null[]
  readonly const?: null
}

/** An array; `items` (absent: any JSON item) describes every element. */
export interface ArrayValueSchemaSpec extends SchemaAnnotationSpec {
  readonly type: 'array'
  readonly items?: ValueSchemaSpec
}

/**
 * An object. `additionalProperties` is mandatory: `false` closes the object to its declared
 * properties, `true` admits any other key holding any JSON value. Properties are optional unless
 * marked `required: true`.
 */
export interface ObjectValueSchemaSpec extends SchemaAnnotationSpec {
  readonly type: 'object'
  readonly properties?: { readonly [key: string]: ParameterPropertySpec }
  readonly additionalProperties: boolean
}

/** Author-only: any lossless JSON value. Compiles to an annotation-only, unconstrained schema. */
export interface JsonValueSchemaSpec extends SchemaAnnotationSpec {
  readonly type: 'json'
}

/** Exactly one of at least two branches must match. */
export interface OneOfValueSchemaSpec extends SchemaAnnotationSpec {
  readonly oneOf: readonly [ValueSchemaSpec, ValueSchemaSpec, ...ValueSchemaSpec[]]
  readonly type?: never
}

/** One author-facing schema for any lossless JSON value root. */
export type ValueSchemaSpec =
  | StringValueSchemaSpec
  | NumberValueSchemaSpec
  | IntegerValueSchemaSpec
  | BooleanValueSchemaSpec
  | NullValueSchemaSpec
  | ArrayValueSchemaSpec
  | ObjectValueSchemaSpec
  | JsonValueSchemaSpec
  | OneOfValueSchemaSpec

/** One property of an object node or of a parameter map, optionally required. */
export type ParameterPropertySpec = ValueSchemaSpec & { required?: true }

/**
 * Tool parameter schema. The map itself is an implicit open object root; requiredness is a
 * per-property `required: true` annotation.
 */
export type ParameterSchemaSpec = {
  [key: string]: ParameterPropertySpec
  [key: symbol]: never
}

/** How many container levels inference keeps exact before falling back to `JsonValue`. */
type MaxLevels = 16
type Levels = readonly unknown[]

type Simplify<T> = { [K in keyof T]: T[K] } & {}

type InferScalar<S, T> = S extends { readonly const: infer C }
  ? C
  : S extends { readonly enum: readonly (infer E)[] }
    ? E
    : T extends 'string'
      ? string
      : T extends 'number' | 'integer'
        ? number
        : T extends 'boolean'
          ? boolean
          : null

type RequiredKeys<P> = { [K in keyof P]-?: P[K] extends { readonly required: true } ? K : never }[keyof P] & string
type OptionalKeys<P> = Exclude<keyof P & string, RequiredKeys<P>>

type InferProperties<P, D extends Levels> = Simplify<
  { -readonly [K in RequiredKeys<P>]: InferValueAt<P[K], D, []> } & {
    -readonly [K in OptionalKeys<P>]?: InferValueAt<P[K], D, []>
  }
>

type InferObject<S, D extends Levels> = S extends { readonly properties: infer P }
  ? S extends { readonly additionalProperties: false }
    ? // `{}` would accept any value but null and undefined: a closed object with no keys is empty.
      [keyof P] extends [never]
      ? { [key: string]: never }
      : InferProperties<P, D>
    : Simplify<InferProperties<P, D> & { [key: string]: JsonValue }>
  : S extends { readonly additionalProperties: false }
    ? { [key: string]: never }
    : { [key: string]: JsonValue }

/**
 * `D` counts the containers (arrays, objects) enclosing `S`; `B` counts directly nested `oneOf`s,
 * bounded too so that a self-referential branch type cannot exhaust the instantiation stack.
 */
type InferValueAt<S, D extends Levels, B extends Levels> = S extends { readonly oneOf: infer Branches extends readonly unknown[] }
  ? B['length'] extends MaxLevels
    ? JsonValue
    : InferValueAt<Branches[number], D, [...B, unknown]>
  : S extends { readonly type: infer T }
    ? T extends 'string' | 'number' | 'integer' | 'boolean' | 'null'
      ? InferScalar<S, T>
      : T extends 'json'
        ? JsonValue
        : D['length'] extends MaxLevels
          ? JsonValue
          : T extends 'array'
            ? S extends { readonly items: infer I }
              ? InferValueAt<I, [...D, unknown], []>[]
              : JsonValue[]
            : T extends 'object'
              ? InferObject<S, [...D, unknown]>
              : never
    : never

/**
 * The TypeScript value a {@link ValueSchemaSpec} accepts: literal unions for `enum`/`const`,
 * required and optional keys, closed objects exact and open objects with a `JsonValue` index
 * signature. Exact to 16 container levels; the 17th nested array or object is `JsonValue`, which
 * keeps deeply nested or self-referential schema types from exhausting the compiler.
 */
export type InferValue<S> = InferValueAt<S, [], []>

/**
 * The TypeScript argument object of a {@link ParameterSchemaSpec}: `required: true` properties are
 * required keys, the others optional. As the spec writes it (`InferProperties<S, []>`), each
 * property is inferred like a value root: exact to 16 container levels below the parameter map.
 * Undeclared keys (the root is open) are not part of the type.
 */
export type InferArgs<S> = InferProperties<S, []>

/**
 * A schema spec (the author-facing DSL) is malformed (`UNSUPPORTED_SCHEMA`). `issues` lists every
 * bad path found in one pass; the message lists them too.
 */
export class SchemaSpecError extends ToolError {
  readonly issues: readonly SchemaDefinitionIssue[]

  constructor(issues: readonly SchemaDefinitionIssue[], subject = 'schema spec') {
    super(ToolErrorCode.UNSUPPORTED_SCHEMA, `Invalid ${subject}: ${describeDefinitionIssues(issues)}`)
    this.issues = Object.freeze(issues.map((issue) => Object.freeze({ ...issue })))
  }
}

const SCALAR_KINDS: ReadonlySet<string> = new Set(['string', 'number', 'integer', 'boolean', 'null'])
const KINDS = ['string', 'number', 'integer', 'boolean', 'null', 'array', 'object', 'json'] as const
const ANNOTATIONS = ['title', 'description', 'default', 'examples'] as const
const KEYS_BY_KIND: Readonly<Record<string, ReadonlySet<string>>> = {
  scalar: new Set(['type', 'enum', 'const', ...ANNOTATIONS]),
  array: new Set(['type', 'items', ...ANNOTATIONS]),
  object: new Set(['type', 'properties', 'additionalProperties', ...ANNOTATIONS]),
  json: new Set(['type', ...ANNOTATIONS]),
  oneOf: new Set(['oneOf', ...ANNOTATIONS]),
}

interface SpecFrame {
  readonly value: unknown
  readonly path: string
  readonly depth: number
  /** A property of an object node or of a parameter map: the only place `required` may appear. */
  readonly isProperty: boolean
  readonly place: (node: JsonSchemaNode, required: boolean) => void
}

interface SpecWalk {
  readonly issues: SchemaDefinitionIssue[]
  readonly created: object[]
  /** Object nodes whose `required` list is filled by their children and dropped when empty. */
  readonly objects: Array<{ node: Record<string, unknown>; required: string[] }>
}

function propertyFrames(
  walk: SpecWalk,
  record: unknown,
  path: string,
  depth: number,
  what: string,
): { properties: Record<string, JsonSchemaNode>; required: string[]; frames: SpecFrame[] } | undefined {
  const entries = readRecord(record, path, walk.issues, what)
  if (entries === undefined) return undefined
  const properties: Record<string, JsonSchemaNode> = {}
  const required: string[] = []
  walk.created.push(properties, required)
  const frames: SpecFrame[] = []
  for (const [key, value] of entries) {
    if (key === '__proto__') walk.issues.push({ path: appendKey(path, key), message: UNENFORCEABLE_PROTO_KEY })
    // A placeholder keeps the declaration order of keys; children fill it in later.
    defineEntry(properties, key, undefined)
    frames.push({
      value,
      path: appendKey(path, key),
      depth,
      isProperty: true,
      place: (node, isRequired) => {
        defineEntry(properties, key, node)
        if (isRequired) required.push(key)
      },
    })
  }
  return { properties, required, frames }
}

function pushFrames(stack: SpecFrame[], frames: readonly SpecFrame[]): void {
  // Reversed so that nodes are visited, and issues reported, in declaration order.
  for (let index = frames.length - 1; index >= 0; index -= 1) stack.push(frames[index] as SpecFrame)
}

function visitSpecNode(walk: SpecWalk, frame: SpecFrame, stack: SpecFrame[]): void {
  const { issues } = walk
  const { path } = frame
  if (frame.depth > MAX_SCHEMA_DEPTH) {
    issues.push({ path, message: `schema nested deeper than ${MAX_SCHEMA_DEPTH} levels` })
    return
  }
  const entries = readRecord(frame.value, path, issues, 'a schema node')
  if (entries === undefined) return
  const fields = new Map(entries)

  let required = false
  if (fields.has('required')) {
    const value = fields.get('required')
    // JSON Schema's list of names is the likely mistake: say where requiredness goes instead.
    const listHint = Array.isArray(value)
      ? '; requiredness is marked on each property, not listed: put required: true on every required property (properties.<name>.required)'
      : ''
    if (!frame.isProperty) {
      issues.push({ path: `${path}.required`, message: `"required" is only allowed on a property of an object node or of a parameter map${listHint}` })
    } else if (value !== true) {
      issues.push({
        path: `${path}.required`,
        message: listHint === '' ? `expected true (omit the key for an optional property), found ${describeDeclared(value)}` : `expected true, found an array${listHint}`,
      })
    } else {
      required = true
    }
  }

  let kind: string | undefined
  let type: JsonSchemaType | undefined
  if (fields.has('oneOf')) {
    kind = 'oneOf'
    if (fields.has('type')) issues.push({ path: `${path}.type`, message: 'a oneOf node takes no "type"; put the type on each branch' })
  } else if (!fields.has('type')) {
    issues.push({ path, message: `missing "type" (one of ${KINDS.map((k) => `"${k}"`).join(' | ')}) or "oneOf"` })
  } else {
    const raw = fields.get('type')
    if (typeof raw === 'string' && (KINDS as readonly string[]).includes(raw)) {
      kind = SCALAR_KINDS.has(raw) ? 'scalar' : raw
      if (raw !== 'json') type = raw as JsonSchemaType
    } else {
      issues.push({ path: `${path}.type`, message: `expected one of ${KINDS.map((k) => `"${k}"`).join(' | ')}, found ${describeDeclared(raw)}` })
    }
  }

  const allowed = kind === undefined ? undefined : KEYS_BY_KIND[kind]
  if (allowed !== undefined) {
    for (const key of fields.keys()) {
      if (key === 'required' || allowed.has(key)) continue
      const at = appendKey(path, key)
      if (key === 'type') continue
      issues.push({
        path: at,
        message:
          key === 'enum' || key === 'const'
            ? `"${key}" is only allowed on string, number, integer, boolean and null nodes`
            : `unsupported key "${key}" on a ${kind === 'scalar' ? String(type) : kind} node`,
      })
    }
  }

  const node: Record<string, unknown> = {}
  walk.created.push(node)
  const children: SpecFrame[] = []
  if (type !== undefined) node['type'] = type
  for (const key of ['title', 'description'] as const) {
    if (!fields.has(key)) continue
    const value = fields.get(key)
    if (typeof value === 'string') node[key] = value
    else issues.push({ path: `${path}.${key}`, message: `expected a string, found ${describeDeclared(value)}` })
  }
  if (kind === 'scalar') {
    if (fields.has('const') && readConst(fields.get('const'), type, `${path}.const`, issues)) node['const'] = fields.get('const')
    if (fields.has('enum')) {
      const values = readEnum(fields.get('enum'), type, `${path}.enum`, issues)
      if (values !== undefined) {
        walk.created.push(values)
        node['enum'] = values
      }
    }
    constOutsideEnum(node, path, issues)
  } else if (kind === 'array' && fields.has('items')) {
    node['items'] = undefined
    children.push({ value: fields.get('items'), path: `${path}.items`, depth: frame.depth + 1, isProperty: false, place: (child) => (node['items'] = child) })
  } else if (kind === 'object') {
    if (fields.has('properties')) {
      const read = propertyFrames(walk, fields.get('properties'), `${path}.properties`, frame.depth + 1, 'a map of property specs')
      if (read !== undefined) {
        node['properties'] = read.properties
        node['required'] = read.required
        walk.objects.push({ node, required: read.required })
        children.push(...read.frames)
      }
    }
    const additional = fields.get('additionalProperties')
    if (typeof additional === 'boolean') {
      node['additionalProperties'] = additional
    } else {
      issues.push({
        path: `${path}.additionalProperties`,
        message: fields.has('additionalProperties')
          ? `expected true or false, found ${describeDeclared(additional)}`
          : 'object nodes must declare additionalProperties: true or false',
      })
    }
  } else if (kind === 'oneOf') {
    const at = `${path}.oneOf`
    const readable: [unknown, string][] = []
    const branches = readDenseArray(fields.get('oneOf'), at, issues, 'an array of branch specs', readable)
    if (branches === undefined) {
      // Beside a hole or an accessor, the other branches are still checked.
      for (const [value, branchPath] of readable) children.push({ value, path: branchPath, depth: frame.depth + 1, isProperty: false, place: discard })
    } else if (branches.length < 2) {
      issues.push({ path: at, message: `oneOf needs at least two branches, found ${branches.length}` })
      branches.forEach((value, index) => children.push({ value, path: appendIndex(at, index), depth: frame.depth + 1, isProperty: false, place: discard }))
    } else {
      const copy: JsonSchemaNode[] = new Array<JsonSchemaNode>(branches.length)
      walk.created.push(copy)
      node['oneOf'] = copy
      branches.forEach((value, index) => {
        children.push({ value, path: appendIndex(at, index), depth: frame.depth + 1, isProperty: false, place: (child) => (copy[index] = child) })
      })
    }
  }
  if (kind === undefined) {
    // The type is missing or broken (an issue already): the children are still checked, so every
    // bad path is reported at once rather than one layer per attempt.
    if (fields.has('items')) children.push({ value: fields.get('items'), path: `${path}.items`, depth: frame.depth + 1, isProperty: false, place: discard })
    if (fields.has('properties')) {
      children.push(...(propertyFrames(walk, fields.get('properties'), `${path}.properties`, frame.depth + 1, 'a map of property specs')?.frames ?? []))
    }
  }
  for (const key of ['default', 'examples'] as const) {
    if (!fields.has(key)) continue
    const copy = readAnnotationJson(fields.get(key), `${path}.${key}`, issues)
    if (copy !== undefined) node[key] = copy
  }
  frame.place(node as JsonSchemaNode, required)
  pushFrames(stack, children)
}

function runSpecWalk(walk: SpecWalk, stack: SpecFrame[]): boolean {
  while (stack.length > 0) visitSpecNode(walk, stack.pop() as SpecFrame, stack)
  if (walk.issues.length > 0) return false
  for (const { node, required } of walk.objects) if (required.length === 0) delete node['required']
  for (const object of walk.created) Object.freeze(object)
  return true
}

/**
 * @internal Compiles a value spec rooted at `rootPath`, appending every issue to `issues`.
 * @returns a deep-frozen raw schema, or `undefined` when the spec has issues.
 */
export function compileValueSpec(spec: unknown, rootPath: string, issues: SchemaDefinitionIssue[]): JsonSchemaNode | undefined {
  const walk: SpecWalk = { issues: [], created: [], objects: [] }
  let root: JsonSchemaNode | undefined
  const ok = runSpecWalk(walk, [{ value: spec, path: rootPath, depth: 1, isProperty: false, place: (node) => (root = node) }])
  issues.push(...walk.issues)
  if (!ok || root === undefined) return undefined
  markBuiltSchema(root)
  return root
}

/** How a parameter map's root is closed (see {@link parameterSchemaSpecToJsonSchema}). */
export interface ParameterRootOptions {
  /**
   * `false` closes the root: a call with an undeclared argument key (a misspelled `stauts`) is
   * refused as `INVALID_ARGS`. Absent or `true`, the root stays open, as JSON Schema's default
   * says: undeclared keys pass at run time (the generated SDK still has no index signature, so
   * the type check catches them either way).
   */
  readonly additionalParameters?: boolean
}

/**
 * @internal Compiles a parameter spec rooted at `rootPath`, appending every issue to `issues`.
 * @returns a deep-frozen object-rooted raw schema, or `undefined` when the spec has issues.
 */
export function compileParameterSpec(
  spec: unknown,
  rootPath: string,
  issues: SchemaDefinitionIssue[],
  options: ParameterRootOptions = {},
): ObjectJsonSchema | undefined {
  const walk: SpecWalk = { issues: [], created: [], objects: [] }
  const read = propertyFrames(walk, spec, rootPath, 2, 'a parameter map (property name -> spec)')
  if (read === undefined) {
    issues.push(...walk.issues)
    return undefined
  }
  const root: Record<string, unknown> = { type: 'object', properties: read.properties, required: read.required }
  if (options.additionalParameters === false) root['additionalProperties'] = false
  walk.created.push(root)
  walk.objects.push({ node: root, required: read.required })
  const stack: SpecFrame[] = []
  pushFrames(stack, read.frames)
  const ok = runSpecWalk(walk, stack)
  issues.push(...walk.issues)
  if (!ok) return undefined
  markBuiltSchema(root)
  return root as unknown as ObjectJsonSchema
}

const compiledValueSpecs: CompiledMemo<JsonSchemaNode> = new WeakMap()
const compiledParameterSpecs: CompiledMemo<ObjectJsonSchema> = new WeakMap()

/** The built schema compiled from `spec` now, or the same object as last time when it reads the same. */
function settle<T extends JsonSchemaNode>(memo: CompiledMemo<T>, spec: unknown, schema: T): T {
  return typeof spec === 'object' && spec !== null ? sameAsLast(memo, spec, schema) : schema
}

/**
 * Compiles a parameter spec to its raw, deep-frozen JSON Schema: an object root with `properties`,
 * `required` (when any property is required) and no `additionalProperties` (the root stays open),
 * or `additionalProperties: false` when `options.additionalParameters` is `false`.
 * The spec is read on every call, so an edit between calls takes effect; while it reads the same,
 * every call returns the same schema object.
 * @throws SchemaSpecError (`UNSUPPORTED_SCHEMA`) listing every malformed path of the spec.
 */
export function parameterSchemaSpecToJsonSchema(spec: ParameterSchemaSpec, options: ParameterRootOptions = {}): ObjectJsonSchema {
  const issues: SchemaDefinitionIssue[] = []
  const schema = compileParameterSpec(spec, '$', issues, options)
  if (schema === undefined) throw new SchemaSpecError(issues, 'parameter schema spec')
  return settle(compiledParameterSpecs, spec, schema)
}

/**
 * Compiles a value spec to its raw, deep-frozen JSON Schema in the enforced subset. `{ type:
 * 'json' }` becomes an annotation-only node; object nodes keep their explicit
 * `additionalProperties`. Read on every call, like {@link parameterSchemaSpecToJsonSchema}.
 * @throws SchemaSpecError (`UNSUPPORTED_SCHEMA`) listing every malformed path of the spec.
 */
export function valueSchemaSpecToJsonSchema(spec: ValueSchemaSpec): JsonSchemaNode {
  const issues: SchemaDefinitionIssue[] = []
  const schema = compileValueSpec(spec, '$', issues)
  if (schema === undefined) throw new SchemaSpecError(issues, 'value schema spec')
  return settle(compiledValueSpecs, spec, schema)
}
