/**
 * `toolbox-codemode/ai-sdk`: an agent's tools as AI SDK (`ai` 6) `tool()` objects for loops the AI
 * SDK owns (`generateText`, `streamText`, agents).
 *
 * The AI SDK calls each tool's `execute` itself, several at once. Every `execute` here goes
 * through one {@link ToolCallRunner} per tool set, so the guarantees of `runToolCalls` hold: an
 * exclusive tool runs alone, parallel-safe ones overlap, and the agent's session gets `tool/call`
 * and `tool/result` for every call.
 *
 * Loading: `ai` is an optional peer dependency. `tool()` and `jsonSchema()` are runtime values
 * (the schema wrapper carries a marker only `jsonSchema()` sets; the AI SDK's Standard Schema
 * route would close every open object), so {@link toAiSdkTools} imports `ai` lazily, on its first
 * call, and is async. Importing this module loads nothing from `ai`.
 *
 * What the AI SDK's tool output cannot carry, and the documented fallback: images other than
 * PNG, JPEG, GIF and WebP, audio and binary resources become a note saying what was left out; a
 * resource link or text resource becomes text; deferred contexts (`additionalContexts`) are
 * appended to the tool's output content (a tool cannot add a user message to a loop it does not
 * own); `concludesTurn` is read by the {@link turnConcluded} stop condition. A session log that
 * fails to record a call rejects its `execute` with a `TurnLogError` after the call ran, which the
 * AI SDK reports as a tool error.
 */
import type { StopCondition, Tool, ToolSet } from 'ai'
import { createToolCallRunner } from '../src/index.ts'
import type { Agent, ContentBlock, ToolCallRunner, ToolExecutionResult } from '../src/index.ts'
import { blockAsText, ERROR_PREFIX, isProviderImage } from './content.ts'
import { toolNameTable } from './tool-names.ts'

export { PROVIDER_TOOL_NAME } from './tool-names.ts'

/** The AI SDK's tool output for the model (`toModelOutput`'s result), from its own `Tool` type. */
export type AiSdkModelOutput = Awaited<ReturnType<NonNullable<Tool<unknown, ToolExecutionResult>['toModelOutput']>>>

/** The tool set {@link toAiSdkTools} gives: every tool's output is the call's `ToolExecutionResult`. */
export type AiSdkToolSet = Record<string, Tool<unknown, ToolExecutionResult>>

/** Options of {@link toAiSdkTools}. */
export interface AiSdkToolsOptions {
  /** Overlap bound of parallel-safe calls (the runner's pool). Default 8. */
  readonly maxParallel?: number
  /**
   * The runner every `execute` goes through. Default: a new one for this tool set. Pass one to
   * share a scheduler between tool sets of the same loop.
   */
  readonly runner?: ToolCallRunner
  /** The signal of calls the AI SDK starts without an `abortSignal`. Default: never aborted. */
  readonly signal?: AbortSignal
}

let aiModule: typeof import('ai') | undefined

/** The `ai` package, imported on first use; a failed import is not cached and names the fix. */
async function loadAi(): Promise<typeof import('ai')> {
  try {
    aiModule ??= await import('ai')
    return aiModule
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    throw new Error(`toAiSdkTools needs the optional peer dependency "ai" (6.x); install it (npm install ai) (${reason})`, { cause: error })
  }
}

/**
 * The agent's model-facing tools (its current view; under Code Mode, `run_code` alone) as an AI
 * SDK `ToolSet`: `tool()` objects with `jsonSchema(parameters)` (not validated by the AI SDK:
 * the pipeline validates), an `execute` that runs the call through one shared
 * {@link ToolCallRunner} and resolves with the frozen `ToolExecutionResult` (failures included),
 * and a `toModelOutput` ({@link toAiSdkModelOutput}). Keys follow the provider name rule
 * (`fs.read_file` becomes `fs_read_file`; `execute` maps it back). Make one tool set per agent
 * loop and reuse it: each set has its own scheduler.
 * @throws ToolDefinitionError for a tool name no mapping can make valid.
 */
export async function toAiSdkTools(agent: Agent, options: AiSdkToolsOptions = {}): Promise<AiSdkToolSet> {
  const { jsonSchema, tool } = await loadAi()
  const runner = options.runner ?? createToolCallRunner(agent.ctx.tools, { agent, ...(options.maxParallel === undefined ? {} : { maxParallel: options.maxParallel }) })
  const fallbackSignal = options.signal ?? new AbortController().signal
  const schemas = agent.ctx.tools.schemas(agent)
  const names = toolNameTable(
    schemas.map((schema) => schema.name),
    'the AI SDK',
  )
  const set: AiSdkToolSet = {}
  for (const schema of schemas) {
    const definition: Tool<unknown, ToolExecutionResult> = tool<unknown, ToolExecutionResult>({
      description: schema.description,
      inputSchema: jsonSchema<unknown>(schema.parameters),
      execute: (input, { toolCallId, abortSignal }) => runner.run({ callId: toolCallId, name: schema.name, arguments: input }, { signal: abortSignal ?? fallbackSignal }),
      toModelOutput: ({ output }) => toAiSdkModelOutput(output),
    })
    // Defined, not assigned: a tool may be named "__proto__".
    Object.defineProperty(set, names.toProvider.get(schema.name) as string, { value: definition, enumerable: true, writable: true, configurable: true })
  }
  return set
}

/**
 * A result as the model gets it: an error with text only is `error-text`; anything else is
 * `content` (text, `image-data`, then the deferred contexts' blocks), a failure's first text
 * starting with `Error: `. A value that is not a result (a tool output from elsewhere) is `json`.
 */
export function toAiSdkModelOutput(output: unknown): AiSdkModelOutput {
  if (!isResult(output)) return { type: 'json', value: (output ?? null) as never }
  const contexts = output.additionalContexts ?? []
  if (output.isError && contexts.length === 0 && output.content.every((block) => block.type === 'text')) {
    return { type: 'error-text', value: output.content.map((block) => (block as { text: string }).text).join('\n') }
  }
  const value = output.content.map(modelPart)
  if (output.isError) {
    const first = value.find((part): part is { type: 'text'; text: string } => part.type === 'text')
    if (first !== undefined) first.text = ERROR_PREFIX + first.text
    else value.unshift({ type: 'text', text: 'Error' })
  }
  for (const context of contexts) value.push(...context.content.map(modelPart))
  return { type: 'content', value }
}

/**
 * A stop condition for `stopWhen`: true once a step's tool results include one that concluded
 * the turn (`ToolRunContext.concludeTurn()`), e.g. `stopWhen: [stepCountIs(10), turnConcluded()]`.
 */
export function turnConcluded<TOOLS extends ToolSet>(): StopCondition<TOOLS> {
  return ({ steps }) => {
    const last = steps.at(-1)
    if (last === undefined) return false
    return last.toolResults.some((toolResult: { readonly output?: unknown }) => isResult(toolResult.output) && !toolResult.output.isError && toolResult.output.concludesTurn === true)
  }
}

type ContentPart = Extract<AiSdkModelOutput, { type: 'content' }>['value'][number]

function modelPart(block: ContentBlock): ContentPart {
  return isProviderImage(block) ? { type: 'image-data', data: block.data, mediaType: block.mimeType } : { type: 'text', text: blockAsText(block, 'the AI SDK') }
}

function isResult(value: unknown): value is ToolExecutionResult {
  return typeof value === 'object' && value !== null && typeof (value as { isError?: unknown }).isError === 'boolean' && Array.isArray((value as { content?: unknown }).content)
}
