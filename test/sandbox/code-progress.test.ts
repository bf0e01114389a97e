import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { CodeProgress } from '../../src/events.ts'
import { createMemorySessionLog } from '../../src/session-log.ts'
import type { SandboxEngine } from '../../sandbox/engine.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import { deferred, rawTool } from '../helpers.ts'
import { enginesUnderTest } from './engines.ts'

describe.each(enginesUnderTest())('live progress of run_code on $name', (engineUnderTest) => {
  let engine: SandboxEngine
  beforeAll(async () => {
    engine = await engineUnderTest.create()
  })
  afterAll(async () => {
    await engine?.dispose()
  })

  function setup(onListenerError?: (error: unknown, event: string) => void) {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine }) }, ...(onListenerError === undefined ? {} : { onListenerError }) })
    ctx.tools.register(rawTool('echo'))
    ctx.tools.register(
      rawTool('boom', {
        execute: async () => {
          throw new Error('disk full')
        },
      }),
    )
    const run = (agent: ReturnType<typeof ctx.agent>, code: string, callId = 'outer') =>
      agent.ctx.tools.execute({ callId, name: 'run_code', arguments: { code }, signal: new AbortController().signal })
    return { ctx, run }
  }

  it('reports each sub-call as it starts and settles and each console line, in program order', async () => {
    const { ctx, run } = setup()
    const agent = ctx.agent('a')
    const seen: { callId: string; progress: CodeProgress }[] = []
    agent.ctx.on('tools/code-progress', (exec, progress) => void seen.push({ callId: exec.callId, progress }))
    await run(agent, 'console.log("first"); await tools.echo({ x: 1 }); try { await tools.boom({}) } catch {} console.warn("last"); return 1')
    expect(seen.map((entry) => entry.callId)).toEqual(Array(6).fill('outer'))
    expect(seen.map((entry) => entry.progress)).toEqual([
      { type: 'log', level: 'log', text: 'first' },
      { type: 'call-start', subCallId: 'outer:code:1', name: 'echo', arguments: { x: 1 } },
      { type: 'call-end', subCallId: 'outer:code:1', name: 'echo', isError: false },
      { type: 'call-start', subCallId: 'outer:code:2', name: 'boom', arguments: {} },
      { type: 'call-end', subCallId: 'outer:code:2', name: 'boom', isError: true, error: { code: 'TOOL_FAILED', message: expect.stringContaining('disk full') } },
      { type: 'log', level: 'warn', text: 'last' },
    ])
    expect(seen.every((entry) => Object.isFrozen(entry.progress))).toBe(true)
    // Frozen through: one listener cannot change the error or the arguments the next one reads.
    for (const { progress } of seen) {
      if (progress.type === 'call-end' && progress.error !== undefined) expect(Object.isFrozen(progress.error)).toBe(true)
      if (progress.type === 'call-start') expect(Object.isFrozen(progress.arguments)).toBe(true)
    }
  })

  it('delivers a step while the program is still running, not after it', async () => {
    const { ctx, run } = setup()
    const gate = deferred<void>()
    ctx.tools.register(rawTool('wait', { execute: async () => gate.promise.then(() => 'ok') }))
    const agent = ctx.agent('a')
    const started = deferred<CodeProgress>()
    agent.ctx.on('tools/code-progress', (_exec, progress) => {
      if (progress.type === 'call-start') started.resolve(progress)
    })
    const running = run(agent, 'console.log("before"); return await tools.wait({})')
    expect(await started.promise).toMatchObject({ type: 'call-start', name: 'wait' })
    gate.resolve()
    expect((await running).isError).toBe(false)
  })

  it("shows an agent's listener only that agent's runs; a root listener sees them all", async () => {
    const { ctx, run } = setup()
    const a = ctx.agent('a')
    const b = ctx.agent('b')
    const ofA: string[] = []
    const ofAll: string[] = []
    a.ctx.on('tools/code-progress', (exec) => void ofA.push(exec.callId))
    ctx.on('tools/code-progress', (exec) => void ofAll.push(exec.callId))
    await run(a, 'return await tools.echo({})', 'run-a')
    await run(b, 'return await tools.echo({})', 'run-b')
    expect(new Set(ofA)).toEqual(new Set(['run-a']))
    expect(new Set(ofAll)).toEqual(new Set(['run-a', 'run-b']))
  })

  it('leaves the durable session log exactly as it is without listeners', async () => {
    const code = 'console.log("x"); await tools.echo({ y: 2 }); return 3'
    const logOf = async (listen: boolean) => {
      const { ctx, run } = setup()
      const session = createMemorySessionLog()
      const agent = ctx.agent('a', { session })
      if (listen) agent.ctx.on('tools/code-progress', () => undefined)
      await run(agent, code)
      return session.events
    }
    expect(await logOf(true)).toEqual(await logOf(false))
  })

  it('contains a listener that throws: the run and later listeners go on', async () => {
    const failures: string[] = []
    const { ctx, run } = setup((_error, event) => failures.push(event))
    const agent = ctx.agent('a')
    const after: string[] = []
    agent.ctx.on('tools/code-progress', () => {
      throw new Error('observer broke')
    })
    agent.ctx.on('tools/code-progress', (_exec, progress) => void after.push(progress.type))
    const result = await run(agent, 'await tools.echo({}); return 5')
    expect(result).toMatchObject({ isError: false, value: { result: 5 } })
    expect(after).toEqual(['call-start', 'call-end'])
    expect(failures).toEqual(['tools/code-progress', 'tools/code-progress'])
  })

  it('hands a listener the run record, which cannot defer context or conclude the turn', async () => {
    const { ctx, run } = setup()
    const agent = ctx.agent('a')
    const keys: string[][] = []
    agent.ctx.on('tools/code-progress', (exec) => void keys.push(Object.keys(exec)))
    await run(agent, 'await tools.echo({}); return 1')
    expect(keys[0]).not.toContain('deferContext')
    expect(keys[0]).not.toContain('concludeTurn')
  })
})
