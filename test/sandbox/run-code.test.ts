import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { Context } from '../../src/context.ts'
import type { ToolExecution, ToolExecutionResult, ToolExecutionToken } from '../../src/execution.ts'
import { runToolCalls } from '../../src/scheduler.ts'
import { createMemorySessionLog } from '../../src/session-log.ts'
import type { SessionLog } from '../../src/session-log.ts'
import { installTimeoutPolicy } from '../../src/timeout-policy.ts'
import type { ObjectJsonSchema } from '../../src/schema/types.ts'
import type { SandboxEngine } from '../../sandbox/engine.ts'
import { codeModeDeclarations, createRunCode } from '../../sandbox/run-code.ts'
import { quoteLine } from '../../sandbox/feedback.ts'
import { stripTypes } from '../../sandbox/strip-types.ts'
import { TypeCheckThread } from '../../sandbox/type-check-thread.ts'
import { call, deferred, rawTool } from '../helpers.ts'
import { enginesUnderTest } from './engines.ts'

const numbers: ObjectJsonSchema = {
  type: 'object',
  properties: { a: { type: 'number' }, b: { type: 'number' } },
  required: ['a', 'b'],
  additionalProperties: false,
}

function registerTools(ctx: Context, events: string[]): void {
  ctx.tools.register(
    rawTool('add', {
      description: 'Add two numbers.',
      parameters: numbers,
      outputSchema: { type: 'number' },
      isConcurrencySafe: () => true,
      execute: async (args) => (args as { a: number; b: number }).a + (args as { a: number; b: number }).b,
    }),
  )
  ctx.tools.register(
    rawTool('sleep', {
      isConcurrencySafe: () => true,
      execute: async (args, exec) => {
        const { id, ms } = args as { id: string; ms: number }
        events.push(`start ${id}`)
        await new Promise((resolve) => setTimeout(resolve, ms))
        events.push(`end ${id}`)
        return exec.callId
      },
    }),
  )
  ctx.tools.register(
    rawTool('exclusive', {
      execute: async (args) => {
        const { id } = args as { id: string }
        events.push(`start ${id}`)
        await new Promise((resolve) => setTimeout(resolve, 5))
        events.push(`end ${id}`)
        return id
      },
    }),
  )
  ctx.tools.register(
    rawTool('hang', {
      isConcurrencySafe: () => true,
      execute: async (_args, exec) => {
        events.push('hang started')
        await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
        events.push('hang saw abort')
        return null
      },
    }),
  )
  ctx.tools.register(rawTool('fs.read', { execute: async (args) => ({ read: args }) }))
}

function codeOf(result: ToolExecutionResult): string | undefined {
  return result.isError ? result.error.info?.code : undefined
}

const engines = enginesUnderTest()

describe.each(engines)('run_code on $name', (engineUnderTest) => {
  let engine: SandboxEngine
  beforeAll(async () => {
    engine = await engineUnderTest.create()
  })
  afterAll(async () => {
    await engine?.dispose()
  })

  function setup(options: Parameters<typeof createContext>[0] = {}) {
    const events: string[] = []
    const ctx = createContext({
      ...options,
      tools: {
        mode: 'code',
        maxParallelSubCalls: 16,
        codeMode: createRunCode({ engine, limits: { cpuTimeMs: 1_000, wallTimeMs: 10_000 } }),
        ...options.tools,
      },
    })
    registerTools(ctx, events)
    const agent = ctx.agent('coder')
    const run = (code: string, callId = 'outer', signal = new AbortController().signal) =>
      agent.ctx.tools.execute({ callId, name: 'run_code', arguments: { code }, signal })
    return { ctx, agent, events, run }
  }

  it('shows a code agent only run_code, with the SDK of its view, beside a native agent in one process', () => {
    const ctx = createContext({ tools: { codeMode: createRunCode({ engine }) } })
    registerTools(ctx, [])
    const coders = ctx.scope('coders')
    coders.tools.presentAs('code')
    coders.tools.restrict({ deny: ['hang'] })
    const coder = coders.agent('c')
    const native = ctx.agent('n')
    const [schema, ...rest] = coder.ctx.tools.schemas(coder)
    expect(rest).toEqual([])
    expect(schema?.name).toBe('run_code')
    expect(schema?.description).toContain('add(args: {')
    expect(schema?.description).not.toContain('hang(')
    expect(schema?.description).toContain('at most 1000 tool calls, at most 256 of them started and not yet finished at once')
    expect(schema?.parameters.required).toEqual(['code'])
    expect(native.ctx.tools.schemas(native).map((s) => s.name)).toContain('add')
    expect(codeModeDeclarations(coder.ctx.tools, coder)).toContain('fs_read(')
    expect(codeModeDeclarations(coder.ctx.tools, coder)).not.toContain('hang(')
    expect(codeModeDeclarations(ctx.tools, undefined)).toContain('hang(')
  })

  it("tells the model the call budget its engine holds runs to, and names the engine's figure when it breaks", async () => {
    const capped = await engineUnderTest.create({ maxSubCallsInFlight: 2 })
    try {
      const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine: capped }) } })
      registerTools(ctx, [])
      const agent = ctx.agent('a')
      const [schema] = agent.ctx.tools.schemas(agent)
      expect(schema?.description).toContain('at most 1000 tool calls, at most 2 of them started and not yet finished at once')
      const result = await agent.ctx.tools.execute({
        callId: 'r',
        name: 'run_code',
        arguments: { code: 'await Promise.all([1, 2, 3].map((id) => tools.sleep({ id: String(id), ms: 50 })))' },
        signal: new AbortController().signal,
      })
      expect(result.isError && result.error.message).toMatch(/maxSubCallsInFlight limit: .*\b2\b/)
    } finally {
      await capped.dispose()
    }
  })

  it('runs the sub-calls of a run_code made through a scope context (no agent) in that scope: its restrictions, guards and listeners hold', async () => {
    // The run-time path: the default check would refuse `tools.secret` before the program ran.
    const ctx = createContext({ tools: { codeMode: createRunCode({ engine, typeCheck: 'off' }) } })
    registerTools(ctx, [])
    ctx.tools.register(rawTool('secret', { execute: async () => 'SECRET RAN' }))
    const preset = ctx.scope('preset')
    preset.tools.restrict({ deny: ['secret'] })
    preset.tools.guard((exec) => (exec.name === 'exclusive' ? 'the preset refuses exclusive' : undefined))
    preset.tools.presentAs('code')
    const seenByPreset: string[] = []
    preset.on('tools/pre-execute', async (exec, next) => {
      seenByPreset.push(`${exec.name} ${exec.callId} root=${exec.rootCallId}`)
      return next()
    })
    const results: string[] = []
    preset.on('tools/result', (exec) => void results.push(exec.callId))
    const run = (code: string, callId: string) =>
      preset.tools.execute({ callId, name: 'run_code', arguments: { code }, signal: new AbortController().signal })

    const secret = await run(`return await tools.secret({})`, 'r1')
    expect(codeOf(secret)).toBe('CODE_RUN_FAILED')
    expect(JSON.stringify(secret)).toContain('tools.secret is not a tool')
    expect(JSON.stringify(secret)).not.toContain('SECRET RAN')

    const guarded = await run(`
      try { await tools.exclusive({ id: 'x' }) } catch (error) { return [error.code, error.message] }
      return 'ran'`, 'r2')
    expect(guarded).toMatchObject({ isError: false, value: { result: ['DENIED', expect.stringContaining('the preset refuses exclusive')] } })
    expect(seenByPreset).toEqual(['run_code r1 root=r1', 'run_code r2 root=r2', 'exclusive r2:code:1 root=r2'])
    expect(results).toEqual(['r1', 'r2:code:1', 'r2'])
    // The model's description and the program's SDK are the same view.
    const [schema] = ctx.tools.schemas(preset)
    expect(schema?.description).not.toContain('secret(')
  })

  it('gives tools/code-dispatch-log listeners the run_code execution record in a frozen dispatch, and logs the original when one throws', async () => {
    const { ctx } = setup({ onListenerError: () => undefined })
    const session = createMemorySessionLog()
    const logged = ctx.agent('logged', { session })
    const seen: { keys: string[]; frozen: boolean; execFrozen: boolean }[] = []
    ctx.on('tools/code-dispatch-log', async (dispatch, next) => {
      seen.push({ keys: Object.keys(dispatch.exec), frozen: Object.isFrozen(dispatch), execFrozen: Object.isFrozen(dispatch.exec) })
      try {
        ;(dispatch as { content: unknown }).content = [{ type: 'text', text: 'TAMPERED' }]
      } catch {
        // frozen: the assignment is refused
      }
      const run = dispatch.exec as unknown as { concludeTurn?: () => void; deferContext?: (message: unknown) => void }
      run.concludeTurn?.()
      run.deferContext?.({ role: 'user', content: [{ type: 'text', text: 'INJECTED' }] })
      throw new Error('log listener fails')
    })
    const result = await logged.ctx.tools.execute({
      callId: 'outer',
      name: 'run_code',
      arguments: { code: 'return await tools.add({ a: 1, b: 2 })' },
      signal: new AbortController().signal,
    })
    expect(result).toMatchObject({ isError: false, value: { result: 3 } })
    expect(result.isError === false && result.concludesTurn).not.toBe(true)
    expect(JSON.stringify(result)).not.toContain('INJECTED')
    expect(seen).toEqual([{ keys: ['callId', 'rootCallId', 'name', 'arguments', 'agent', 'signal', 'token'], frozen: true, execFrozen: true }])
    const dispatchEvent = session.events.find((event) => event.type === 'tool/code-dispatch')
    expect(JSON.stringify(dispatchEvent)).toContain('"text":"3"')
    expect(JSON.stringify(dispatchEvent)).not.toContain('TAMPERED')
  })

  it('shows a small result indented and a large or deeply nested one compact: the text stays near the result limit', async () => {
    const { run } = setup()
    const small = await run('return { a: [1, 2] }')
    expect(small.content).toEqual([{ type: 'text', text: 'Result:\n{\n  "a": [\n    1,\n    2\n  ]\n}' }])
    // 800 K characters of JSON nested 199 deep, under the 1 Mi default: indented, 160 M characters.
    const deep = await run('let a = new Array(400000).fill(0); for (let i = 0; i < 198; i++) a = [a]; return a')
    expect(deep.isError).toBe(false)
    const text = deep.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
    expect(text.length).toBeLessThan(900_000)
    expect(text.startsWith('Result:\n[[[[')).toBe(true)
  })

  it('runs a TypeScript program whose sub-calls go through the pipeline with ids, root id, agent and parent token', async () => {
    const { ctx, agent, run } = setup()
    const seen: ToolExecution[] = []
    let outerToken: ToolExecutionToken | undefined
    ctx.on('tools/pre-execute', async (exec, next) => {
      if (exec.name === 'run_code') outerToken = exec.token
      else seen.push(exec)
      return next()
    })
    const result = await run(`
      const x: number = await tools.add({ a: 1, b: 2 })
      console.log('x is', x)
      const y = await tools.add({ a: x, b: 10 } as { a: number; b: number })
      return { x, y, file: await tools.fs_read({ path: 'a' }) }
    `)
    expect(result).toMatchObject({
      isError: false,
      value: { result: { x: 3, y: 13, file: { read: { path: 'a' } } }, logs: [{ level: 'log', text: 'x is 3' }] },
    })
    expect(seen.map((exec) => [exec.callId, exec.rootCallId, exec.name])).toEqual([
      ['outer:code:1', 'outer', 'add'],
      ['outer:code:2', 'outer', 'add'],
      ['outer:code:3', 'outer', 'fs.read'],
    ])
    expect(seen.every((exec) => exec.parent === outerToken && exec.agent === agent)).toBe(true)
  })

  it('denies a native name called model-direct, before any policy', async () => {
    const { agent } = setup()
    const direct = await agent.ctx.tools.execute(call('add', { a: 1, b: 2 }))
    expect(codeOf(direct)).toBe('UNKNOWN_TOOL')
  })

  it('applies deny, guards and timeouts to sub-calls, and the program can act on the error code', async () => {
    const { ctx, run } = setup()
    ctx.on('tools/pre-execute', async (exec, next) => (exec.name === 'exclusive' ? { kind: 'deny', reason: 'not allowed here' } : next()))
    ctx.tools.guard((exec) => (exec.name === 'fs.read' ? 'guarded' : undefined))
    ctx.tools.register(
      rawTool('slow', {
        timeoutMs: 20,
        execute: async (_args, exec) => {
          await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
          return 'late'
        },
      }),
    )
    installTimeoutPolicy(ctx)
    const result = await run(`
      const out = []
      for (const attempt of [() => tools.exclusive({ id: 'e' }), () => tools.fs_read({}), () => tools.slow({})]) {
        try { await attempt(); out.push('ok') } catch (error) { out.push(error.code + ': ' + error.message) }
      }
      return out
    `)
    expect(result.value).toMatchObject({ result: [expect.stringMatching(/^DENIED: .*not allowed here/), expect.stringMatching(/^DENIED: .*guarded/), expect.stringMatching(/^TOOL_TIMEOUT/)] })
  })

  it('asks approval for concurrent sub-calls concurrently, keeping Promise.all', async () => {
    const arrived: string[] = []
    const allArrived = deferred()
    const { ctx, run } = setup({
      approval: {
        request: async ({ execution }) => {
          arrived.push(execution.callId)
          if (arrived.length === 3) allArrived.resolve()
          await allArrived.promise
          return 'allowed-once'
        },
      },
    })
    ctx.on('tools/pre-execute', async (exec, next) => (exec.name === 'add' ? { kind: 'ask', reason: 'math' } : next()))
    const result = await run('return await Promise.all([1, 2, 3].map((n) => tools.add({ a: n, b: n })))')
    expect(result.value).toMatchObject({ result: [2, 4, 6] })
    expect(arrived.sort()).toEqual(['outer:code:1', 'outer:code:2', 'outer:code:3'])
  })

  it('overlaps parallel-safe sub-calls and runs exclusive ones alone, starting in program order', async () => {
    const { events, run } = setup()
    await run(`
      await Promise.all([
        tools.sleep({ id: 'a', ms: 10 }), tools.sleep({ id: 'b', ms: 10 }), tools.sleep({ id: 'c', ms: 10 }),
        tools.exclusive({ id: 'X' }),
        tools.sleep({ id: 'd', ms: 1 }),
      ])
    `)
    expect(events.slice(0, 3)).toEqual(['start a', 'start b', 'start c'])
    const x = events.indexOf('start X')
    for (const id of ['a', 'b', 'c']) expect(events.indexOf(`end ${id}`)).toBeLessThan(x)
    expect(events.indexOf('end X')).toBeLessThan(events.indexOf('start d'))
  })

  it('starts sub-calls in program order even when the session writes their start events out of order', async () => {
    // A durable log whose first write is slow: the later calls' start events are written first.
    const memory = createMemorySessionLog()
    let writes = 0
    const session: SessionLog = {
      async append(event) {
        if (writes++ === 0) await new Promise((resolve) => setTimeout(resolve, 30))
        await memory.append(event)
      },
      get events() {
        return memory.events
      },
      close: () => memory.close(),
      [Symbol.asyncDispose]: () => memory.close(),
    }
    const events: string[] = []
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine }) } })
    registerTools(ctx, events)
    const agent = ctx.agent('ordered', { session })
    const result = await agent.ctx.tools.execute({
      callId: 'o',
      name: 'run_code',
      arguments: { code: "return await Promise.all([tools.exclusive({ id: '1' }), tools.exclusive({ id: '2' }), tools.sleep({ id: 'p', ms: 1 }), tools.exclusive({ id: '3' })])" },
      signal: new AbortController().signal,
    })
    expect(result).toMatchObject({ isError: false, value: { result: ['1', '2', 'o:code:3', '3'] } })
    // Each exclusive call alone, and in program order; the parallel one between its barriers.
    expect(events).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start p', 'end p', 'start 3', 'end 3'])
  })

  it("calls a tools/code-dispatch-log listener with its context's ctx.tools as this", async () => {
    const { ctx, agent, run } = setup()
    const selves: unknown[] = []
    agent.ctx.on('tools/code-dispatch-log', function (_dispatch, next) {
      selves.push(this)
      return next()
    })
    expect(await run('return await tools.add({ a: 1, b: 2 })')).toMatchObject({ isError: false, value: { result: 3 } })
    expect(selves).toHaveLength(1)
    expect(selves[0]).toBe(agent.ctx.tools)
    expect(selves[0]).not.toBe(ctx.tools)
  })

  it('logs each sub-call to the session between the run_code call and its result, through code-dispatch-log', async () => {
    const reported: unknown[] = []
    const { ctx, agent } = setup({ onListenerError: (error) => reported.push(error) })
    ctx.on('tools/code-dispatch-log', async (dispatch, next) =>
      dispatch.name === 'fs.read' ? [{ type: 'text', text: 'spilled' }] : next(),
    )
    agent.ctx.on('tools/code-dispatch-log', async () => {
      throw new Error('a broken log listener must not lose the event')
    })
    const [result] = await runToolCalls(
      agent.ctx.tools,
      [{ callId: 'r1', name: 'run_code', arguments: { code: 'return [await tools.add({a: 2, b: 3}), await tools.fs_read({ p: 1 })]' } }],
      { agent, signal: new AbortController().signal },
    )
    expect(result?.value).toMatchObject({ result: [5, { read: { p: 1 } }] })
    const types = agent.session.events.map((event) => `${event.type}${'subCallId' in event ? ` ${event.subCallId}` : ''}`)
    expect(types).toEqual([
      'tool/call',
      'tool/code-dispatch-start r1:code:1',
      'tool/code-dispatch r1:code:1',
      'tool/code-dispatch-start r1:code:2',
      'tool/code-dispatch r1:code:2',
      'tool/result',
    ])
    const dispatches = agent.session.events.filter((event) => event.type === 'tool/code-dispatch')
    expect(dispatches.map((event) => event.type === 'tool/code-dispatch' && event.content)).toEqual([
      [{ type: 'text', text: '5' }],
      [{ type: 'text', text: 'spilled' }],
    ])
    // The root listener answers fs.read itself, so the failing agent listener ran only for add.
    expect(reported).toHaveLength(1)
  })

  it('answers the program before tools/code-dispatch-log runs, and still logs every sub-call before run_code settles', async () => {
    const { ctx, agent, events, run } = setup()
    const gate = deferred()
    ctx.on('tools/code-dispatch-log', async (dispatch, next) => {
      if (dispatch.name === 'add') {
        events.push('log add waiting')
        await gate.promise
      }
      return next()
    })
    const pending = run(`const sum = await tools.add({ a: 1, b: 2 }); return [sum, await tools.exclusive({ id: 'after' })]`)
    while (!events.includes('end after')) await new Promise((resolve) => setTimeout(resolve, 2))
    expect(events).toEqual(['log add waiting', 'start after', 'end after'])
    let settled = false
    void pending.then(() => (settled = true))
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(settled).toBe(false)
    gate.resolve()
    expect(await pending).toMatchObject({ isError: false, value: { result: [3, 'after'] } })
    const logged = agent.session.events.filter((event) => event.type === 'tool/code-dispatch').map((event) => 'name' in event && event.name)
    expect(logged.sort()).toEqual(['add', 'exclusive'])
  })

  it('reports an uncaught failed sub-call with its code at the line where the program awaited it', async () => {
    const { ctx, run } = setup()
    ctx.tools.register(
      rawTool('boom', {
        execute: async () => {
          throw new Error('tool failed hard')
        },
      }),
    )
    const result = await run(`const n: number = 1\nconsole.log(n)\nawait tools.boom({})\nreturn 1`)
    expect(codeOf(result)).toBe('CODE_RUN_FAILED')
    expect(result.isError && result.error.message).toMatch(/^The program threw Error \(TOOL_FAILED\) at line 3, column \d+: tool failed hard\n {2}3 \| await tools\.boom\(\{\}\)\n {4}\| *\^\n {4}at program:3:\d+\n/)
    const caught = await run(`try { await tools.boom({}) } catch (e) { return [e.code, String(e.stack ?? '').includes('codemode-')] }`)
    expect(caught).toMatchObject({ isError: false, value: { result: ['TOOL_FAILED', false] } })
  })

  it('numbers the sub-calls of a retried run_code on from the first attempt, so no id repeats', async () => {
    const { ctx, agent, run } = setup()
    let calls = 0
    ctx.tools.register(
      rawTool('flaky', {
        execute: async () => {
          calls += 1
          if (calls === 1) throw new Error('transient')
          return calls
        },
      }),
    )
    ctx.on('tools/execute', async (exec, next) => {
      const first = await next()
      return first.isError && exec.name === 'run_code' ? next() : first
    })
    expect(await run('return await tools.flaky({})')).toMatchObject({ isError: false, value: { result: 2 } })
    const ids = agent.session.events.flatMap((event) => (event.type === 'tool/code-dispatch' ? [event.subCallId] : []))
    expect(ids).toEqual(['outer:code:1', 'outer:code:2'])
  })

  it('ferries nested deferred contexts in call order and concludes the turn on a nested conclude', async () => {
    const { ctx, run } = setup()
    ctx.tools.register(
      rawTool('note', {
        isConcurrencySafe: () => true,
        execute: async (args, exec) => {
          const { n, ms } = args as { n: number; ms: number }
          await new Promise((resolve) => setTimeout(resolve, ms))
          exec.deferContext({ role: 'user', content: [{ type: 'text', text: `note ${n}` }] })
          if (n === 2) exec.concludeTurn()
          return n
        },
      }),
    )
    const result = await run('return await Promise.all([tools.note({ n: 1, ms: 15 }), tools.note({ n: 2, ms: 1 })])')
    expect(result.additionalContexts?.map((message) => message.content[0])).toEqual([
      { type: 'text', text: 'note 1' },
      { type: 'text', text: 'note 2' },
    ])
    expect(result.concludesTurn).toBe(true)
  })

  it('reports an uncaught error with its name, message and the program line, and no host path', async () => {
    const { run } = setup()
    const result = await run('const a = 1\nconst b: number = 2\nthrow new TypeError("bad " + (a + b))')
    expect(codeOf(result)).toBe('CODE_RUN_FAILED')
    const message = result.isError ? result.error.message : ''
    expect(message).toMatch(/TypeError at line 3.*bad 3/)
    expect(JSON.stringify(result)).not.toMatch(/\/work\/|node_modules|file:\/\//)
  })

  it('refuses enum with a clear error before running anything', async () => {
    const { events, run } = setup()
    const result = await run('enum Color { Red }\nawait tools.exclusive({ id: "never" })')
    expect(codeOf(result)).toBe('CODE_RUN_FAILED')
    expect(result.isError && result.error.message).toMatch(/line 1.*enum/)
    expect(events).toEqual([])
  })

  it('stops a loop after an await with a limit error carrying the logs so far, and the next run works', async () => {
    const { run } = setup()
    const result = await run('console.log("before"); await tools.add({ a: 1, b: 1 }); while (true) {}')
    expect(codeOf(result)).toBe('CODE_RUN_FAILED')
    const message = result.isError ? result.error.message : ''
    expect(message).toMatch(/cpuTimeMs/)
    expect(message).toContain('before')
    expect((await run('return 42')).value).toMatchObject({ result: 42 })
  })

  it('cancels a running program at once, aborting and draining its in-flight sub-call', async () => {
    const { agent, events, run } = setup()
    const controller = new AbortController()
    const pending = run('await tools.hang({}); return "unreachable"', 'cancelled', controller.signal)
    while (!events.includes('hang started')) await new Promise((resolve) => setTimeout(resolve, 1))
    controller.abort()
    const result = await pending
    // Reported as any tool body that stops on its signal: cancelled, not failed.
    expect(codeOf(result)).toBe('ABORTED')
    expect(events).toContain('hang saw abort')
    expect(agent.session.events.filter((event) => event.type === 'tool/code-dispatch')).toHaveLength(1)
  })

  it('keeps the description short and serves the same declarations for a system prompt when asked', () => {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, sdkIn: 'system-prompt' }) } })
    registerTools(ctx, [])
    const agent = ctx.agent('a')
    const [schema] = agent.ctx.tools.schemas(agent)
    expect(schema?.description).not.toContain('add(args')
    expect(schema?.description).toMatch(/system prompt/)
    const declarations = codeModeDeclarations(agent.ctx.tools, agent)
    expect(declarations).toContain('declare const tools')
    expect(declarations).toContain('add(args: {')
  })

  it('presents a pending run_code call with the model label and the program', () => {
    const { ctx, agent } = setup()
    const definition = ctx.tools.get('run_code', agent)
    expect(definition?.presentCall?.({ code: 'return 1', description: 'Count TODOs' })).toEqual({
      card: 'generic',
      title: 'Count TODOs',
      kind: 'execute',
      content: [{ type: 'text', text: 'return 1' }],
    })
    expect(definition?.presentCall?.({ code: 'return 1' })).toMatchObject({ title: 'Run code' })
  })

  it('rejects malformed run_code arguments as INVALID_ARGS naming the field', async () => {
    const { agent } = setup()
    const result = await agent.ctx.tools.execute(call('run_code', { code: 42 }))
    expect(codeOf(result)).toBe('INVALID_ARGS')
    expect(result.isError && result.error.message).toContain('$.code')
    const extra = await agent.ctx.tools.execute(call('run_code', { code: 'return 1', shell: 'rm -rf /' }))
    expect(codeOf(extra)).toBe('INVALID_ARGS')
  })

  it('refuses a program over the source limit before stripping or running it', async () => {
    const events: string[] = []
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, limits: { maxSourceBytes: 64 } }) } })
    registerTools(ctx, events)
    const result = await ctx.agent('a').ctx.tools.execute(call('run_code', { code: `await tools.exclusive({ id: 'x' }) // ${'x'.repeat(100)}` }))
    expect(codeOf(result)).toBe('CODE_RUN_FAILED')
    expect(result.isError && result.error.message).toMatch(/maxSourceBytes/)
    expect(events).toEqual([])
  })

  it('refuses a program with type errors when type checking is on, naming the line', async () => {
    const events: string[] = []
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, typeCheck: true }) } })
    registerTools(ctx, events)
    const agent = ctx.agent('a')
    const bad = await agent.ctx.tools.execute(call('run_code', { code: 'const n = 1\nreturn await tools.add({ a: "one", b: n })' }))
    expect(codeOf(bad)).toBe('CODE_RUN_FAILED')
    expect(bad.isError && bad.error.message).toMatch(/line 2/)
    const good = await agent.ctx.tools.execute(call('run_code', { code: 'return await tools.add({ a: 1, b: 2 })' }))
    expect(good.value).toMatchObject({ result: 3 })
  })

  it('type-checks off the main thread, within the wall-time limit: a program that keeps the checker busy is stopped', async () => {
    const events: string[] = []
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, typeCheck: true, limits: { wallTimeMs: 1_000 } }) } })
    registerTools(ctx, events)
    const agent = ctx.agent('a')
    // Nested recursive conditional types: seconds of checking for a few hundred bytes.
    const code = `type Build<N extends number, A extends unknown[] = []> = A['length'] extends N ? A : Build<N, [...A, 0]>
type Outer<A extends unknown[] = [], Acc = never> = A['length'] extends 400 ? Acc : Outer<[...A, 0], Acc | Build<A['length']>['length']>
const x: Outer = 5000
return 1`
    // The checker starts loading when a transport is made: wait until it is ready (types removed and a
    // check done; seconds on a busy machine), so that the 1 s limit below meets the costly check alone.
    const ready = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, typeCheck: true, limits: { wallTimeMs: 60_000 } }) } })
    registerTools(ready, [])
    expect((await ready.agent('r').ctx.tools.execute(call('run_code', { code: 'const n: number = 1\nreturn n' }))).value).toMatchObject({ result: 1 })
    let ticks = 0
    const ticker = setInterval(() => void (ticks += 1), 10)
    const slow = await agent.ctx.tools.execute(call('run_code', { code }))
    clearInterval(ticker)
    expect(codeOf(slow)).toBe('CODE_RUN_FAILED')
    expect(slow.isError && slow.error.message).toMatch(/type-checking it took longer than the wallTimeMs limit/)
    // The host's event loop kept turning while the checker worked.
    expect(ticks).toBeGreaterThan(5)
    const cancelled = new AbortController()
    const pending = agent.ctx.tools.execute(call('run_code', { code }, { signal: cancelled.signal }))
    setTimeout(() => cancelled.abort(), 50)
    expect(codeOf(await pending)).toBe('ABORTED')
    // A fresh checker takes the next program (given the default wall time: the replacement loads
    // TypeScript first, about a second, which a busy machine can stretch past this test's limit).
    const roomy = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, typeCheck: true }) } })
    registerTools(roomy, events)
    const other = roomy.agent('b')
    const good = await other.ctx.tools.execute(call('run_code', { code: 'const n: number = await tools.add({ a: 1, b: 2 })\nreturn n' }))
    expect(good.value).toMatchObject({ result: 3 })
  })

  it('refuses the calls that would take a run past its total of argument characters, without dispatching or logging them', async () => {
    const events: string[] = []
    const limits = { maxArgumentBytes: 1_000, maxTotalArgumentBytes: 2_500 }
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, limits }) } })
    registerTools(ctx, events)
    const agent = ctx.agent('a')
    const result = await agent.ctx.tools.execute(
      call('run_code', {
        code: `
          const outcomes = []
          for (let i = 0; i < 5; i++) {
            try { outcomes.push(await tools.exclusive({ id: String(i) + 'x'.repeat(800) })) } catch (e) { outcomes.push(e.code + ' ' + /maxTotalArgumentBytes/.test(e.message)) }
          }
          return outcomes.map((o) => o.slice(0, 1) === 'I' ? o : o.slice(0, 1))`,
      }, { callId: 'many' }),
    )
    expect(result.value).toMatchObject({ result: ['0', '1', '2', 'INVALID_ARGS true', 'INVALID_ARGS true'] })
    expect(events.filter((event) => event.startsWith('start'))).toHaveLength(3)
    const dispatched = agent.session.events.filter((event) => event.type === 'tool/code-dispatch')
    expect(dispatched).toHaveLength(3)
  })

  it('refuses an oversized sub-call argument to the program without dispatching or logging it', async () => {
    const events: string[] = []
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, limits: { maxArgumentBytes: 1_000 } }) } })
    registerTools(ctx, events)
    const agent = ctx.agent('a')
    const result = await agent.ctx.tools.execute(
      call('run_code', {
        code: 'try { await tools.exclusive({ id: "x".repeat(5_000) }) } catch (e) { return [e.code, e.message, await tools.add({ a: 1, b: 1 })] }',
      }, { callId: 'big' }),
    )
    expect(result.value).toMatchObject({ result: ['INVALID_ARGS', expect.stringMatching(/maxArgumentBytes/), 2] })
    expect(events).toEqual([])
    const dispatched = agent.session.events.filter((event) => event.type === 'tool/code-dispatch')
    expect(dispatched.map((event) => event.type === 'tool/code-dispatch' && [event.subCallId, event.name])).toEqual([['big:code:1', 'add']])
  })

  it('aborts and drains sub-calls still pending when the program returns', async () => {
    const { agent, events, run } = setup()
    const result = await run('tools.hang({}); await tools.add({ a: 0, b: 0 }); return "done"')
    expect(result.value).toMatchObject({ result: 'done' })
    expect(events).toEqual(['hang started', 'hang saw abort'])
    const logged = agent.session.events.filter((event) => event.type === 'tool/code-dispatch')
    expect(logged.map((event) => event.type === 'tool/code-dispatch' && event.isError)).toEqual([false, true])
  })
})

describe('createRunCode', () => {
  it('runs programs on a QuickJS engine of its own when none is given', async () => {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode() } })
    registerTools(ctx, [])
    const agent = ctx.agent('a')
    const result = await agent.ctx.tools.execute(call('run_code', { code: 'return await tools.add({ a: 2, b: 3 })' }))
    expect(result).toMatchObject({ isError: false, value: { result: 5 } })
    expect(() => createRunCode({ engine: {} as SandboxEngine })).toThrow(/engine must be a SandboxEngine/)
  })

  it('names the fix when it is passed uncalled as codeMode, as JavaScript lets a caller do', () => {
    const uncalled = createRunCode as unknown as (host: unknown) => never
    expect(() => createContext({ tools: { mode: 'code', codeMode: uncalled } })).toThrow(/passed uncalled\. Write `codeMode: createRunCode\(\)`/)
  })

  it('refuses options it does not know, and options that are not an object, listing the ones it takes', () => {
    expect(() => createRunCode({ typecheck: true } as never)).toThrow(/unknown option `typecheck`; the options are `engine`, `limits`, `typeCheck`, `sdkIn`/)
    expect(() => createRunCode('quickjs' as never)).toThrow(/options must be an object \(or left out\), got string/)
  })

  it('counts the time a type check took against the run: the engine gets what is left of the wall-time limit', async () => {
    const seen: number[] = []
    const engine: SandboxEngine = {
      name: 'recording',
      run: async (request) => {
        seen.push(request.limits.wallTimeMs)
        return { ok: true, resultJson: '1' }
      },
      dispose: async () => undefined,
      [Symbol.asyncDispose]: async () => undefined,
    }
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, typeCheck: true, limits: { wallTimeMs: 30_000 } }) } })
    registerTools(ctx, [])
    const agent = ctx.agent('a')
    const result = await agent.ctx.tools.execute(call('run_code', { code: 'const n: number = 1\nreturn n' }))
    expect(result.isError).toBe(false)
    expect(seen).toHaveLength(1)
    expect(seen[0]).toBeLessThan(30_000)
    expect(seen[0]).toBeGreaterThan(0)
  })
})

describe('run_code and its engine', () => {
  it('tells the engine whose run it is: the calling agent, so agents never share a QuickJS heap', async () => {
    const tenants: unknown[] = []
    const recording: SandboxEngine = {
      name: 'recording',
      run: async (request) => {
        tenants.push(request.tenant)
        return { ok: true, resultJson: '1', logs: [] } as never
      },
      dispose: async () => {},
      [Symbol.asyncDispose]: async () => {},
    }
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine: recording }) } })
    const alice = ctx.agent('alice')
    const bob = ctx.agent('bob')
    for (const agent of [alice, bob, alice]) {
      const result = await agent.ctx.tools.execute({ callId: 'c', name: 'run_code', arguments: { code: 'return 1' }, signal: new AbortController().signal })
      expect(result.isError).toBe(false)
    }
    expect(tenants).toEqual([alice, bob, alice])
    expect(tenants[0]).toBe(alice)
  })
})

describe('run_code type removal', () => {
  // `<` chains, retried as type arguments at every `<`: too costly for the main thread, done in a few hundred milliseconds.
  const costly = 'let x, a = 1\n' + `x = ${Array.from({ length: 500 }, () => 'a').join('<')}\n`.repeat(3)
  // Nested failed async arrows: the parse doubles per level, far past any limit. The annotation
  // makes it TypeScript (plain JavaScript runs as written, unparsed by TypeScript).
  const endless = 'const typed: number = 1\nreturn ' + 'async ('.repeat(40) + '1' + ')'.repeat(40)

  afterEach(() => {
    vi.restoreAllMocks()
  })

  function agentWith(options: Parameters<typeof createRunCode>[0] = {}) {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode(options) } })
    registerTools(ctx, [])
    return ctx.agent('a')
  }

  it('runs plain JavaScript as written, and removes the types of a small TypeScript program in the TypeScript thread', async () => {
    const strip = vi.spyOn(TypeCheckThread.prototype, 'strip')
    const agent = agentWith()
    const plain = await agent.ctx.tools.execute(call('run_code', { code: 'const n = await tools.add({ a: 2, b: 3 })\nreturn n' }))
    expect(plain).toMatchObject({ isError: false, value: { result: 5 } })
    expect(strip).not.toHaveBeenCalled()
    const typed = await agent.ctx.tools.execute(call('run_code', { code: 'const n: number = await tools.add({ a: 2, b: 3 })\nreturn n as number' }))
    expect(typed).toMatchObject({ isError: false, value: { result: 5 } })
    expect(strip).toHaveBeenCalledTimes(1)
  })

  it("removes the types of a costly program off the main thread, and the host's event loop keeps turning meanwhile", async () => {
    const original = TypeCheckThread.prototype.strip
    const ticksWhileStripping: number[] = []
    vi.spyOn(TypeCheckThread.prototype, 'strip').mockImplementation(function (this: TypeCheckThread, ...args) {
      let ticks = 0
      const ticker = setInterval(() => void (ticks += 1), 1)
      return original.apply(this, args).finally(() => {
        clearInterval(ticker)
        ticksWhileStripping.push(ticks)
      })
    })
    const agent = agentWith()
    const result = await agent.ctx.tools.execute(call('run_code', { code: `${costly}const n: number = 7\nreturn n` }))
    expect(result).toMatchObject({ isError: false, value: { result: 7 } })
    expect(ticksWhileStripping).toHaveLength(1)
    // A parse on the main thread would have let the interval fire at most once.
    expect(ticksWhileStripping[0]).toBeGreaterThan(20)
  })

  it('reports the same syntax errors and refusals, at the same positions, whichever thread removed the types', async () => {
    const strip = vi.spyOn(TypeCheckThread.prototype, 'strip')
    const agent = agentWith()
    const mistakes = ['let x = ;', 'enum Color { Red }', 'if (x) {\n  f()', 'f()\n}\ng()', 'let y = 2\nreturn 1<!--y']
    for (const mistake of mistakes) {
      for (const code of [mistake, `${costly}${mistake}`]) {
        const expected = stripTypes(code)
        if (expected.ok) throw new Error(`expected ${JSON.stringify(mistake)} to be refused`)
        const result = await agent.ctx.tools.execute(call('run_code', { code }))
        expect(codeOf(result)).toBe('CODE_RUN_FAILED')
        // The line quoted with a caret under the column, as every failure quotes it.
        const quoted = quoteLine(code, expected.line, expected.column) as string
        expect(result.isError && result.error.message).toBe(`The program was not run: line ${expected.line}, column ${expected.column}: ${expected.message}\n${quoted}`)
      }
    }
    // None of them is plain JavaScript: every one, small or costly, went to the TypeScript thread.
    expect(strip).toHaveBeenCalledTimes(mistakes.length * 2)
  })

  it('refuses a program whose types take too long to remove, naming the bound it broke, and the next run works', async () => {
    const agent = agentWith({ limits: { wallTimeMs: 30_000 } })
    const slow = await agent.ctx.tools.execute(call('run_code', { code: endless }))
    expect(codeOf(slow)).toBe('CODE_RUN_FAILED')
    expect(slow.isError && slow.error.message).toMatch(/^The program was not run: removing its types took longer than 2000 ms, the most it may take: simplify it/)
    const hurried = agentWith({ limits: { wallTimeMs: 300 } })
    const late = await hurried.ctx.tools.execute(call('run_code', { code: endless }))
    expect(late.isError && late.error.message).toMatch(/^The program was not run: removing its types took longer than the wallTimeMs limit/)
    const good = await agent.ctx.tools.execute(call('run_code', { code: `${costly}return 1` }))
    expect(good).toMatchObject({ isError: false, value: { result: 1 } })
  })

  it('cancels a run while its types are removed off the main thread', async () => {
    const agent = agentWith()
    const cancelled = new AbortController()
    const pending = agent.ctx.tools.execute(call('run_code', { code: endless }, { signal: cancelled.signal }))
    setTimeout(() => cancelled.abort(), 50)
    const result = await pending
    expect(codeOf(result)).toBe('ABORTED')
    expect(result.isError && result.error.message).toMatch(/cancelled/)
  })
})
