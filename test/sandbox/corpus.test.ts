import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { ToolExecutionResult } from '../../src/execution.ts'
import type { SandboxEngine } from '../../sandbox/engine.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import type { RunCodeValue } from '../../sandbox/run-code.ts'
import { CORRECT_PROGRAMS, FAULTY_PROGRAMS } from './corpus/programs.ts'
import { corpusTools } from './corpus/tools.ts'
import { enginesUnderTest } from './engines.ts'

const engines = enginesUnderTest()

/** The text a model reads for a failed run. */
function feedback(result: ToolExecutionResult): string {
  return result.isError ? result.error.message : ''
}

describe.each(engines)('the program corpus on $name, default type check', (engineUnderTest) => {
  let engine: SandboxEngine
  beforeAll(async () => {
    engine = await engineUnderTest.create()
  })
  afterAll(async () => {
    await engine?.dispose()
  })

  function setup() {
    // The check may wait as long as the run: on a busy machine a warm check can take a second.
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, limits: { wallTimeMs: 30_000 }, typeCheckWaitMs: 60_000 }) } })
    const { tools, effects } = corpusTools()
    for (const tool of tools) ctx.tools.register(tool)
    const agent = ctx.agent('model')
    const run = (code: string) => agent.ctx.tools.execute({ callId: 'run', name: 'run_code', arguments: { code }, signal: new AbortController().signal })
    return { run, effects }
  }

  it('holds at least 40 correct and 30 faulty programs', () => {
    expect(CORRECT_PROGRAMS.length).toBeGreaterThanOrEqual(40)
    expect(FAULTY_PROGRAMS.length).toBeGreaterThanOrEqual(30)
  })

  it.each(CORRECT_PROGRAMS)('runs a correct program unchanged: $name', async ({ code, expected }) => {
    const { run } = setup()
    const result = await run(code)
    expect(feedback(result)).toBe('')
    expect(result.isError ? undefined : (result.value as unknown as RunCodeValue).result).toEqual(expected)
  })

  it.each(FAULTY_PROGRAMS)('refuses a faulty program, naming the fix, with no side effect: $name', async ({ code, names }) => {
    const { run, effects } = setup()
    const result = await run(code)
    expect(result.isError).toBe(true)
    const text = feedback(result)
    for (const name of names) expect(text).toContain(name)
    expect(effects.writes).toEqual([])
    expect(effects.emails).toEqual([])
  })
})
