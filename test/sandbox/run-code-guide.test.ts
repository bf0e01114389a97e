import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import { renderRunCodeGuide } from '../../sdk-gen/index.ts'
import type { SandboxEngine } from '../../sandbox/engine.ts'
import { codeModeDeclarations, createRunCode } from '../../sandbox/run-code.ts'
import type { RunCodeValue } from '../../sandbox/run-code.ts'
import { rawTool } from '../helpers.ts'
import { enginesUnderTest } from './engines.ts'

/** The example program the guide carries. */
function guideExample(): string {
  const example = /Example \(placeholder tool names\):\n```ts\n([\s\S]*?)```/.exec(renderRunCodeGuide())?.[1]
  if (example === undefined) throw new Error('the guide has no example program')
  return example
}

const GET_ITEM = rawTool('get_item', {
  description: 'Get one item by id.',
  parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'], additionalProperties: false },
  execute: async (args) => ({ id: (args as { id: string }).id }),
})

describe.each(enginesUnderTest())("run_code's guide on $name", (engineUnderTest) => {
  let engine: SandboxEngine
  beforeAll(async () => {
    engine = await engineUnderTest.create({ cpuTimeMs: 2_000 })
  })
  afterAll(async () => {
    await engine?.dispose()
  })

  it('states the limits runs are held to, lowered to the engine ceilings', () => {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, limits: { cpuTimeMs: 4_000, wallTimeMs: 12_500, maxResultBytes: 4096 } }) } })
    ctx.tools.register(GET_ITEM)
    const description = ctx.tools.schemas()[0]?.description ?? ''
    expect(description).toContain('A run may take 2 s of CPU, 12500 ms in all (waiting for tools included), a result of 4K characters of JSON')
    expect(description).toContain('`DENIED`')
  })

  it('carries an example program that type-checks and runs, branching on DENIED', async () => {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, typeCheck: true }) } })
    ctx.tools.register(GET_ITEM)
    ctx.on('tools/pre-execute', async (exec, next) => ((exec.arguments as { id?: unknown }).id === 'b' ? { kind: 'deny', reason: 'not b' } : next()))
    const result = await ctx.tools.execute({ callId: 'guide', name: 'run_code', arguments: { code: guideExample() }, signal: new AbortController().signal })
    if (result.isError) throw new Error(result.error.message)
    const value = result.value as unknown as RunCodeValue
    expect(value.result).toEqual([{ id: 'a' }, { id: 'c' }])
    expect(value.logs).toEqual([{ level: 'log', text: '3 looked up' }])
    expect(value.notes).toBeUndefined()
  })

  it("puts the same guide, with the transport's limits, beside the declarations for a system prompt", () => {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, sdkIn: 'system-prompt', limits: { maxSubCalls: 77 } }) } })
    ctx.tools.register(GET_ITEM)
    const agent = ctx.agent('a')
    const prompt = codeModeDeclarations(ctx.tools, agent)
    expect(ctx.tools.schemas(agent)[0]?.description).not.toContain('get_item')
    expect(prompt.startsWith('With the `run_code` tool, run a JavaScript program')).toBe(true)
    expect(prompt).toContain('at most 77 tool calls')
    expect(prompt).toContain('A run may take 2 s of CPU')
    expect(prompt).toContain(guideExample())
    expect(prompt).toContain('get_item(args: { /* no other keys */ id: string }): Promise<JsonValue>')
  })

  it('lists a large tool set in the system prompt as it would in the description', () => {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, sdkIn: 'system-prompt', largeToolSets: { maxTools: 0 } }) } })
    ctx.tools.register(GET_ITEM)
    const prompt = codeModeDeclarations(ctx.tools, undefined)
    expect(prompt).toContain('- get_item({ id }): Get one item by id.')
    expect(prompt).toContain('$describe(name: string): string')
    expect(prompt).not.toContain('get_item(args:')
  })
})

describe('codeModeDeclarations outside Code Mode', () => {
  it('writes the guide with the default limits for a view that has no run_code', () => {
    const ctx = createContext()
    ctx.tools.register(GET_ITEM)
    const prompt = codeModeDeclarations(ctx.tools, undefined)
    expect(prompt).toContain('A run may take 5 s of CPU, 60 s in all')
    expect(prompt).toContain('get_item(args: { /* no other keys */ id: string })')
  })
})
