/**
 * The whole SDK a Code Mode program sees: `type JsonValue` once, then `declare const tools` with
 * one documented async method per tool, and the bindings the sandbox installs under those names.
 */

import { ToolDefinitionError } from '../src/errors.ts'
import type { JsonSchemaNode } from '../src/schema/types.ts'
import { renderDocComment } from './doc-comment.ts'
import { assignBindings } from './identifiers.ts'
import type { SdkBinding } from './identifiers.ts'
import { describeNode, schemaToType } from './schema-to-ts.ts'

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
}

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

function renderMethod(tool: SdkToolInput, binding: string): string {
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
  const argsType = schemaToType(tool.parameters, MEMBER_INDENT)
  const resultType = tool.output === undefined ? 'JsonValue' : schemaToType(tool.output, MEMBER_INDENT)
  return `${doc}${MEMBER_INDENT}${binding}(args: ${argsType}): Promise<${resultType}>\n`
}

/**
 * Generate the SDK for `tools`. Tools are sorted by name (code-unit order), so the text depends
 * only on the set of tools, not on registration order; a name that is not a safe identifier gets
 * a sanitized binding whose JSDoc names the real tool. Throws `ToolDefinitionError` on duplicate
 * names. Schemas must already be validated (`assertSupportedJsonSchema`).
 */
export function generateSdk(tools: readonly SdkToolInput[]): GeneratedSdk {
  const sorted = [...tools].sort(byName)
  const seen = new Set<string>()
  for (const { name } of sorted) {
    if (seen.has(name)) throw new ToolDefinitionError(`generateSdk: duplicate tool name ${JSON.stringify(name)}`)
    seen.add(name)
  }
  const bindings = assignBindings(sorted.map((tool) => tool.name))
  const methods = sorted.map((tool, index) => renderMethod(tool, bindings[index]!.binding))
  const toolsType = methods.length === 0 ? 'Record<string, never>\n' : `{\n${methods.join('')}}\n`
  return {
    declarations: `${JSON_VALUE_DECLARATION}\n${TOOLS_DOC}declare const tools: ${toolsType}`,
    bindings: Object.freeze(bindings.map((binding) => Object.freeze(binding))),
  }
}
