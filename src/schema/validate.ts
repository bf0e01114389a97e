import { createRequire } from 'node:module'
import type { Ajv2020 } from 'ajv/dist/2020.js'
import type { ErrorObject, ValidateFunction } from 'ajv'
import type formatsPlugin from 'ajv-formats'
import type { FormatName } from 'ajv-formats'
import { ToolArgsError } from '../errors.ts'
import { nearestSpelling } from '../spelling.ts'
import type { SchemaIssue } from '../errors.ts'
import { JsonBoundaryError, snapshotJson } from '../json-boundary.ts'
import type { JsonObject, JsonValue } from '../json-boundary.ts'
import { parameterSchemaSpecToJsonSchema } from './dsl.ts'
import type { InferArgs, ParameterSchemaSpec } from './dsl.ts'
import { appendIndex, appendKey, checkJsonSchema, ENFORCED_FORMATS, isImmutableSchema, JsonSchemaError, sameAsLast } from './json-schema.ts'
import type { CompiledMemo } from './json-schema.ts'
import type { JsonSchemaNode, ObjectJsonSchema } from './types.ts'

// The subset walker is the authority on what a schema may say; ajv only ever sees its checked,
// frozen copies, written in the 2020-12 dialect (draft-07 tuples rewritten, unknown formats and
// `$schema` left out). Meta-validation is off for that reason (and because it would reject
// annotation shapes the subset allows). No coercion, no defaults, no removal: validation never
// edits a value. Patterns compile with the `u` flag (ajv's default), as the walker checked them.
// Made at the first compile, not at import: loading ajv is most of what importing the package
// would cost otherwise (both are CommonJS, which `require` loads synchronously).
let ajvInstance: Ajv2020 | undefined
function ajv(): Ajv2020 {
  ajvInstance ??= newAjv()
  return ajvInstance
}

function newAjv(): Ajv2020 {
  const require = createRequire(import.meta.url)
  const { Ajv2020: Ajv } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')
  const formats = require('ajv-formats') as typeof formatsPlugin
  const instance = new Ajv({
    allErrors: true,
    verbose: true,
    strict: true,
    strictTypes: false,
    strictTuples: false,
    coerceTypes: false,
    useDefaults: false,
    removeAdditional: false,
    validateSchema: false,
    addUsedSchema: false,
    // Own keys only: `required: ["constructor"]` must not be satisfied by Object.prototype.
    ownProperties: true,
  })
  // Only the 2020-12 formats: the walker keeps every other format name out of the copies.
  formats.default(instance, ENFORCED_FORMATS as FormatName[])
  return instance
}

interface CheckedSchema {
  readonly node: JsonSchemaNode
  validate?: ValidateFunction
}

/** Checked forms of schemas that cannot change (see isImmutableSchema), by identity. */
const checkedSchemas = new WeakMap<object, CheckedSchema>()
/** Checked forms of callers' own schema objects, which may be edited between calls. */
const callerSchemas: CompiledMemo<CheckedSchema> = new WeakMap()

/**
 * The checked copy of a raw schema and its compiled validator. A schema that cannot change is
 * checked once; a caller's own object is checked on every call, so an edit is enforced (or
 * refused) at once, and keeps its compiled validator while it reads the same.
 */
function checkedSchema(schema: unknown): CheckedSchema {
  const isObject = typeof schema === 'object' && schema !== null
  const cached = isObject ? checkedSchemas.get(schema) : undefined
  if (cached !== undefined) return cached
  const { node, issues } = checkJsonSchema(schema)
  if (node === undefined || issues.length > 0) throw new JsonSchemaError(issues)
  const checked: CheckedSchema = { node }
  if (!isObject) return checked
  if (!isImmutableSchema(schema)) return sameAsLast(callerSchemas, schema, checked, JSON.stringify(node))
  checkedSchemas.set(schema, checked)
  return checked
}

/** Numbers the compiled roots: ajv resolves a `$ref: "#"` only against a root that has an `$id`. */
let compiledCount = 0

function validatorOf(checked: CheckedSchema): ValidateFunction {
  if (checked.validate === undefined) {
    compiledCount += 1
    const root = { ...checked.node, $id: `urn:toolbox-codemode:schema:${compiledCount}` }
    checked.validate = ajv().compile(root)
    // The compiled function stays usable; dropping ajv's own strong cache entry keeps dynamically
    // registered schemas collectable once their tools go away.
    ajv().removeSchema(root)
  }
  return checked.validate
}

/** Characters of one quoted key, value or pattern a message shows at most: a model's key can be a megabyte. */
const MAX_QUOTED_CHARS = 60

/** Keys or values a message lists at most, then how many more there are. */
const MAX_LISTED = 20

/** `text` cut to `max` characters, marked where it was cut. */
function clipped(text: string, max = MAX_QUOTED_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}...`
}

/** A key quoted for a message, clipped. */
function quotedKey(key: string): string {
  return JSON.stringify(clipped(key))
}

/** The first {@link MAX_LISTED} items joined with `separator`, and how many more there are. */
function listed(items: readonly string[], separator: string): string {
  const shown = items.slice(0, MAX_LISTED).join(separator)
  return items.length > MAX_LISTED ? `${shown}${separator}... (${items.length - MAX_LISTED} more)` : shown
}

/** ` (did you mean "x"?)` when `given` is a near spelling of exactly one of `options`, or nothing. */
function didYouMean(given: unknown, options: readonly unknown[]): string {
  if (typeof given !== 'string') return ''
  const strings = options.filter((option): option is string => typeof option === 'string')
  const nearest = nearestSpelling(given, strings)
  return nearest === undefined ? '' : ` (did you mean ${quotedKey(nearest)}?)`
}

function describeFound(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return value.length === 1 ? 'array of 1 item' : `array of ${value.length} items`
  switch (typeof value) {
    case 'string':
      return `string ${JSON.stringify(clipped(value))}`
    case 'number':
    case 'boolean':
      return `${typeof value} ${String(value)}`
    case 'object': {
      const keys = Object.keys(value)
      if (keys.length === 0) return 'empty object'
      const shown = keys.slice(0, 8).map(quotedKey)
      return `object with keys ${shown.join(', ')}${keys.length > 8 ? ', ...' : ''}`
    }
    default:
      return typeof value
  }
}

function literal(value: unknown): string {
  return clipped(JSON.stringify(value) ?? String(value))
}

function typeWords(schema: JsonSchemaNode, type: string, depth: number): string {
  switch (type) {
    case 'array': {
      const { items, prefixItems } = schema
      if (depth >= 2) return 'array'
      if (prefixItems !== undefined) return `array [${prefixItems.map((item) => describeExpected(item, depth + 1)).join(', ')}${items === false ? '' : ', ...'}]`
      return items === undefined || typeof items === 'boolean' || Array.isArray(items) ? 'array' : `array of ${describeExpected(items, depth + 1)}`
    }
    case 'object': {
      const keys = Object.keys(schema.properties ?? {})
      if (keys.length === 0 || depth >= 2) return 'object'
      const required = new Set(schema.required ?? [])
      const shown = keys.slice(0, 8).map((key) => clipped(required.has(key) ? key : `${key}?`))
      return `object {${shown.join(', ')}${keys.length > 8 ? ', ...' : ''}}`
    }
    default:
      return schema.format !== undefined && type === 'string' ? `string (format "${schema.format}")` : type
  }
}

/** The expected shape of a schema node in words, two container levels deep at most. */
function describeExpected(schema: JsonSchemaNode | undefined, depth = 0): string {
  if (schema === undefined) return 'any JSON value'
  if (schema.const !== undefined) return literal(schema.const)
  if (schema.enum !== undefined) return schema.enum.length === 1 ? literal(schema.enum[0]) : `one of ${listed(schema.enum.map(literal), ' | ')}`
  for (const [keyword, words] of [['oneOf', 'exactly one of'], ['anyOf', 'any of']] as const) {
    const branches = schema[keyword]
    if (branches === undefined) continue
    return depth >= 2 ? 'one of several shapes' : `${words}: ${branches.map((branch) => describeExpected(branch, depth + 1)).join(' | ')}`
  }
  if (schema.type === undefined) return schema.$ref === undefined ? 'any JSON value' : `the schema at ${schema.$ref}`
  const types = typeof schema.type === 'string' ? [schema.type] : schema.type
  return types.map((type) => typeWords(schema, type, depth)).join(' | ')
}

/** Converts ajv's JSON Pointer into a `$` path, telling array indexes from keys by the value. */
function pathOf(pointer: string, root: JsonValue): string {
  let path = '$'
  let current: unknown = root
  if (pointer === '') return path
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (Array.isArray(current)) {
      const index = Number(segment)
      path = appendIndex(path, index)
      current = current[index]
    } else {
      // Exact: the path is data a caller compares; the message clips it (describeIssues in errors.ts).
      path = appendKey(path, segment)
      current = typeof current === 'object' && current !== null ? (current as Record<string, unknown>)[segment] : undefined
    }
  }
  return path
}

function branchList(indexes: readonly number[]): string {
  const names = indexes.map((index) => `oneOf[${index}]`)
  return names.length <= 2 ? names.join(' and ') : `${names.slice(0, -1).join(', ')} and ${names.at(-1) ?? ''}`
}

/** What a keyword of the grown subset asks for, in words, from ajv's error parameters. */
function constraintWords(error: ErrorObject): string | undefined {
  const params = error.params as Record<string, unknown>
  const limit = String(params['limit'])
  switch (error.keyword) {
    case 'minLength':
      return `a string of at least ${limit} character${limit === '1' ? '' : 's'}`
    case 'maxLength':
      return `a string of at most ${limit} character${limit === '1' ? '' : 's'}`
    case 'pattern':
      return `a string matching /${clipped(String(params['pattern']), 200)}/`
    case 'format':
      return `a string in format "${String(params['format'])}"`
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `a number ${String(params['comparison'])} ${limit}`
    case 'multipleOf':
      return `a multiple of ${String(params['multipleOf'])}`
    case 'minItems':
      return `an array of at least ${limit} item${limit === '1' ? '' : 's'}`
    case 'maxItems':
    case 'items':
      return `an array of at most ${limit} item${limit === '1' ? '' : 's'}`
    case 'minProperties':
      return `an object with at least ${limit} key${limit === '1' ? '' : 's'}`
    case 'maxProperties':
      return `an object with at most ${limit} key${limit === '1' ? '' : 's'}`
    case 'uniqueItems':
      return 'an array without duplicate items'
    default:
      return undefined
  }
}

function issueOf(error: ErrorObject, root: JsonValue): SchemaIssue {
  const path = pathOf(error.instancePath, root)
  const schema = error.parentSchema as JsonSchemaNode | undefined
  const params = error.params as Record<string, unknown>
  const propertyName = (error as { propertyName?: unknown }).propertyName
  if (typeof propertyName === 'string') {
    // A key refused by `propertyNames`: the key is what is wrong, at the place it would hold.
    const inner = constraintWords(error) ?? describeExpected(schema)
    return { path: appendKey(path, propertyName), expected: `a key that is ${inner}`, found: `key ${quotedKey(propertyName)}` }
  }
  switch (error.keyword) {
    case 'required': {
      const key = String(params['missingProperty'])
      const declared = schema?.properties?.[key] ?? (typeof schema?.additionalProperties === 'object' ? schema.additionalProperties : undefined)
      // An undeclared key spelled like the missing one is most likely it, misspelled.
      const given = typeof error.data === 'object' && error.data !== null ? Object.keys(error.data).slice(0, 100).filter((name) => schema?.properties?.[name] === undefined) : []
      const misspelled = given.find((name) => nearestSpelling(name, [key]) === key)
      return {
        path: appendKey(path, key),
        expected: `${describeExpected(declared)} (required key)`,
        found: misspelled === undefined ? 'missing' : `missing, but there is a key ${quotedKey(misspelled)}: did you mean ${quotedKey(key)}?`,
      }
    }
    case 'additionalProperties': {
      const key = String(params['additionalProperty'])
      const allowed = Object.keys(schema?.properties ?? {})
      // A misspelled key is the likeliest reason: name the declared key it is closest to.
      const nearest = nearestSpelling(key, allowed)
      return {
        path,
        expected: `no key ${quotedKey(key)} (${allowed.length === 0 ? 'no keys allowed' : `allowed keys: ${listed(allowed.map((name) => clipped(name)), ', ')}`}${nearest === undefined ? '' : `; did you mean ${quotedKey(nearest)}?`})`,
        found: 'unexpected key',
      }
    }
    case 'oneOf':
    case 'anyOf': {
      const passing = params['passingSchemas']
      const found = Array.isArray(passing)
        ? `${describeFound(error.data)}, which matches ${passing.length} branches (${branchList(passing as number[])})`
        : `${describeFound(error.data)}, which matches no branch`
      return { path, expected: describeExpected(schema), found }
    }
    case 'enum':
      return { path, expected: describeExpected(schema), found: `${describeFound(error.data)}${didYouMean(error.data, schema?.enum ?? [])}` }
    case 'const':
    case 'type':
      return { path, expected: describeExpected(schema), found: describeFound(error.data) }
    case 'uniqueItems':
      return { path, expected: 'an array without duplicate items', found: `items ${String(params['j'])} and ${String(params['i'])} are equal` }
    default: {
      const words = constraintWords(error)
      return { path, expected: words ?? `a value satisfying "${error.keyword}"`, found: describeFound(error.data) }
    }
  }
}

/**
 * Maps ajv errors to issues: one per problem, branch noise of failed `oneOf`s and `anyOf`s folded away. When no
 * branch matched but exactly one has the value's shape at the top (say the object branch of an
 * object-or-null field), its inner problems are the ones to fix, and they are reported instead.
 * Linear in the errors (each is placed by its own paths): an argument array of thousands of items
 * under a `oneOf` makes thousands of errors, and this runs on the host's main thread.
 */
function issuesOf(errors: readonly ErrorObject[], root: JsonValue): SchemaIssue[] {
  const oneOfs = new Map<string, ErrorObject>()
  for (const error of errors) if (BRANCHING.has(error.keyword)) oneOfs.set(oneOfKey(error.schemaPath, error.instancePath), error)
  const places = errors.map((error) => (oneOfs.size === 0 ? [] : enclosingOneOfs(error)))
  // Per failed oneOf, the branches whose own type, const or enum (or a oneOf of their own) refused the value.
  const misshapen = new Map<string, Set<number>>()
  errors.forEach((error, index) => {
    if (!SHAPE_KEYWORDS.has(error.keyword)) return
    for (const place of places[index] as OneOfPlace[]) {
      if (!place.atBranchRoot) continue
      let branches = misshapen.get(place.key)
      if (branches === undefined) misshapen.set(place.key, (branches = new Set()))
      branches.add(place.branch)
    }
  })
  // The branch each oneOf that matched nothing is read through, when exactly one had the shape.
  const unfolded = new Map<string, number>()
  for (const [key, oneOf] of oneOfs) {
    if (Array.isArray((oneOf.params as Record<string, unknown>)['passingSchemas'])) continue
    const count = (oneOf.schema as readonly unknown[] | undefined)?.length ?? 0
    const shaped: number[] = []
    for (let branch = 0; branch < count && shaped.length < 2; branch++) if (misshapen.get(key)?.has(branch) !== true) shaped.push(branch)
    if (shaped.length === 1) unfolded.set(key, shaped[0] as number)
  }
  const valueChecks = new Set(
    errors.filter((error) => error.keyword === 'enum' || error.keyword === 'const').map((error) => `${error.instancePath}|${parentPath(error.schemaPath)}`),
  )
  const issues: SchemaIssue[] = []
  const seen = new Set<string>()
  errors.forEach((error, index) => {
    if (BRANCHING.has(error.keyword) && unfolded.has(oneOfKey(error.schemaPath, error.instancePath))) return
    // The key's own error (carrying `propertyName`) says more than the summary.
    if (error.keyword === 'propertyNames') return
    // Inside a oneOf that failed, only the branch it is read through speaks.
    if ((places[index] as OneOfPlace[]).some((place) => oneOfs.has(place.key) && unfolded.get(place.key) !== place.branch)) return
    // `enum`/`const` already name the exact values, which says more than the type does.
    if (error.keyword === 'type' && valueChecks.has(`${error.instancePath}|${parentPath(error.schemaPath)}`)) return
    const issue = issueOf(error, root)
    const key = `${issue.path}\u0000${issue.expected}\u0000${issue.found}`
    if (!seen.has(key)) {
      seen.add(key)
      issues.push(issue)
    }
  })
  return issues
}

/** Keywords of a `oneOf`/`anyOf` branch's own node that say the value does not have its shape. */
const SHAPE_KEYWORDS: ReadonlySet<string> = new Set(['type', 'const', 'enum', 'oneOf', 'anyOf'])

/** Keywords whose branches are folded the same way: a failed one reports through one branch at most. */
const BRANCHING: ReadonlySet<string> = new Set(['oneOf', 'anyOf'])

/** A `oneOf` around an error: which one (its error's {@link oneOfKey}) and in which branch. */
interface OneOfPlace {
  readonly key: string
  readonly branch: number
  /** The error is about the branch's own node (the same value, one keyword below the branch). */
  readonly atBranchRoot: boolean
}

/** Identifies a `oneOf` by its schema path and the path of the value it judged. */
function oneOfKey(schemaPath: string, instancePath: string): string {
  return `${schemaPath}\u0000${instancePath}`
}

/**
 * The `oneOf`s and `anyOf`s an error sits in, outermost first. Its schema path says where: each
 * `properties/<key>`, `prefixItems/<n>`, `items` and `additionalProperties` step goes one level
 * down the value, `allOf/<n>` and `propertyNames` stay on it, each `oneOf/<n>` or `anyOf/<n>`
 * enters branch n; the first other keyword is the one that failed. Inside a referenced schema the
 * path starts at its definition (`#/$defs/<name>/...`) while the value path starts at the root, so
 * a branch's value is found by counting the value steps back from the end.
 */
function enclosingOneOfs(error: ErrorObject): OneOfPlace[] {
  const segments = error.schemaPath.split('/')
  const instance = error.instancePath.split('/')
  const marks: Array<{ readonly end: number; readonly branch: number; readonly depth: number }> = []
  let depth = 0
  let at = 1
  if ((segments[1] === '$defs' || segments[1] === 'definitions') && segments.length > 3) at = 3
  while (at < segments.length) {
    const segment = segments[at]
    const hasIndex = at + 1 < segments.length
    if ((segment === 'properties' || segment === 'prefixItems') && hasIndex) {
      depth += 1
      at += 2
    } else if (segment === 'items' || segment === 'additionalProperties') {
      depth += 1
      at += 1
    } else if (segment === 'allOf' && hasIndex) {
      at += 2
    } else if (segment === 'propertyNames') {
      at += 1
    } else if ((segment === 'oneOf' || segment === 'anyOf') && hasIndex) {
      marks.push({ end: at, branch: Number(segments[at + 1]), depth })
      at += 2
    } else {
      break
    }
  }
  return marks.map((mark) => ({
    key: oneOfKey(segments.slice(0, mark.end + 1).join('/'), instance.slice(0, instance.length - (depth - mark.depth)).join('/')),
    branch: mark.branch,
    atBranchRoot: mark.end + 3 === segments.length && depth === mark.depth,
  }))
}

function parentPath(schemaPath: string): string {
  return schemaPath.slice(0, schemaPath.lastIndexOf('/'))
}

/** Snapshots `value` through the JSON boundary and validates the copy. Never throws for a value. */
function check(checked: CheckedSchema, value: unknown): { readonly issues: readonly SchemaIssue[]; readonly snapshot: JsonValue | undefined } {
  let snapshot: JsonValue
  try {
    snapshot = snapshotJson(value, '$')
  } catch (error) {
    // Any failure here is the value's fault (a boundary rejection), so it becomes an issue, not a throw.
    const path = error instanceof JsonBoundaryError ? error.path : '$'
    const reason = error instanceof JsonBoundaryError ? error.reason : 'a value that cannot be read as JSON'
    return { issues: [{ path, expected: 'a lossless JSON value', found: `non-JSON value: ${reason}` }], snapshot: undefined }
  }
  const validate = validatorOf(checked)
  try {
    if (validate(snapshot)) return { issues: [], snapshot }
  } catch (error) {
    // A recursive schema is checked by recursion per level of the value: a value nested deeper
    // than the stack allows is refused, not a crash.
    if (!(error instanceof RangeError)) throw error
    return { issues: [{ path: '$', expected: 'a value nested shallowly enough to be checked', found: 'a value nested too deeply for its recursive schema' }], snapshot: undefined }
  }
  return { issues: issuesOf(validate.errors ?? [], snapshot), snapshot: undefined }
}

/**
 * Validates any value against a raw schema of the enforced subset. The value first crosses the JSON
 * boundary (a non-JSON value, such as a Date, a Map, `-0` or a cycle, yields one issue at its path),
 * then the schema's validator checks the copy. A schema this library built or froze is checked and
 * compiled once; a caller's own object is checked again on every call, since it may have changed.
 * Issues name the path, the expected shape and what was found; a failed `oneOf` says which branches
 * matched, or that none did.
 * @returns every issue found; empty when the value is valid. Never throws because of `value`.
 * @throws JsonSchemaError when `schema` itself is outside the subset.
 */
export function validateJsonSchemaValue(schema: JsonSchemaNode, value: unknown): readonly SchemaIssue[] {
  return check(checkedSchema(schema), value).issues
}

function isRawObjectSchema(parameters: object): boolean {
  // A parameter map may declare a property named "type", but its value is then a spec object.
  const descriptor = Object.getOwnPropertyDescriptor(parameters, 'type')
  return descriptor !== undefined && 'value' in descriptor && typeof descriptor.value === 'string'
}

/**
 * Validates tool arguments against a parameter spec or an object-rooted raw schema.
 * @param parameters - a {@link ParameterSchemaSpec} or an {@link ObjectJsonSchema}, read on every call
 *   (the compiled forms of one that reads the same are reused).
 * @param args - the arguments as received; any value.
 * @param toolName - named in the error message.
 * @returns the validated arguments as a fresh deep-frozen lossless JSON copy.
 * @throws ToolArgsError (`INVALID_ARGS`) listing every issue, in words a model can act on.
 * @throws SchemaSpecError or JsonSchemaError when `parameters` itself is malformed.
 */
export function validateArgs<const P extends ParameterSchemaSpec>(parameters: P, args: unknown, toolName?: string): InferArgs<P>
export function validateArgs(parameters: ObjectJsonSchema, args: unknown, toolName?: string): JsonObject
export function validateArgs(parameters: ParameterSchemaSpec | ObjectJsonSchema, args: unknown, toolName?: string): JsonObject {
  let checked: CheckedSchema
  if (typeof parameters === 'object' && parameters !== null && isRawObjectSchema(parameters)) {
    checked = checkedSchema(parameters)
    if (checked.node.type !== 'object') {
      throw new JsonSchemaError([{ path: '$.type', message: `the root must be type "object", found type "${String(checked.node.type)}"` }])
    }
  } else {
    checked = checkedSchema(parameterSchemaSpecToJsonSchema(parameters as ParameterSchemaSpec))
  }
  const { issues, snapshot } = check(checked, args)
  if (issues.length > 0 || snapshot === undefined) throw new ToolArgsError(toolName ?? '(unnamed)', issues)
  return snapshot as JsonObject
}

/**
 * @internal Non-throwing check used by `defineTool`'s concurrency classifier.
 * @returns true when `value` is valid against the already-compiled `schema`.
 */
export function isValidAgainst(schema: JsonSchemaNode, value: unknown): boolean {
  return check(checkedSchema(schema), value).issues.length === 0
}
