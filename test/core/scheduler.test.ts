import { describe, expect, it, vi } from 'vitest'
import { createContext } from '../../src/context.ts'
import { CallScheduler, TurnLogError, runToolCalls } from '../../src/scheduler.ts'
import { installTimeoutPolicy } from '../../src/timeout-policy.ts'
import { call, deferred, rawTool } from '../helpers.ts'

const parallel = { kind: 'parallel' } as const
const exclusive = { kind: 'exclusive' } as const

describe('CallScheduler', () => {
  it('overlaps parallel tasks up to the bound and starts them in submission order', async () => {
    const scheduler = new CallScheduler(2)
    const events: string[] = []
    const gates = [deferred(), deferred(), deferred()]
    const runs = gates.map((gate, index) =>
      scheduler.run(parallel, async () => {
        events.push(`start ${index}`)
        await gate.promise
        events.push(`end ${index}`)
      }),
    )
    await Promise.resolve()
    expect(events).toEqual(['start 0', 'start 1'])
    gates[1]?.resolve()
    await runs[1]
    await Promise.resolve()
    expect(events).toEqual(['start 0', 'start 1', 'end 1', 'start 2'])
    gates[0]?.resolve()
    gates[2]?.resolve()
    await Promise.all(runs)
  })

  it('runs an exclusive task alone, as a barrier between parallel groups', async () => {
    const scheduler = new CallScheduler(8)
    const events: string[] = []
    const task = (label: string) => async () => {
      events.push(`start ${label}`)
      await new Promise((resolve) => setTimeout(resolve, 5))
      events.push(`end ${label}`)
    }
    await Promise.all([
      scheduler.run(parallel, task('a')),
      scheduler.run(parallel, task('b')),
      scheduler.run(exclusive, task('X')),
      scheduler.run(parallel, task('c')),
    ])
    const xStart = events.indexOf('start X')
    expect(events.indexOf('end a')).toBeLessThan(xStart)
    expect(events.indexOf('end b')).toBeLessThan(xStart)
    expect(events.indexOf('end X')).toBeLessThan(events.indexOf('start c'))
    expect(events.indexOf('start b')).toBeLessThan(events.indexOf('end a'))
  })

  it('keeps going after a task throws', async () => {
    const scheduler = new CallScheduler(1)
    await expect(
      scheduler.run(exclusive, async () => {
        throw new Error('x')
      }),
    ).rejects.toThrow('x')
    await expect(scheduler.run(exclusive, async () => 2)).resolves.toBe(2)
  })
})

describe('runToolCalls', () => {
  it('returns results in call order whatever order they finish in', async () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('wait', {
        isConcurrencySafe: () => true,
        execute: async (args) => {
          await new Promise((resolve) => setTimeout(resolve, (args as { ms: number }).ms))
          return (args as { ms: number }).ms
        },
      }),
    )
    const results = await runToolCalls(
      ctx.tools,
      [30, 1, 10].map((ms, index) => ({ callId: `c${index}`, name: 'wait', arguments: { ms } })),
      { signal: new AbortController().signal },
    )
    expect(results.map((result) => result.value)).toEqual([30, 1, 10])
  })

  it('logs tool/call before and tool/result after each call, never the value', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('echo', { output: { schema: {}, render: () => [{ type: 'text', text: 'shown' }], presentationMeta: () => ({ m: 1 }) } }))
    const agent = ctx.agent('a')
    await runToolCalls(agent.ctx.tools, [{ callId: 'c1', name: 'echo', arguments: { secret: 42 } }], {
      agent,
      signal: new AbortController().signal,
    })
    expect(agent.session.events).toEqual([
      { type: 'tool/call', callId: 'c1', rootCallId: 'c1', name: 'echo', arguments: { secret: 42 } },
      { type: 'tool/result', callId: 'c1', name: 'echo', isError: false, content: [{ type: 'text', text: 'shown' }], meta: { m: 1 } },
    ])
  })

  it("logs to the session of the agent whose context runs the turn when no agent is named", async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('echo'))
    const agent = ctx.agent('a')
    const seen: unknown[] = []
    ctx.on('tools/result', (exec) => void seen.push(exec.agent))
    await runToolCalls(agent.ctx.tools, [{ callId: 'c1', name: 'echo', arguments: {} }], { signal: new AbortController().signal })
    expect(seen).toEqual([agent])
    expect(agent.session.events.map((event) => event.type)).toEqual(['tool/call', 'tool/result'])
  })

  it('refuses an agent the context does not cover before it logs anything', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('echo'))
    const inside = ctx.scope('team').agent('in')
    const outside = ctx.agent('out')
    await expect(
      runToolCalls(inside.ctx.tools, [{ callId: 'c1', name: 'echo', arguments: {} }], { agent: outside, signal: new AbortController().signal }),
    ).rejects.toThrow(/not under scope/)
    expect(outside.session.events).toEqual([])
  })

  it('runs every call when the session log throws synchronously, then reports the log failure', async () => {
    const ctx = createContext()
    const ran: string[] = []
    ctx.tools.register(
      rawTool('echo', {
        execute: async (args) => {
          ran.push(JSON.stringify(args))
          return args
        },
      }),
    )
    const agent = ctx.agent('a')
    const broken = new Error('disk is gone')
    agent.session.append = () => {
      throw broken
    }
    const turn = runToolCalls(agent.ctx.tools, [
      { callId: 'c1', name: 'echo', arguments: { n: 1 } },
      { callId: 'c2', name: 'echo', arguments: { n: 2 } },
    ], { agent, signal: new AbortController().signal })
    const error = await turn.then(() => undefined, (reason: unknown) => reason)
    expect(error).toBeInstanceOf(TurnLogError)
    expect(error).toMatchObject({ code: 'SESSION_LOG_FAILED', cause: broken, message: expect.stringContaining('disk is gone') })
    // The calls ran: their results are not lost with the log.
    expect((error as TurnLogError).results.map((result) => result.isError)).toEqual([false, false])
    expect(ran).toEqual(['{"n":1}', '{"n":2}'])
  })

  it('parses argument text losslessly and refuses an unsafe integer with its path', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('echo'))
    const [ok, unsafe] = await runToolCalls(
      ctx.tools,
      [
        { callId: 'a', name: 'echo', argumentsText: '{"n": 12, "__proto__": {"x": 1}}' },
        { callId: 'b', name: 'echo', argumentsText: '{"id": 9007199254740993}' },
      ],
      { signal: new AbortController().signal },
    )
    expect(ok?.value).toEqual(JSON.parse('{"n": 12, "__proto__": {"x": 1}}'))
    expect(unsafe?.isError && unsafe.error.info?.code).toBe('INVALID_ARGS')
    expect(unsafe?.isError && unsafe.error.message).toContain('$.id')
  })

  it('keeps argument text that does not parse in the tool/call event', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('echo'))
    const agent = ctx.agent('a1')
    const [result] = await runToolCalls(agent.ctx.tools, [{ callId: 'a', name: 'echo', argumentsText: '{"path": "x",' }], {
      signal: new AbortController().signal,
    })
    expect(result?.isError && result.error.info?.code).toBe('INVALID_ARGS')
    expect(agent.session.events[0]).toEqual({ type: 'tool/call', callId: 'a', rootCallId: 'a', name: 'echo', arguments: null, argumentsText: '{"path": "x",' })
  })

  it('refuses a call that gives both arguments and argumentsText before anything runs or is logged', async () => {
    const ctx = createContext()
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('echo', { execute: body }))
    const agent = ctx.agent('a1')
    const turn = runToolCalls(
      agent.ctx.tools,
      [
        { callId: 'a', name: 'echo', arguments: {} },
        { callId: 'b', name: 'echo', arguments: { n: 1 }, argumentsText: '{"n": 2}' },
      ],
      { signal: new AbortController().signal },
    )
    await expect(turn).rejects.toThrow('call "b" gives both arguments and argumentsText')
    expect(body).not.toHaveBeenCalled()
    expect(agent.session.events).toEqual([])
  })

  it('refuses a turn with two calls of one id before anything runs or is logged', async () => {
    const ctx = createContext()
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('echo', { execute: body }))
    const agent = ctx.agent('a1')
    const calls = [
      { callId: 'same', name: 'echo', arguments: {} },
      { callId: 'same', name: 'echo', arguments: {} },
    ]
    await expect(runToolCalls(agent.ctx.tools, calls, { signal: new AbortController().signal })).rejects.toThrow('two calls of the turn have the id "same"')
    expect(body).not.toHaveBeenCalled()
    expect(agent.session.events).toEqual([])
  })

  it('shares one cancellation signal across the turn', async () => {
    const ctx = createContext()
    const started = deferred()
    ctx.tools.register(
      rawTool('block', {
        execute: async (_args, exec) => {
          started.resolve()
          await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
          return 'x'
        },
      }),
    )
    const controller = new AbortController()
    const pending = runToolCalls(
      ctx.tools,
      [
        { callId: 'a', name: 'block', arguments: {} },
        { callId: 'b', name: 'block', arguments: {} },
      ],
      { signal: controller.signal },
    )
    await started.promise
    controller.abort()
    const results = await pending
    expect(results.map((result) => result.isError && result.error.info?.code)).toEqual(['ABORTED', 'ABORTED_BEFORE_DISPATCH'])
  })
})

describe('timeout policy', () => {
  it('times a cooperative body out with TOOL_TIMEOUT, waits for it and restores the signal', async () => {
    const ctx = createContext()
    const finished: boolean[] = []
    ctx.tools.register(
      rawTool('slow', {
        timeoutMs: 10,
        execute: async (_args, exec) => {
          await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
          await new Promise((resolve) => setTimeout(resolve, 5))
          finished.push(true)
          return 'late'
        },
      }),
    )
    const signals: AbortSignal[] = []
    ctx.on('tools/execute', async (exec, next) => {
      const before = exec.signal
      const result = await next()
      signals.push(before, exec.signal)
      return result
    })
    installTimeoutPolicy(ctx)
    const result = await ctx.tools.execute(call('slow'))
    expect(result.isError && result.error.info?.code).toBe('TOOL_TIMEOUT')
    expect(finished).toEqual([true])
    expect(signals[0]).toBe(signals[1])
  })

  it('leaves tools without timeoutMs and fast tools alone', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('fast', { timeoutMs: 1000 }))
    ctx.tools.register(rawTool('plain'))
    installTimeoutPolicy(ctx)
    expect((await ctx.tools.execute(call('fast'))).isError).toBe(false)
    expect((await ctx.tools.execute(call('plain'))).isError).toBe(false)
  })

  it('honours a budget longer than Node timers take, instead of timing out at once', async () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('patient', {
        timeoutMs: 2 ** 40,
        execute: async () => {
          await new Promise((resolve) => setTimeout(resolve, 10))
          return 'done'
        },
      }),
    )
    installTimeoutPolicy(ctx)
    const result = await ctx.tools.execute(call('patient'))
    expect(result).toMatchObject({ isError: false, value: 'done' })
  })

  it('reports a call its caller cancelled as cancelled, though its deadline passed while it drained', async () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('draining', {
        timeoutMs: 30,
        execute: async (_args, exec) => {
          await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
          // Still winding down when the deadline comes.
          await new Promise((resolve) => setTimeout(resolve, 60))
          return 'late'
        },
      }),
    )
    installTimeoutPolicy(ctx)
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 5)
    const result = await ctx.tools.execute(call('draining', {}, { signal: controller.signal }))
    expect(result.isError && result.error.info?.code).toBe('ABORTED')
  })

  it('stops applying once disposed', async () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('slowish', {
        timeoutMs: 1,
        execute: async () => {
          await new Promise((resolve) => setTimeout(resolve, 15))
          return 1
        },
      }),
    )
    const dispose = installTimeoutPolicy(ctx)
    dispose()
    expect((await ctx.tools.execute(call('slowish'))).isError).toBe(false)
  })
})
