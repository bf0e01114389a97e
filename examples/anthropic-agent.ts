/**
 * An agent loop on the Anthropic SDK (Messages API).
 *
 * The real `@anthropic-ai/sdk` client runs; only its `fetch` is scripted (no network, no key): it
 * records each request body and answers with the next scripted model turn. `anthropicTools(agent)`
 * gives the tools in Anthropic's shape and answers each turn's `tool_use` blocks with one user
 * message of `tool_result` blocks (`is_error` on failures, images in place, deferred contexts
 * after the results): reads overlap, the write runs alone, the session log records every call,
 * and the report tool concludes the turn, so the loop stops without a third model call.
 *
 * Run: node --no-node-snapshot --import tsx examples/anthropic-agent.ts
 */
import Anthropic from '@anthropic-ai/sdk'
import type { Message, MessageParam } from '@anthropic-ai/sdk/resources/messages/messages'
import { parseJsonText } from 'toolbox-codemode'
import { anthropicTools } from 'toolbox-codemode/anthropic'
import { heading, isMain } from './format.ts'
import type { Print } from './format.ts'
import { providerDeployment, SCRIPT, TASK } from './provider-setup.ts'
import type { ProviderAgentSummary, ScriptedCall } from './provider-setup.ts'

/** The scripted model as a Messages API response. Anthropic sends `input` as parsed JSON. */
function message(turn: readonly ScriptedCall[] | undefined, index: number): Message {
  return {
    id: `msg_${index}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    container: null,
    stop_details: null,
    stop_reason: turn === undefined ? 'end_turn' : 'tool_use',
    stop_sequence: null,
    content:
      turn === undefined
        ? [{ type: 'text', text: 'Done.', citations: null }]
        : turn.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: parseJsonText(call.arguments), caller: { type: 'direct' } })),
    usage: {
      input_tokens: 100,
      output_tokens: 50,
      cache_creation: null,
      cache_creation_input_tokens: null,
      cache_read_input_tokens: null,
      inference_geo: null,
      server_tool_use: null,
      service_tier: 'standard',
    },
  } as Message
}

/** Runs the example; `print` receives the readable account (silent: `() => {}`). */
export async function main({ print = console.log as Print } = {}): Promise<ProviderAgentSummary> {
  const { root, agent, fs, reports } = providerDeployment()
  using _root = root
  const requests: unknown[] = []
  // The scripted "server": records what the SDK sent, answers with the next model turn.
  const client = new Anthropic({
    apiKey: 'sk-ant-scripted',
    maxRetries: 0,
    fetch: async (_url, init) => {
      const index = requests.length
      requests.push(parseJsonText(String(init?.body), 'request'))
      return new Response(JSON.stringify(message(SCRIPT[index], index)), { status: 200, headers: { 'content-type': 'application/json' } })
    },
  })
  const signal = AbortSignal.timeout(30_000)

  heading(print, 'Anthropic Messages loop')
  const messages: MessageParam[] = [{ role: 'user', content: TASK }]
  for (let step = 0; step < 8; step++) {
    // Per model call: the agent's tools may have changed since the last one.
    const tools = anthropicTools(agent)
    const reply = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 1024, messages, tools: tools.tools }, { signal })
    messages.push({ role: 'assistant', content: reply.content })
    if (reply.stop_reason !== 'tool_use') break
    const turn = await tools.runToolUses(reply.content, { signal })
    messages.push(turn.message)
    for (const block of turn.message.content) print(`  ${block.type}${'tool_use_id' in block ? ` ${block.tool_use_id}` : ''}: ${JSON.stringify(block).slice(0, 100)}`)
    if (turn.concludesTurn) break
  }

  const toolNames = ((requests[0] as { tools?: { name: string }[] }).tools ?? []).map((tool) => tool.name)
  heading(print, `Session log of ${agent.id}`)
  const sessionEvents = agent.session.events.map((event) => `${event.type} ${'callId' in event ? event.callId : ''}`)
  for (const line of sessionEvents) print(`  ${line}`)
  print(`\nmodel calls: ${requests.length}; report: ${JSON.stringify(reports)}`)
  return { modelCalls: requests.length, toolNames, sessionEvents, reports, files: [...fs.files.keys()].sort(), peakConcurrentReads: fs.peakConcurrentReads, requests }
}

if (isMain(import.meta.url)) await main()
