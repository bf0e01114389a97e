import { beforeAll, describe, expect, it } from 'vitest'
import * as aiSdkAgent from '../../examples/ai-sdk-agent.ts'
import * as anthropicAgent from '../../examples/anthropic-agent.ts'
import * as openaiAgent from '../../examples/openai-agent.ts'
import type { ProviderAgentSummary } from '../../examples/provider-setup.ts'

const silent = (): void => {}

const examples: [string, () => Promise<ProviderAgentSummary>][] = [
  ['examples/openai-agent (Chat Completions)', () => openaiAgent.main({ api: 'chat', print: silent })],
  ['examples/openai-agent (Responses)', () => openaiAgent.main({ api: 'responses', print: silent })],
  ['examples/anthropic-agent', () => anthropicAgent.main({ print: silent })],
  ['examples/ai-sdk-agent', () => aiSdkAgent.main({ print: silent })],
]

describe.each(examples)('%s', (_name, run) => {
  let summary: ProviderAgentSummary
  beforeAll(async () => {
    summary = await run()
  })

  it('sends the provider every tool', () => {
    expect(summary.toolNames).toEqual(['list_files', 'read_file', 'search', 'write_file', 'submit_report'])
  })

  it('stops after the report concluded the turn: two model calls, not three', () => {
    expect(summary.modelCalls).toBe(2)
  })

  it('overlaps the reads and runs the write alone, and the session log shows it', () => {
    expect(summary.sessionEvents.slice(0, 3)).toEqual(['tool/call call_1', 'tool/call call_2', 'tool/call call_3'])
    expect(summary.sessionEvents.slice(6)).toEqual(['tool/call call_4', 'tool/result call_4', 'tool/call call_5', 'tool/result call_5'])
    expect(summary.peakConcurrentReads).toBe(2)
  })

  it('runs the tools for real: the file is written and the report arrives without a severity', () => {
    expect(summary.files).toContain('TODO.md')
    expect(summary.reports).toEqual([{ summary: '2 TODOs listed in TODO.md' }])
  })
})

describe('examples/openai-agent request payloads', () => {
  it('sends the report tool strict, with its optional severity required and nullable', async () => {
    const summary = await openaiAgent.main({ api: 'chat', print: silent })
    const tools = (summary.requests[0] as { tools: { function: { name: string; strict: boolean; parameters: unknown } }[] }).tools
    const report = tools.find((tool) => tool.function.name === 'submit_report')
    expect(report?.function.strict).toBe(true)
    expect(report?.function.parameters).toMatchObject({ required: ['summary', 'severity'], properties: { severity: { type: ['string', 'null'], enum: ['low', 'medium', 'high', null] } } })
    expect(tools.find((tool) => tool.function.name === 'read_file')?.function.strict).toBe(false)
  })

  it("answers the first turn's calls in the second request with one tool message per call, in order", async () => {
    const summary = await openaiAgent.main({ api: 'chat', print: silent })
    const messages = (summary.requests[1] as { messages: { role: string; tool_call_id?: string }[] }).messages
    expect(messages.map((message) => message.tool_call_id ?? message.role)).toEqual(['user', 'assistant', 'call_1', 'call_2', 'call_3'])
  })
})
