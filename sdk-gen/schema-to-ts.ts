/**
 * One JSON Schema node (the enforced subset of `src/schema/types.ts`) as a TypeScript type, with
 * the JSDoc of its properties. The schema is trusted to be valid, not to be friendly: every name,
 * literal and annotation is escaped on the way out.
 */

import type { JsonSchemaNode, JsonSchemaScalar } from '../src/schema/types.ts'
import { renderDocComment, renderDocValue } from './doc-comment.ts'
import { OBJECT_MEMBERS, renderPropertyKey, renderStringLiteral } from './identifiers.ts'

/**
 * Container levels (arrays, objects) rendered exactly, as in the DSL's type inference; a deeper
 * container becomes `JsonValue`. Keeps the declarations readable; the tool still validates the
 * full schema at run time.
 */
export const MAX_TYPE_DEPTH = 16

// Bounds recursion even through long chains of nested `oneOf`, which do not count as containers.
const MAX_NESTING = 64

/** How deep a node sits: container types above it, and schema nodes of any kind above it. */
interface Depth {
  readonly containers: number
  readonly nodes: number
}

/** Object types whose one-line form is longer than this are written one member per line. */
const MAX_INLINE_OBJECT_CHARS = 72

const INDENT = '  '

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
 * (multi-line object types close at that indentation).
 */
export function schemaToType(node: JsonSchemaNode, indent = ''): string {
  return render(node, indent, { containers: 0, nodes: 0 }).text
}

/**
 * The JSDoc segments that describe `node`: `title: description`, an `Integer.` note, one
 * `@default` and one `@example` per example (`examples` as an array lists several).
 */
export function describeNode(node: JsonSchemaNode, options: { values: boolean } = { values: true }): string[] {
  const segments: string[] = []
  const text = [node.title, node.description].filter((part) => part !== undefined && part !== '').join(': ')
  if (text !== '') segments.push(text)
  if (node.type === 'integer') segments.push('Integer.')
  if (options.values) {
    if (node.default !== undefined) segments.push(`@default ${renderDocValue(node.default)}`)
    if (node.examples !== undefined) {
      const examples = Array.isArray(node.examples) ? node.examples : [node.examples]
      for (const example of examples) segments.push(`@example ${renderDocValue(example)}`)
    }
  }
  return segments
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

function render(node: JsonSchemaNode, indent: string, depth: Depth): RenderedType {
  const isContainer = node.type === 'array' || node.type === 'object'
  if (depth.nodes >= MAX_NESTING || (isContainer && depth.containers >= MAX_TYPE_DEPTH)) return primary('JsonValue')
  if (node.const !== undefined) return primary(literal(node.const))
  if (node.enum !== undefined) return union(node.enum.map((value) => primary(literal(value))))
  const base = renderBase(node, indent, depth)
  if (node.oneOf === undefined) return base ?? primary('JsonValue')
  const branches = union(node.oneOf.map((branch) => render(branch, indent, { containers: depth.containers, nodes: depth.nodes + 1 })))
  if (base === undefined || (addsOnlyType(node) && node.oneOf.every((branch) => branch.type === node.type))) return branches
  return { text: `${parenthesized(base, 'intersection')} & ${parenthesized(branches, 'intersection')}`, precedence: 'intersection' }
}

/** True when `node` constrains nothing but its `type` (no properties, items or closedness). */
function addsOnlyType(node: JsonSchemaNode): boolean {
  return node.properties === undefined && node.items === undefined && node.additionalProperties !== false
}

function renderBase(node: JsonSchemaNode, indent: string, depth: Depth): RenderedType | undefined {
  if (Array.isArray(node.type)) return union(node.type.map((type) => renderBase({ ...node, type }, indent, depth) ?? primary('JsonValue')))
  const inner: Depth = { containers: depth.containers + 1, nodes: depth.nodes + 1 }
  switch (node.type) {
    case 'string':
      return primary('string')
    case 'number':
    case 'integer':
      return primary('number')
    case 'boolean':
      return primary('boolean')
    case 'null':
      return primary('null')
    case 'array': {
      const { items } = node
      const item = items === undefined || typeof items === 'boolean' || Array.isArray(items) ? primary('JsonValue') : render(items, indent, inner)
      return primary(`${parenthesized(item, 'primary')}[]`)
    }
    case 'object':
      return primary(renderObject(node, indent, inner))
    case undefined:
      return undefined
  }
}

function renderObject(node: JsonSchemaNode, indent: string, depth: Depth): string {
  const properties = node.properties ?? {}
  const required = new Set(node.required ?? [])
  const inner = indent + INDENT
  const members: { doc: string; text: string }[] = []
  const inherited: string[] = []
  for (const [name, schema] of Object.entries(properties)) {
    const optional = required.has(name) ? '' : '?'
    let type = render(schema, inner, depth).text
    // Every object literal has Object's members in TypeScript's eyes: an optional `constructor?:
    // string` would refuse `{}`, which leaves it out, because Function is not a string. The
    // inherited member's type is allowed beside the declared one (and is what reading such a key
    // of a value that lacks it gives at run time).
    if (optional === '?' && OBJECT_MEMBERS.has(name)) {
      const member = `Object[${renderStringLiteral(name)}]`
      type = `${type} | ${member}`
      inherited.push(member)
    }
    members.push({ doc: renderDocComment(describeNode(schema), inner), text: `${renderPropertyKey(name)}${optional}: ${type}` })
  }
  if (node.additionalProperties !== false) {
    // Every property must fit the index signature: so must the inherited members allowed above.
    members.push({ doc: '', text: `[key: string]: ${['JsonValue', 'undefined', ...inherited].join(' | ')}` })
  }
  if (members.length === 0) return 'Record<string, never>'

  const inline = `{ ${members.map((member) => member.text).join('; ')} }`
  const fitsInline = inline.length <= MAX_INLINE_OBJECT_CHARS && !inline.includes('\n') && members.every((m) => m.doc === '')
  if (fitsInline) return inline
  return `{\n${members.map((member) => `${member.doc}${inner}${member.text}\n`).join('')}${indent}}`
}
