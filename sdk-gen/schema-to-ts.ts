/**
 * One JSON Schema node (the enforced subset of `src/schema/types.ts`) as a TypeScript type, with
 * the JSDoc of its properties. The schema is trusted to be valid, not to be friendly: every name,
 * literal and annotation is escaped on the way out.
 */

import type { JsonSchemaNode, JsonSchemaScalar, JsonSchemaType } from '../src/schema/types.ts'
import { renderDocComment, renderDocValue } from './doc-comment.ts'
import { OBJECT_MEMBERS, renderPropertyKey, renderStringLiteral } from './identifiers.ts'
import { CLOSED_OBJECT_MARKER } from './type-check-core.js'

/**
 * Container levels (arrays, objects) rendered exactly, as in the DSL's type inference; a deeper
 * container becomes `JsonValue`. Keeps the declarations readable; the tool still validates the
 * full schema at run time.
 */
export const MAX_TYPE_DEPTH = 16

// Bounds recursion even through long chains of nested `oneOf`, which do not count as containers.
const MAX_NESTING = 64

// References expanded inline in one rendering when no name is given for them: a chain of
// definitions that each use the next twice would otherwise double the text at every link.
const MAX_INLINE_REFS = 64

/** Object types whose one-line form is longer than this are written one member per line. */
const MAX_INLINE_OBJECT_CHARS = 72

const INDENT = '  '

/** Longest `@pattern` written into a comment before it is cut with `…`. */
const MAX_DOC_PATTERN_CHARS = 200

/**
 * How a schema is rendered. `input` is for arguments a program writes: an open object lists only
 * its declared keys (no index signature), so a misspelled key fails the type check; `output` is
 * for values a program reads: an open object keeps `[key: string]: JsonValue | undefined`.
 */
export interface SchemaTypeOptions {
  readonly role?: 'input' | 'output'
  /**
   * The type name to write for a `$ref` (as written in the schema), or `undefined` to expand the
   * referenced schema inline. Without it, references are expanded inline against `root`, and a
   * reference met again inside its own expansion (recursion) becomes `JsonValue`.
   */
  readonly refName?: (ref: string) => string | undefined
  /** The document `$ref`s point into; defaults to the node being rendered. */
  readonly root?: JsonSchemaNode
}

/** How deep a node sits, and what the rendering of one schema shares. */
interface Context {
  readonly containers: number
  readonly nodes: number
  readonly role: 'input' | 'output'
  readonly refName: ((ref: string) => string | undefined) | undefined
  readonly root: JsonSchemaNode
  /** References being expanded inline on the current path. */
  readonly expanding: ReadonlySet<string>
  readonly budget: { inlineRefs: number }
}

/**
 * A rendered type and how tightly it binds, so a caller knows when to parenthesize
 * (`(A | B)[]`, `Base & (A | B)`).
 */
interface RenderedType {
  readonly text: string
  readonly precedence: 'union' | 'intersection' | 'primary'
  /** The member texts of a union, so a union of unions flattens and repeats drop out. */
  readonly members?: readonly string[]
}

/**
 * The TypeScript type of values `node` accepts, written for a position indented by `indent`
 * (multi-line object types close at that indentation). See {@link SchemaTypeOptions} for `role`
 * (`output` by default) and how `$ref`s are written.
 */
export function schemaToType(node: JsonSchemaNode, indent = '', options: SchemaTypeOptions = {}): string {
  const context: Context = {
    containers: 0,
    nodes: 0,
    role: options.role ?? 'output',
    refName: options.refName,
    root: options.root ?? node,
    expanding: new Set(),
    budget: { inlineRefs: MAX_INLINE_REFS },
  }
  return render(node, indent, context).text
}

/**
 * The schema a local `$ref` (`#`, `#/$defs/Name`, any JSON Pointer) points to in `root`, or
 * `undefined` when it points nowhere. Never runs a getter: the schema is plain JSON.
 */
export function resolveLocalRef(root: JsonSchemaNode, ref: string): JsonSchemaNode | undefined {
  if (!ref.startsWith('#')) return undefined
  let fragment: string
  try {
    fragment = decodeURIComponent(ref.slice(1))
  } catch {
    return undefined
  }
  if (fragment === '') return root
  if (!fragment.startsWith('/')) return undefined
  let current: unknown = root
  for (const raw of fragment.slice(1).split('/')) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, segment)) return undefined
    current = (current as Record<string, unknown>)[segment]
  }
  return typeof current === 'object' && current !== null && !Array.isArray(current) ? (current as JsonSchemaNode) : undefined
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER

/** The constraint tags of one node, in the order a reader wants them. */
function constraintTags(node: JsonSchemaNode): string[] {
  const tags: string[] = []
  const types = typesOf(node)
  const integer = types !== undefined && types.every((type) => type === 'integer' || type === 'null')
  if (node.format !== undefined) tags.push(`@format ${node.format}`)
  if (node.pattern !== undefined) {
    const text = /[\r\n\u2028\u2029]/.test(node.pattern) ? JSON.stringify(node.pattern) : node.pattern
    tags.push(`@pattern ${text.length > MAX_DOC_PATTERN_CHARS ? `${text.slice(0, MAX_DOC_PATTERN_CHARS)}…` : text}`)
  }
  for (const keyword of ['minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems', 'minProperties', 'maxProperties'] as const) {
    const value = node[keyword]
    if (value === undefined) continue
    // zod bounds every integer by the safe range, which every JSON integer here is in anyway.
    if (integer && (keyword === 'minimum' || keyword === 'maximum') && Math.abs(value) === MAX_SAFE) continue
    tags.push(`@${keyword} ${String(value)}`)
  }
  if (node.uniqueItems === true) tags.push('@uniqueItems')
  return tags
}

/**
 * The branch whose constraints describe a node: the node itself, or for a nullable value written
 * as a union (`anyOf: [X, {type: "null"}]`) the one branch that is not null.
 */
function describedBranch(node: JsonSchemaNode): JsonSchemaNode {
  const branches = node.anyOf ?? node.oneOf
  if (branches === undefined) return node
  const others = branches.filter((branch) => branch.type !== 'null')
  return others.length === 1 && others.length < branches.length ? (others[0] as JsonSchemaNode) : node
}

/**
 * The JSDoc segments that describe `node`: `title: description`, an `Integer.` note,
 * `@deprecated`, its constraints (`@minLength 1`, `@pattern ^[a-z]+$`, `@format uri`, ...), one
 * `@default` and one `@example` per example (`examples` as an array lists several).
 */
export function describeNode(node: JsonSchemaNode, options: { values: boolean } = { values: true }): string[] {
  const segments: string[] = []
  const branch = describedBranch(node)
  const text = [node.title ?? branch.title, node.description ?? branch.description].filter((part) => part !== undefined && part !== '').join(': ')
  if (text !== '') segments.push(text)
  const types = typesOf(branch)
  if (types !== undefined && types.includes('integer') && !types.includes('number')) segments.push('Integer.')
  if (node.deprecated === true || branch.deprecated === true) segments.push('@deprecated')
  const tags = constraintTags(node)
  segments.push(...(branch === node ? tags : [...tags, ...constraintTags(branch)]))
  if (options.values) {
    if (node.default !== undefined) segments.push(`@default ${renderDocValue(node.default)}`)
    if (node.examples !== undefined) {
      const examples = Array.isArray(node.examples) ? node.examples : [node.examples]
      for (const example of examples) segments.push(`@example ${renderDocValue(example)}`)
    }
  }
  return segments
}

function typesOf(node: JsonSchemaNode): readonly JsonSchemaType[] | undefined {
  return node.type === undefined ? undefined : typeof node.type === 'string' ? [node.type] : node.type
}

function primary(text: string): RenderedType {
  return { text, precedence: 'primary' }
}

function parenthesized(type: RenderedType, minimum: 'intersection' | 'primary'): string {
  const binds = type.precedence === 'primary' || (minimum === 'intersection' && type.precedence === 'intersection')
  return binds ? type.text : `(${type.text})`
}

function literal(value: JsonSchemaScalar): string {
  if (typeof value === 'string') return renderStringLiteral(value)
  // JSON numbers are finite; `-0` is written `0`, which is the same literal type.
  return String(value)
}

function union(types: readonly RenderedType[]): RenderedType {
  const members = [...new Set(types.flatMap((type) => type.members ?? [type.text]))]
  const [first] = types
  if (first === undefined) return primary('never')
  if (members.length === 1) return first
  return { text: members.join(' | '), precedence: 'union', members }
}

function intersection(types: readonly RenderedType[]): RenderedType {
  const texts = [...new Set(types.map((type) => parenthesized(type, 'intersection')))]
  if (texts.length === 1) return types[0] as RenderedType
  return { text: texts.join(' & '), precedence: 'intersection' }
}

function nested(context: Context, container: boolean): Context {
  return { ...context, containers: context.containers + (container ? 1 : 0), nodes: context.nodes + 1 }
}

function render(node: JsonSchemaNode, indent: string, context: Context): RenderedType {
  const types = typesOf(node)
  const isContainer = types !== undefined && (types.includes('array') || types.includes('object'))
  if (context.nodes >= MAX_NESTING || (isContainer && context.containers >= MAX_TYPE_DEPTH)) return primary('JsonValue')
  if (node.const !== undefined) return primary(literal(node.const))
  if (node.enum !== undefined) return union(node.enum.map((value) => primary(literal(value))))
  const parts: RenderedType[] = []
  const base = renderBase(node, types, indent, context)
  const branchContext = nested(context, false)
  const branches = [node.oneOf, node.anyOf].filter((list) => list !== undefined)
  // A base that only says the type every branch repeats adds nothing beside the branches.
  const lists = node.allOf === undefined ? branches : [...branches, node.allOf]
  const redundant =
    base !== undefined &&
    addsOnlyType(node) &&
    lists.length > 0 &&
    lists.every((list) => list.every((branch) => JSON.stringify(branch.type) === JSON.stringify(node.type)))
  if (base !== undefined && !redundant) parts.push(base)
  if (node.$ref !== undefined) parts.push(renderRef(node.$ref, indent, context))
  for (const list of branches) parts.push(union(list.map((branch) => render(branch, indent, branchContext))))
  if (node.allOf !== undefined) parts.push(...node.allOf.map((branch) => render(branch, indent, branchContext)))
  // An unconstrained allOf part (`{}`, annotations only) is JsonValue: it narrows nothing.
  const narrowing = parts.filter((part) => part.text !== 'JsonValue')
  if (narrowing.length === 0) return primary('JsonValue')
  return intersection(narrowing)
}

function renderRef(ref: string, indent: string, context: Context): RenderedType {
  const name = context.refName?.(ref)
  if (name !== undefined) return primary(name)
  const target = resolveLocalRef(context.root, ref)
  if (target === undefined || context.expanding.has(ref) || context.budget.inlineRefs <= 0) return primary('JsonValue')
  context.budget.inlineRefs -= 1
  return render(target, indent, { ...nested(context, false), expanding: new Set([...context.expanding, ref]) })
}

/** True when `node` constrains nothing but its `type` (no properties, items or closedness). */
function addsOnlyType(node: JsonSchemaNode): boolean {
  return (
    node.properties === undefined &&
    node.items === undefined &&
    node.prefixItems === undefined &&
    node.additionalProperties === undefined &&
    node.required === undefined
  )
}

function renderBase(node: JsonSchemaNode, types: readonly JsonSchemaType[] | undefined, indent: string, context: Context): RenderedType | undefined {
  if (types === undefined) return undefined
  const inner = nested(context, true)
  return union(
    types.map((type) => {
      switch (type) {
        case 'string':
          return primary('string')
        case 'number':
        case 'integer':
          return primary('number')
        case 'boolean':
          return primary('boolean')
        case 'null':
          return primary('null')
        case 'array':
          return renderArray(node, indent, inner)
        case 'object':
          return primary(renderObject(node, indent, inner))
      }
    }),
  )
}

function renderArray(node: JsonSchemaNode, indent: string, context: Context): RenderedType {
  // The 2020-12 tuple (prefixItems, then items for the rest) or the draft-07 one (an items
  // array, then additionalItems).
  const prefix = node.prefixItems ?? (Array.isArray(node.items) ? node.items : undefined)
  const rest = node.prefixItems !== undefined ? node.items : Array.isArray(node.items) ? node.additionalItems : node.items
  const restType = rest === false ? undefined : rest === undefined || rest === true || Array.isArray(rest) ? primary('JsonValue') : render(rest, indent, context)
  if (prefix === undefined) return primary(`${parenthesized(restType ?? primary('never'), 'primary')}[]`)
  // Items past minItems may be missing. Written as one tuple per length rather than with optional
  // elements, whose `T | undefined` no JSON type (nor an index signature of JsonValue) accepts.
  const minimum = Math.min(node.minItems ?? 0, prefix.length)
  const elements = prefix.map((item) => render(item, indent, context).text)
  const tuples: RenderedType[] = []
  for (let length = minimum; length < prefix.length; length += 1) tuples.push(primary(`[${elements.slice(0, length).join(', ')}]`))
  const full = restType === undefined ? elements : [...elements, `...${parenthesized(restType, 'primary')}[]`]
  tuples.push(primary(`[${full.join(', ')}]`))
  return union(tuples)
}

function renderObject(node: JsonSchemaNode, indent: string, context: Context): string {
  const properties = node.properties ?? {}
  const required = new Set(node.required ?? [])
  const additional = node.additionalProperties
  const inner = indent + INDENT
  const members: { doc: string; text: string }[] = []
  const inherited: string[] = []
  const memberTypes: RenderedType[] = []
  let anyOptional = false
  for (const [name, schema] of Object.entries(properties)) {
    const optional = required.has(name) ? '' : '?'
    const rendered = render(schema, inner, context)
    let type = rendered.text
    memberTypes.push(rendered)
    if (optional === '?') anyOptional = true
    // Every object literal has Object's members in TypeScript's eyes: an optional `constructor?:
    // string` would refuse an argument `{}`, which leaves it out, because Function is not a
    // string. The inherited member's type is allowed beside the declared one in what a program
    // writes; what it reads keeps the JSON type, so a result stays assignable to JsonValue.
    if (optional === '?' && OBJECT_MEMBERS.has(name) && context.role === 'input') {
      const member = `Object[${renderStringLiteral(name)}]`
      type = `${type} | ${member}`
      inherited.push(member)
    }
    members.push({ doc: renderDocComment(describeNode(schema), inner), text: `${renderPropertyKey(name)}${optional}: ${type}` })
  }
  const values = typeof additional === 'object' ? render(additional, inner, context) : undefined
  // Required keys an additionalProperties schema describes (a record with known keys).
  for (const name of required) {
    if (Object.hasOwn(properties, name)) continue
    const type = values ?? primary('JsonValue')
    memberTypes.push(type)
    members.push({ doc: '', text: `${renderPropertyKey(name)}: ${type.text}` })
  }
  if (values !== undefined) {
    // Every declared property must fit the index signature too.
    const signature = union([values, ...memberTypes, ...inherited.map(primary), ...(anyOptional ? [primary('undefined')] : [])])
    members.push({ doc: '', text: `[key: string]: ${signature.text}` })
  } else if (additional !== false && (context.role === 'output' || members.length === 0)) {
    // An open object a program reads may hold more keys; one it writes lists only the declared
    // keys, so that a misspelled key fails the type check (unless there is nothing to list).
    members.push({ doc: '', text: `[key: string]: ${['JsonValue', 'undefined', ...inherited].join(' | ')}` })
  }
  if (members.length === 0) return 'Record<string, never>'

  // An argument object whose schema refuses other keys says so first: the model reads it, and the
  // type check refuses an undeclared key only there (on an open object the tool would get the key).
  const closed = additional === false && context.role === 'input'
  const inline = `{ ${closed ? `${CLOSED_OBJECT_MARKER} ` : ''}${members.map((member) => member.text).join('; ')} }`
  const fitsInline = inline.length <= MAX_INLINE_OBJECT_CHARS && !inline.includes('\n') && members.every((m) => m.doc === '')
  if (fitsInline) return inline
  return `{\n${closed ? `${inner}${CLOSED_OBJECT_MARKER}\n` : ''}${members.map((member) => `${member.doc}${inner}${member.text}\n`).join('')}${indent}}`
}
