import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageToolCall } from 'openai/resources/chat/completions'
import type { ResponseCreateParamsNonStreaming, ResponseOutputItem } from 'openai/resources/responses/responses'
import { describe, expect, it } from 'vitest'
import { openaiTools } from '../../adapters/openai.ts'
import { createContext } from '../../src/index.ts'
import type { ToolExecutionResult } from '../../src/index.ts'
import { rawTool } from '../helpers.ts'
import { adapterDeployment, PNG } from './deployment.ts'

const signal = new AbortController().signal

function fn(id: string, name: string, args: string): ChatCompletionMessageToolCall {
  return { id, type: 'function', function: { name, arguments: args } }
}

describe('openaiTools: tools', () => {
  it('gives Chat Completions function tools the OpenAI SDK accepts as request tools', () => {
    const { agent } = adapterDeployment()
    const tools = openaiTools(agent)
    const params: ChatCompletionCreateParamsNonStreaming = { model: 'gpt-4.1', messages: [{ role: 'user', content: 'hi' }], tools: tools.chatCompletions }
    expect(params.tools?.map((tool) => tool.type === 'function' && tool.function.name)).toEqual(['read_file', 'fs_write', 'screenshot', 'finish', 'fail'])
  })

  it('gives Responses API function tools with the same names, schemas and strictness', () => {
    const { agent } = adapterDeployment()
    const tools = openaiTools(agent)
    const params: ResponseCreateParamsNonStreaming = { model: 'gpt-4.1', input: 'hi', tools: tools.responses }
    expect(params.tools).toEqual(
      tools.chatCompletions.map((tool) => ({ type: 'function', name: tool.function.name, description: tool.function.description, parameters: tool.function.parameters, strict: tool.function.strict })),
    )
  })

  it('makes a closed schema strict: every property required, the optional one nullable', () => {
    const { agent } = adapterDeployment()
    const [readFile] = openaiTools(agent).chatCompletions
    expect(readFile?.function).toEqual({
      name: 'read_file',
      description: 'Read a file.',
      strict: true,
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' }, offset: { type: ['integer', 'null'], description: '1-based first line' } },
        required: ['path', 'offset'],
        additionalProperties: false,
      },
    })
  })

  it('sends an open schema unchanged with strict false, and says why', () => {
    const { agent } = adapterDeployment()
    const tools = openaiTools(agent)
    const screenshot = tools.chatCompletions.find((tool) => tool.function.name === 'screenshot')
    expect(screenshot?.function).toMatchObject({ strict: false, parameters: { type: 'object', properties: {}, additionalProperties: true } })
    expect(tools.strictness.get('screenshot')).toEqual({ strict: false, reason: '$: an open object (additionalProperties is not false) cannot be strict' })
  })

  it('turns strict mode off for every tool when asked', () => {
    const { agent } = adapterDeployment()
    const tools = openaiTools(agent, { strict: false })
    expect(tools.chatCompletions.every((tool) => tool.function.strict === false)).toBe(true)
    expect(tools.chatCompletions[0]?.function.parameters).toMatchObject({ required: ['path'] })
  })

  it('sends a dotted name with "_" and maps it back', () => {
    const { agent } = adapterDeployment()
    const tools = openaiTools(agent)
    expect(tools.chatCompletions[1]?.function.name).toBe('fs_write')
    expect(tools.chatCalls([fn('c1', 'fs_write', '{"path":"a","text":"b"}')])).toEqual([{ callId: 'c1', name: 'fs.write', argumentsText: '{"path":"a","text":"b"}' }])
  })

  it('refuses two names that would be sent alike, naming both and the fix', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('fs.read'))
    ctx.tools.register(rawTool('fs_read'))
    expect(() => openaiTools(ctx.agent('a'))).toThrow('OpenAI: the tool names "fs_read" and "fs.read" would both be sent as "fs_read" (characters outside [a-zA-Z0-9_-] become "_"); rename one of them')
  })

  it('refuses a name longer than 64 characters, naming the limit', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool(`t${'x'.repeat(64)}`))
    expect(() => openaiTools(ctx.agent('a'))).toThrow(/must match \^\[a-zA-Z0-9_-\]\{1,64\}\$ and it is 65 characters long once mapped; register the tool under a name of at most 64 characters/)
  })
})

describe('openaiTools: calls', () => {
  it('maps a strict null for an absent optional back to an absent key', () => {
    const { agent } = adapterDeployment()
    expect(openaiTools(agent).chatCalls([fn('c1', 'read_file', '{"path":"a.ts","offset":null}')])).toEqual([{ callId: 'c1', name: 'read_file', arguments: { path: 'a.ts' } }])
  })

  it('passes a strict call without any null on as text, for runToolCalls to parse', () => {
    const { agent } = adapterDeployment()
    expect(openaiTools(agent).chatCalls([fn('c1', 'read_file', '{"path":"a.ts","offset":3}')])).toEqual([{ callId: 'c1', name: 'read_file', argumentsText: '{"path":"a.ts","offset":3}' }])
  })

  it('keeps the values of a strict call whose text holds "null" only inside a string', () => {
    const { agent } = adapterDeployment()
    expect(openaiTools(agent).chatCalls([fn('c1', 'read_file', '{"path":"null.ts","offset":3}')])[0]?.arguments).toEqual({ path: 'null.ts', offset: 3 })
  })

  it('passes a non-strict tool its argument text, for runToolCalls to parse losslessly', () => {
    const { agent } = adapterDeployment()
    expect(openaiTools(agent).chatCalls([fn('c1', 'screenshot', '{"n": 1}')])).toEqual([{ callId: 'c1', name: 'screenshot', argumentsText: '{"n": 1}' }])
  })

  it('reads empty argument text as no arguments', () => {
    const { agent } = adapterDeployment()
    expect(openaiTools(agent).chatCalls([fn('c1', 'screenshot', '')])).toEqual([{ callId: 'c1', name: 'screenshot', arguments: {} }])
  })

  it('skips custom tool calls, which are not function tools', () => {
    const { agent } = adapterDeployment()
    const calls = openaiTools(agent).chatCalls([{ id: 'c0', type: 'custom', custom: { name: 'grammar', input: 'x' } }, fn('c1', 'finish', '{}')])
    expect(calls.map((call) => call.callId)).toEqual(['c1'])
  })

  it('takes the function_call items of a Responses output, by call_id', () => {
    const { agent } = adapterDeployment()
    const output: ResponseOutputItem[] = [
      { type: 'reasoning', id: 'rs_1', summary: [] },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'read_file', arguments: '{"path":"a","offset":null}' },
      { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'hi', annotations: [] }] },
    ]
    expect(openaiTools(agent).responsesCalls(output)).toEqual([{ callId: 'call_1', name: 'read_file', arguments: { path: 'a' } }])
  })

  it('answers unparseable argument text of a strict tool with INVALID_ARGS the model can read', async () => {
    const { agent } = adapterDeployment()
    const turn = await openaiTools(agent).runChatToolCalls([fn('c1', 'read_file', '{"path":')], { signal })
    expect(turn.results[0]?.isError && turn.results[0].error.info?.code).toBe('INVALID_ARGS')
    expect(turn.messages[0]).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: 'Error: Invalid arguments for tool "read_file": arguments is not lossless JSON at $.path: expected a value, found end of text (at position 8)',
    })
  })

  it('refuses an integer a double cannot hold in a strict call instead of rounding it', async () => {
    const { agent } = adapterDeployment()
    const turn = await openaiTools(agent).runChatToolCalls([fn('c1', 'read_file', '{"path":"a","offset":9007199254740993}')], { signal })
    expect(turn.results[0]?.isError && turn.results[0].error.info?.code).toBe('INVALID_ARGS')
    expect(turn.messages[0]?.content).toContain('$.offset')
  })

  it('logs the calls to the agent session under their registry names', async () => {
    const { agent } = adapterDeployment()
    await openaiTools(agent).runChatToolCalls([fn('c1', 'fs_write', '{"path":"a","text":"b"}')], { signal })
    expect(agent.session.events.map((event) => [event.type, 'name' in event ? event.name : ''])).toEqual([
      ['tool/call', 'fs.write'],
      ['tool/result', 'fs.write'],
    ])
  })

  it('names the fix when a turn is run without a signal', async () => {
    const { agent } = adapterDeployment()
    await expect(openaiTools(agent).runChatToolCalls([], undefined as never)).rejects.toThrow('runChatToolCalls(calls, options): options.signal must be an AbortSignal')
  })
})

describe('openaiTools: results', () => {
  it('answers every call with a tool message in call order, a failure marked with "Error: "', async () => {
    const { agent } = adapterDeployment()
    const turn = await openaiTools(agent).runChatToolCalls([fn('c1', 'fail', '{}'), fn('c2', 'read_file', '{"path":"a.ts","offset":null}')], { signal })
    expect(turn.messages).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: 'Error: disk is full' },
      { role: 'tool', tool_call_id: 'c2', content: 'contents of a.ts' },
    ])
    expect(turn.concludesTurn).toBe(false)
  })

  it('announces an image in the tool message and sends it in a user message after the tool messages', async () => {
    const { agent } = adapterDeployment()
    const turn = await openaiTools(agent).runChatToolCalls([fn('c1', 'screenshot', '{}'), fn('c2', 'finish', '{}')], { signal })
    expect(turn.messages[0]).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: [
        { type: 'text', text: 'screen 1' },
        { type: 'text', text: '[image 1 (image/png) is attached in a user message after the tool results]' },
        { type: 'text', text: '[image omitted: OpenAI does not accept image/bmp here]' },
        { type: 'text', text: '[audio omitted (audio/wav): OpenAI does not accept audio here]' },
        { type: 'text', text: '[resource 1.png: file:///shots/1.png (image/png)]' },
      ],
    })
    expect(turn.messages.slice(1).map((message) => message.role)).toEqual(['tool', 'user', 'user'])
    expect(turn.messages[2]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Images returned by tool call c1 (screenshot):' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
      ],
    })
  })

  it('appends a deferred context as a user message and reports that the turn concluded', async () => {
    const { agent } = adapterDeployment()
    const turn = await openaiTools(agent).runChatToolCalls([fn('c1', 'finish', '{}')], { signal })
    expect(turn.messages).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: 'finished' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'The user approved the plan.' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        ],
      },
    ])
    expect(turn.concludesTurn).toBe(true)
  })

  it('puts images inside a Responses function_call_output and contexts in a user message after all outputs', async () => {
    const { agent } = adapterDeployment()
    const output: ResponseOutputItem[] = [
      { type: 'function_call', call_id: 'c1', name: 'finish', arguments: '{}' },
      { type: 'function_call', call_id: 'c2', name: 'screenshot', arguments: '{}' },
      { type: 'function_call', call_id: 'c3', name: 'fail', arguments: '{}' },
    ]
    const turn = await openaiTools(agent).runResponsesToolCalls(output, { signal })
    expect(turn.input).toEqual([
      { type: 'function_call_output', call_id: 'c1', output: 'finished' },
      {
        type: 'function_call_output',
        call_id: 'c2',
        output: [
          { type: 'input_text', text: 'screen 1' },
          { type: 'input_image', image_url: `data:image/png;base64,${PNG}` },
          { type: 'input_text', text: '[image omitted: OpenAI does not accept image/bmp here]' },
          { type: 'input_text', text: '[audio omitted (audio/wav): OpenAI does not accept audio here]' },
          { type: 'input_text', text: '[resource 1.png: file:///shots/1.png (image/png)]' },
        ],
      },
      { type: 'function_call_output', call_id: 'c3', output: 'Error: disk is full' },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'The user approved the plan.' },
          { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' },
        ],
      },
    ])
    expect(turn.concludesTurn).toBe(true)
  })

  it('marks a failure without text with a leading "Error" part', () => {
    const { agent } = adapterDeployment()
    const failure: ToolExecutionResult = { isError: true, error: { message: 'x' }, content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }
    const { input } = openaiTools(agent).responsesResults([{ callId: 'c1', name: 'fail', arguments: {} }], [failure])
    expect(input[0]).toEqual({
      type: 'function_call_output',
      call_id: 'c1',
      output: [
        { type: 'input_text', text: 'Error' },
        { type: 'input_image', image_url: `data:image/png;base64,${PNG}` },
      ],
    })
  })

  it('writes a text resource as text and a binary resource as a note', () => {
    const { agent } = adapterDeployment()
    const result: ToolExecutionResult = {
      isError: false,
      value: null,
      content: [
        { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'hello' } },
        { type: 'resource', resource: { uri: 'file:///a.bin', blob: 'AAAA' } },
      ],
    }
    const { messages } = openaiTools(agent).chatResults([{ callId: 'c1', name: 'x', arguments: {} }], [result])
    expect(messages[0]?.content).toEqual([
      { type: 'text', text: '[resource file:///a.txt (text/plain)]\nhello' },
      { type: 'text', text: '[resource file:///a.bin: binary content omitted]' },
    ])
  })

  it('answers a result without content with an empty string, not an empty array', () => {
    const { agent } = adapterDeployment()
    const tools = openaiTools(agent)
    const empty: ToolExecutionResult = { isError: false, value: null, content: [] }
    const call = { callId: 'c1', name: 'x', arguments: {} }
    expect(tools.chatResults([call], [empty]).messages).toEqual([{ role: 'tool', tool_call_id: 'c1', content: '' }])
    expect(tools.responsesResults([call], [empty]).input).toEqual([{ type: 'function_call_output', call_id: 'c1', output: '' }])
  })

  it('refuses results that do not pair up with the calls', () => {
    const { agent } = adapterDeployment()
    expect(() => openaiTools(agent).chatResults([{ callId: 'c1', name: 'x', arguments: {} }], [])).toThrow('chatResults(calls, results): 1 calls but 0 results')
  })
})
