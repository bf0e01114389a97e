/**
 * Whatever a tool body, listener, guard or approval service throws becomes an error result: even a
 * value that cannot be turned into text (a null-prototype object, an Error whose `message` getter
 * throws, a revoked Proxy). The call still finalizes once and notifies `tools/result` once, and a
 * turn goes on past it.
 */
import { describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import { ToolError, ToolErrorCode } from '../../src/errors.ts'
import type { Context, ContextOptions } from '../../src/context.ts'
import type { ToolExecutionResult } from '../../src/execution.ts'
import { describeThrown } from '../../src/results.ts'
import { runToolCalls } from '../../src/scheduler.ts'
import { createMemorySessionLog } from '../../src/session-log.ts'
import { call, rawTool } from '../helpers.ts'

const hostileValues: readonly [string, () => unknown][] = [
  ['a null-prototype object', () => Object.create(null)],
  [
    'an Error whose message getter throws',
    () => {
      const error = new Error('hidden')
      Object.defineProperty(error, 'message', {
        get() {
          throw new Error('getter boom')
        },
      })
      return error
    },
  ],
  [
    'a revoked Proxy',
    () => {
      const { proxy, revoke } = Proxy.revocable({}, {})
      revoke()
      return proxy
    },
  ],
]

type Hook = (ctx: Context, thrown: () => unknown) => void

const hooks: readonly [string, string, Hook][] = [
  ['a pre-execute listener', 'LISTENER_FAILED', (ctx, thrown) => void ctx.on('tools/pre-execute', async () => { throw thrown() })],
  ['a guard', 'DENIED', (ctx, thrown) => void ctx.tools.guard(() => { throw thrown() })],
  ['a tools/execute wrapper', 'LISTENER_FAILED', (ctx, thrown) => void ctx.on('tools/execute', async () => { throw thrown() })],
  ['a post-execute listener', 'LISTENER_FAILED', (ctx, thrown) => void ctx.on('tools/post-execute', async () => { throw thrown() })],
]

function codeOf(result: ToolExecutionResult): string | undefined {
  return result.isError ? result.error.info?.code : undefined
}

function counted(options: ContextOptions = {}, overrides: Parameters<typeof rawTool>[1] = {}) {
  const ctx = createContext(options)
  const counts = { finalized: 0, observed: 0 }
  ctx.tools.register(
    rawTool('t', {
      finalizeContent: () => {
        counts.finalized += 1
        return undefined
      },
      ...overrides,
    }),
  )
  ctx.on('tools/result', () => void (counts.observed += 1))
  return { ctx, counts }
}

describe('a thrown value that cannot be turned into text', () => {
  for (const [label, make] of hostileValues) {
    for (const [where, code, install] of hooks) {
      it(`thrown by ${where} (${label}) is a ${code} result`, async () => {
        const { ctx, counts } = counted()
        install(ctx, make)
        const result = await ctx.tools.execute(call('t'))
        expect(codeOf(result)).toBe(code)
        expect(result.isError && result.error.message.length > 0).toBe(true)
        expect(counts).toEqual({ finalized: 1, observed: 1 })
      })
    }

    it(`thrown by the tool body (${label}) is a TOOL_FAILED result`, async () => {
      const { ctx, counts } = counted({}, { execute: async () => { throw make() } })
      const result = await ctx.tools.execute(call('t'))
      expect(codeOf(result)).toBe('TOOL_FAILED')
      expect(counts).toEqual({ finalized: 1, observed: 1 })
    })

    it(`thrown by finalizeContent (${label}) is a TOOL_FAILED result`, async () => {
      const ctx = createContext()
      let observed = 0
      ctx.tools.register(rawTool('t', { finalizeContent: () => { throw make() } }))
      ctx.on('tools/result', () => void (observed += 1))
      const result = await ctx.tools.execute(call('t'))
      expect(codeOf(result)).toBe('TOOL_FAILED')
      expect(observed).toBe(1)
    })

    it(`thrown by the approval service (${label}) denies the call`, async () => {
      const { ctx, counts } = counted({ approval: { request: async () => { throw make() } } })
      ctx.on('tools/pre-execute', async () => ({ kind: 'ask' }))
      const agent = ctx.agent('a')
      const result = await agent.ctx.tools.execute(call('t'))
      expect(codeOf(result)).toBe('DENIED')
      expect(counts).toEqual({ finalized: 1, observed: 1 })
    })
  }

  it('reads the code of a thrown ToolError safely: a throwing or unknown code falls back to TOOL_FAILED', async () => {
    const throwingCode = new ToolError(ToolErrorCode.DENIED, 'no')
    Object.defineProperty(throwingCode, 'code', {
      get() {
        throw new Error('code getter boom')
      },
    })
    const oddCode = new ToolError(ToolErrorCode.DENIED, 'odd')
    Object.defineProperty(oddCode, 'code', { value: 42 })
    for (const thrown of [throwingCode, oddCode, new Proxy(throwingCode, {})]) {
      const { ctx, counts } = counted({}, { execute: async () => { throw thrown } })
      const result = await ctx.tools.execute(call('t'))
      expect(codeOf(result)).toBe('TOOL_FAILED')
      expect(counts).toEqual({ finalized: 1, observed: 1 })
    }
    // A well-formed ToolError keeps its code.
    const { ctx } = counted({}, { execute: async () => { throw new ToolError(ToolErrorCode.DENIED, 'not allowed here') } })
    expect(codeOf(await ctx.tools.execute(call('t')))).toBe('DENIED')
  })

  it('does not end a turn: the calls after it run and the session log pairs every call with a result', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('ok'))
    ctx.tools.register(rawTool('bad', { execute: async () => { throw Object.create(null) } }))
    ctx.on('tools/post-execute', async (exec) => {
      if (exec.callId === 'c3') throw Object.create(null)
      return { kind: 'accept' }
    })
    const session = createMemorySessionLog()
    const agent = ctx.agent('a', { session })
    const calls = [
      { callId: 'c1', name: 'ok', arguments: {} },
      { callId: 'c2', name: 'bad', arguments: {} },
      { callId: 'c3', name: 'ok', arguments: {} },
      { callId: 'c4', name: 'ok', arguments: {} },
    ]
    const results = await runToolCalls(agent.ctx.tools, calls, { agent, signal: new AbortController().signal })
    expect(results.map(codeOf)).toEqual([undefined, 'TOOL_FAILED', 'LISTENER_FAILED', undefined])
    const events = session.events.map((event) => `${event.type}:${'callId' in event ? String(event.callId) : ''}`)
    expect(events.filter((event) => event.startsWith('tool/call:'))).toHaveLength(4)
    expect(events.filter((event) => event.startsWith('tool/result:'))).toHaveLength(4)
  })
})

describe('describeThrown', () => {
  it('never throws, and keeps what can be read', () => {
    expect(describeThrown(new TypeError('bad input'))).toEqual({ name: 'TypeError', message: 'bad input' })
    expect(describeThrown(new RangeError(''))).toEqual({ name: 'RangeError', message: 'RangeError' })
    expect(describeThrown('plain text')).toEqual({ name: 'NonError', message: 'plain text' })
    expect(describeThrown(42)).toEqual({ name: 'NonError', message: 'non-Error value thrown: 42' })
    for (const [, make] of hostileValues) {
      const described = describeThrown(make())
      expect(typeof described.message).toBe('string')
      expect(described.message.length).toBeGreaterThan(0)
    }
  })
})
