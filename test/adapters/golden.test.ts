import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ChatCompletion } from 'openai/resources/chat/completions'
import type { ResponseOutputItem } from 'openai/resources/responses/responses'
import type { ContentBlock } from '@anthropic-ai/sdk/resources/messages/messages'
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { describe, expect, it } from 'vitest'
import { toAiSdkTools } from '../../adapters/ai-sdk.ts'
import { anthropicTools } from '../../adapters/anthropic.ts'
import { openaiTools } from '../../adapters/openai.ts'
import { adapterDeployment } from './deployment.ts'

// Hand-recorded shapes (see each fixture's note): provider responses written from the SDK types,
// and the request parts the adapters must produce for them, checked by eye once and kept exact.
const fixture = (name: string): Record<string, unknown> => JSON.parse(readFileSync(join(import.meta.dirname, '../fixtures/adapters', name), 'utf8')) as Record<string, unknown>
const signal = new AbortController().signal

describe('golden payloads', () => {
  it('OpenAI Chat Completions: the request tools and the messages answering a recorded tool_calls response', async () => {
    const golden = fixture('openai-chat.hand-recorded-shapes.json')
    const { agent } = adapterDeployment()
    const tools = openaiTools(agent)
    expect(tools.chatCompletions).toEqual((golden.request as { tools: unknown }).tools)
    const response = golden.response as ChatCompletion
    const turn = await tools.runChatToolCalls(response.choices[0]?.message.tool_calls, { signal })
    expect(turn.messages).toEqual(golden.followUp)
    expect(turn.concludesTurn).toBe(golden.concludesTurn)
  })

  it('OpenAI Responses: the request tools and the input items answering a recorded function_call output', async () => {
    const golden = fixture('openai-responses.hand-recorded-shapes.json')
    const { agent } = adapterDeployment()
    const tools = openaiTools(agent)
    expect(tools.responses).toEqual((golden.request as { tools: unknown }).tools)
    const turn = await tools.runResponsesToolCalls((golden.response as { output: ResponseOutputItem[] }).output, { signal })
    expect(turn.input).toEqual(golden.followUp)
    expect(turn.concludesTurn).toBe(golden.concludesTurn)
  })

  it('Anthropic Messages: the request tools and the user message answering a recorded tool_use response', async () => {
    const golden = fixture('anthropic-messages.hand-recorded-shapes.json')
    const { agent } = adapterDeployment()
    const tools = anthropicTools(agent)
    expect(tools.tools).toEqual((golden.request as { tools: unknown }).tools)
    const turn = await tools.runToolUses((golden.response as { content: ContentBlock[] }).content, { signal })
    expect(turn.message).toEqual(golden.followUp)
    expect(turn.concludesTurn).toBe(golden.concludesTurn)
  })

  it('AI SDK: the tools a language model receives and the tool results in its next prompt', async () => {
    const golden = fixture('ai-sdk-language-model.hand-recorded-shapes.json')
    const { agent } = adapterDeployment()
    type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>
    const response = golden.response as GenerateResult
    const model = new MockLanguageModelV3({ doGenerate: [response, { ...response, content: [{ type: 'text', text: 'Done.' }], finishReason: { unified: 'stop', raw: 'stop' } }] })
    const prompt = (golden.secondCallPrompt as { role: string; content: { type: string; text?: string }[] }[])[0]?.content[0]?.text ?? ''
    await generateText({ model, prompt, tools: await toAiSdkTools(agent), stopWhen: stepCountIs(5) })
    expect(model.doGenerateCalls[0]?.tools).toEqual(golden.firstCallTools)
    expect(model.doGenerateCalls[1]?.prompt).toEqual(golden.secondCallPrompt)
  })
})
