/**
 * What the provider adapters add per call, beside the pipeline they feed: mapping the provider's
 * call into a `runToolCalls` input (name lookup, lossless parse and strict-null removal for a
 * strict tool) and mapping the result back into the provider's message. Measured on a turn of 8
 * calls of a strict tool whose absent optional comes as `null`, and reported per call; the goal is
 * under 5 us. For OpenAI that includes the lossless parse of the argument text, which
 * `runToolCalls` would otherwise do itself.
 *
 * For the AI SDK, the per-call runner is also set against `runToolCalls` on the same calls: both
 * schedule and log each call, so the difference is what the per-call API costs (informational).
 */
import { performance } from 'node:perf_hooks'
import type { ChatCompletionMessageToolCall } from 'openai/resources/chat/completions'
import type { ResponseOutputItem } from 'openai/resources/responses/responses'
import type { ContentBlock } from '@anthropic-ai/sdk/resources/messages/messages'
import { toAiSdkModelOutput } from '../adapters/ai-sdk.ts'
import { anthropicTools } from '../adapters/anthropic.ts'
import { openaiTools } from '../adapters/openai.ts'
import { createContext, createToolCallRunner, runToolCalls } from '../src/index.ts'
import type { ToolDefinition, ToolExecutionResult } from '../src/index.ts'

const GOAL_US = 5
const TURN = 8
const ROUNDS = 9
const ITERATIONS = 2_000

const readFile: ToolDefinition = {
  name: 'read_file',
  description: 'Read a file.',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' }, offset: { type: 'integer' }, limit: { type: 'integer' } },
    required: ['path'],
    additionalProperties: false,
  },
  output: { schema: {}, render: () => [{ type: 'text', text: 'ok' }] },
  isConcurrencySafe: () => true,
  execute: async () => null,
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

/** Median microseconds per call of `turn` (which handles TURN calls), over ROUNDS rounds. */
function perCallUs(turn: () => unknown): number {
  for (let i = 0; i < ITERATIONS; i++) turn()
  const rounds: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const start = performance.now()
    for (let i = 0; i < ITERATIONS; i++) turn()
    rounds.push(((performance.now() - start) * 1000) / (ITERATIONS * TURN))
  }
  return median(rounds)
}

async function perCallUsAsync(turn: () => Promise<unknown>, iterations: number): Promise<number> {
  for (let i = 0; i < iterations / 4; i++) await turn()
  const rounds: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const start = performance.now()
    for (let i = 0; i < iterations; i++) await turn()
    rounds.push(((performance.now() - start) * 1000) / (iterations * TURN))
  }
  return median(rounds)
}

function line(label: string, us: number): string {
  return `${label}: ${us.toFixed(2)} us per call  [goal < ${GOAL_US} us: ${us < GOAL_US ? 'met' : 'MISSED'}]`
}

/** Lines to print: each adapter's added cost per call, with the goal and a verdict. */
export async function benchAdapters(): Promise<string[]> {
  const root = createContext()
  root.tools.register(readFile)
  const agent = root.agent('bench')
  const results: ToolExecutionResult[] = Array.from({ length: TURN }, () => ({ isError: false, value: null, content: [{ type: 'text', text: 'a.ts (3 lines)\n   1  export const a = 1' }] }))

  const openai = openaiTools(agent)
  const toolCalls: ChatCompletionMessageToolCall[] = Array.from({ length: TURN }, (_, i) => ({
    id: `call_${i}`,
    type: 'function',
    function: { name: 'read_file', arguments: `{"path":"src/file-${i}.ts","offset":${i + 1},"limit":null}` },
  }))
  const output: ResponseOutputItem[] = toolCalls.map((call) => ({ type: 'function_call', call_id: call.id, name: 'read_file', arguments: call.type === 'function' ? call.function.arguments : '' }))
  const anthropic = anthropicTools(agent)
  const uses: ContentBlock[] = Array.from({ length: TURN }, (_, i) => ({ type: 'tool_use', id: `toolu_${i}`, name: 'read_file', input: { path: `src/file-${i}.ts`, offset: i + 1 }, caller: { type: 'direct' } }))

  const lines = [
    line('OpenAI Chat Completions (tool_calls -> calls -> tool messages, parse included)', perCallUs(() => openai.chatResults(openai.chatCalls(toolCalls), results))),
    line('OpenAI Responses (function_call -> calls -> function_call_output, parse included)', perCallUs(() => openai.responsesResults(openai.responsesCalls(output), results))),
    line('Anthropic (tool_use -> calls -> tool_result message)', perCallUs(() => anthropic.results(anthropic.calls(uses), results))),
    line('AI SDK (result -> toModelOutput)', perCallUs(() => results.map(toAiSdkModelOutput))),
  ]

  // The per-call API against the batch API, both scheduling and logging the same calls.
  const signal = new AbortController().signal
  const calls = Array.from({ length: TURN }, (_, i) => ({ callId: `c${i}`, name: 'read_file', arguments: { path: `f${i}` } }))
  const runner = createToolCallRunner(agent.ctx.tools, { agent })
  const batchUs = await perCallUsAsync(() => runToolCalls(agent.ctx.tools, calls, { agent, signal }), 50)
  const runnerUs = await perCallUsAsync(() => Promise.all(calls.map((call) => runner.run(call, { signal }))), 50)
  lines.push(`AI SDK per-call runner: ${runnerUs.toFixed(1)} us per call; runToolCalls ${batchUs.toFixed(1)} us per call (both through the pipeline; informational)`)
  root.dispose()
  return lines
}
