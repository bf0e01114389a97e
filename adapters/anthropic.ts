/**
 * `toolbox-codemode/anthropic`: an agent's tools in the Anthropic SDK's shapes (Messages API), and
 * a turn of `tool_use` blocks run through `runToolCalls`, answered with one user message.
 *
 * Types only: this module never loads `@anthropic-ai/sdk` (an optional peer dependency). The
 * shapes are checked against the SDK's own types at compile time.
 *
 * Anthropic takes what the library produces almost 1:1: `tool_result` blocks carry `is_error`
 * and images (PNG, JPEG, GIF, WebP) in place. The documented fallbacks: images of other types,
 * audio and binary resources become a note saying what was left out; a resource link or text
 * resource becomes text. Deferred contexts (`additionalContexts`) follow every `tool_result`
 * block in the same user message, in call order (Anthropic wants the results first).
 *
 * `tool_use.input` arrives already parsed by the SDK (`JSON.parse` of the response body), so
 * its numbers are doubles before this module sees them; the pipeline still checks them against
 * the tool's schema.
 */
import type { ContentBlock as AnthropicContentBlock, ContentBlockParam, ImageBlockParam, MessageParam, TextBlockParam, Tool, ToolResultBlockParam, ToolUseBlock } from '@anthropic-ai/sdk/resources/messages/messages'
import { runToolCalls } from '../src/index.ts'
import type { Agent, ContentBlock, ToolExecutionResult, TurnCall } from '../src/index.ts'
import { blockAsText, concludesTurn, isProviderImage } from './content.ts'
import { toolNameTable } from './tool-names.ts'

export { PROVIDER_TOOL_NAME } from './tool-names.ts'

/** Options of {@link anthropicTools}. */
export interface AnthropicToolsOptions {
  /** Overlap bound of parallel-safe calls in one turn (`runToolCalls`). Default 8. */
  readonly maxParallel?: number
}

/** What one turn's `tool_use` blocks gave back. */
export interface AnthropicResults {
  /**
   * The user message to append after the assistant message: one `tool_result` per `tool_use`, in
   * order, then the deferred contexts.
   */
  readonly message: MessageParam & { readonly content: ContentBlockParam[] }
  /** A tool concluded the turn: end the loop without another model call. */
  readonly concludesTurn: boolean
}

/** A turn run by {@link AnthropicTools.runToolUses}. */
export interface AnthropicTurn extends AnthropicResults {
  /** The results in call order, as `runToolCalls` returned them. */
  readonly results: readonly ToolExecutionResult[]
}

/**
 * An agent's tools for Anthropic, as its view was when {@link anthropicTools} made this (call it
 * again after the agent's tools change). Each direction is available alone (`calls`, `results`)
 * and joined with `runToolCalls` (`runToolUses`).
 */
export interface AnthropicTools {
  /** `tools` of `client.messages.create`. */
  readonly tools: Tool[]
  /** The `tool_use` blocks of an assistant message's content as `runToolCalls` inputs, names mapped back. */
  calls(content: readonly (AnthropicContentBlock | ContentBlockParam)[]): TurnCall[]
  /** The user message answering `calls` (from {@link calls}) with their `results`, in the same order. */
  results(calls: readonly TurnCall[], results: readonly ToolExecutionResult[]): AnthropicResults
  /** {@link calls}, then `runToolCalls` for the agent, then {@link results}. */
  runToolUses(content: readonly (AnthropicContentBlock | ContentBlockParam)[], options: { readonly signal: AbortSignal }): Promise<AnthropicTurn>
}

const PROVIDER = 'Anthropic'

/**
 * The agent's model-facing tools (its current view; under Code Mode, `run_code` alone) for
 * Anthropic, with names mapped to Anthropic's rule (see `PROVIDER_TOOL_NAME`; `fs.read_file` is
 * sent as `fs_read_file` and mapped back).
 * @throws ToolDefinitionError for a tool name Anthropic would reject and no mapping can fix.
 */
export function anthropicTools(agent: Agent, options: AnthropicToolsOptions = {}): AnthropicTools {
  const schemas = agent.ctx.tools.schemas(agent)
  const names = toolNameTable(
    schemas.map((schema) => schema.name),
    PROVIDER,
  )
  const tools: Tool[] = schemas.map((schema) => ({
    name: names.toProvider.get(schema.name) as string,
    description: schema.description,
    input_schema: { ...schema.parameters, type: 'object' },
  }))
  const adapter: AnthropicTools = {
    tools,
    calls(content) {
      const calls: TurnCall[] = []
      for (const block of content) {
        if (block.type !== 'tool_use') continue
        const use = block as Pick<ToolUseBlock, 'id' | 'name' | 'input'>
        calls.push({ callId: use.id, name: names.fromProvider.get(use.name) ?? use.name, arguments: use.input })
      }
      return calls
    },
    results(calls, results) {
      if (calls.length !== results.length) {
        throw new TypeError(`results(calls, results): ${calls.length} calls but ${results.length} results; pass the results runToolCalls returned for exactly these calls`)
      }
      const content: ContentBlockParam[] = []
      for (let index = 0; index < calls.length; index++) {
        const result = results[index] as ToolExecutionResult
        const block: ToolResultBlockParam = { type: 'tool_result', tool_use_id: (calls[index] as TurnCall).callId }
        // `content` is optional: a result without content sends none rather than an empty list.
        if (result.content.length > 0) block.content = anthropicBlocks(result.content)
        if (result.isError) block.is_error = true
        content.push(block)
      }
      for (const result of results) {
        for (const context of result.additionalContexts ?? []) content.push(...anthropicBlocks(context.content))
      }
      return { message: { role: 'user', content }, concludesTurn: concludesTurn(results) }
    },
    async runToolUses(content, runOptions) {
      const signal: unknown = runOptions?.signal
      if (!(signal instanceof AbortSignal)) throw new TypeError('runToolUses(content, options): options.signal must be an AbortSignal, e.g. { signal: AbortSignal.timeout(60_000) }')
      const calls = adapter.calls(content)
      const results = await runToolCalls(agent.ctx.tools, calls, { agent, signal, ...(options.maxParallel === undefined ? {} : { maxParallel: options.maxParallel }) })
      return { ...adapter.results(calls, results), results }
    },
  }
  return adapter
}

function anthropicBlocks(content: readonly ContentBlock[]): (TextBlockParam | ImageBlockParam)[] {
  return content.map((block): TextBlockParam | ImageBlockParam =>
    isProviderImage(block)
      ? { type: 'image', source: { type: 'base64', media_type: block.mimeType as 'image/png', data: block.data } }
      : { type: 'text', text: blockAsText(block, PROVIDER) },
  )
}
