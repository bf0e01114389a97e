/**
 * An agent loop on the OpenAI SDK, with the Chat Completions API or the Responses API.
 *
 * The real `openai` client runs; only its `fetch` is scripted (no network, no key): it records
 * each request body and answers with the next scripted model turn. `openaiTools(agent)` gives
 * the tools in OpenAI's shape (strict mode where a tool's schema allows it) and runs each turn's
 * calls through `runToolCalls`: reads overlap, the write runs alone, the session log records every
 * call, and the report tool concludes the turn, so the loop stops without a third model call.
 *
 * Run: node --no-node-snapshot --import tsx examples/openai-agent.ts [chat|responses]
 */
import OpenAI from 'openai'
import type { ChatCompletion, ChatCompletionMessageParam } from 'openai/resources/chat/completions'
import type { Response as OpenAIResponse, ResponseInputItem } from 'openai/resources/responses/responses'
import { parseJsonText } from 'toolbox-codemode'
import { openaiTools } from 'toolbox-codemode/openai'
import { heading, isMain } from './format.ts'
import type { Print } from './format.ts'
import { providerDeployment, SCRIPT, TASK } from './provider-setup.ts'
import type { ProviderAgentSummary, ScriptedCall } from './provider-setup.ts'

/** Which OpenAI API the loop talks to. */
export type OpenAIApi = 'chat' | 'responses'

/** The scripted model as a Chat Completions response. */
function chatCompletion(turn: readonly ScriptedCall[] | undefined, index: number): ChatCompletion {
  return {
    id: `chatcmpl-${index}`,
    object: 'chat.completion',
    created: 1764985600 + index,
    model: 'gpt-4.1-2025-04-14',
    choices: [
      {
        index: 0,
        logprobs: null,
        finish_reason: turn === undefined ? 'stop' : 'tool_calls',
        message:
          turn === undefined
            ? { role: 'assistant', content: 'Done.', refusal: null }
            : { role: 'assistant', content: null, refusal: null, tool_calls: turn.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.strictArguments ?? call.arguments } })) },
      },
    ],
  }
}

/** The scripted model as a Responses API response (only the fields the loop reads are filled in). */
function response(turn: readonly ScriptedCall[] | undefined, index: number): Partial<OpenAIResponse> {
  return {
    id: `resp_${index}`,
    object: 'response',
    created_at: 1764985600 + index,
    model: 'gpt-4.1-2025-04-14',
    status: 'completed',
    output:
      turn === undefined
        ? [{ type: 'message', id: `msg_${index}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Done.', annotations: [] }] }]
        : turn.map((call) => ({ type: 'function_call', id: `fc_${call.id}`, call_id: call.id, name: call.name, arguments: call.strictArguments ?? call.arguments, status: 'completed' })),
  }
}

/** Runs the example; `print` receives the readable account (silent: `() => {}`). */
export async function main({ api = 'chat' as OpenAIApi, print = console.log as Print } = {}): Promise<ProviderAgentSummary> {
  const { root, agent, fs, reports } = providerDeployment()
  using _root = root
  const requests: unknown[] = []
  // The scripted "server": records what the SDK sent, answers with the next model turn.
  const client = new OpenAI({
    apiKey: 'sk-scripted',
    maxRetries: 0,
    fetch: async (_url, init) => {
      const index = requests.length
      requests.push(parseJsonText(String(init?.body), 'request'))
      const turn = SCRIPT[index]
      const body = api === 'chat' ? chatCompletion(turn, index) : response(turn, index)
      return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } })
    },
  })
  const signal = AbortSignal.timeout(30_000)

  heading(print, `OpenAI ${api === 'chat' ? 'Chat Completions' : 'Responses'} loop`)
  if (api === 'chat') {
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: TASK }]
    for (let step = 0; step < 8; step++) {
      // Per model call: the agent's tools may have changed since the last one.
      const tools = openaiTools(agent)
      const completion = await client.chat.completions.create({ model: 'gpt-4.1', messages, tools: tools.chatCompletions }, { signal })
      const message = completion.choices[0]?.message
      if (message === undefined) break
      messages.push(message)
      if (message.tool_calls === undefined || message.tool_calls.length === 0) break
      const turn = await tools.runChatToolCalls(message.tool_calls, { signal })
      messages.push(...turn.messages)
      for (const sent of turn.messages) print(`  ${sent.role}${'tool_call_id' in sent ? ` ${sent.tool_call_id}` : ''}: ${JSON.stringify(sent.content).slice(0, 100)}`)
      if (turn.concludesTurn) break
    }
  } else {
    const input: ResponseInputItem[] = [{ role: 'user', content: TASK }]
    for (let step = 0; step < 8; step++) {
      const tools = openaiTools(agent)
      const reply = await client.responses.create({ model: 'gpt-4.1', input, tools: tools.responses }, { signal })
      // The model's items go back as input, then the outputs answering its calls.
      input.push(...(reply.output as ResponseInputItem[]))
      const turn = await tools.runResponsesToolCalls(reply.output, { signal })
      if (turn.input.length === 0) break
      input.push(...turn.input)
      for (const item of turn.input) print(`  ${item.type ?? 'message'}: ${JSON.stringify(item).slice(0, 100)}`)
      if (turn.concludesTurn) break
    }
  }

  const firstTools = ((requests[0] as { tools?: { name?: string; function?: { name: string } }[] }).tools ?? []).map((tool) => tool.function?.name ?? tool.name ?? '?')
  heading(print, `Session log of ${agent.id}`)
  const sessionEvents = agent.session.events.map((event) => `${event.type} ${'callId' in event ? event.callId : ''}`)
  for (const line of sessionEvents) print(`  ${line}`)
  print(`\nmodel calls: ${requests.length}; report: ${JSON.stringify(reports)}`)
  return { modelCalls: requests.length, toolNames: firstTools, sessionEvents, reports, files: [...fs.files.keys()].sort(), peakConcurrentReads: fs.peakConcurrentReads, requests }
}

if (isMain(import.meta.url)) await main({ api: process.argv[2] === 'responses' ? 'responses' : 'chat' })
