import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DisposedError } from '../../src/errors.ts'
import type {
  EngineFailure,
  EngineRunResult,
  GuestHost,
  HostCallOutcome,
  LogEntry,
  SandboxEngine,
  SandboxLimitName,
  SandboxLimits,
  ToolBinding,
} from '../../sandbox/engine.ts'
import { resolveLimits } from '../../sandbox/limits.ts'

/**
 * The contract every sandbox engine keeps, run UNCHANGED against each of them
 * (`engineContract('quickjs', () => createQuickJSEngine())`). It talks to the engine only through
 * `SandboxEngine` and a fake `GuestHost`, so a failure here is a broken contract, not a detail.
 * Limits are small so the suite stays fast; ordering, not timing, proves overlap.
 */

/** The bindings every contract run gets. `readFile` proves binding and tool name are distinct. */
export const CONTRACT_TOOLS: readonly ToolBinding[] = Object.freeze([
  { binding: 'echo', name: 'echo' },
  { binding: 'sleep5', name: 'sleep5' },
  { binding: 'fail', name: 'fail' },
  { binding: 'never', name: 'never' },
  { binding: 'readFile', name: 'fs.read_file' },
  { binding: 'gate100', name: 'gate100' },
])

/** Limits of every contract run unless a test overrides one. Memory stays fixed across the suite. */
export const CONTRACT_LIMITS: SandboxLimits = resolveLimits({
  wallTimeMs: 2_000,
  cpuTimeMs: 500,
  memoryLimitBytes: 32 * 1024 * 1024,
  maxSubCalls: 500,
  maxSubCallsInFlight: 200,
})

/** A `GuestHost` that records everything and answers from a few canned tools. */
export interface FakeHost extends GuestHost {
  /** Every call the engine delivered, in delivery order. */
  readonly calls: { readonly name: string; readonly argsJson: string }[]
  /** `start:<n>` / `settle:<n>` in the order they happened (n counts calls from 0). */
  readonly events: string[]
  readonly logs: LogEntry[]
  /** Settle every pending `never` call (with `null`). */
  releaseNever(): void
}

/**
 * A fresh fake host: `echo` returns its arguments, `sleep5` too after 5 ms, `fail` fails with a
 * code, `never` waits for `releaseNever()`, and `gate100` returns its arguments once 100 of its
 * calls are in flight together (a run that does not overlap them never gets an answer).
 */
export function fakeHost(): FakeHost {
  const calls: { name: string; argsJson: string }[] = []
  const events: string[] = []
  const logs: LogEntry[] = []
  const pendingNever: (() => void)[] = []
  const pendingGate: (() => void)[] = []
  return {
    calls,
    events,
    logs,
    releaseNever() {
      for (const release of pendingNever.splice(0)) release()
    },
    call(name, argsJson): Promise<HostCallOutcome> {
      const n = calls.length
      calls.push({ name, argsJson })
      events.push(`start:${n}`)
      const settle = (outcome: HostCallOutcome): HostCallOutcome => {
        events.push(`settle:${n}`)
        return outcome
      }
      switch (name) {
        case 'echo':
          return Promise.resolve(settle({ ok: true, valueJson: argsJson }))
        case 'fs.read_file':
          return Promise.resolve(settle({ ok: true, valueJson: JSON.stringify({ tool: name, args: JSON.parse(argsJson) }) }))
        case 'gate100':
          return new Promise((resolve) => {
            pendingGate.push(() => resolve(settle({ ok: true, valueJson: argsJson })))
            if (pendingGate.length === 100) for (const release of pendingGate.splice(0)) release()
          })
        case 'sleep5':
          return new Promise((resolve) => setTimeout(() => resolve(settle({ ok: true, valueJson: argsJson })), 5))
        case 'fail':
          return Promise.resolve(settle({ ok: false, message: 'the tool failed on purpose', code: 'TOOL_FAILED' }))
        case 'never':
          return new Promise((resolve) => pendingNever.push(() => resolve(settle({ ok: true, valueJson: 'null' }))))
        default:
          return Promise.resolve(settle({ ok: false, message: `no tool ${name}`, code: 'UNKNOWN_TOOL' }))
      }
    },
    log(entry) {
      logs.push(entry)
    },
  }
}

/** Per-run overrides of {@link run}. */
export interface RunOptions {
  readonly limits?: Partial<SandboxLimits>
  readonly host?: FakeHost
  readonly signal?: AbortSignal
  readonly tenant?: object
}

/** Run `code` with the contract's tools and limits (overridable) on a fresh fake host. */
export function run(engine: SandboxEngine, code: string, options: RunOptions = {}): Promise<EngineRunResult> {
  return engine.run({
    code,
    tools: CONTRACT_TOOLS,
    limits: resolveLimits({ ...CONTRACT_LIMITS, ...options.limits }),
    host: options.host ?? fakeHost(),
    signal: options.signal ?? new AbortController().signal,
    ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
  })
}

/** The parsed value of a successful run; fails the test with the failure otherwise. */
export function valueOf(result: EngineRunResult): unknown {
  if (!result.ok) expect.fail(`expected a value, got ${JSON.stringify(result.error)}`)
  return JSON.parse(result.resultJson)
}

function failureOf(result: EngineRunResult): EngineFailure {
  if (result.ok) expect.fail(`expected a failure, got ${result.resultJson}`)
  return result.error
}

function expectLimit(result: EngineRunResult, limit: SandboxLimitName): void {
  const failure = failureOf(result)
  expect(failure).toMatchObject({ kind: 'limit', limit })
  expect(failure.message).not.toBe('')
}

const HOST_PATH_MARKERS = ['/work/', 'node_modules', 'file://', process.cwd()]

/** Runs the shared engine contract. `makeEngine` is called once for the suite, and per test where noted. */
export function engineContract(name: string, makeEngine: () => Promise<SandboxEngine> | SandboxEngine): void {
  describe(`engine contract: ${name}`, () => {
    let engine: SandboxEngine

    beforeAll(async () => {
      engine = await makeEngine()
    })
    afterAll(async () => {
      await engine.dispose()
    })

    /** After a breach the engine must still run the next program on the same instance. */
    async function expectEngineStillWorks(): Promise<void> {
      expect(valueOf(await run(engine, 'return 6 * 7'))).toBe(42)
    }

    describe('values', () => {
      it('returns a number as JSON text', async () => {
        const result = await run(engine, 'return 1')
        expect(result).toEqual({ ok: true, resultJson: '1' })
      })

      it('reports the engine name', () => {
        expect(engine.name).toBe(name)
      })

      it('returns nested objects and arrays', async () => {
        const result = await run(engine, 'return { a: [1, "two", null, true], b: { c: -1.5 } }')
        expect(valueOf(result)).toEqual({ a: [1, 'two', null, true], b: { c: -1.5 } })
      })

      it('turns a top-level undefined result into null', async () => {
        expect(await run(engine, 'const x = 1')).toEqual({ ok: true, resultJson: 'null' })
      })

      it('omits object properties whose value is undefined', async () => {
        expect(valueOf(await run(engine, 'return { a: 1, b: undefined }'))).toEqual({ a: 1 })
      })

      it('returns a Date as its ISO string', async () => {
        expect(valueOf(await run(engine, 'return new Date(0)'))).toBe('1970-01-01T00:00:00.000Z')
      })

      it('supports top-level await', async () => {
        expect(valueOf(await run(engine, 'const x = await Promise.resolve(20)\nreturn x + 1'))).toBe(21)
      })

      it('runs modern plain JavaScript', async () => {
        const code = [
          'class Counter { #n = 0; inc() { return ++this.#n } }',
          'const c = new Counter(); c.inc(); c.inc()',
          'const { a, ...rest } = { a: 1, b: 2, c: 3 }',
          'const m = new Map([[1, "x"]])',
          'return { n: c.inc(), rest, m: [...m.values()], opt: rest?.z ?? "none" }',
        ].join('\n')
        expect(valueOf(await run(engine, code))).toEqual({ n: 3, rest: { b: 2, c: 3 }, m: ['x'], opt: 'none' })
      })

      it('runs concurrent programs independently', async () => {
        const results = await Promise.all(
          Array.from({ length: 6 }, (_, i) => run(engine, `await tools.sleep5({}); return ${i}`)),
        )
        expect(results.map(valueOf)).toEqual([0, 1, 2, 3, 4, 5])
      })
    })

    describe('sub-calls', () => {
      it('returns the value of a sub-call to the program', async () => {
        const host = fakeHost()
        const result = await run(engine, 'return await tools.echo({ x: 1, y: ["z"] })', { host })
        expect(valueOf(result)).toEqual({ x: 1, y: ['z'] })
        expect(host.calls).toEqual([{ name: 'echo', argsJson: '{"x":1,"y":["z"]}' }])
      })

      it('dispatches a binding under its registered tool name', async () => {
        const host = fakeHost()
        const result = await run(engine, 'return await tools.readFile({ path: "a.txt" })', { host })
        expect(valueOf(result)).toEqual({ tool: 'fs.read_file', args: { path: 'a.txt' } })
        expect(host.calls.map((c) => c.name)).toEqual(['fs.read_file'])
      })

      it('sends {} when a tool is called without an argument', async () => {
        const host = fakeHost()
        await run(engine, 'await tools.echo()', { host })
        expect(host.calls).toEqual([{ name: 'echo', argsJson: '{}' }])
      })

      it('throws a failed sub-call into the program as an Error with message and code', async () => {
        const code = [
          'try { await tools.fail({}) } catch (e) {',
          '  return { isError: e instanceof Error, message: e.message, code: e.code }',
          '}',
        ].join('\n')
        expect(valueOf(await run(engine, code))).toEqual({
          isError: true,
          message: 'the tool failed on purpose',
          code: 'TOOL_FAILED',
        })
      })

      it('answers an unknown tool with an error listing the available tools', async () => {
        const code = 'try { await tools.nope({}) } catch (e) { return { message: e.message, code: e.code } }'
        const value = valueOf(await run(engine, code)) as { message: string; code: string }
        expect(value.code).toBe('UNKNOWN_TOOL')
        expect(value.message).toContain('nope')
        for (const t of CONTRACT_TOOLS) expect(value.message).toContain(t.binding)
      })

      it('lists the bindings as the keys of tools', async () => {
        const result = await run(engine, 'return Object.keys(tools)')
        expect(valueOf(result)).toEqual(CONTRACT_TOOLS.map((t) => t.binding))
      })

      it('rejects non-JSON arguments inside the guest with the path, without calling the host', async () => {
        const host = fakeHost()
        const code = 'try { await tools.echo({ a: [1, 2, () => 3] }) } catch (e) { return [e.name, e.message] }'
        const [errorName, message] = valueOf(await run(engine, code, { host })) as [string, string]
        expect(errorName).toBe('TypeError')
        expect(message).toContain('$.a[2]')
        expect(host.calls).toEqual([])
      })

      it('turns every failure before a call is sent into a rejection of its promise, never a throw at the call', async () => {
        const host = fakeHost()
        const code = `
const outcomes = []
const attempt = (arg) => {
  let promise
  try { promise = tools.echo(arg) } catch (e) { outcomes.push('threw ' + e.message); return }
  outcomes.push(promise instanceof Promise ? 'promise' : 'not a promise')
  return promise.then(() => 'sent', (e) => e.name + ': ' + e.message)
}
const settled = await Promise.all([
  attempt({ get a() { throw new Error('getter boom') } }),
  attempt(new Proxy({}, { getPrototypeOf() { throw new Error('trap boom') } })),
  attempt({ f() {} }),
  attempt({ ok: 1 }),
])
return [outcomes, settled]`
        const [outcomes, settled] = valueOf(await run(engine, code, { host })) as [string[], string[]]
        expect(outcomes).toEqual(['promise', 'promise', 'promise', 'promise'])
        expect(settled[0]).toBe('Error: getter boom')
        expect(settled[1]).toBe('Error: trap boom')
        expect(settled[2]).toMatch(/^TypeError: tools\.echo: the argument is not JSON: a function at \$\.f$/)
        expect(settled[3]).toBe('sent')
        expect(host.calls.map((c) => c.argsJson)).toEqual(['{"ok":1}'])
      })

      it('starts sub-calls in program order', async () => {
        const host = fakeHost()
        const code = 'await Promise.all([tools.echo({ n: 1 }), tools.sleep5({ n: 2 }), tools.echo({ n: 3 })])'
        await run(engine, code, { host })
        expect(host.calls.map((c) => JSON.parse(c.argsJson).n)).toEqual([1, 2, 3])
      })

      it('overlaps Promise.all over 100 sub-calls: every start comes before the first settle', async () => {
        const host = fakeHost()
        // The gate answers only once all 100 are in flight: no timing, only overlap, lets it pass.
        const code = 'const r = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.gate100({ i })))\nreturn r.map((x) => x.i)'
        const result = await run(engine, code, { host })
        expect(valueOf(result)).toEqual(Array.from({ length: 100 }, (_, i) => i))
        const firstSettle = host.events.findIndex((e) => e.startsWith('settle:'))
        expect(host.events.slice(0, firstSettle).filter((e) => e.startsWith('start:'))).toHaveLength(100)
      })

      it('ends a run that returns while its sub-calls are pending, and ignores their late answers', async () => {
        const host = fakeHost()
        const result = await run(engine, 'tools.never({}); tools.never({}); return "done"', { host })
        expect(valueOf(result)).toBe('done')
        host.releaseNever()
        await new Promise((resolve) => setTimeout(resolve, 20))
        await expectEngineStillWorks()
      })
    })

    describe('console', () => {
      it('captures each console level in order', async () => {
        const host = fakeHost()
        const code = 'console.log("a", 1); console.info("b"); console.warn("c"); console.error("d")'
        await run(engine, code, { host })
        expect(host.logs).toEqual([
          { level: 'log', text: 'a 1' },
          { level: 'info', text: 'b' },
          { level: 'warn', text: 'c' },
          { level: 'error', text: 'd' },
        ])
      })

      it('formats non-string arguments like a console', async () => {
        const host = fakeHost()
        await run(engine, 'console.log({ a: [1, "x"] }, undefined, null, 2n, new Error("boom"))', { host })
        expect(host.logs).toEqual([{ level: 'log', text: '{"a":[1,"x"]} undefined null 2n Error: boom' }])
      })

      it('delivers logs written before a later kill', async () => {
        const host = fakeHost()
        const result = await run(engine, 'console.log("before")\nwhile (true) {}', { host, limits: { cpuTimeMs: 200 } })
        expectLimit(result, 'cpuTimeMs')
        expect(host.logs).toEqual([{ level: 'log', text: 'before' }])
      })
    })

    describe('guest failures', () => {
      it('reports an uncaught error with its name, message and program line', async () => {
        const result = await run(engine, 'const a = 1\n\nthrow new TypeError("bad thing " + a)')
        expect(failureOf(result)).toMatchObject({ kind: 'guest', name: 'TypeError', message: 'bad thing 1', line: 3 })
      })

      it('reports the column on line 1 relative to the program text', async () => {
        const failure = failureOf(await run(engine, 'null.x'))
        expect(failure).toMatchObject({ kind: 'guest', name: 'TypeError', line: 1 })
        expect((failure as { column?: number }).column).toBeLessThanOrEqual(6)
      })

      it('reports an error thrown in a nested function at the line that threw', async () => {
        const code = 'function inner() {\n  throw new RangeError("deep")\n}\nfunction outer() { inner() }\nouter()'
        const failure = failureOf(await run(engine, code))
        expect(failure).toMatchObject({ kind: 'guest', name: 'RangeError', message: 'deep', line: 2 })
        expect((failure as { stack?: string }).stack).toContain(':4:')
      })

      it('reports a thrown non-Error value as a guest failure', async () => {
        const failure = failureOf(await run(engine, 'throw "plain string"'))
        expect(failure.kind).toBe('guest')
        expect(failure.message).toContain('plain string')
      })

      it('reports a syntax error as a guest SyntaxError with its line', async () => {
        const result = await run(engine, 'const a = 1\nconst b = ;\nreturn a')
        expect(failureOf(result)).toMatchObject({ kind: 'guest', name: 'SyntaxError', line: 2 })
      })

      it('reports an unclosed brace as a SyntaxError inside the program', async () => {
        const failure = failureOf(await run(engine, 'if (true) {\n  return 1'))
        expect(failure).toMatchObject({ kind: 'guest', name: 'SyntaxError' })
        const line = (failure as { line?: number }).line
        if (line !== undefined) expect(line).toBeLessThanOrEqual(2)
      })

      const nonJson: [string, string, string][] = [
        ['a cycle', 'const o = { a: 1 }; o.self = o; return o', '$.self'],
        ['a function', 'return { f() {} }', '$.f'],
        ['NaN', 'return { n: 0 / 0 }', '$.n'],
        ['-0', 'return [-0]', '$[0]'],
        ['a BigInt', 'return { b: 10n }', '$.b'],
        ['a sparse array', 'return { list: [1, , 3] }', '$.list[1]'],
        ['a Map', 'return { m: new Map() }', '$.m'],
        ['undefined in an array', 'return [1, undefined]', '$[1]'],
      ]
      for (const [what, code, path] of nonJson) {
        it(`reports a returned value holding ${what} as a result failure at ${path}`, async () => {
          const failure = failureOf(await run(engine, code))
          expect(failure).toMatchObject({ kind: 'result', path })
          expect(failure.message).toContain(path)
        })
      }
    })

    describe('limits', () => {
      it('stops an infinite synchronous loop at the CPU-time limit', async () => {
        expectLimit(await run(engine, 'while (true) {}', { limits: { cpuTimeMs: 200 } }), 'cpuTimeMs')
        await expectEngineStillWorks()
      })

      it('stops a loop that runs after an await at the CPU-time limit', async () => {
        const code = 'await tools.sleep5({})\nlet i = 0\nwhile (true) { i++ }'
        expectLimit(await run(engine, code, { limits: { cpuTimeMs: 200 } }), 'cpuTimeMs')
        await expectEngineStillWorks()
      })

      it('stops a program that never settles at the wall-time limit', async () => {
        expectLimit(await run(engine, 'await new Promise(() => {})', { limits: { wallTimeMs: 300 } }), 'wallTimeMs')
        await expectEngineStillWorks()
      })

      it('stops a microtask flood that runs out of heap at the memory limit, not later at the wall-time limit', async () => {
        // The flood's chain of promises grows without end; out of heap inside a promise job, QuickJS
        // throws nothing but rejects a promise of the program's, which then waits on nothing.
        const code = 'Promise.resolve().then(function f() { return Promise.resolve().then(f) })\nawait new Promise(() => {})'
        expectLimit(await run(engine, code, { limits: { cpuTimeMs: 20_000, wallTimeMs: 60_000 } }), 'memoryLimitBytes')
        await expectEngineStillWorks()
      })

      it('stops a program waiting on a sub-call that never settles at the wall-time limit', async () => {
        expectLimit(await run(engine, 'await tools.never({})', { limits: { wallTimeMs: 300 } }), 'wallTimeMs')
        await expectEngineStillWorks()
      })

      it('stops allocation without end at the memory limit', async () => {
        const code = 'const a = []\nwhile (true) a.push("x".repeat(1024) + a.length)'
        expectLimit(await run(engine, code, { limits: { cpuTimeMs: 5_000, wallTimeMs: 10_000 } }), 'memoryLimitBytes')
        await expectEngineStillWorks()
      })

      it.each([
        ['small objects', 'const a = []\nwhile (true) a.push({})'],
        ['small objects held by a global', 'globalThis.keep = []\nwhile (true) keep.push({ n: keep.length })'],
        ['a Map', 'const m = new Map()\nlet i = 0\nwhile (true) m.set(i, i++)'],
        ['a linked list', 'let l = null\nwhile (true) l = { next: l }'],
      ])('stops allocation of %s without end at the memory limit', async (_what, code) => {
        // QuickJS cannot even build its "out of memory" error here, and throws null.
        expectLimit(await run(engine, code, { limits: { cpuTimeMs: 10_000, wallTimeMs: 20_000 } }), 'memoryLimitBytes')
        // A null the program throws itself, on the next run, is its own.
        const thrown = await run(engine, 'throw null')
        expect(thrown.ok === false && thrown.error).toMatchObject({ kind: 'guest', message: 'Uncaught null' })
      })

      it('reports uncaught runaway recursion as the stack limit', async () => {
        expectLimit(await run(engine, 'function f(n) { return f(n + 1) + 1 }\nreturn f(0)'), 'stackSizeBytes')
        await expectEngineStillWorks()
      })

      it('lets a program catch its own stack overflow', async () => {
        const code = 'function f(n) { return f(n + 1) + 1 }\ntry { f(0) } catch (e) { return "caught" }'
        expect(valueOf(await run(engine, code))).toBe('caught')
      })

      it('stops a program that starts more sub-calls than allowed, at the source', async () => {
        const host = fakeHost()
        const code = 'for (let i = 0; i < 10; i++) await tools.echo({ i })'
        expectLimit(await run(engine, code, { host, limits: { maxSubCalls: 5 } }), 'maxSubCalls')
        expect(host.calls).toHaveLength(5)
        await expectEngineStillWorks()
      })

      it('stops a program with more sub-calls in flight than allowed, at the source', async () => {
        const host = fakeHost()
        const code = 'await Promise.all(Array.from({ length: 10 }, () => tools.sleep5({})))'
        expectLimit(await run(engine, code, { host, limits: { maxSubCallsInFlight: 3 } }), 'maxSubCallsInFlight')
        expect(host.calls.length).toBeLessThanOrEqual(3)
        await expectEngineStillWorks()
      })

      it('stops a loop of un-awaited calls to an instant tool at the in-flight limit, at the source: the host never sees more', async () => {
        // The answers cannot reach a guest that never yields, so they stay in flight for it,
        // however fast the host settles them; a host-side count alone would let the loop queue
        // calls without end.
        const host = fakeHost()
        const code = "const s = 'x'.repeat(10000); for (;;) tools.echo({ s })"
        expectLimit(await run(engine, code, { host, limits: { maxSubCallsInFlight: 5, maxSubCalls: 1_000_000 } }), 'maxSubCallsInFlight')
        expect(host.calls.length).toBeLessThanOrEqual(5)
        await expectEngineStillWorks()
      })

      it('stops a console flood at the log limit', async () => {
        const host = fakeHost()
        const code = 'while (true) console.log("x".repeat(100))'
        expectLimit(await run(engine, code, { host, limits: { maxLogBytes: 1_000 } }), 'maxLogBytes')
        expect(host.logs.reduce((n, e) => n + e.text.length, 0)).toBeLessThanOrEqual(1_000)
        await expectEngineStillWorks()
      })

      it('rejects a giant return value at the result limit', async () => {
        expectLimit(await run(engine, 'return "x".repeat(5000)', { limits: { maxResultBytes: 1_000 } }), 'maxResultBytes')
        await expectEngineStillWorks()
      })

      it('rejects a giant program text at the source limit, counting UTF-8 bytes', async () => {
        const code = 'return "' + 'é'.repeat(600) + '"'
        expectLimit(await run(engine, code, { limits: { maxSourceBytes: 1_000 } }), 'maxSourceBytes')
        await expectEngineStillWorks()
      })
    })

    describe('abort', () => {
      it('stops a synchronous infinite loop when the signal aborts', async () => {
        const controller = new AbortController()
        setTimeout(() => controller.abort(), 50)
        const started = Date.now()
        const result = await run(engine, 'while (true) {}', {
          signal: controller.signal,
          limits: { cpuTimeMs: 20_000, wallTimeMs: 30_000 },
        })
        expect(failureOf(result).kind).toBe('aborted')
        // Far below the CPU limit: the abort, not a limit, ended the run.
        expect(Date.now() - started).toBeLessThan(5_000)
        await expectEngineStillWorks()
      })

      it('stops a program waiting on a sub-call when the signal aborts', async () => {
        const controller = new AbortController()
        const host = fakeHost()
        setTimeout(() => controller.abort(), 30)
        const result = await run(engine, 'await tools.never({})', { host, signal: controller.signal })
        expect(failureOf(result).kind).toBe('aborted')
        host.releaseNever()
        await expectEngineStillWorks()
      })

      it('hears an abort that comes right after the run was asked for, before it started', async () => {
        // A worker is idle, so the lease comes at once; the abort lands before the run listens.
        await expectEngineStillWorks()
        const controller = new AbortController()
        const pending = run(engine, 'await new Promise(() => {})', { signal: controller.signal, limits: { wallTimeMs: 20_000 } })
        controller.abort()
        expect(failureOf(await pending).kind).toBe('aborted')
        await expectEngineStillWorks()
      })

      it('does not run a program whose signal is already aborted', async () => {
        const host = fakeHost()
        const result = await run(engine, 'await tools.echo({})', { host, signal: AbortSignal.abort() })
        expect(failureOf(result).kind).toBe('aborted')
        expect(host.calls).toEqual([])
      })
    })

    describe('failed sub-calls', () => {
      it('are reported at the line the program awaited them when uncaught', async () => {
        const result = await run(engine, 'const a = 1\n\nawait tools.fail({})', { host: fakeHost() })
        expect(failureOf(result)).toMatchObject({ kind: 'guest', name: 'Error', code: 'TOOL_FAILED', line: 3 })
      })
    })

    describe('isolation', () => {
      it('does not leak prototype pollution or globals into the next run', async () => {
        await run(engine, 'Object.prototype.polluted = 1; Array.prototype.push = null; globalThis.leak = 1')
        for (let i = 0; i < 4; i++) {
          const result = await run(engine, 'const a = []; a.push(1); return [typeof ({}).polluted, typeof leak, a.length]')
          expect(valueOf(result)).toEqual(['undefined', 'undefined', 1])
        }
      })

      it('keeps sub-calls and results working after the program pollutes intrinsics', async () => {
        const host = fakeHost()
        const code = [
          'Object.prototype.then = undefined',
          'Array.prototype.push = () => { throw new Error("polluted push") }',
          'Array.prototype.join = () => "polluted"',
          'Array.prototype[Symbol.iterator] = function* () {}',
          'Object.keys = () => ["polluted"]',
          'JSON.stringify = () => "polluted"',
          'JSON.parse = () => "polluted"',
          'const then = Promise.prototype.then',
          'const r = await tools.echo({ a: [1, 2], s: "x" })',
          'return r',
        ].join('\n')
        const result = await run(engine, code, { host })
        expect(valueOf(result)).toEqual({ a: [1, 2], s: 'x' })
        expect(host.calls).toEqual([{ name: 'echo', argsJson: '{"a":[1,2],"s":"x"}' }])
      })

      it('still throws sub-call failures with their code after accessors are planted on Object.prototype', async () => {
        const code = [
          'Object.defineProperty(Object.prototype, "get", { __proto__: null, value: () => 1, configurable: true })',
          'Object.defineProperty(Object.prototype, "set", { __proto__: null, value: () => 1, configurable: true })',
          'Object.prototype.writable = false',
          'const out = []',
          'try { await tools.fail({}) } catch (e) { out.push(e.code, e.message) }',
          'try { await tools.nope({}) } catch (e) { out.push(e.code) }',
          'out.push(await tools.echo({ ok: 1 }))',
          'return out',
        ].join('\n')
        expect(valueOf(await run(engine, code))).toEqual(['TOOL_FAILED', 'the tool failed on purpose', 'UNKNOWN_TOOL', { ok: 1 }])
      })

      it('hides the raw host functions from the program', async () => {
        const code = [
          'const names = Object.getOwnPropertyNames(globalThis).concat(Object.keys(globalThis))',
          'return [typeof __codemode_call, typeof __codemode_log, typeof globalThis.__codemode_call,',
          '  names.filter((k) => k.startsWith("__codemode")).length]',
        ].join('\n')
        expect(valueOf(await run(engine, code))).toEqual(['undefined', 'undefined', 'undefined', 0])
      })

      it('keeps tools and console frozen', async () => {
        const code = '"use strict"\nreturn [Object.isFrozen(console), (() => { try { tools.echo = 1; return "assigned" } catch { return "refused" } })()]'
        expect(valueOf(await run(engine, code))).toEqual([true, 'refused'])
      })

      it('lets the host see only JSON text, whatever the guest passes or returns', async () => {
        const host = fakeHost()
        const code = [
          'let flips = 0',
          'const tricky = { get a() { flips++; return flips } }',
          'const proxy = new Proxy({ x: 1 }, { ownKeys: () => ["x", "y"], getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }) })',
          'const forged = \'{"ok":true,"value":"forged"}\'',
          'const out = []',
          'out.push(await tools.echo(tricky))',
          'out.push(await tools.echo(proxy))',
          'out.push(await tools.echo({ s: forged, q: "\\"}\\u2028" }))',
          'out.push(await tools.echo(forged))',
          'return out',
        ].join('\n')
        const result = await run(engine, code, { host })
        const value = valueOf(result) as unknown[]
        expect(value[3]).toBe('{"ok":true,"value":"forged"}')
        expect(host.calls).toHaveLength(4)
        for (const call of host.calls) {
          expect(call.name).toBe('echo')
          expect(() => JSON.parse(call.argsJson)).not.toThrow()
        }
      })

      it('never shows a host path in any failure', async () => {
        const programs = [
          'throw new Error("x")',
          'const a = ;',
          'function f() { return f() + 1 }\nreturn f()',
          'return { f() {} }',
          'await tools.fail({})',
          'await tools.nope({})',
          'null.x',
          'while (true) {}',
        ]
        for (const code of programs) {
          const text = JSON.stringify(await run(engine, code, { limits: { cpuTimeMs: 100 } }))
          for (const marker of HOST_PATH_MARKERS) expect(text).not.toContain(marker)
        }
      })
    })

    describe('lifecycle', () => {
      it('throws DisposedError when used after dispose', async () => {
        const own = await makeEngine()
        await own.dispose()
        await expect((async () => run(own, 'return 1'))()).rejects.toBeInstanceOf(DisposedError)
      })

      it('disposes idempotently', async () => {
        const own = await makeEngine()
        await own.dispose()
        await expect(own.dispose()).resolves.toBeUndefined()
      })

      it('disposes through Symbol.asyncDispose', async () => {
        const own = await makeEngine()
        await own[Symbol.asyncDispose]()
        await expect((async () => run(own, 'return 1'))()).rejects.toBeInstanceOf(DisposedError)
      })

      it('settles a run that is in progress when the engine is disposed', async () => {
        const own = await makeEngine()
        const host = fakeHost()
        const settled = (async () => run(own, 'await tools.never({})', { host }))().then(
          (result) => (result.ok ? 'ok' : result.error.kind),
          (error: unknown) => (error instanceof DisposedError ? 'disposed' : 'other'),
        )
        while (host.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
        await own.dispose()
        expect(await settled).toBe('aborted')
      })
    })
  })
}
