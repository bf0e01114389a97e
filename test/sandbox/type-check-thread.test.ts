/**
 * Type checks for run_code run in a worker thread, one at a time, each within a deadline counted
 * from its submission and a share of the checker's time, taken by owner in turn: a program that
 * keeps the checker busy cannot hold another run's check past that run's own limit or behind a
 * queue of its own, and a cancelled run's check ends at once.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { stripTypes } from '../../sandbox/strip-types.ts'
import { TypeCheckThread } from '../../sandbox/type-check-thread.ts'

const DECLARATIONS = 'declare const tools: { add(args: { a: number; b: number }): Promise<number> }'
// Nested recursive conditional types: seconds of checking for a few hundred bytes.
const BUSY = `type Build<N extends number, A extends unknown[] = []> = A['length'] extends N ? A : Build<N, [...A, 0]>
type Outer<A extends unknown[] = [], Acc = never> = A['length'] extends 400 ? Acc : Outer<[...A, 0], Acc | Build<A['length']>['length']>
const x: Outer = 5000
return 1`
// Nested failed async arrows: the parse doubles per level, seconds for a few hundred bytes.
const SLOW_TO_PARSE = 'return ' + 'async ('.repeat(40) + '1' + ')'.repeat(40)
// `<` chains, retried as type arguments at every `<`: a few hundred milliseconds, then done.
const COSTLY_TO_PARSE = 'let x, a = 1\n' + `x = ${Array.from({ length: 500 }, () => 'a').join('<')}\n`.repeat(3) + 'return x'

describe('TypeCheckThread', () => {
  const thread = new TypeCheckThread()
  afterAll(async () => {
    await thread.dispose()
  })
  const live = () => new AbortController().signal

  it('reports the diagnostics of a program, positioned in its text', async () => {
    const outcome = await thread.check(DECLARATIONS, 'const n: string = await tools.add({ a: 1, b: 2 })\nreturn n', { timeoutMs: 30_000, signal: live() })
    expect(outcome).toEqual({ ok: true, diagnostics: [{ line: 1, column: 7, message: "Type 'number' is not assignable to type 'string'.", code: 2322, certain: false }] })
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

  it('removes types as stripTypes does on the main thread: the same code, and the same errors at the same positions', async () => {
    const programs = [
      'return 1',
      'const n: number = await tools.add({ a: 1, b: 2 })\ninterface P { a: string }\nreturn n as number',
      'function f(a: string): void\nfunction f(a: any) { return a }\nreturn f<string>("x")',
      'const a = 1\nlet x = ;',
      'if (x) {\n  f()',
      'f()\n}\ng()',
      'const a = 1\n  enum Color { Red }',
      'class C {\n  constructor(private a: number) {}\n}',
      'let y = 2\nreturn 1<!--y',
      'import fs from "node:fs"',
      'return ' + '['.repeat(5_000) + ']'.repeat(5_000),
      COSTLY_TO_PARSE,
    ]
    for (const program of programs) {
      expect(await thread.strip(program, { timeoutMs: 30_000, signal: live() })).toEqual({ ok: true, stripped: stripTypes(program) })
    }
  })

  it("keeps the main thread's event loop turning while a costly program's types are removed", async () => {
    let ticks = 0
    const ticker = setInterval(() => void (ticks += 1), 1)
    try {
      const outcome = await thread.strip(COSTLY_TO_PARSE, { timeoutMs: 30_000, signal: live() })
      expect(outcome).toMatchObject({ ok: true, stripped: { ok: true } })
    } finally {
      clearInterval(ticker)
    }
    expect(ticks).toBeGreaterThan(20)
  })

  it('stops a type removal at its share of the worker, and a fresh worker takes the next', async () => {
    const quick = new TypeCheckThread({ maxStripMs: 300 })
    try {
      expect(await quick.strip(SLOW_TO_PARSE, { timeoutMs: 30_000, signal: live() })).toEqual({ ok: false, reason: 'too-slow' })
      expect(await quick.strip('const n: number = 1', { timeoutMs: 30_000, signal: live() })).toEqual({ ok: true, stripped: { ok: true, code: 'const n         = 1' } })
    } finally {
      await quick.dispose()
    }
  })

  it('ends the type removal of a cancelled run or one past its deadline at once', async () => {
    const running = new AbortController()
    const first = thread.strip(SLOW_TO_PARSE, { timeoutMs: 30_000, signal: running.signal })
    setTimeout(() => running.abort(), 50)
    expect(await first).toEqual({ ok: false, reason: 'aborted' })
    expect(await thread.strip(SLOW_TO_PARSE, { timeoutMs: 300, signal: live() })).toEqual({ ok: false, reason: 'timeout' })
    expect(await thread.strip('return 1', { timeoutMs: 30_000, signal: live() })).toEqual({ ok: true, stripped: { ok: true, code: 'return 1' } })
  })
})
