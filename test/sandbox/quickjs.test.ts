import { readdirSync } from 'node:fs'
import { describe, expect, it, vi } from 'vitest'
import type { EngineRunResult, GuestHost, HostCallOutcome, SandboxEngine } from '../../sandbox/engine.ts'
import { resolveLimits } from '../../sandbox/limits.ts'
import { createQuickJSEngine } from '../../sandbox/quickjs/quickjs-engine.ts'
import { WorkerPool } from '../../sandbox/quickjs/worker-pool.ts'
import { expectCleanExit } from './clean-exit.ts'
import { CONTRACT_LIMITS, CONTRACT_TOOLS, engineContract, fakeHost } from './contract.ts'

engineContract('quickjs', () => createQuickJSEngine({ workers: 2, limits: { memoryLimitBytes: CONTRACT_LIMITS.memoryLimitBytes } }))

function runOn(
  engine: SandboxEngine,
  code: string,
  overrides: Partial<typeof CONTRACT_LIMITS> = {},
  signal?: AbortSignal,
  host: GuestHost = fakeHost(),
): Promise<EngineRunResult> {
  return engine.run({
    code,
    tools: CONTRACT_TOOLS,
    limits: resolveLimits({ ...CONTRACT_LIMITS, ...overrides }),
    host,
    signal: signal ?? new AbortController().signal,
  })
}

describe('quickjs engine', () => {
  it.each([0, 50, 10_000])('gives the same results with spinMicros %d (0: both sides sleep at once)', async (spinMicros) => {
    await using engine = createQuickJSEngine({ workers: 1, spinMicros })
    const code =
      'const out = []\nfor (let i = 0; i < 30; i++) out.push(await tools.echo({ i }))\n' +
      'console.log("mid")\nout.push(...(await Promise.all([1, 2, 3].map((n) => tools.echo({ n })))))\nreturn out.length'
    expect(await runOn(engine, code)).toEqual({ ok: true, resultJson: '33' })
  })

  it("never loses a worker's 'ready' when the keep-awake window closes around the end of a run", async () => {
    // A slow host (sync work after an answer, a slow log sink) and a long window: the worker's
    // 'done' and 'ready' land while the main thread is busy and about to stop polling its ring.
    await using engine = createQuickJSEngine({ workers: 1, spinMicros: 10_000 })
    const busy = (ms: number): void => {
      const end = performance.now() + ms
      while (performance.now() < end);
    }
    const host: GuestHost = {
      call: () => {
        const answer = Promise.resolve<HostCallOutcome>({ ok: true, valueJson: '1' })
        void answer.then(() => {}).then(() => busy(2))
        return answer
      },
      log: () => busy(3),
    }
    const request = (code: string) => ({
      code,
      tools: [{ binding: 'x', name: 'x' }],
      limits: resolveLimits(CONTRACT_LIMITS),
      host,
      signal: new AbortController().signal,
    })
    for (let i = 0; i < 20; i++) {
      expect(await engine.run(request(`await tools.x(); console.log('hi'); return ${i}`))).toEqual({ ok: true, resultJson: String(i) })
      expect(await engine.run(request("return 'next'"))).toEqual({ ok: true, resultJson: '"next"' })
    }
  }, 30_000)

  it('refuses a spinMicros that is not a number of microseconds from 0 to 10000', () => {
    for (const spinMicros of [-1, 10_001, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => createQuickJSEngine({ spinMicros })).toThrow(/spinMicros must be a number of microseconds from 0 to 10000/)
    }
  })

  it('keeps the host event loop ticking while a guest spins', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    let ticks = 0
    const interval = setInterval(() => {
      ticks += 1
    }, 10)
    try {
      const result = await runOn(engine, 'while (true) {}', { cpuTimeMs: 400, wallTimeMs: 5_000 })
      expect(result).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'cpuTimeMs' } })
    } finally {
      clearInterval(interval)
    }
    // A blocked event loop would have fired the interval at most once.
    expect(ticks).toBeGreaterThan(5)
  })

  it('replaces a killed worker so the pool keeps its size', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 30)
    const aborted = await runOn(engine, 'while (true) {}', { cpuTimeMs: 20_000, wallTimeMs: 30_000 }, controller.signal)
    expect(aborted).toMatchObject({ ok: false, error: { kind: 'aborted' } })
    const results = await Promise.all([runOn(engine, 'return 1'), runOn(engine, 'return 2')])
    expect(results).toEqual([
      { ok: true, resultJson: '1' },
      { ok: true, resultJson: '2' },
    ])
  })

  it('kills a worker that stops answering at the wall deadline plus grace, and replaces it', async () => {
    const workerUrl = new URL('./fixtures/stalling-worker.js', import.meta.url)
    await using engine = createQuickJSEngine({ workers: 1, workerUrl })
    const result = await runOn(engine, '/* stall */', { wallTimeMs: 200 })
    expect(result).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'wallTimeMs' } })
    expect(await runOn(engine, 'return 1')).toEqual({ ok: true, resultJson: '1' })
  })

  it('stops catastrophic regex backtracking at the wall limit', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    const result = await runOn(engine, 'return /(a+)+$/.test("a".repeat(40) + "b")', { cpuTimeMs: 20_000, wallTimeMs: 300 })
    expect(result).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'wallTimeMs' } })
  })

  it('queues runs beyond the pool size and serves them all', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => runOn(engine, `await tools.sleep5({}); return ${i}`)))
    expect(results.map((r) => (r.ok ? JSON.parse(r.resultJson) : r.error))).toEqual([0, 1, 2, 3, 4])
  })

  it('starts an extra worker when runs wait behind programs that only await', async () => {
    await using engine = createQuickJSEngine({ workers: 1, maxWorkers: 2 })
    const idle = new AbortController()
    // Holds the only warm worker, without using it, until aborted (its wall limit is past the test's).
    const holding = runOn(engine, 'await new Promise(() => {})', { wallTimeMs: 120_000 }, idle.signal)
    await new Promise((resolve) => setTimeout(resolve, 20))
    const second = await runOn(engine, 'return 1')
    expect(second.ok && JSON.parse(second.resultJson)).toBe(1)
    idle.abort()
    const held = await holding
    expect(!held.ok && held.error.kind).toBe('aborted')
  })

  it('does not grow for a steady stream of runs that each wait a moment behind a busy worker', async () => {
    // The stand-in answers `hold:<ms>` after that long, with the number of its thread.
    const workerUrl = new URL('./fixtures/timed-worker.js', import.meta.url)
    await using engine = createQuickJSEngine({ workers: 1, maxWorkers: 2, workerUrl })
    const served = new Set<string>()
    // Once the worker is up (runs waiting for it to start may well wait 50 ms).
    expect((await runOn(engine, 'hold:0')).ok).toBe(true)
    // Two callers on one worker: one run waits (about 5 ms) while the other holds it, all along.
    const caller = async (): Promise<void> => {
      for (let i = 0; i < 30; i++) {
        const result = await runOn(engine, 'hold:5')
        if (!result.ok) throw new Error(JSON.stringify(result.error))
        served.add(result.resultJson)
      }
    }
    await Promise.all([caller(), caller()])
    expect(served.size).toBe(1)
    // A run that waits past 50 ms does get a second worker.
    const long = runOn(engine, 'hold:400')
    const waiting = await runOn(engine, 'hold:0')
    served.add(waiting.ok ? waiting.resultJson : 'failed')
    await long
    expect(served.size).toBe(2)
  })

  it('grows again for a waiting run when a worker is discarded at the ceiling', async () => {
    await using engine = createQuickJSEngine({ workers: 1, maxWorkers: 2 })
    const first = new AbortController()
    const second = new AbortController()
    const hang = (signal: AbortSignal) => runOn(engine, 'await new Promise(() => {})', { wallTimeMs: 120_000 }, signal)
    const holdingFirst = hang(first.signal)
    await new Promise((resolve) => setTimeout(resolve, 20))
    // Waits, then runs on the extra worker (up in 100-170 ms): the pool is at its ceiling, and
    // aborting this run discards that worker.
    const holdingSecond = hang(second.signal)
    await new Promise((resolve) => setTimeout(resolve, 500))
    const third = runOn(engine, 'return 1')
    second.abort()
    expect((await holdingSecond).ok).toBe(false)
    // Without growing again it would wait for the first program's wall-time limit, past the test's.
    const result = await third
    expect(result.ok && JSON.parse(result.resultJson)).toBe(1)
    first.abort()
    await holdingFirst
  })

  it('gives a lease back to the pool when the run is aborted between the lease and its start', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    // Only a run that waited for a worker has that window (an idle worker is leased synchronously):
    // make every run wait, and abort it just as its lease arrives.
    const controller = new AbortController()
    const original = WorkerPool.prototype.acquire
    const tryAcquire = vi.spyOn(WorkerPool.prototype, 'tryAcquire').mockReturnValue(undefined)
    const acquire = vi.spyOn(WorkerPool.prototype, 'acquire')
    acquire.mockImplementation(function (this: WorkerPool, ...args) {
      return original.apply(this, args).then((worker) => {
        controller.abort()
        return worker
      })
    })
    const giveBack = vi.spyOn(WorkerPool.prototype, 'giveBack')
    try {
      const result = await runOn(engine, 'await new Promise(() => {})', { wallTimeMs: 120_000 }, controller.signal)
      expect(!result.ok && result.error.kind).toBe('aborted')
      expect(giveBack).toHaveBeenCalledTimes(1)
      acquire.mockRestore()
      // The worker given back serves the next run, leased by either path.
      expect(await runOn(engine, 'return 2')).toEqual({ ok: true, resultJson: '2' })
      tryAcquire.mockRestore()
      expect(await runOn(engine, 'return 3')).toEqual({ ok: true, resultJson: '3' })
    } finally {
      tryAcquire.mockRestore()
      acquire.mockRestore()
      giveBack.mockRestore()
    }
  })

  it('leases an idle worker without waiting, and queues runs behind those already waiting', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    expect(await runOn(engine, 'return 0')).toEqual({ ok: true, resultJson: '0' })
    await new Promise((resolve) => setTimeout(resolve, 50))
    const acquire = vi.spyOn(WorkerPool.prototype, 'acquire')
    try {
      // The worker is idle: the first run takes it at once; the others wait in order.
      const runs = [1, 2, 3].map((n) => runOn(engine, `return ${n}`))
      expect((await Promise.all(runs)).map((r) => r.ok && r.resultJson)).toEqual(['1', '2', '3'])
      expect(acquire).toHaveBeenCalledTimes(2)
    } finally {
      acquire.mockRestore()
    }
  })

  it.each([true, false])('gives a tenant a fresh WASM heap when its worker last ran for another (isolateTenants %s)', async (isolateTenants) => {
    await using engine = createQuickJSEngine({ workers: 1, isolateTenants, limits: { memoryLimitBytes: CONTRACT_LIMITS.memoryLimitBytes } })
    const alice = {}
    const mallory = {}
    const runAs = async (tenant: object) => {
      const result = await engine.run({
        code: 'return 1',
        tools: CONTRACT_TOOLS,
        limits: resolveLimits(CONTRACT_LIMITS),
        host: fakeHost(),
        signal: new AbortController().signal,
        tenant,
      })
      expect(result.ok).toBe(true)
    }
    const fresh = () => (engine as unknown as { freshHeapRuns: number }).freshHeapRuns
    await runAs(alice)
    await runAs(alice)
    expect(fresh()).toBe(0)
    await runAs(mallory)
    await runAs(mallory)
    await runAs(alice)
    expect(fresh()).toBe(isolateTenants ? 2 : 0)
  })

  it('builds toSorted, toReversed, toSpliced and with results without letting a GC walk their unwritten slots', async () => {
    // QuickJS 0.32 allocates these results with every slot counted and none written, then reads the
    // elements through program code: a GC started there follows what the program sprayed into freed
    // memory (here a fake pointer) and traps, or worse. The prelude reads the elements first.
    await using engine = createQuickJSEngine({ workers: 1 })
    for (const method of ['toSorted', 'toReversed', 'toSpliced', 'with']) {
      const args = method === 'with' ? '0, 1' : method === 'toSpliced' ? '0, 0' : ''
      const code = `const N = 4096
function spray() { for (let k = 0; k < 8; k++) { const ab = new ArrayBuffer(N * 8); const u = new Uint32Array(ab); for (let i = 0; i < u.length; i += 2) { u[i] = 0xfffffff0; u[i + 1] = 0xffffffff } } }
let collected = false
const target = []; target.length = N
const p = new Proxy(target, { has() { return true }, get(t, k) { if (k === 'length') return N; if (!collected) { collected = true; const junk = []; for (let i = 0; i < 300000; i++) junk.push({ a: i }) } return 1 } })
spray()
const r = Array.prototype.${method}.call(p${args === '' ? '' : `, ${args}`})
return [r.length, collected, r[1]]`
      const result = await engine.run({ code, tools: [], limits: resolveLimits({}), host: fakeHost(), signal: new AbortController().signal })
      expect(result.ok && JSON.parse(result.resultJson)).toEqual([4096, true, 1])
    }
  })

  it('keeps the semantics of the four array methods it rebuilds', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    const code = `const holes = [3, , 1]
return [
  holes.toSorted().map(String), holes.toReversed().map(String), [1, 2, 3].toSpliced(1, 1, 'a', 'b'), [1, 2, 3].with(-1, 9),
  Array.prototype.toSorted.call({ length: 2, 0: 'b', 1: 'a' }), Array.prototype.toReversed.call('ab'),
  [3, 1, 2].toSorted((a, b) => b - a), [].toSpliced.length, [].with.length, [].toSorted.name,
  (() => { try { [1].with(5, 0) } catch (e) { return e.name } })(),
  (() => { try { [1].toSorted(1) } catch (e) { return e.name } })(),
  (() => { try { Array.prototype.toReversed.call(null) } catch (e) { return e.name } })(),
  Object.keys(Array.prototype).includes('toSorted'),
]`
    const result = await engine.run({ code, tools: [], limits: resolveLimits({}), host: fakeHost(), signal: new AbortController().signal })
    expect(result.ok && JSON.parse(result.resultJson)).toEqual([
      ['1', '3', 'undefined'], ['1', 'undefined', '3'], [1, 'a', 'b', 3], [1, 2, 9], ['a', 'b'], ['b', 'a'], [3, 2, 1], 2, 2, 'toSorted', 'RangeError', 'TypeError', 'TypeError', false,
    ])
  })

  it('refuses a maxWorkers below workers', () => {
    expect(() => createQuickJSEngine({ workers: 3, maxWorkers: 2 })).toThrow(/maxWorkers must be an integer no smaller than workers/)
  })

  it('ends queued runs as aborted when the engine is disposed, like the runs under way (issue 23)', async () => {
    const engine = createQuickJSEngine({ workers: 1, maxWorkers: 1 })
    const first = runOn(engine, 'await tools.never({})')
    const queued = runOn(engine, 'return 1')
    await new Promise((resolve) => setTimeout(resolve, 20))
    await engine.dispose()
    expect(await queued).toEqual({ ok: false, error: { kind: 'aborted', message: 'the engine was disposed during the run' } })
    expect(await first).toEqual({ ok: false, error: { kind: 'aborted', message: 'the engine was disposed during the run' } })
    await expect(runOn(engine, 'return 1')).rejects.toMatchObject({ name: 'DisposedError' })
  })

  it('applies engine ceilings over larger run limits', async () => {
    await using engine = createQuickJSEngine({ workers: 1, limits: { cpuTimeMs: 150 } })
    const result = await runOn(engine, 'while (true) {}', { cpuTimeMs: 20_000, wallTimeMs: 10_000 })
    expect(result).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'cpuTimeMs' } })
    expect(!result.ok && result.error.message).toContain('150')
  })

  it('states its stack ceiling, so a run asking a deeper stack is told the stack it got', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    expect(engine.ceilings?.stackSizeBytes).toBe(256 * 1024)
    const deep = 'const down = (n) => n === 0 ? 0 : 1 + down(n - 1)\nreturn down(1e7)'
    const result = await runOn(engine, deep, { stackSizeBytes: 4 * 1024 * 1024 })
    expect(result).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'stackSizeBytes' } })
    expect(!result.ok && result.error.message).toContain(String(256 * 1024))
    // A lower ceiling given by the user stays the lower.
    await using small = createQuickJSEngine({ workers: 1, limits: { stackSizeBytes: 64 * 1024 } })
    expect(small.ceilings?.stackSizeBytes).toBe(64 * 1024)
  })

  it('drops a late answer to an ended run instead of settling the next run on the same worker', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    // Each host answers `echo` with its own tag after `delayMs`; call ids restart at 0 every run.
    const delayedHost = (tag: string, delayMs: number): GuestHost => ({
      call: () =>
        new Promise<HostCallOutcome>((resolve) => setTimeout(() => resolve({ ok: true, valueJson: JSON.stringify(tag) }), delayMs)),
      log() {},
    })
    const runWith = (code: string, host: GuestHost) =>
      engine.run({ code, tools: CONTRACT_TOOLS, limits: resolveLimits(CONTRACT_LIMITS), host, signal: new AbortController().signal })
    // Run A ends at once; its call 0 is answered 30 ms later, while run B waits on its own call 0.
    expect(await runWith('tools.echo({}); return "a"', delayedHost('late answer to a', 30))).toEqual({ ok: true, resultJson: '"a"' })
    expect(await runWith('return await tools.echo({})', delayedHost('b', 120))).toEqual({ ok: true, resultJson: '"b"' })
  })

  it('hands the guest answers bigger than the answer ring whole, beside small ones', async () => {
    await using engine = createQuickJSEngine({ workers: 1, limits: { memoryLimitBytes: 256 * 1024 * 1024 } })
    // 1.5 M characters, 2 bytes each in UTF-8: three times the answer ring's room, so it cannot go
    // through the ring; the small answers of the same turn can.
    const big = 'é'.repeat(1_500_000)
    const host: GuestHost = {
      call: async (_name, argsJson) => {
        const { n } = JSON.parse(argsJson) as { n: number }
        return { ok: true, valueJson: JSON.stringify(n % 3 === 1 ? `${n}${big}` : `${n}`) }
      },
      log() {},
    }
    const code =
      'const got = await Promise.all([0, 1, 2, 3, 4, 5].map((n) => tools.echo({ n })))\n' +
      'const seq = []\nfor (let n = 0; n < 4; n++) seq.push(await tools.echo({ n }))\n' +
      'return [...got, ...seq].map((s) => s.length + ":" + s.slice(0, 2) + ":" + s.slice(-1))'
    const result = await engine.run({ code, tools: CONTRACT_TOOLS, limits: resolveLimits({ ...CONTRACT_LIMITS, memoryLimitBytes: 256 * 1024 * 1024 }), host, signal: new AbortController().signal })
    const long = (n: number) => `${1 + big.length}:${n}é:é`
    expect(result).toEqual({ ok: true, resultJson: JSON.stringify(['1:0:0', long(1), '1:2:2', '1:3:3', long(4), '1:5:5', '1:0:0', long(1), '1:2:2', '1:3:3']) })
  }, 30_000)

  it('settles answers in the order the host gave them, whether they came by the answer ring or the port', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    // Call 0's answer is too big for the answer ring (the port takes it), call 1's is small; both
    // arrive while the guest is busy, so the worker takes them together.
    const big = 'é'.repeat(1_200_000)
    const host: GuestHost = {
      call: (_name, argsJson) => {
        const { n } = JSON.parse(argsJson) as { n: number }
        const [delayMs, value] = n === 0 ? [20, big] : n === 1 ? [60, 'small'] : [0, 'now']
        return new Promise((resolve) => setTimeout(() => resolve({ ok: true, valueJson: JSON.stringify(value) }), delayMs))
      },
      log() {},
    }
    const code =
      'const order = []\n' +
      "const a = tools.echo({ n: 0 }).then(() => order.push('big'))\n" +
      "const b = tools.echo({ n: 1 }).then(() => order.push('small'))\n" +
      'await tools.echo({ n: 2 })\n' +
      'const until = Date.now() + 150\nwhile (Date.now() < until) {}\n' +
      'await Promise.all([a, b])\nreturn order'
    const limits = resolveLimits({ ...CONTRACT_LIMITS, memoryLimitBytes: 64 * 1024 * 1024 })
    const result = await engine.run({ code, tools: CONTRACT_TOOLS, limits, host, signal: new AbortController().signal })
    expect(result).toEqual({ ok: true, resultJson: '["big","small"]' })
  })

  it('hands the guest a lone surrogate in an answer as it is', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    const host: GuestHost = { call: async () => ({ ok: true, valueJson: '"a\uD800b"' }), log() {} }
    const code = 'const s = await tools.echo({})\nreturn [s.length, s.charCodeAt(1)]'
    const result = await engine.run({ code, tools: CONTRACT_TOOLS, limits: resolveLimits(CONTRACT_LIMITS), host, signal: new AbortController().signal })
    expect(result).toEqual({ ok: true, resultJson: '[3,55296]' })
  })

  it('starts runs on prepared contexts that never carry state from an earlier run', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    const probe = 'const seen = typeof globalThis.mark; globalThis.mark = 1; return [seen, typeof tools.echo, Object.isFrozen(console)]'
    const fresh = { ok: true, resultJson: '["undefined","function",true]' }
    for (let i = 0; i < 5; i++) expect(await runOn(engine, probe)).toEqual(fresh)
    // Queued back to back, so most of these start while the worker is still preparing.
    const results = await Promise.all(Array.from({ length: 5 }, () => runOn(engine, probe)))
    for (const result of results) expect(result).toEqual(fresh)
  })

  it('runs a program whose memory limit differs from the warm workers', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    expect(await runOn(engine, 'return 3', { memoryLimitBytes: 16 * 1024 * 1024 })).toEqual({ ok: true, resultJson: '3' })
  })

  describe('holds a program to its memory limit', () => {
    const MIB = 1024 * 1024
    // Holds `mib` MiB of distinct 64 KiB one-byte strings (QuickJS copies a slice).
    const hold = (mib: number): string =>
      `const s = 'x'.repeat(65536)\nconst held = []\nfor (let i = 0; i < ${mib * 16}; i++) held.push(s.slice(1) + (i % 10))\nreturn held.length`

    it('and not to the limit plus the free part of the WASM module’s first 16 MiB', async () => {
      await using engine = createQuickJSEngine({ workers: 1, limits: { memoryLimitBytes: 4 * MIB } })
      const limits = { memoryLimitBytes: 4 * MIB }
      expect(await runOn(engine, hold(3), limits)).toEqual({ ok: true, resultJson: String(3 * 16) })
      // Before the base pages were reserved, about 10 MiB more than the limit fit.
      const over = await runOn(engine, hold(8), limits)
      expect(over.ok === false && over.error).toMatchObject({ kind: 'limit', limit: 'memoryLimitBytes' })
      expect(await runOn(engine, hold(3), limits)).toEqual({ ok: true, resultJson: String(3 * 16) })
    })

    it('of at least 1 MiB: a smaller limit still runs programs, and still bounds them', async () => {
      await using engine = createQuickJSEngine({ workers: 1, limits: { memoryLimitBytes: 1024 } })
      const limits = { memoryLimitBytes: 1024 }
      expect(await runOn(engine, 'console.log("hi")\nreturn [1, 2, 3].map((n) => n * 2)', limits)).toEqual({ ok: true, resultJson: '[2,4,6]' })
      const over = await runOn(engine, hold(2), limits)
      expect(over.ok === false && over.error).toMatchObject({ kind: 'limit', limit: 'memoryLimitBytes' })
    })
  })
})

describe('quickjs: every run starts from the image of a context no program has used', () => {
  const rebuilt = (engine: SandboxEngine): number => (engine as unknown as { rebuiltModules: number }).rebuiltModules
  const valueOf = (result: EngineRunResult): unknown => {
    if (!result.ok) throw new Error(`the run failed: ${JSON.stringify(result.error)}`)
    return JSON.parse(result.resultJson)
  }

  it('gives each run its own Math.random numbers', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    const drawn = new Set<number>()
    for (let i = 0; i < 4; i++) {
      const numbers = valueOf(await runOn(engine, 'return [Math.random(), Math.random(), Math.random()]')) as number[]
      for (const n of numbers) {
        expect(n).toBeGreaterThanOrEqual(0)
        expect(n).toBeLessThan(1)
        drawn.add(n)
      }
    }
    expect(drawn.size).toBe(12)
    // The same module served every run: its image was restored, not rebuilt.
    expect(rebuilt(engine)).toBe(0)
  })

  it('undoes whatever a run changed: globals, intrinsics, prototypes', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    const polluter = [
      'globalThis.mark = 1',
      'Object.prototype.polluted = 1',
      "Array.prototype.push = function () { return 'hijacked' }",
      "JSON.stringify = () => '\"forged\"'",
      "Promise.prototype.then = function () { throw new Error('hijacked') }",
      "Object.defineProperty(globalThis, 'tools', { value: 'gone' })",
      'Math.random = () => 0.5',
      'delete globalThis.Date',
      'Object.freeze(Object.prototype)',
      'return 1',
    ].join('\n')
    const probe = [
      "console.log('still logged')",
      "const echoed = await tools.echo({ a: [1] })",
      'const list = []',
      'return [typeof globalThis.mark, ({}).polluted ?? null, list.push(7), JSON.stringify({ a: 1 }), typeof Date, Object.isFrozen(Object.prototype), Math.random() === 0.5, echoed]',
    ].join('\n')
    const pristine = [ 'undefined', null, 1, '{"a":1}', 'function', false, false, { a: [1] } ]
    for (let i = 0; i < 3; i++) {
      expect(await runOn(engine, polluter)).toEqual({ ok: true, resultJson: '1' })
      const host = fakeHost()
      const result = await runOn(engine, probe, {}, undefined, host)
      expect(valueOf(result)).toEqual(pristine)
      expect(host.logs).toEqual([{ level: 'log', text: 'still logged' }])
    }
    expect(rebuilt(engine)).toBe(0)
  })

  it('gives the next run the whole heap back, and still holds it to its limit', async () => {
    const MIB = 1024 * 1024
    const limits = { memoryLimitBytes: 16 * MIB }
    await using engine = createQuickJSEngine({ workers: 1, limits })
    // Keeps `mib` MiB reachable from a global when the program returns.
    const keep = (mib: number): string =>
      `const s = 'x'.repeat(65536)\nglobalThis.kept = []\nfor (let i = 0; i < ${mib * 16}; i++) kept.push(s.slice(1) + (i % 10))\nreturn kept.length`
    for (let i = 0; i < 4; i++) expect(await runOn(engine, keep(7), limits)).toEqual({ ok: true, resultJson: String(7 * 16) })
    expect(rebuilt(engine)).toBe(0)
    const over = await runOn(engine, keep(24), limits)
    expect(over.ok === false && over.error).toMatchObject({ kind: 'limit', limit: 'memoryLimitBytes' })
    expect(rebuilt(engine)).toBe(1)
    for (let i = 0; i < 2; i++) expect(await runOn(engine, keep(7), limits)).toEqual({ ok: true, resultJson: String(7 * 16) })
    expect(await runOn(engine, keep(24), limits)).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'memoryLimitBytes' } })
  })

  it('runs program after program of every kind on one module, each as if it were the first', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    const programs: [code: string, check: (result: EngineRunResult, host: ReturnType<typeof fakeHost>) => void][] = [
      ['return { big: Array.from({ length: 2000 }, (_, i) => ({ i, s: "v" + i })) }.big.length', (r) => expect(r).toEqual({ ok: true, resultJson: '2000' })],
      ["throw new TypeError('thrown')", (r) => expect(r).toMatchObject({ ok: false, error: { kind: 'guest', name: 'TypeError', message: 'thrown', line: 1 } })],
      ["throw 'a string'", (r) => expect(r).toMatchObject({ ok: false, error: { kind: 'guest' } })],
      ["console.log('x', { y: [1, 2] })\nreturn 2", (r, h) => { expect(r).toEqual({ ok: true, resultJson: '2' }); expect(h.logs).toEqual([{ level: 'log', text: 'x {"y":[1,2]}' }]) }],
      ['const all = await Promise.all(Array.from({ length: 20 }, (_, i) => tools.echo({ i })))\nreturn all.map((a) => a.i).join()', (r) => expect(r).toEqual({ ok: true, resultJson: JSON.stringify(Array.from({ length: 20 }, (_, i) => i).join()) })],
      ['void tools.never({})\nreturn 3', (r) => expect(r).toEqual({ ok: true, resultJson: '3' })],
      ["await tools.fail({})", (r) => expect(r).toMatchObject({ ok: false, error: { kind: 'guest', code: 'TOOL_FAILED' } })],
      ['const m = new Map()\nfor (let i = 0; i < 50000; i++) m.set("k" + i, { i })\nreturn m.size', (r) => expect(r).toEqual({ ok: true, resultJson: '50000' })],
    ]
    for (let round = 0; round < 6; round++) {
      for (const [code, check] of programs) {
        const host = fakeHost()
        check(await runOn(engine, code, {}, undefined, host), host)
      }
    }
    expect(rebuilt(engine)).toBe(0)
  }, 60_000)

  it('restores the image after a value that is not JSON, and throws the module away after a result over its limit', async () => {
    await using engine = createQuickJSEngine({ workers: 1 })
    const notJson = ['return 10n', 'return Symbol()', 'return { toJSON() { return () => 1 } }', 'return [1, NaN]', 'const a = []\na.push(a)\nreturn a']
    for (const code of notJson) {
      const result = await runOn(engine, code)
      expect(result.ok === false && result.error, code).toMatchObject({ kind: 'result' })
      expect(await runOn(engine, 'return 1')).toEqual({ ok: true, resultJson: '1' })
    }
    expect(rebuilt(engine)).toBe(0)
    const over = await runOn(engine, "return 'x'.repeat(100)", { maxResultBytes: 50 })
    expect(over.ok === false && over.error).toMatchObject({ kind: 'limit', limit: 'maxResultBytes' })
    expect(rebuilt(engine)).toBe(1)
    expect(await runOn(engine, 'return 2')).toEqual({ ok: true, resultJson: '2' })
  })

  it('keeps its host functions for the next run when a program drops every reference it had to them', async () => {
    // The console's methods are the program's only path to the host's log function: dropping them
    // lets QuickJS free it during the run. The image brings the function back; the host's table of
    // functions, outside the module's memory, must still know it.
    await using engine = createQuickJSEngine({ workers: 1 })
    const droppers = [
      'globalThis.console = {}\nreturn 1',
      'delete globalThis.console\nreturn 1',
      "Object.defineProperty(globalThis, 'console', { value: null })\nreturn 1",
    ]
    for (const dropper of droppers) {
      expect(await runOn(engine, dropper)).toEqual({ ok: true, resultJson: '1' })
      const host = fakeHost()
      expect(await runOn(engine, "console.log('a')\nconsole.error('b')\nreturn 2", {}, undefined, host)).toEqual({ ok: true, resultJson: '2' })
      expect(host.logs, dropper).toEqual([{ level: 'log', text: 'a' }, { level: 'error', text: 'b' }])
    }
    expect(rebuilt(engine)).toBe(0)
  })
})

describe("quickjs: the prelude's deferred part, compiled by the run that first needs it", () => {
  // Never compiled ahead (precompileDeferred false), against the default (compiled into the context
  // the worker prepares, before it takes the image every run starts from).
  const withoutAhead = (): SandboxEngine => createQuickJSEngine({ workers: 1, precompileDeferred: false, limits: { memoryLimitBytes: 16 << 20 } })
  const withAhead = (): SandboxEngine => createQuickJSEngine({ workers: 1, limits: { memoryLimitBytes: 16 << 20 } })

  async function outcome(engine: SandboxEngine, code: string, limits: Partial<typeof CONTRACT_LIMITS> = {}) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    const host = fakeHost()
    const result = await runOn(engine, code, { memoryLimitBytes: 16 << 20, ...limits }, undefined, host)
    return { result, logs: host.logs }
  }

  const PROGRAMS = [
    'console.log("a", { b: [1, 2] }, [undefined, -0])\nconsole.warn(new RangeError("w"))\nreturn 1',
    'const x = 1\nnull.f(x)',
    "throw { code: 'E_CUSTOM', message: 'custom' }",
    'await tools.fail({})',
  ]

  it('logs and describes errors exactly as a run that found it compiled', async () => {
    await using lazy = withoutAhead()
    await using ahead = withAhead()
    for (const code of PROGRAMS) {
      const got = await outcome(lazy, code)
      expect(got, code).toEqual(await outcome(ahead, code))
    }
  }, 30_000)

  it('reports an error it cannot describe on a full heap as the memory limit', async () => {
    // The program fills its heap for good, then throws an error made before: describing it needs
    // the deferred part, which no longer fits. A run that found it compiled describes the error.
    const code = "const full = new TypeError('the heap is full')\nglobalThis.keep = []\ntry { for (;;) keep.push({}) } catch (e) { throw full }"
    await using lazy = withoutAhead()
    await using ahead = withAhead()
    expect((await outcome(lazy, code)).result).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'memoryLimitBytes' } })
    expect((await outcome(ahead, code)).result).toMatchObject({ ok: false, error: { kind: 'guest', name: 'TypeError', message: 'the heap is full', line: 1 } })
  }, 30_000)

  it('reports an exhausted heap as the memory limit', async () => {
    await using lazy = withoutAhead()
    for (const code of ['const a = []\nfor (;;) a.push("x".repeat(1024) + a.length)', 'globalThis.keep = []\nfor (;;) keep.push({})']) {
      const { result } = await outcome(lazy, code, { cpuTimeMs: 10_000, wallTimeMs: 20_000 })
      expect(result, code).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'memoryLimitBytes' } })
    }
  }, 60_000)

  it("compiles it with the prelude's own eval and intrinsics, whatever the program replaced first", async () => {
    await using lazy = withoutAhead()
    const code = [
      'let touched = 0',
      'const forged = () => { touched++; return () => "forged" }',
      'globalThis.eval = () => { touched++; return () => ({ format: forged, describeError: forged }) }',
      'for (const name of ["format", "describeError", "kit", "JSONstringify", "clip", "list"]) {',
      '  Object.defineProperty(Object.prototype, name, { get() { touched++; return forged }, set() { touched++ }, configurable: true })',
      '}',
      'Function.prototype.call = Function.prototype.apply = forged',
      'Array.prototype.join = forged',
      'console.log("x", { a: [1] })',
      'console.log(touched)',
      "throw new TypeError('real ' + touched)",
    ].join('\n')
    const { result, logs } = await outcome(lazy, code)
    expect(logs).toEqual([
      { level: 'log', text: 'x {"a":[1]}' },
      { level: 'log', text: '0' },
    ])
    expect(result).toMatchObject({ ok: false, error: { kind: 'guest', name: 'TypeError', message: 'real 0', line: 11 } })
  })
})

describe('quickjs engine: waiting is not holding', () => {
  function runAs(engine: SandboxEngine, tenant: object, code: string, signal: AbortSignal, overrides: Partial<typeof CONTRACT_LIMITS> = {}, host = fakeHost()) {
    return engine.run({ code, tools: CONTRACT_TOOLS, limits: resolveLimits({ ...CONTRACT_LIMITS, ...overrides }), host, signal, tenant })
  }
  const valueOf = (result: EngineRunResult): unknown => (result.ok ? JSON.parse(result.resultJson) : result.error)

  it("serves another agent's run while twelve agents' programs await a tool or a promise that never settles", async () => {
    await using engine = createQuickJSEngine({ workers: 2 })
    const stop = new AbortController()
    const host = fakeHost()
    // Far past the test's own timeout: a run waiting for one of these to end would fail the test.
    const holders = Array.from({ length: 12 }, (_, i) =>
      runAs(engine, {}, i % 2 === 0 ? 'await tools.never({})' : 'await new Promise(() => {})', stop.signal, { wallTimeMs: 600_000 }, host),
    )
    try {
      const bystander = await runAs(engine, {}, 'return 1', new AbortController().signal)
      expect(valueOf(bystander)).toBe(1)
    } finally {
      stop.abort()
      expect((await Promise.all(holders)).map((r) => !r.ok && r.error.kind)).toEqual(Array(12).fill('aborted'))
    }
  })

  it.skipIf(process.platform !== 'linux')(
    'starts no spare worker for a run while the other free worker only gets ready after its run (counted in /proc threads, Linux only)',
    async () => {
      await using engine = createQuickJSEngine({ workers: 2, maxWorkers: 8 })
      const threads = (): number => readdirSync('/proc/self/task').length
      const stop = new AbortController()
      const bystander = {}
      const holder = runAs(engine, {}, 'await new Promise(() => {})', stop.signal, { wallTimeMs: 600_000 })
      try {
        // The holder under way, its spare started, every worker ready.
        for (let i = 0; i < 3; i++) expect(valueOf(await runAs(engine, bystander, 'return 1', new AbortController().signal))).toBe(1)
        await new Promise((resolve) => setTimeout(resolve, 1_000))
        const before = threads()
        // A run stopped at a limit leaves its worker building a fresh module for a while after it.
        const stopped = await runAs(engine, bystander, 'for (;;) {}', new AbortController().signal, { cpuTimeMs: 50 })
        expect(stopped).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'cpuTimeMs' } })
        expect(valueOf(await runAs(engine, bystander, 'return 1', new AbortController().signal))).toBe(1)
        expect(threads()).toBeLessThanOrEqual(before)
      } finally {
        stop.abort()
        await holder
      }
    },
  )

  it("counts the time a run waits for a worker in its wall time, and ends it there", async () => {
    await using engine = createQuickJSEngine({ workers: 1, maxWorkers: 1 })
    const stop = new AbortController()
    const holder = runAs(engine, {}, 'await new Promise(() => {})', stop.signal, { wallTimeMs: 600_000 })
    try {
      const queued = await runAs(engine, {}, 'return 1', new AbortController().signal, { wallTimeMs: 300 })
      expect(queued).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'wallTimeMs' } })
    } finally {
      stop.abort()
      await holder
    }
  })

  it("keeps workers for other agents while one agent's programs only await, at the pool's ceiling", async () => {
    await using engine = createQuickJSEngine({ workers: 1, maxWorkers: 4, maxWorkersPerAgent: 2 })
    const hog = {}
    const stop = new AbortController()
    const held = Array.from({ length: 8 }, () => runAs(engine, hog, 'await new Promise(() => {})', stop.signal, { wallTimeMs: 600_000 }))
    try {
      expect(valueOf(await runAs(engine, {}, 'return 1', new AbortController().signal))).toBe(1)
    } finally {
      stop.abort()
      await Promise.all(held)
    }
  })

  it('says a run that waited its whole wall time for a worker never started', async () => {
    await using engine = createQuickJSEngine({ workers: 1, maxWorkers: 1 })
    const stop = new AbortController()
    const holder = runAs(engine, {}, 'await new Promise(() => {})', stop.signal, { wallTimeMs: 600_000 })
    try {
      const queued = await runAs(engine, {}, 'return 1', new AbortController().signal, { wallTimeMs: 200 })
      expect(queued).toMatchObject({ ok: false, error: { kind: 'limit', limit: 'wallTimeMs', message: expect.stringContaining('never started') } })
    } finally {
      stop.abort()
      await holder
    }
  })

  it('serves first the waiting run of the agent that holds the fewest workers', async () => {
    await using engine = createQuickJSEngine({ workers: 2, maxWorkers: 2 })
    const alice = {}
    const bob = {}
    const first = new AbortController()
    const second = new AbortController()
    const hang = (signal: AbortSignal) => runAs(engine, alice, 'await new Promise(() => {})', signal, { wallTimeMs: 600_000 })
    const held = [hang(first.signal), hang(second.signal)]
    await new Promise((resolve) => setTimeout(resolve, 100))
    const order: string[] = []
    const aliceThird = runAs(engine, alice, 'return "alice"', new AbortController().signal, { wallTimeMs: 600_000 }).then((r) => order.push(String(valueOf(r))))
    const bobFirst = runAs(engine, bob, 'return "bob"', new AbortController().signal, { wallTimeMs: 600_000 }).then((r) => order.push(String(valueOf(r))))
    // Alice's run came first, but she holds both workers: the one freed goes to Bob.
    first.abort()
    await bobFirst
    expect(order).toEqual(['bob'])
    second.abort()
    await aliceThird
    expect(order).toEqual(['bob', 'alice'])
    await Promise.all(held)
  })
})

describe('quickjs engine: shutdown', () => {
  it.each([
    ['spinning', 'exit'],
    ['flood', 'exit'],
    ['after-cpu-limit', 'exit'],
    ['awaiting', 'exit'],
    ['spinning', 'dispose'],
    ['flood', 'dispose'],
  ])('lets the process exit cleanly at once, %s, by %s', async (moment, how) => {
    await expectCleanExit('quickjs', moment, how)
  }, 60_000)
})
