import { describe, expect, it, vi } from 'vitest'
import { createContext } from '../../src/context.ts'
import { createToolCallRunner, runToolCalls, TurnLogError } from '../../src/scheduler.ts'
import type { TurnCall } from '../../src/scheduler.ts'
import { deferred, rawTool } from '../helpers.ts'

const signal = new AbortController().signal

/** A deployment with a parallel-safe `read` and an exclusive `write`, both recording overlap. */
function overlapDeployment() {
  const ctx = createContext()
  let running = 0
  const events: string[] = []
  const overlapSeenBy: string[] = []
  const gates = new Map<string, ReturnType<typeof deferred<void>>>()
  const body = (name: string) => async (_args: unknown, exec: { callId: string }) => {
    running++
    if (running > 1) overlapSeenBy.push(`${name}:${exec.callId}`)
    events.push(`start ${exec.callId}`)
    const gate = deferred()
    gates.set(exec.callId, gate)
    await gate.promise
    events.push(`end ${exec.callId}`)
    running--
    return exec.callId
  }
  ctx.tools.register(rawTool('read', { isConcurrencySafe: () => true, execute: body('read') }))
  ctx.tools.register(rawTool('write', { execute: body('write') }))
  const agent = ctx.agent('a1')
  return { ctx, agent, events, overlapSeenBy, gates }
}

/** Let queued microtasks and the scheduler's pump run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve()
}

describe('createToolCallRunner', () => {
  it('overlaps parallel-safe calls handed over one at a time', async () => {
    const { agent, events, gates } = overlapDeployment()
    const runner = createToolCallRunner(agent.ctx.tools)
    const runs = ['r1', 'r2', 'r3'].map((callId) => runner.run({ callId, name: 'read', arguments: {} }, { signal }))
    await settle()
    expect(events).toEqual(['start r1', 'start r2', 'start r3'])
    expect(runner.inFlight).toBe(3)
    for (const gate of gates.values()) gate.resolve()
    expect((await Promise.all(runs)).map((result) => result.value)).toEqual(['r1', 'r2', 'r3'])
    expect(runner.inFlight).toBe(0)
  })

  it('runs an exclusive call alone: after the calls before it, before the calls after it', async () => {
    const { agent, events, overlapSeenBy, gates } = overlapDeployment()
    const runner = createToolCallRunner(agent.ctx.tools)
    const calls: TurnCall[] = [
      { callId: 'r1', name: 'read', arguments: {} },
      { callId: 'w1', name: 'write', arguments: {} },
      { callId: 'w2', name: 'write', arguments: {} },
      { callId: 'r2', name: 'read', arguments: {} },
    ]
    const runs = calls.map((turnCall) => runner.run(turnCall, { signal }))
    for (const next of ['r1', 'w1', 'w2', 'r2']) {
      await settle()
      expect(events.at(-1)).toBe(`start ${next}`)
      gates.get(next)?.resolve()
    }
    await Promise.all(runs)
    expect(events).toEqual(['start r1', 'end r1', 'start w1', 'end w1', 'start w2', 'end w2', 'start r2', 'end r2'])
    expect(overlapSeenBy).toEqual([])
  })

  it('logs tool/call before and tool/result after each call to the agent session', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('echo'))
    const agent = ctx.agent('a1')
    const runner = createToolCallRunner(agent.ctx.tools, { agent })
    await runner.run({ callId: 'c1', name: 'echo', argumentsText: '{"n": 1}' }, { signal })
    expect(agent.session.events).toEqual([
      { type: 'tool/call', callId: 'c1', rootCallId: 'c1', name: 'echo', arguments: { n: 1 } },
      { type: 'tool/result', callId: 'c1', name: 'echo', isError: false, content: [{ type: 'text', text: '{"n":1}' }] },
    ])
  })

  it('turns argument text that does not parse into an INVALID_ARGS result the model can read', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('echo'))
    const runner = createToolCallRunner(ctx.tools)
    const result = await runner.run({ callId: 'c1', name: 'echo', argumentsText: '{"n": 1,' }, { signal })
    expect(result.isError && result.error.info?.code).toBe('INVALID_ARGS')
    expect(result.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('Invalid arguments for tool "echo"') })
  })

  it('refuses a call whose id is already in flight, without running it', async () => {
    const { agent, gates } = overlapDeployment()
    const runner = createToolCallRunner(agent.ctx.tools)
    const first = runner.run({ callId: 'same', name: 'read', arguments: {} }, { signal })
    await expect(runner.run({ callId: 'same', name: 'read', arguments: {} }, { signal })).rejects.toThrow('a call with the id "same" is already running')
    await settle()
    gates.get('same')?.resolve()
    await expect(first).resolves.toMatchObject({ isError: false })
    // Once settled, the id may be used again (a framework's next step).
    const again = runner.run({ callId: 'same', name: 'read', arguments: {} }, { signal })
    await settle()
    gates.get('same')?.resolve()
    await expect(again).resolves.toMatchObject({ isError: false })
  })

  it('rejects with a TurnLogError carrying the result when the session log fails, after the call ran', async () => {
    const ctx = createContext()
    const body = vi.fn(async () => 'done')
    ctx.tools.register(rawTool('echo', { execute: body }))
    const agent = ctx.agent('a1')
    const broken = new Error('disk is gone')
    agent.session.append = async () => {
      throw broken
    }
    const error = await createToolCallRunner(agent.ctx.tools)
      .run({ callId: 'c1', name: 'echo', arguments: {} }, { signal })
      .then(() => undefined, (reason: unknown) => reason)
    expect(error).toBeInstanceOf(TurnLogError)
    expect(error).toMatchObject({ cause: broken, results: [{ isError: false, value: 'done' }] })
    expect(body).toHaveBeenCalledTimes(1)
  })

  it('refuses an agent the context does not cover when it is created', () => {
    const ctx = createContext()
    const inside = ctx.scope('team').agent('in')
    const outside = ctx.agent('out')
    expect(() => createToolCallRunner(inside.ctx.tools, { agent: outside })).toThrow(/not under scope/)
  })

  it('names the fix when run is called without a signal', async () => {
    const ctx = createContext()
    const runner = createToolCallRunner(ctx.tools)
    await expect(runner.run({ callId: 'c1', name: 'x', arguments: {} }, undefined as never)).rejects.toThrow(
      'options.signal must be an AbortSignal that cancels the calls, e.g. { signal: AbortSignal.timeout(60_000) }',
    )
  })
})

describe('runToolCalls misuse from JavaScript', () => {
  it('names the fix when options are left out', async () => {
    const ctx = createContext()
    const untyped = runToolCalls as (...args: unknown[]) => Promise<unknown>
    await expect(untyped(ctx.tools, [])).rejects.toThrow('runToolCalls(tools, calls, options): options.signal must be an AbortSignal')
  })

  it('names the fix when the signal is not an AbortSignal', async () => {
    const ctx = createContext()
    await expect(runToolCalls(ctx.tools, [], { signal: {} as AbortSignal })).rejects.toThrow('e.g. { signal: AbortSignal.timeout(60_000) }')
  })

  it('names the expected shape when calls is not an array', async () => {
    const ctx = createContext()
    await expect(runToolCalls(ctx.tools, { callId: 'c1' } as never, { signal })).rejects.toThrow('calls must be an array of { callId, name, arguments | argumentsText }')
  })
})
