/**
 * Type checks for run_code run in a worker thread, one at a time, each within a deadline counted
 * from its submission and a share of the checker's time, taken by owner in turn: a program that
 * keeps the checker busy cannot hold another run's check past that run's own limit or behind a
 * queue of its own, and a cancelled run's check ends at once.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { TypeCheckThread } from '../../sandbox/type-check-thread.ts'

const DECLARATIONS = 'declare const tools: { add(args: { a: number; b: number }): Promise<number> }'
// Nested recursive conditional types: seconds of checking for a few hundred bytes.
const BUSY = `type Build<N extends number, A extends unknown[] = []> = A['length'] extends N ? A : Build<N, [...A, 0]>
type Outer<A extends unknown[] = [], Acc = never> = A['length'] extends 400 ? Acc : Outer<[...A, 0], Acc | Build<A['length']>['length']>
const x: Outer = 5000
return 1`

describe('TypeCheckThread', () => {
  const thread = new TypeCheckThread()
  afterAll(async () => {
    await thread.dispose()
  })
  const live = () => new AbortController().signal

  it('reports the diagnostics of a program, positioned in its text', async () => {
    const outcome = await thread.check(DECLARATIONS, 'const n: string = await tools.add({ a: 1, b: 2 })\nreturn n', { timeoutMs: 30_000, signal: live() })
    expect(outcome).toEqual({ ok: true, diagnostics: [{ line: 1, column: 7, message: "Type 'number' is not assignable to type 'string'." }] })
  })

  it("ends a check waiting behind a busy one at its own deadline, and the busy one at its own", async () => {
    const order: string[] = []
    const busy = thread.check(DECLARATIONS, BUSY, { timeoutMs: 1_500, signal: live() }).then((outcome) => {
      order.push('busy')
      return outcome
    })
    const waiting = thread.check(DECLARATIONS, 'return 1', { timeoutMs: 200, signal: live() }).then((outcome) => {
      order.push('waiting')
      return outcome
    })
    expect(await waiting).toEqual({ ok: false, reason: 'timeout' })
    expect(await busy).toEqual({ ok: false, reason: 'timeout' })
    expect(order).toEqual(['waiting', 'busy'])
    // A fresh worker takes the next check.
    expect(await thread.check(DECLARATIONS, 'return await tools.add({ a: 1, b: 2 })', { timeoutMs: 30_000, signal: live() })).toEqual({ ok: true, diagnostics: [] })
  })

  it('ends the check of a cancelled run at once, running or waiting', async () => {
    const running = new AbortController()
    const waitingRun = new AbortController()
    const first = thread.check(DECLARATIONS, BUSY, { timeoutMs: 30_000, signal: running.signal })
    const second = thread.check(DECLARATIONS, 'return 1', { timeoutMs: 30_000, signal: waitingRun.signal })
    waitingRun.abort()
    expect(await second).toEqual({ ok: false, reason: 'aborted' })
    running.abort()
    expect(await first).toEqual({ ok: false, reason: 'aborted' })
    const already = new AbortController()
    already.abort()
    expect(await thread.check(DECLARATIONS, 'return 1', { timeoutMs: 30_000, signal: already.signal })).toEqual({ ok: false, reason: 'aborted' })
  })

  it('stops one check at its share of the checker, however long its run may take', async () => {
    const quick = new TypeCheckThread({ maxCheckMs: 300 })
    try {
      expect(await quick.check(DECLARATIONS, BUSY, { timeoutMs: 30_000, signal: live() })).toEqual({ ok: false, reason: 'too-slow' })
      expect(await quick.check(DECLARATIONS, 'return 1', { timeoutMs: 30_000, signal: live() })).toEqual({ ok: true, diagnostics: [] })
    } finally {
      await quick.dispose()
    }
  })

  it("takes waiting checks by owner in turn: one agent's slow programs do not hold another's behind them all", async () => {
    const fair = new TypeCheckThread({ maxCheckMs: 300 })
    const mallory = {}
    const alice = {}
    const order: string[] = []
    const submit = (label: string, program: string, owner: object) =>
      fair.check(DECLARATIONS, program, { timeoutMs: 60_000, signal: live(), owner }).then((outcome) => {
        order.push(label)
        return outcome
      })
    try {
      const slow = [submit('mallory 1', BUSY, mallory), submit('mallory 2', BUSY, mallory), submit('mallory 3', BUSY, mallory)]
      const quick = submit('alice', 'return 1', alice)
      expect(await quick).toEqual({ ok: true, diagnostics: [] })
      for (const outcome of await Promise.all(slow)) expect(outcome).toEqual({ ok: false, reason: 'too-slow' })
      expect(order).toEqual(['mallory 1', 'alice', 'mallory 2', 'mallory 3'])
    } finally {
      await fair.dispose()
    }
  })
})
