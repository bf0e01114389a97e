import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { ApprovalService } from '../../src/pipeline.ts'
import { runToolCalls } from '../../src/scheduler.ts'
import { createMemorySessionLog } from '../../src/session-log.ts'
import type { SessionEvent, SessionLog } from '../../src/session-log.ts'
import type { ToolExecutionResult } from '../../src/execution.ts'
import type { SandboxEngine } from '../../sandbox/engine.ts'
import { createQuickJSEngine } from '../../sandbox/quickjs/quickjs-engine.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import { rawTool } from '../helpers.ts'

/**
 * Fault injection along a `run_code` sub-call: every hook a sub-call passes (pre-execute, the
 * approval service, execute wrappers, the tool's body, render, post-execute, finalizeContent, the
 * code-dispatch log, result observers) and the durable session log, each made to throw, reject,
 * hang until the call is cancelled, or answer garbage, for the sub-calls only. Whatever fails, the
 * run ends with a structured result, no rejection goes unhandled, the durable log holds each event
 * once (every code-dispatch-start with its code-dispatch, the run's call and result once), and the
 * next run works.
 */

type Fault = 'throws' | 'rejects' | 'hangs' | 'garbage'
const FAULTS: readonly Fault[] = ['throws', 'rejects', 'hangs', 'garbage']

/** What a faulty hook does instead of its job; `signal` ends a hang. */
function misbehave(fault: Fault, signal: AbortSignal, garbage: unknown): unknown {
  switch (fault) {
    case 'throws':
      throw new Error('injected fault')
    case 'rejects':
      return Promise.reject(new Error('injected fault'))
    case 'hangs':
      return new Promise((resolve) => signal.addEventListener('abort', () => resolve(garbage), { once: true }))
    case 'garbage':
      return garbage
  }
}

const PROGRAM =
  'const out = []\n' +
  'for (let i = 0; i < 2; i++) { try { out.push((await tools.echo({ i })).i) } catch (e) { out.push(e.code ?? "error") } }\n' +
  'const all = await Promise.allSettled([tools.echo({ i: 7 }), tools.echo({ i: 8 })])\n' +
  'return [out, all.map((r) => r.status)]'

const unhandled: unknown[] = []
const onUnhandled = (reason: unknown): void => {
  unhandled.push(reason)
}
let engine: SandboxEngine
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled)
  engine = createQuickJSEngine()
})
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled)
  await engine.dispose()
})

type Point =
  | 'tools/pre-execute'
  | 'approval'
  | 'tools/execute'
  | 'body'
  | 'render'
  | 'tools/post-execute'
  | 'finalizeContent'
  | 'tools/code-dispatch-log'
  | 'tools/result'
  | 'session log'

const POINTS: readonly Point[] = [
  'tools/pre-execute',
  'approval',
  'tools/execute',
  'body',
  'render',
  'tools/post-execute',
  'finalizeContent',
  'tools/code-dispatch-log',
  'tools/result',
  'session log',
]

/** A session log whose appends of sub-call events misbehave (the run's own events are kept). */
function faultySessionLog(fault: Fault): SessionLog {
  const inner = createMemorySessionLog()
  const never = new AbortController().signal
  return {
    get events() {
      return inner.events
    },
    append(event: SessionEvent) {
      if (event.type === 'tool/code-dispatch-start' || event.type === 'tool/code-dispatch') {
        // A log that hangs never answers: the pipeline must not wait on it for ever either.
        return misbehave(fault === 'hangs' ? 'rejects' : fault, never, undefined) as Promise<void>
      }
      return inner.append(event)
    },
    close: () => inner.close(),
    [Symbol.asyncDispose]: () => inner.close(),
  }
}

async function runWithFault(point: Point, fault: Fault): Promise<{ result: ToolExecutionResult; events: readonly SessionEvent[]; next: ToolExecutionResult }> {
  const approval: ApprovalService = {
    request: ({ signal }) => misbehave(fault, signal, 42) as Promise<never>,
  }
  const ctx = createContext({
    ...(point === 'approval' ? { approval } : {}),
    tools: { mode: 'code', codeMode: createRunCode({ engine, limits: { wallTimeMs: 3_000 } }) },
  })
  const sub = (parent: unknown): boolean => parent !== undefined
  ctx.tools.register(
    rawTool('echo', {
      isConcurrencySafe: () => true,
      execute: async (args, exec) => (point === 'body' ? misbehave(fault, exec.signal, undefined) : args),
      output: {
        schema: {},
        render: (_args, value) => {
          if (point === 'render') return misbehave(fault === 'hangs' ? 'throws' : fault, new AbortController().signal, 7) as never
          return [{ type: 'text', text: JSON.stringify(value) }]
        },
      },
      finalizeContent: () => {
        if (point === 'finalizeContent') return misbehave(fault === 'hangs' ? 'throws' : fault, new AbortController().signal, 'garbage') as never
        return undefined
      },
    }),
  )
  if (point === 'tools/pre-execute') ctx.on('tools/pre-execute', (exec, next) => (sub(exec.parent) ? (misbehave(fault, exec.signal, { kind: 'maybe' }) as never) : next()))
  if (point === 'approval') ctx.on('tools/pre-execute', (exec, next) => (sub(exec.parent) ? { kind: 'ask', reason: 'check' } : next()))
  if (point === 'tools/execute') ctx.on('tools/execute', (exec, next) => (sub(exec.parent) ? (misbehave(fault, exec.signal, { not: 'a result' }) as never) : next()))
  if (point === 'tools/post-execute') {
    ctx.on('tools/post-execute', (exec, _result, next) => (sub(exec.parent) ? (misbehave(fault, exec.signal, { kind: 'replace-everything' }) as never) : next()))
  }
  if (point === 'tools/code-dispatch-log') {
    ctx.on('tools/code-dispatch-log', (dispatch, next) => (misbehave(fault === 'hangs' ? 'throws' : fault, new AbortController().signal, 'not content') as never) ?? next())
  }
  if (point === 'tools/result') {
    // An observer returns nothing; one that is async hands back its promise, which may reject.
    ctx.on('tools/result', (exec) => (sub(exec.parent) ? (misbehave(fault === 'hangs' ? 'rejects' : fault, new AbortController().signal, undefined) as never) : undefined))
  }
  const agent = ctx.agent('a', point === 'session log' ? { session: faultySessionLog(fault) } : {})
  const run = async (callId: string, code: string): Promise<ToolExecutionResult> => {
    const [result] = await runToolCalls(agent.ctx.tools, [{ callId, name: 'run_code', arguments: { code } }], { agent, signal: new AbortController().signal })
    return result as ToolExecutionResult
  }
  const result = await run('faulty', PROGRAM)
  const events = [...agent.session.events]
  const next = await run('next', 'return 1')
  return { result, events, next }
}

describe('fault injection along a run_code sub-call (QuickJS)', () => {
  const cases = POINTS.flatMap((point) => FAULTS.map((fault) => [point, fault] as const))

  it.each(cases)('%s that %s: a structured result, a durable log with each event once, no unhandled rejection', async (point, fault) => {
    const before = unhandled.length
    const { result, events, next } = await runWithFault(point, fault)

    // A structured result, never a throw: a value, or a failure with a code and a message.
    expect(typeof result.isError).toBe('boolean')
    if (result.isError) {
      expect(result.error.info?.code).toMatch(/^[A-Z_]+$/)
      expect(result.error.message.length).toBeGreaterThan(0)
    }
    expect(next.isError ? next.error.message : next.value).toEqual({ result: 1, logs: [] })

    // The durable log: the run's call and result once each, sub-call events once each and balanced.
    const of = (type: string) => events.filter((event) => event.type === type)
    expect(of('tool/call').filter((event) => 'callId' in event && event.callId === 'faulty')).toHaveLength(1)
    expect(of('tool/result').filter((event) => 'callId' in event && event.callId === 'faulty')).toHaveLength(1)
    const ids = (type: string) => of(type).map((event) => ('subCallId' in event ? event.subCallId : ''))
    const starts = ids('tool/code-dispatch-start')
    const ends = ids('tool/code-dispatch')
    expect(new Set(starts).size).toBe(starts.length)
    expect(new Set(ends).size).toBe(ends.length)
    if (point !== 'session log') expect([...ends].sort()).toEqual([...starts].sort())

    // Late settlements of what was injected surface within a few turns, if at all.
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(unhandled.slice(before)).toEqual([])
  }, 30_000)
})
