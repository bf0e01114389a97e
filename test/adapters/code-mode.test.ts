import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anthropicTools } from '../../adapters/anthropic.ts'
import { openaiTools } from '../../adapters/openai.ts'
import type { SandboxEngine } from '../../sandbox/engine.ts'
import { createRunCode } from '../../sandbox/index.ts'
import { createQuickJSEngine } from '../../sandbox/quickjs/quickjs-engine.ts'
import { createContext } from '../../src/index.ts'
import { adapterTools } from './deployment.ts'

describe('adapters under Code Mode (QuickJS)', () => {
  let engine: SandboxEngine
  beforeAll(() => {
    engine = createQuickJSEngine()
  })
  afterAll(async () => {
    await engine.dispose()
  })

  function codeAgent() {
    const root = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine }) } })
    for (const tool of adapterTools()) root.tools.register(tool)
    return root.agent('coder')
  }

  it("offers run_code alone, its description holding the agent's SDK", () => {
    const tools = openaiTools(codeAgent())
    expect(tools.chatCompletions.map((tool) => tool.function.name)).toEqual(['run_code'])
    expect(tools.chatCompletions[0]?.function.description).toContain('read_file')
  })

  it('runs a program through the OpenAI adapter and answers with its value', async () => {
    const agent = codeAgent()
    const program = 'const r = await tools.read_file({ path: "a.ts" })\nreturn r'
    const turn = await openaiTools(agent).runChatToolCalls(
      [{ id: 'call_1', type: 'function', function: { name: 'run_code', arguments: JSON.stringify({ code: program }) } }],
      { signal: AbortSignal.timeout(20_000) },
    )
    expect(turn.results[0]?.isError).toBe(false)
    expect(turn.messages[0]).toMatchObject({ role: 'tool', tool_call_id: 'call_1', content: expect.stringContaining('a.ts') })
    expect(agent.session.events.map((event) => event.type)).toContain('tool/code-dispatch')
  })

  it('ferries a deferred context and the concluded turn out of a program through the Anthropic adapter', async () => {
    const agent = codeAgent()
    const turn = await anthropicTools(agent).runToolUses(
      [{ type: 'tool_use', id: 'toolu_1', name: 'run_code', input: { code: 'await tools.finish({})\nreturn 1' }, caller: { type: 'direct' } }],
      { signal: AbortSignal.timeout(20_000) },
    )
    expect(turn.concludesTurn).toBe(true)
    expect(turn.message.content.slice(1)).toContainEqual({ type: 'text', text: 'The user approved the plan.' })
  })
})
