/**
 * `toolbox-codemode/openai`: an agent's tools in the OpenAI SDK's shapes, for the Chat Completions
 * API and the Responses API, and a turn of the model's calls run through `runToolCalls`.
 *
 * Types only: this module never loads the `openai` package (an optional peer dependency). The
 * shapes are checked against the SDK's own types at compile time.
 *
 * What OpenAI cannot carry, and the documented fallback:
 * - no error flag on a tool output: a failure's text starts with `Error: `;
 * - Chat Completions tool messages take text only: an image is announced in the tool message and
 *   sent in a user message after the tool messages (`image_url` with a `data:` URL);
 * - images of other types than PNG, JPEG, GIF and WebP, audio and binary resources become a note
 *   saying what was left out; a resource link or text resource becomes text;
 * - deferred contexts (`additionalContexts`) become user messages after every tool output, in
 *   call order.
 */
import type {
  ChatCompletionContentPart,
  ChatCompletionContentPartText,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionToolMessageParam,
  ChatCompletionUserMessageParam,
} from 'openai/resources/chat/completions'
import type {
  EasyInputMessage,
  FunctionTool,
  ResponseFunctionCallOutputItem,
  ResponseFunctionToolCall,
  ResponseInputContent,
  ResponseInputItem,
  ResponseOutputItem,
} from 'openai/resources/responses/responses'
import { parseJsonText, runToolCalls } from '../src/index.ts'
import type { Agent, ContentBlock, ToolExecutionResult, TurnCall } from '../src/index.ts'
import { blockAsText, concludesTurn, dataUrl, ERROR_PREFIX, isProviderImage } from './content.ts'
import { openaiParameters, restoreStrictArguments } from './openai-strict.ts'
import type { OpenAIParameters, StrictRestore } from './openai-strict.ts'
import { toolNameTable } from './tool-names.ts'

export { openaiParameters, restoreStrictArguments, STRICT_LIMITS } from './openai-strict.ts'
export type { OpenAIParameters, StrictRestore } from './openai-strict.ts'
export { PROVIDER_TOOL_NAME } from './tool-names.ts'

/** Options of {@link openaiTools}. */
export interface OpenAIToolsOptions {
  /**
   * `'auto'` (default): `strict: true` for each tool whose schema strict mode can take (see
   * {@link openaiParameters}), `strict: false` for the others. `false`: every tool non-strict,
   * its schema unchanged.
   */
  readonly strict?: 'auto' | false
  /** Overlap bound of parallel-safe calls in one turn (`runToolCalls`). Default 8. */
  readonly maxParallel?: number
}

/** What one turn's calls gave back, for the Chat Completions API. */
export interface OpenAIChatResults {
  /**
   * Append these to the conversation after the assistant message: one `role: 'tool'` message per
   * call, in call order, then the user messages carrying images and deferred contexts.
   */
  readonly messages: ChatCompletionMessageParam[]
  /** A tool concluded the turn: send the messages and end the loop without another model call. */
  readonly concludesTurn: boolean
}

/** What one turn's calls gave back, for the Responses API. */
export interface OpenAIResponsesResults {
  /**
   * Add these to the next request's `input`: one `function_call_output` per call, in call order
   * (images inside it), then user messages with deferred contexts.
   */
  readonly input: ResponseInputItem[]
  /** A tool concluded the turn: end the loop without another model call. */
  readonly concludesTurn: boolean
}

/** A turn run by {@link OpenAITools.runChatToolCalls}. */
export interface OpenAIChatTurn extends OpenAIChatResults {
  /** The results in call order, as `runToolCalls` returned them. */
  readonly results: readonly ToolExecutionResult[]
}

/** A turn run by {@link OpenAITools.runResponsesToolCalls}. */
export interface OpenAIResponsesTurn extends OpenAIResponsesResults {
  /** The results in call order, as `runToolCalls` returned them. */
  readonly results: readonly ToolExecutionResult[]
}

/**
 * An agent's tools for OpenAI, as its view was when {@link openaiTools} made this (call it again
 * after the agent's tools change). Each direction is available alone (`chatCalls`,
 * `chatResults`, ...) and joined with `runToolCalls` (`runChatToolCalls`, ...).
 */
export interface OpenAITools {
  /** `tools` of `client.chat.completions.create`. */
  readonly chatCompletions: ChatCompletionFunctionTool[]
  /** `tools` of `client.responses.create`. */
  readonly responses: FunctionTool[]
  /** Per registry name: strict or not, and why not. */
  readonly strictness: ReadonlyMap<string, { readonly strict: boolean; readonly reason?: string }>
  /**
   * The assistant message's `tool_calls` as `runToolCalls` inputs: names mapped back, argument
   * text parsed by the lossless JSON boundary (text that does not parse is passed on as
   * `argumentsText`, and the call fails with an `INVALID_ARGS` result the model can read), strict
   * `null`s for absent optionals removed. Custom (non-function) tool calls are skipped: answer them
   * yourself.
   */
  chatCalls(toolCalls: readonly ChatCompletionMessageToolCall[] | null | undefined): TurnCall[]
  /** The messages answering `calls` (from {@link chatCalls}) with their `results`, in the same order. */
  chatResults(calls: readonly TurnCall[], results: readonly ToolExecutionResult[]): OpenAIChatResults
  /** {@link chatCalls}, then `runToolCalls` for the agent, then {@link chatResults}. */
  runChatToolCalls(toolCalls: readonly ChatCompletionMessageToolCall[] | null | undefined, options: { readonly signal: AbortSignal }): Promise<OpenAIChatTurn>
  /** The response `output`'s `function_call` items as `runToolCalls` inputs (see {@link chatCalls}). */
  responsesCalls(output: readonly (ResponseOutputItem | ResponseInputItem)[]): TurnCall[]
  /** The input items answering `calls` (from {@link responsesCalls}) with their `results`. */
  responsesResults(calls: readonly TurnCall[], results: readonly ToolExecutionResult[]): OpenAIResponsesResults
  /** {@link responsesCalls}, then `runToolCalls` for the agent, then {@link responsesResults}. */
  runResponsesToolCalls(output: readonly (ResponseOutputItem | ResponseInputItem)[], options: { readonly signal: AbortSignal }): Promise<OpenAIResponsesTurn>
}

const PROVIDER = 'OpenAI'

/**
 * The agent's model-facing tools (its current view; under Code Mode, `run_code` alone) for
 * OpenAI, with names mapped to OpenAI's rule (see `PROVIDER_TOOL_NAME`; `fs.read_file` is sent as
 * `fs_read_file` and mapped back) and strict mode decided per tool.
 * @throws ToolDefinitionError for a tool name OpenAI would reject and no mapping can fix.
 */
export function openaiTools(agent: Agent, options: OpenAIToolsOptions = {}): OpenAITools {
  const schemas = agent.ctx.tools.schemas(agent)
  const names = toolNameTable(
    schemas.map((schema) => schema.name),
    PROVIDER,
  )
  const restores = new Map<string, StrictRestore>()
  const strictness = new Map<string, { strict: boolean; reason?: string }>()
  const chatCompletions: ChatCompletionFunctionTool[] = []
  const responses: FunctionTool[] = []
  for (const schema of schemas) {
    const sent = names.toProvider.get(schema.name) as string
    const plan: OpenAIParameters =
      options.strict === false ? { strict: false, parameters: schema.parameters as unknown as Record<string, unknown>, reason: 'strict mode turned off' } : openaiParameters(schema.parameters)
    if (plan.strict && plan.restore !== undefined) restores.set(schema.name, plan.restore)
    strictness.set(schema.name, plan.strict ? { strict: true } : { strict: false, reason: plan.reason })
    chatCompletions.push({ type: 'function', function: { name: sent, description: schema.description, parameters: plan.parameters, strict: plan.strict } })
    responses.push({ type: 'function', name: sent, description: schema.description, parameters: plan.parameters, strict: plan.strict })
  }

  const turnCall = (callId: string, sentName: string, text: string): TurnCall => {
    const name = names.fromProvider.get(sentName) ?? sentName
    // Some OpenAI-compatible servers send "" for a call without arguments.
    if (text.trim() === '') return { callId, name, arguments: {} }
    const restore = restores.get(name)
    // Without a null there is nothing to map back: runToolCalls parses the text itself.
    if (restore === undefined || !text.includes('null')) return { callId, name, argumentsText: text }
    let parsed
    try {
      parsed = parseJsonText(text, 'arguments')
    } catch {
      // runToolCalls parses it again and answers with the parse error, path and position included.
      return { callId, name, argumentsText: text }
    }
    return { callId, name, arguments: restoreStrictArguments(parsed, restore) }
  }

  const run = async (calls: TurnCall[], runOptions: { readonly signal: AbortSignal } | undefined, where: string): Promise<ToolExecutionResult[]> => {
    const signal: unknown = runOptions?.signal
    if (!(signal instanceof AbortSignal)) throw new TypeError(`${where}(calls, options): options.signal must be an AbortSignal, e.g. { signal: AbortSignal.timeout(60_000) }`)
    return runToolCalls(agent.ctx.tools, calls, { agent, signal, ...(options.maxParallel === undefined ? {} : { maxParallel: options.maxParallel }) })
  }

  const tools: OpenAITools = {
    chatCompletions,
    responses,
    strictness,
    chatCalls(toolCalls) {
      const calls: TurnCall[] = []
      for (const toolCall of toolCalls ?? []) {
        if (toolCall.type === 'function') calls.push(turnCall(toolCall.id, toolCall.function.name, toolCall.function.arguments))
      }
      return calls
    },
    chatResults(calls, results) {
      assertPaired(calls, results, 'chatResults')
      const messages: ChatCompletionMessageParam[] = []
      const followUps: ChatCompletionUserMessageParam[] = []
      for (let index = 0; index < calls.length; index++) {
        const { callId, name } = calls[index] as TurnCall
        const result = results[index] as ToolExecutionResult
        const parts: ChatCompletionContentPartText[] = []
        const images: ChatCompletionContentPart[] = []
        for (const block of result.content) {
          if (isProviderImage(block)) {
            images.push({ type: 'image_url', image_url: { url: dataUrl(block) } })
            parts.push({ type: 'text', text: `[image ${images.length} (${block.mimeType}) is attached in a user message after the tool results]` })
          } else {
            parts.push({ type: 'text', text: blockAsText(block, PROVIDER) })
          }
        }
        if (result.isError) markFailure(parts, { type: 'text', text: 'Error' })
        // One text part reads best as a string; none is '' (an empty array is not a valid content).
        const content = parts.length === 0 ? '' : parts.length === 1 ? (parts[0] as ChatCompletionContentPartText).text : parts
        const message: ChatCompletionToolMessageParam = { role: 'tool', tool_call_id: callId, content }
        messages.push(message)
        if (images.length > 0) followUps.push({ role: 'user', content: [{ type: 'text', text: `Images returned by tool call ${callId} (${name}):` }, ...images] })
      }
      messages.push(...followUps)
      for (const result of results) {
        for (const context of result.additionalContexts ?? []) messages.push({ role: 'user', content: chatUserParts(context.content) })
      }
      return { messages, concludesTurn: concludesTurn(results) }
    },
    async runChatToolCalls(toolCalls, runOptions) {
      const calls = tools.chatCalls(toolCalls)
      const results = await run(calls, runOptions, 'runChatToolCalls')
      return { ...tools.chatResults(calls, results), results }
    },
    responsesCalls(output) {
      const calls: TurnCall[] = []
      for (const item of output) {
        if (item.type === 'function_call') {
          const call = item as ResponseFunctionToolCall
          calls.push(turnCall(call.call_id, call.name, call.arguments))
        }
      }
      return calls
    },
    responsesResults(calls, results) {
      assertPaired(calls, results, 'responsesResults')
      const input: ResponseInputItem[] = []
      for (let index = 0; index < calls.length; index++) {
        const result = results[index] as ToolExecutionResult
        const parts: ResponseFunctionCallOutputItem[] = result.content.map((block) =>
          isProviderImage(block) ? { type: 'input_image', image_url: dataUrl(block) } : { type: 'input_text', text: blockAsText(block, PROVIDER) },
        )
        if (result.isError) markFailure(parts, { type: 'input_text', text: 'Error' })
        const only = parts.length === 1 ? parts[0] : undefined
        input.push({ type: 'function_call_output', call_id: (calls[index] as TurnCall).callId, output: parts.length === 0 ? '' : only?.type === 'input_text' ? only.text : parts })
      }
      for (const result of results) {
        for (const context of result.additionalContexts ?? []) {
          const message: EasyInputMessage = { type: 'message', role: 'user', content: responsesUserParts(context.content) }
          input.push(message)
        }
      }
      return { input, concludesTurn: concludesTurn(results) }
    },
    async runResponsesToolCalls(output, runOptions) {
      const calls = tools.responsesCalls(output)
      const results = await run(calls, runOptions, 'runResponsesToolCalls')
      return { ...tools.responsesResults(calls, results), results }
    },
  }
  return tools
}

/** Calls and results must pair up one to one, in order: a harness bug otherwise. */
function assertPaired(calls: readonly TurnCall[], results: readonly ToolExecutionResult[], where: string): void {
  if (calls.length !== results.length) {
    throw new TypeError(`${where}(calls, results): ${calls.length} calls but ${results.length} results; pass the results runToolCalls returned for exactly these calls`)
  }
}

/** Prefix the first text part with `Error: ` (OpenAI has no error flag), or put `empty` first if there is none. */
function markFailure<Part extends { readonly type: string }>(parts: Part[], empty: Part): void {
  const first = parts.find((part) => 'text' in part && typeof part.text === 'string') as { text: string } | undefined
  if (first !== undefined) first.text = ERROR_PREFIX + first.text
  else parts.unshift(empty)
}

function chatUserParts(content: readonly ContentBlock[]): ChatCompletionContentPart[] {
  return content.map((block) => (isProviderImage(block) ? { type: 'image_url', image_url: { url: dataUrl(block) } } : { type: 'text', text: blockAsText(block, PROVIDER) }))
}

function responsesUserParts(content: readonly ContentBlock[]): ResponseInputContent[] {
  return content.map((block) =>
    isProviderImage(block) ? { type: 'input_image', image_url: dataUrl(block), detail: 'auto' } : { type: 'input_text', text: blockAsText(block, PROVIDER) },
  )
}
