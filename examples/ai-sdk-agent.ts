/**
 * An agent loop the AI SDK owns: `generateText` with tools from `toAiSdkTools(agent)`.
 *
 * The model is the AI SDK's own `MockLanguageModelV3` (from `ai/test`) playing the scripted turns
 * (no network). The AI SDK calls every tool's `execute` itself, all of a step's calls at once;
 * each `execute` goes through one `ToolCallRunner`, so the guarantees of `runToolCalls` hold
 * anyway: the reads overlap, the write runs alone, and the agent's session log records every
 * call. The report tool concludes the turn; the `turnConcluded` stop condition ends the loop.
 *
 * Run: node --no-node-snapshot --import tsx examples/ai-sdk-agent.ts
 */
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { toAiSdkModelOutput, toAiSdkTools, turnConcluded } from 'toolbox-codemode/ai-sdk'
import { heading, isMain } from './format.ts'
import type { Print } from './format.ts'
import { providerDeployment, SCRIPT, TASK } from './provider-setup.ts'
import type { ProviderAgentSummary } from './provider-setup.ts'

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>

const usage: GenerateResult['usage'] = {
  inputTokens: { total: 100, noCache: 100, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 50, text: 50, reasoning: 0 },
}

/** Runs the example; `print` receives the readable account (silent: `() => {}`). */
export async function main({ print = console.log as Print } = {}): Promise<ProviderAgentSummary> {
  const { root, agent, fs, reports } = providerDeployment()
  using _root = root
  const requests: unknown[] = []
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      const index = requests.length
      requests.push({ prompt: options.prompt, tools: options.tools })
      const turn = SCRIPT[index]
      if (turn === undefined) return { content: [{ type: 'text', text: 'Done.' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }
      return {
        content: turn.map((call) => ({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.arguments })),
        finishReason: { unified: 'tool-calls', raw: 'tool_use' },
        usage,
        warnings: [],
      }
    },
  })

  heading(print, 'AI SDK generateText loop')
  // One tool set per loop: its tools share one runner, hence one scheduler.
  const tools = await toAiSdkTools(agent)
  const result = await generateText({
    model,
    prompt: TASK,
    tools,
    stopWhen: [stepCountIs(8), turnConcluded()],
    abortSignal: AbortSignal.timeout(30_000),
  })
  for (const step of result.steps) {
    // What the model reads for each result, as the adapter's toModelOutput gives it.
    for (const toolResult of step.toolResults) print(`  ${toolResult.toolCallId} ${toolResult.toolName}: ${JSON.stringify(toAiSdkModelOutput(toolResult.output)).slice(0, 100)}`)
  }

  const toolNames = ((requests[0] as { tools?: { name: string }[] }).tools ?? []).map((tool) => tool.name)
  heading(print, `Session log of ${agent.id}`)
  const sessionEvents = agent.session.events.map((event) => `${event.type} ${'callId' in event ? event.callId : ''}`)
  for (const line of sessionEvents) print(`  ${line}`)
  print(`\nmodel calls: ${requests.length}; report: ${JSON.stringify(reports)}`)
  return { modelCalls: requests.length, toolNames, sessionEvents, reports, files: [...fs.files.keys()].sort(), peakConcurrentReads: fs.peakConcurrentReads, requests }
}

if (isMain(import.meta.url)) await main()
