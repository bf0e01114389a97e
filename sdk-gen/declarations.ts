/**
 * The whole SDK a Code Mode program sees: `type JsonValue` once, the named types of referenced
 * schemas, then `declare const tools` with one documented async method per tool, and the bindings
 * the sandbox installs under those names.
 */

import { ToolDefinitionError } from '../src/errors.ts'
import type { JsonSchemaNode } from '../src/schema/types.ts'
import { renderDocComment } from './doc-comment.ts'
import { assignBindings, isIdentifierName } from './identifiers.ts'
import type { SdkBinding } from './identifiers.ts'
import { describeNode, resolveLocalRef, schemaToType } from './schema-to-ts.ts'

/** One tool as the SDK generator needs it: its model-facing schema, plus its output schema. */
export interface SdkToolInput {
  readonly name: string
  readonly description: string
  /** The parameters schema (an object root, already validated). */
  readonly parameters: JsonSchemaNode
  /** The schema of the value a call resolves to; absent means any JSON value. */
  readonly output?: JsonSchemaNode
  /** A short human title, written before the description. */
  readonly title?: string
}

/** Generated declarations and the guest bindings they describe, both sorted by tool name. */
export interface GeneratedSdk {
  /** TypeScript declarations: `type JsonValue` and `declare const tools`. Ends with a newline. */
  readonly declarations: string
  /** `tools[binding]` calls the tool `name`; one entry per tool, in the order of `declarations`. */
  readonly bindings: readonly SdkBinding[]
  /**
   * Each tool on its own, in the order of `bindings`: what a listing of names and the sandbox's
   * `tools.$search` / `tools.$describe` show when the declarations are too large to send whole.
   */
  readonly catalog: readonly SdkCatalogEntry[]
}

/** One tool of a {@link GeneratedSdk}, described on its own. */
export interface SdkCatalogEntry {
  /** The registered tool name. */
  readonly name: string
  /** The key the program calls it by (`tools[binding]`). */
  readonly binding: string
  /** The description's first sentence, on one line, at most {@link MAX_SUMMARY_CHARS} characters. */
  readonly summary: string
  /** The argument keys, optional ones marked: `{ path, head? }` (`{}` without any). */
  readonly args: string
  /** The tool's declaration: the named types it uses, then its documented method. Ends with a newline. */
  readonly declaration: string
}

/** The longest one-line summary a catalog entry keeps. */
export const MAX_SUMMARY_CHARS = 120

// `| undefined` in the object branch lets an object type with optional properties count as JSON,
// so a result with optional fields can be passed on to a parameter typed `JsonValue`.
const JSON_VALUE_DECLARATION =
  '/** Any JSON value. */\n' +
  'type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue | undefined }\n'

const TOOLS_DOC =
  '/**\n' +
  ' * The tools this program can call. A call resolves to the tool\'s result value, or throws an\n' +
  ' * Error whose message says why the call failed.\n' +
  ' */\n'

const MEMBER_INDENT = '  '

function byName(a: SdkToolInput, b: SdkToolInput): number {
  // Code-unit order, never locale order: the same tools give the same text on every machine.
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

/** Type names handed out in one SDK, so no two named types collide (nor with `JsonValue`). */
class TypeNames {
  readonly #taken = new Set(['JsonValue'])

  claim(base: string): string {
    let name = base
    for (let n = 2; this.#taken.has(name); n++) name = `${base}${n}`
    this.#taken.add(name)
    return name
  }
}

function pascal(text: string): string {
  const words = text.split(/[^A-Za-z0-9]+/).filter((word) => word !== '')
  const joined = words.map((word) => `${word.charAt(0).toUpperCase()}${word.slice(1)}`).join('')
  if (joined === '') return 'Type'
  return /^[0-9]/.test(joined) ? `T${joined}` : joined
}

/** Every `$ref` string in `node`'s own tree, not entering `$defs`/`definitions` (targets are visited when referenced). */
function refsIn(node: JsonSchemaNode, found: Set<string>): void {
  const stack: unknown[] = [node]
  while (stack.length > 0) {
    const current = stack.pop()
    if (typeof current !== 'object' || current === null) continue
    if (Array.isArray(current)) {
      stack.push(...current)
      continue
    }
    for (const [key, value] of Object.entries(current)) {
      if (key === '$ref' && typeof value === 'string') found.add(value)
      else if (key === 'properties' || key === 'patternProperties') stack.push(...Object.values(value as object))
      else if (SUBSCHEMA_KEYS.has(key)) stack.push(value)
    }
  }
}

const SUBSCHEMA_KEYS: ReadonlySet<string> = new Set(['items', 'prefixItems', 'additionalItems', 'additionalProperties', 'propertyNames', 'oneOf', 'anyOf', 'allOf'])

/**
 * Names the schemas `root`'s references reach (`Fs_Node` style, from the binding and the
 * definition's name) and renders one `type` alias per target, so recursion is written by name.
 */
function namedTypes(
  root: JsonSchemaNode,
  binding: string,
  role: 'input' | 'output',
  names: TypeNames,
): { readonly refName: (ref: string) => string | undefined; readonly aliases: string[] } {
  const targets = new Map<string, { name: string; node: JsonSchemaNode }>()
  const pending = new Set<string>()
  refsIn(root, pending)
  const order: string[] = []
  while (pending.size > 0) {
    const ref = pending.values().next().value as string
    pending.delete(ref)
    if (targets.has(ref)) continue
    const node = resolveLocalRef(root, ref)
    if (node === undefined) continue
    const segments = decodePointer(ref).filter((segment) => segment !== '$defs' && segment !== 'definitions' && segment !== 'properties')
    const own = segments.length === 0 ? (role === 'input' ? 'Args' : 'Result') : `${role === 'output' ? 'Result' : ''}${pascal(segments.join(' '))}`
    targets.set(ref, { name: names.claim(`${pascal(binding)}${own}`), node })
    order.push(ref)
    const more = new Set<string>()
    refsIn(node, more)
    for (const next of more) if (!targets.has(next)) pending.add(next)
  }
  const refName = (ref: string): string | undefined => targets.get(ref)?.name
  const aliases = order.map((ref) => {
    const { name, node } = targets.get(ref) as { name: string; node: JsonSchemaNode }
    return `${renderDocComment(describeNode(node), '')}type ${name} = ${schemaToType(node, '', { role, refName, root })}\n`
  })
  return { refName, aliases }
}

function decodePointer(ref: string): string[] {
  let fragment: string
  try {
    fragment = decodeURIComponent(ref.slice(1))
  } catch {
    return []
  }
  return fragment === '' ? [] : fragment.slice(1).split('/').map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
}

/** The first sentence of `description`, on one line, clipped to {@link MAX_SUMMARY_CHARS}. */
export function summarize(description: string): string {
  const flat = description.replace(/\s+/g, ' ').trim()
  // A sentence ends at a period, question or exclamation mark followed by a space (not `e.g.x`).
  const end = flat.search(/[.!?](?= )/)
  const sentence = end < 0 ? flat : flat.slice(0, end + 1)
  return sentence.length <= MAX_SUMMARY_CHARS ? sentence : `${sentence.slice(0, MAX_SUMMARY_CHARS - 1)}…`
}

/** A tool's summary, marked when a later sentence of its description deprecates the tool. */
function catalogSummary(description: string): string {
  const summary = summarize(description)
  return /\bdeprecated\b/i.test(description) && !/\bdeprecated\b/i.test(summary) ? `(deprecated) ${summary}` : summary
}

/** The argument keys of a parameters schema, optional ones marked: `{ path, head? }`. */
function argsOf(parameters: JsonSchemaNode): string {
  const properties = typeof parameters.properties === 'object' && parameters.properties !== null ? Object.keys(parameters.properties) : []
  if (properties.length === 0) return '{}'
  const required = new Set(Array.isArray(parameters.required) ? parameters.required : [])
  return `{ ${properties.map((key) => `${isIdentifierName(key) ? key : JSON.stringify(key)}${required.has(key) ? '' : '?'}`).join(', ')} }`
}

/** A member of the `tools` type, written on its own (its two-space indent removed). */
function dedent(member: string): string {
  return member.replace(/^ {2}/gm, '')
}

function renderMethod(tool: SdkToolInput, binding: string, names: TypeNames, aliases: string[]): string {
  const segments: string[] = []
  const title = tool.title?.trim()
  if (title !== undefined && title !== '') segments.push(title, '')
  segments.push(tool.description)
  if (binding !== tool.name) segments.push(`Calls the tool \`${tool.name}\`.`)
  const args = describeNode(tool.parameters, { values: false })
  if (args.length > 0) segments.push(`@param args ${args.join(' ')}`)
  const returns = tool.output === undefined ? [] : describeNode(tool.output, { values: false })
  if (returns.length > 0) segments.push(`@returns ${returns.join(' ')}`)
  const doc = renderDocComment(segments, MEMBER_INDENT)
  const input = namedTypes(tool.parameters, binding, 'input', names)
  aliases.push(...input.aliases)
  const argsType = schemaToType(tool.parameters, MEMBER_INDENT, { role: 'input', refName: input.refName })
  let resultType = 'JsonValue'
  if (tool.output !== undefined) {
    const output = namedTypes(tool.output, binding, 'output', names)
    aliases.push(...output.aliases)
    resultType = schemaToType(tool.output, MEMBER_INDENT, { role: 'output', refName: output.refName })
  }
  return `${doc}${MEMBER_INDENT}${binding}(args: ${argsType}): Promise<${resultType}>\n`
}

/**
 * Generate the SDK for `tools`. Tools are sorted by name (code-unit order), so the text depends
 * only on the set of tools, not on registration order; a name that is not a safe identifier gets
 * a sanitized binding whose JSDoc names the real tool. Argument types list only the declared keys
 * (no index signature, so a misspelled key fails the type check); result types of open objects
 * keep one. Schemas a `$ref` reaches become named `type` aliases before `tools` (recursion is
 * written by name). Throws `ToolDefinitionError` on duplicate names. Schemas must already be
 * validated (`assertSupportedJsonSchema`).
 */
export function generateSdk(tools: readonly SdkToolInput[]): GeneratedSdk {
  const sorted = [...tools].sort(byName)
  const seen = new Set<string>()
  for (const { name } of sorted) {
    if (seen.has(name)) throw new ToolDefinitionError(`generateSdk: duplicate tool name ${JSON.stringify(name)}`)
    seen.add(name)
  }
  const bindings = assignBindings(sorted.map((tool) => tool.name))
  const names = new TypeNames()
  const aliases: string[] = []
  const catalog: SdkCatalogEntry[] = []
  const methods = sorted.map((tool, index) => {
    const binding = bindings[index]!.binding
    const before = aliases.length
    const method = renderMethod(tool, binding, names, aliases)
    const own = aliases.slice(before)
    catalog.push(
      Object.freeze({
        name: tool.name,
        binding,
        summary: catalogSummary(tool.description),
        args: argsOf(tool.parameters),
        declaration: `${own.map((alias) => `${alias}\n`).join('')}${dedent(method)}`,
      }),
    )
    return method
  })
  const toolsType = methods.length === 0 ? 'Record<string, never>\n' : `{\n${methods.join('')}}\n`
  const named = aliases.length === 0 ? '' : `\n${aliases.join('\n')}`
  return {
    declarations: `${JSON_VALUE_DECLARATION}${named}\n${TOOLS_DOC}declare const tools: ${toolsType}`,
    bindings: Object.freeze(bindings.map((binding) => Object.freeze(binding))),
    catalog: Object.freeze(catalog),
  }
}
