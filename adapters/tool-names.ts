/**
 * Tool names as providers accept them. OpenAI (`FunctionDefinition.name`: letters, digits, `_` and
 * `-`, at most 64) and Anthropic (`Tool.name`, documented as `^[a-zA-Z0-9_-]{1,64}$`) share one
 * rule; the AI SDK forwards names to whichever provider it drives, so it uses the same rule.
 *
 * The mapping is documented and reversible per tool set: a valid name is sent unchanged; any other
 * character becomes `_` (so MCP-imported `fs.read_file` is sent as `fs_read_file`), and the table
 * maps the provider's name back. A name that cannot be sent (empty or too long once mapped) or
 * that would collide with another tool's sent name is refused with an error naming the fix.
 */
import { ToolDefinitionError } from '../src/index.ts'

/** The name rule of OpenAI and Anthropic function tools. */
export const PROVIDER_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/

/** The two directions of one tool set's names. */
export interface ToolNameTable {
  /** Registry name -> the name sent to the provider. */
  readonly toProvider: ReadonlyMap<string, string>
  /** The provider's name -> registry name. */
  readonly fromProvider: ReadonlyMap<string, string>
}

/**
 * The sent names of `names` for `provider` (used in messages only).
 * @throws ToolDefinitionError for a name that cannot be sent or two names that would collide.
 */
export function toolNameTable(names: readonly string[], provider: string): ToolNameTable {
  const toProvider = new Map<string, string>()
  const fromProvider = new Map<string, string>()
  // Valid names claim their spelling first, so a mapped name never takes a real tool's name.
  const ordered = [...names.filter((name) => PROVIDER_TOOL_NAME.test(name)), ...names.filter((name) => !PROVIDER_TOOL_NAME.test(name))]
  for (const name of ordered) {
    const sent = PROVIDER_TOOL_NAME.test(name) ? name : name.replace(/[^a-zA-Z0-9_-]/g, '_')
    if (!PROVIDER_TOOL_NAME.test(sent)) {
      throw new ToolDefinitionError(
        `${provider}: the tool name ${JSON.stringify(name)} cannot be sent: provider tool names must match ^[a-zA-Z0-9_-]{1,64}$ and it is ${sent.length} characters long once mapped; register the tool under a name of at most 64 characters`,
      )
    }
    const taken = fromProvider.get(sent)
    if (taken !== undefined) {
      throw new ToolDefinitionError(
        `${provider}: the tool names ${JSON.stringify(taken)} and ${JSON.stringify(name)} would both be sent as ${JSON.stringify(sent)} (characters outside [a-zA-Z0-9_-] become "_"); rename one of them`,
      )
    }
    toProvider.set(name, sent)
    fromProvider.set(sent, name)
  }
  return { toProvider, fromProvider }
}
