import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { describe, expect, it } from 'vitest'
import { toAiSdkModelOutput, toAiSdkTools, turnConcluded } from '../../adapters/ai-sdk.ts'
import { createContext, createToolCallRunner } from '../../src/index.ts'
import type { ToolExecutionResult } from '../../src/index.ts'
import { deferred, rawTool } from '../helpers.ts'
import { adapterDeployment, PNG } from './deployment.ts'

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>
type ToolCallContent = { type: 'tool-call'; toolCallId: string; toolName: string; input: string }

const usage: GenerateResult['usage'] = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
}

/** A model that plays `turns` of tool calls, then answers with text. */
function scriptedModel(turns: readonly (readonly ToolCallContent[])[]): MockLanguageModelV3 {
  let index = 0
  return new MockLanguageModelV3({
    doGenerate: async () => {
      const turn = turns[index++]
      if (turn === undefined) return { content: [{ type: 'text', text: 'Done.' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }
      return { content: [...turn], finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage, warnings: [] }
    },
  })
}

const call = (toolCallId: string, toolName: string, input = '{}'): ToolCallContent => ({ type: 'tool-call', toolCallId, toolName, input })

describe('toAiSdkTools', () => {
  it('gives one tool per visible tool, keyed by the sent name, with the parameters as its JSON schema', async () => {
    const { root, agent } = adapterDeployment()
    const tools = await toAiSdkTools(agent)
    expect(Object.keys(tools)).toEqual(['read_file', 'fs_write', 'screenshot', 'finish', 'fail'])
    const inputSchema = tools.fs_write?.inputSchema as { jsonSchema: unknown }
    expect(inputSchema.jsonSchema).toEqual(root.tools.schemas(agent)[1]?.parameters)
    expect(tools.fs_write?.description).toBe('Write a file.')
  })

  it('keeps a tool named "__proto__" as a key, not as the prototype of the set', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('__proto__'))
    const tools = await toAiSdkTools(ctx.agent('a1'))
    expect(Object.keys(tools)).toEqual(['__proto__'])
    expect(Object.getPrototypeOf(tools)).toBe(Object.prototype)
  })

  it('keeps an exclusive tool alone and lets parallel-safe ones overlap under generateText', async () => {
    const ctx = createContext()
    let running = 0
    let overlapsSeenByWrites = 0
    let peakReads = 0
    let reading = 0
    const bothReading = deferred()
    ctx.tools.register(
      rawTool('read', {
        isConcurrencySafe: () => true,
        execute: async () => {
          running++
          reading++
          peakReads = Math.max(peakReads, reading)
          if (reading === 2) bothReading.resolve()
          // Waits for the other read; the fallback only keeps a broken scheduler from hanging the test.
          await Promise.race([bothReading.promise, new Promise((resolve) => setTimeout(resolve, 2_000))])
          reading--
          running--
          return 'read'
        },
      }),
    )
    ctx.tools.register(
      rawTool('write', {
        execute: async () => {
          running++
          if (running > 1) overlapsSeenByWrites++
          await new Promise((resolve) => setTimeout(resolve, 5))
          if (running > 1) overlapsSeenByWrites++
          running--
          return 'written'
        },
      }),
    )
    const agent = ctx.agent('a1')
    const model = scriptedModel([[call('r1', 'read'), call('r2', 'read'), call('w1', 'write'), call('w2', 'write'), call('w3', 'write')]])
    await generateText({ model, prompt: 'go', tools: await toAiSdkTools(agent), stopWhen: stepCountIs(3) })
    expect(overlapsSeenByWrites).toBe(0)
    expect(peakReads).toBe(2)
    const events = agent.session.events.map((event) => `${event.type} ${'callId' in event ? event.callId : ''}`)
    // Submission order holds: the reads first, then each write's call and result side by side.
    expect(events).toEqual(['tool/call r1', 'tool/call r2', 'tool/result r1', 'tool/result r2', 'tool/call w1', 'tool/result w1', 'tool/call w2', 'tool/result w2', 'tool/call w3', 'tool/result w3'])
  })

  it('logs every call under its registry name and sends the model the mapped outputs', async () => {
    const { agent } = adapterDeployment()
    const model = scriptedModel([[call('c1', 'fs_write', '{"path":"a","text":"b"}'), call('c2', 'fail'), call('c3', 'screenshot')]])
    await generateText({ model, prompt: 'go', tools: await toAiSdkTools(agent), stopWhen: stepCountIs(3) })
    expect(agent.session.events.filter((event) => event.type === 'tool/call').map((event) => ('name' in event ? event.name : ''))).toEqual(['fs.write', 'fail', 'screenshot'])
    const secondPrompt = model.doGenerateCalls[1]?.prompt ?? []
    const toolMessage = secondPrompt.find((message) => message.role === 'tool')
    expect(toolMessage?.content).toEqual([
      { type: 'tool-result', toolCallId: 'c1', toolName: 'fs_write', output: { type: 'content', value: [{ type: 'text', text: 'written' }] } },
      { type: 'tool-result', toolCallId: 'c2', toolName: 'fail', output: { type: 'error-text', value: 'disk is full' } },
      {
        type: 'tool-result',
        toolCallId: 'c3',
        toolName: 'screenshot',
        output: {
          type: 'content',
          value: [
            { type: 'text', text: 'screen 1' },
            { type: 'image-data', data: PNG, mediaType: 'image/png' },
            { type: 'text', text: '[image omitted: the AI SDK does not accept image/bmp here]' },
            { type: 'text', text: '[audio omitted (audio/wav): the AI SDK does not accept audio here]' },
            { type: 'text', text: '[resource 1.png: file:///shots/1.png (image/png)]' },
          ],
        },
      },
    ])
  })

  it('stops the loop with turnConcluded once a tool concluded the turn', async () => {
    const { agent } = adapterDeployment()
    // Without the stop condition the model would be asked again and call finish a second time.
    const model = scriptedModel([[call('c1', 'finish')], [call('c2', 'finish')]])
    const result = await generateText({ model, prompt: 'go', tools: await toAiSdkTools(agent), stopWhen: [stepCountIs(5), turnConcluded()] })
    expect(model.doGenerateCalls).toHaveLength(1)
    expect(result.steps).toHaveLength(1)
  })

  it('shares a runner passed in, so two tool sets of one loop share one scheduler', async () => {
    const { agent } = adapterDeployment()
    const runner = createToolCallRunner(agent.ctx.tools, { agent })
    const [first, second] = [await toAiSdkTools(agent, { runner }), await toAiSdkTools(agent, { runner })]
    const pending = first.read_file?.execute?.({ path: 'a' }, { toolCallId: 'same', messages: [] })
    await expect(second.read_file?.execute?.({ path: 'a' }, { toolCallId: 'same', messages: [] })).rejects.toThrow('already running')
    await pending
  })
})

describe('toAiSdkModelOutput', () => {
  it('gives a text-only failure as error-text', () => {
    expect(toAiSdkModelOutput({ isError: true, error: { message: 'm' }, content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] })).toEqual({ type: 'error-text', value: 'a\nb' })
  })

  it('gives a failure with an image as content starting with "Error"', () => {
    const failure: ToolExecutionResult = { isError: true, error: { message: 'm' }, content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }
    expect(toAiSdkModelOutput(failure)).toEqual({ type: 'content', value: [{ type: 'text', text: 'Error' }, { type: 'image-data', data: PNG, mediaType: 'image/png' }] })
  })

  it('appends deferred contexts after the result content', () => {
    const result: ToolExecutionResult = { isError: false, value: 1, content: [{ type: 'text', text: 'ok' }], additionalContexts: [{ role: 'user', content: [{ type: 'text', text: 'note' }] }] }
    expect(toAiSdkModelOutput(result)).toEqual({ type: 'content', value: [{ type: 'text', text: 'ok' }, { type: 'text', text: 'note' }] })
  })

  it('gives a value that is not a result as json', () => {
    expect(toAiSdkModelOutput({ answer: 42 })).toEqual({ type: 'json', value: { answer: 42 } })
  })
})
