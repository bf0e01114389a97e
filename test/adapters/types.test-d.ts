import type { MessageCreateParamsNonStreaming, MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages/messages'
import type { Tool as AiTool, ToolSet } from 'ai'
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionFunctionTool, ChatCompletionMessageParam } from 'openai/resources/chat/completions'
import type { FunctionTool, ResponseCreateParamsNonStreaming, ResponseInputItem } from 'openai/resources/responses/responses'
import { describe, expectTypeOf, it } from 'vitest'
import type { AiSdkToolSet, toAiSdkTools } from '../../adapters/ai-sdk.ts'
import type { AnthropicTools } from '../../adapters/anthropic.ts'
import type { OpenAITools } from '../../adapters/openai.ts'
import type { ToolExecutionResult } from '../../src/index.ts'

describe("adapter types are the provider SDKs' own", () => {
  it('OpenAI tools and follow-up messages fit the request params as they are', () => {
    expectTypeOf<OpenAITools['chatCompletions']>().toEqualTypeOf<ChatCompletionFunctionTool[]>()
    expectTypeOf<OpenAITools['responses']>().toEqualTypeOf<FunctionTool[]>()
    expectTypeOf<OpenAITools['chatCompletions']>().toMatchTypeOf<NonNullable<ChatCompletionCreateParamsNonStreaming['tools']>>()
    expectTypeOf<OpenAITools['responses']>().toMatchTypeOf<NonNullable<ResponseCreateParamsNonStreaming['tools']>>()
    expectTypeOf<Awaited<ReturnType<OpenAITools['runChatToolCalls']>>['messages']>().toEqualTypeOf<ChatCompletionMessageParam[]>()
    expectTypeOf<Awaited<ReturnType<OpenAITools['runResponsesToolCalls']>>['input']>().toEqualTypeOf<ResponseInputItem[]>()
  })

  it('Anthropic tools and the answering message fit the request params as they are', () => {
    expectTypeOf<AnthropicTools['tools']>().toEqualTypeOf<Tool[]>()
    expectTypeOf<AnthropicTools['tools']>().toMatchTypeOf<NonNullable<MessageCreateParamsNonStreaming['tools']>>()
    expectTypeOf<Awaited<ReturnType<AnthropicTools['runToolUses']>>['message']>().toMatchTypeOf<MessageParam>()
  })

  it('the AI SDK tool set is a ToolSet whose outputs are results', () => {
    expectTypeOf<Awaited<ReturnType<typeof toAiSdkTools>>>().toEqualTypeOf<AiSdkToolSet>()
    expectTypeOf<AiSdkToolSet>().toMatchTypeOf<ToolSet>()
    expectTypeOf<AiSdkToolSet[string]>().toEqualTypeOf<AiTool<unknown, ToolExecutionResult>>()
  })
})
