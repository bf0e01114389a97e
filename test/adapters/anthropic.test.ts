import type { ContentBlock, MessageCreateParamsNonStreaming } from '@anthropic-ai/sdk/resources/messages/messages'
import { describe, expect, it } from 'vitest'
import { anthropicTools } from '../../adapters/anthropic.ts'
import { createContext } from '../../src/index.ts'
import { rawTool } from '../helpers.ts'
import { adapterDeployment, PNG } from './deployment.ts'

const signal = new AbortController().signal

function use(id: string, name: string, input: unknown): ContentBlock {
  return { type: 'tool_use', id, name, input, caller: { type: 'direct' } }
}

describe('anthropicTools: tools', () => {
  it('gives tools the Anthropic SDK accepts as request tools, schemas unchanged', () => {
    const { root, agent } = adapterDeployment()
    const tools = anthropicTools(agent)
    const params: MessageCreateParamsNonStreaming = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], tools: tools.tools }
    expect(params.tools).toEqual(
      root.tools.schemas(agent).map((schema) => ({ name: schema.name === 'fs.write' ? 'fs_write' : schema.name, description: schema.description, input_schema: schema.parameters })),
    )
  })

  it('refuses two names that would be sent alike, naming both and the fix', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('a:b'))
    ctx.tools.register(rawTool('a.b'))
    expect(() => anthropicTools(ctx.agent('x'))).toThrow('Anthropic: the tool names "a:b" and "a.b" would both be sent as "a_b"')
  })
})

describe('anthropicTools: calls', () => {
  it('takes the tool_use blocks of a response, names mapped back, inputs as given', () => {
    const { agent } = adapterDeployment()
    const content: ContentBlock[] = [{ type: 'text', text: 'Writing.', citations: null }, use('toolu_1', 'fs_write', { path: 'a', text: 'b' }), use('toolu_2', 'finish', {})]
    expect(anthropicTools(agent).calls(content)).toEqual([
      { callId: 'toolu_1', name: 'fs.write', arguments: { path: 'a', text: 'b' } },
      { callId: 'toolu_2', name: 'finish', arguments: {} },
    ])
  })

  it('answers an input that breaks the schema with an is_error result naming the path', async () => {
    const { agent } = adapterDeployment()
    const turn = await anthropicTools(agent).runToolUses([use('toolu_1', 'read_file', { path: 42 })], { signal })
    expect(turn.message.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', is_error: true, content: [{ type: 'text', text: 'Invalid arguments for tool "read_file": $.path: expected string, found number 42' }] },
    ])
  })

  it('logs the calls to the agent session', async () => {
    const { agent } = adapterDeployment()
    await anthropicTools(agent).runToolUses([use('toolu_1', 'fs_write', { path: 'a', text: 'b' })], { signal })
    expect(agent.session.events.map((event) => `${event.type} ${'name' in event ? event.name : ''}`)).toEqual(['tool/call fs.write', 'tool/result fs.write'])
  })

  it('names the fix when a turn is run without a signal', async () => {
    const { agent } = adapterDeployment()
    await expect(anthropicTools(agent).runToolUses([], {} as never)).rejects.toThrow('runToolUses(content, options): options.signal must be an AbortSignal')
  })
})

describe('anthropicTools: results', () => {
  it('answers with one user message: tool_result blocks in call order, is_error on failures only', async () => {
    const { agent } = adapterDeployment()
    const turn = await anthropicTools(agent).runToolUses([use('toolu_1', 'fail', {}), use('toolu_2', 'read_file', { path: 'a.ts' })], { signal })
    expect(turn.message).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', is_error: true, content: [{ type: 'text', text: 'disk is full' }] },
        { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'contents of a.ts' }] },
      ],
    })
    expect(turn.concludesTurn).toBe(false)
  })

  it('keeps a supported image in the tool_result and writes the rest as text', async () => {
    const { agent } = adapterDeployment()
    const turn = await anthropicTools(agent).runToolUses([use('toolu_1', 'screenshot', {})], { signal })
    expect(turn.message.content[0]).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_1',
      content: [
        { type: 'text', text: 'screen 1' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        { type: 'text', text: '[image omitted: Anthropic does not accept image/bmp here]' },
        { type: 'text', text: '[audio omitted (audio/wav): Anthropic does not accept audio here]' },
        { type: 'text', text: '[resource 1.png: file:///shots/1.png (image/png)]' },
      ],
    })
  })

  it('puts deferred contexts after every tool_result and reports that the turn concluded', async () => {
    const { agent } = adapterDeployment()
    const turn = await anthropicTools(agent).runToolUses([use('toolu_1', 'finish', {}), use('toolu_2', 'fs_write', { path: 'a', text: 'b' })], { signal })
    expect(turn.message.content.map((block) => block.type)).toEqual(['tool_result', 'tool_result', 'text', 'image'])
    expect(turn.message.content.slice(2)).toEqual([
      { type: 'text', text: 'The user approved the plan.' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
    ])
    expect(turn.concludesTurn).toBe(true)
  })

  it('leaves content out of a tool_result whose result has none', () => {
    const { agent } = adapterDeployment()
    const { message } = anthropicTools(agent).results([{ callId: 'toolu_1', name: 'x', arguments: {} }], [{ isError: false, value: null, content: [] }])
    expect(message.content).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_1' }])
  })

  it('refuses results that do not pair up with the calls', () => {
    const { agent } = adapterDeployment()
    expect(() => anthropicTools(agent).results([], [{ isError: false, value: 1, content: [] }])).toThrow('results(calls, results): 0 calls but 1 results')
  })
})
