import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { ToolExecutionResult } from '../../src/execution.ts'
import { runToolCalls } from '../../src/scheduler.ts'
import type { SandboxEngine, SandboxLimits } from '../../sandbox/engine.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import { rawTool } from '../helpers.ts'
import { enginesUnderTest } from './engines.ts'

/**
 * Hostile programs, run through `run_code` (the whole transport: engine, bridge, pipeline, session
 * log) on every engine. Each attack must end within a bounded time with a result or a clear
 * CODE_RUN_FAILED naming what it broke, show no host path, leave a balanced session log (every
 * `tool/code-dispatch-start` has its `tool/code-dispatch`, both inside the run_code call), raise no
 * unhandled rejection in the host, and leave the engine able to run the next program.
 */

const MIB = 1024 * 1024
const LIMITS: Partial<SandboxLimits> = {
  cpuTimeMs: 300,
  wallTimeMs: 3_000,
  memoryLimitBytes: 32 * MIB,
  maxSubCalls: 50,
  maxSubCallsInFlight: 20,
}
/** Longest failure text a model may get back (error text is clipped to 4 000 characters, plus framing). */
const MAX_FAILURE_CHARS = 12_000
const HOST_PATH_MARKERS = ['/work/', 'node_modules', 'file://', process.cwd()]

const unhandled: unknown[] = []
const onUnhandled = (reason: unknown): void => {
  unhandled.push(reason)
}
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled)
})
afterAll(() => {
  process.off('unhandledRejection', onUnhandled)
})

/** What an attack must end with: a failure whose message matches, or a value. */
type Outcome = { readonly fails: RegExp } | { readonly value: unknown } | { readonly failsOrValue: RegExp; readonly value: unknown }

/** Sentence fragments the transport writes for each way a run can end. */
const LIMIT = (...names: string[]): RegExp => new RegExp(`stopped by its (${names.join('|')}) limit`)
const THREW = (pattern: string): RegExp => new RegExp(`The program threw ${pattern}`)
const NOT_JSON = (what: string, path: string): RegExp =>
  new RegExp(`return value cannot be returned: the returned value is not JSON: ${what} at ${path.replace(/[$[\]().]/g, '\\$&')}`)

function messageOf(result: ToolExecutionResult): string {
  return result.isError ? result.error.message : ''
}

describe.each(enginesUnderTest())('hostile programs through run_code on $name', (engineUnderTest) => {
  let engine: SandboxEngine
  beforeAll(async () => {
    engine = await engineUnderTest.create({ memoryLimitBytes: 32 * MIB })
  })
  afterAll(async () => {
    await engine?.dispose()
  })

  function setup(limits: Partial<SandboxLimits> = {}) {
    const seen: string[] = []
    const ctx = createContext({
      // The sandbox itself is under attack: no type check in front of it (the default one refuses some of these programs).
      tools: { mode: 'code', maxParallelSubCalls: 16, codeMode: createRunCode({ engine, typeCheck: 'off', limits: { ...LIMITS, ...limits } }) },
    })
    ctx.tools.register(rawTool('echo', { isConcurrencySafe: () => true }))
    ctx.tools.register(rawTool('fail', { execute: async () => Promise.reject(new Error('the tool failed on purpose')) }))
    ctx.tools.register(
      rawTool('big', {
        isConcurrencySafe: () => true,
        execute: async (args) => 'y'.repeat((args as { n: number }).n),
      }),
    )
    ctx.tools.register(
      rawTool('deep', {
        output: { schema: {}, render: () => [{ type: 'text', text: 'deep' }] },
        execute: async (args) => {
          let value: unknown = 1
          for (let i = 0; i < (args as { n: number }).n; i++) value = [value]
          return value
        },
      }),
    )
    ctx.tools.register(
      rawTool('hang', {
        isConcurrencySafe: () => true,
        execute: async (_args, exec) => {
          seen.push('hang started')
          await new Promise((resolve) => exec.signal.addEventListener('abort', resolve, { once: true }))
          seen.push('hang saw abort')
          return null
        },
      }),
    )
    const agent = ctx.agent('hostile')
    let count = 0
    const run = async (code: string, signal = new AbortController().signal): Promise<ToolExecutionResult> => {
      count += 1
      const [result] = await runToolCalls(agent.ctx.tools, [{ callId: `h${count}`, name: 'run_code', arguments: { code } }], {
        agent,
        signal,
      })
      return result as ToolExecutionResult
    }
    return { agent, run, seen }
  }

  type Setup = ReturnType<typeof setup>

  /** Every sub-call the session log saw started was also logged as settled, inside its run_code call. */
  function expectBalancedSession({ agent }: Setup): void {
    const events = agent.session.events
    const starts = events.filter((event) => event.type === 'tool/code-dispatch-start')
    const ends = events.filter((event) => event.type === 'tool/code-dispatch')
    const ids = (list: typeof events) => list.map((event) => ('subCallId' in event ? event.subCallId : '')).sort()
    expect(ids(ends)).toEqual(ids(starts))
    for (const event of [...starts, ...ends]) {
      const parent = 'callId' in event ? event.callId : ''
      const at = events.indexOf(event)
      const call = events.findIndex((e) => e.type === 'tool/call' && 'callId' in e && e.callId === parent)
      const result = events.findIndex((e) => e.type === 'tool/result' && 'callId' in e && e.callId === parent)
      expect(call).toBeGreaterThanOrEqual(0)
      expect(call).toBeLessThan(at)
      expect(result).toBeGreaterThan(at)
    }
  }

  function expectOutcome(result: ToolExecutionResult, outcome: Outcome): void {
    const text = JSON.stringify(result)
    for (const marker of HOST_PATH_MARKERS) expect(text).not.toContain(marker)
    if ('fails' in outcome || ('failsOrValue' in outcome && result.isError)) {
      const pattern = 'fails' in outcome ? outcome.fails : outcome.failsOrValue
      expect(result.isError, `expected a failure, got ${text.slice(0, 300)}`).toBe(true)
      if (!result.isError) return
      expect(result.error.info?.code).toBe('CODE_RUN_FAILED')
      expect(result.error.message).toMatch(pattern)
      expect(result.error.message.length).toBeLessThan(MAX_FAILURE_CHARS)
      return
    }
    expect(result.isError, `expected a value, got ${text.slice(0, 300)}`).toBe(false)
    expect((result.value as { result: unknown }).result).toEqual(outcome.value)
  }

  /** Run one attack, check everything the host must keep, then prove the next run works. */
  async function attack(code: string, outcome: Outcome, limits: Partial<SandboxLimits> = {}): Promise<Setup> {
    const session = setup(limits)
    const budget = (limits.wallTimeMs ?? (LIMITS.wallTimeMs as number)) + 2_000
    const started = performance.now()
    const result = await session.run(code)
    expect(performance.now() - started).toBeLessThan(budget)
    expectOutcome(result, outcome)
    expectBalancedSession(session)
    const next = await session.run('return 1')
    expect(next.isError ? next.error.message : next.value).toEqual({ result: 1, logs: [] })
    return session
  }

  describe('CPU', () => {
    const cases: [string, string, Outcome][] = [
      ['a loop after an await', 'await tools.echo({}); while (true) {}', { fails: LIMIT('cpuTimeMs') }],
      [
        'a loop in a microtask chain started by a sub-call answer',
        'tools.echo({}).then(() => Promise.resolve()).then(() => { while (true) {} }); await new Promise(() => {})',
        { fails: LIMIT('cpuTimeMs') },
      ],
      [
        'a self-renewing microtask flood',
        'Promise.resolve().then(function f() { return Promise.resolve().then(f) }); await new Promise(() => {})',
        { fails: LIMIT('cpuTimeMs', 'memoryLimitBytes') },
      ],
      [
        'a microtask flood left running behind a returned value',
        'Promise.resolve().then(function f() { return Promise.resolve().then(f) }); return 1',
        { failsOrValue: LIMIT('cpuTimeMs', 'memoryLimitBytes'), value: 1 },
      ],
      ['a getter of the returned value that loops', 'return { get x() { while (true) {} } }', { fails: LIMIT('cpuTimeMs') }],
      ['a Proxy returned whose ownKeys loops', 'return new Proxy({}, { ownKeys() { while (true) {} } })', { fails: LIMIT('cpuTimeMs') }],
      [
        'a Proxy array that claims a billion elements',
        "return new Proxy([], { get: (t, k) => (k === 'length' ? 1e9 : 1), has: () => true })",
        { fails: LIMIT('cpuTimeMs', 'memoryLimitBytes') },
      ],
      [
        'a thrown object whose message getter loops',
        'throw { get name() { throw 1 }, get message() { while (true) {} } }',
        { fails: LIMIT('cpuTimeMs') },
      ],
      [
        'console.log of a value whose formatting explodes (100^6 leaves)',
        'let x = 1; for (let d = 0; d < 6; d++) x = Array(100).fill(x); console.log(x); return 1',
        { fails: LIMIT('cpuTimeMs', 'memoryLimitBytes') },
      ],
      [
        'an Error.prepareStackTrace that loops',
        'Error.prepareStackTrace = () => { while (true) {} }; throw new Error("x")',
        // QuickJS has no prepareStackTrace hook; V8 calls it while the stack is formatted.
        { fails: /stopped by its cpuTimeMs limit|threw Error at line 1/ },
      ],
      [
        'a then getter on Object.prototype that loops, met when an answer settles',
        "Object.defineProperty(Object.prototype, 'then', { get() { while (true) {} }, configurable: true })\nreturn await tools.echo({ a: 1 })",
        { fails: LIMIT('cpuTimeMs') },
      ],
      [
        'a Promise species that loops, then a sub-call',
        'class P extends Promise { static get [Symbol.species]() { return function () { while (true) {} } } }\nPromise.prototype.constructor = P\nreturn await tools.echo({ a: 1 })',
        { fails: LIMIT('cpuTimeMs') },
      ],
    ]
    it.each(cases)('survives %s', async (_title, code, outcome) => {
      await attack(code, outcome)
    })

    it('stops a flood of never-settling promises at the CPU limit every time, though QuickJS can spin where it never checks', async () => {
      // Measured on the QuickJS build: about one run in three spins inside QuickJS without calling the
      // interrupt handler; the main thread's CPU check must end it at the CPU budget plus its grace.
      for (let i = 0; i < 6; i++) {
        const session = setup({ wallTimeMs: 10_000 })
        const started = performance.now()
        const result = await session.run('for (;;) new Promise(() => {})')
        // Ended by a CPU or memory check (the outcome says which), well before the 10 s wall limit:
        // a bound that holds on a busy host too (2.3 s seen there against 0.8 s on a quiet one).
        expect(performance.now() - started).toBeLessThan(5_000)
        expectOutcome(result, { fails: LIMIT('cpuTimeMs', 'memoryLimitBytes') })
      }
      expect((await setup().run('return 1')).value).toEqual({ result: 1, logs: [] })
    })
  })

  describe('memory', () => {
    const cases: [string, string, Outcome][] = [
      ['an array that grows without end', 'const a = []; while (true) a.push(a.length)', { fails: LIMIT('cpuTimeMs', 'memoryLimitBytes') }],
      ['a string that doubles without end', "let s = 'x'; while (true) s += s", { fails: /string too long|Invalid string length|memoryLimitBytes/ }],
      ['a Map that grows without end', 'const m = new Map(); let i = 0; while (true) m.set(i++, { i })', { fails: LIMIT('cpuTimeMs', 'memoryLimitBytes') }],
      [
        'ArrayBuffers without end',
        'const a = []; while (true) a.push(new ArrayBuffer(1 << 20))',
        { fails: /memoryLimitBytes|Array buffer allocation failed/ },
      ],
      [
        'typed arrays without end',
        'const a = []; while (true) a.push(new Float64Array(1 << 17))',
        { fails: /memoryLimitBytes|Array buffer allocation failed/ },
      ],
      ['one 1 GiB ArrayBuffer', 'return new ArrayBuffer(2 ** 30).byteLength', { fails: /memoryLimitBytes|Array buffer allocation failed/ }],
      // V8 builds repeat() as a rope: only flattening it costs the memory.
      ["'x'.repeat(2 ** 28)", "return 'x'.repeat(2 ** 28).length", { failsOrValue: LIMIT('memoryLimitBytes'), value: 2 ** 28 }],
      [
        "'x'.repeat(2 ** 28), flattened",
        "return 'x'.repeat(2 ** 28).indexOf('y')",
        { failsOrValue: LIMIT('memoryLimitBytes', 'cpuTimeMs'), value: -1 },
      ],
      [
        'a SharedArrayBuffer of 1 GiB',
        'const s = new SharedArrayBuffer(2 ** 30); new Uint8Array(s).fill(1); return s.byteLength',
        { fails: /memoryLimitBytes|Array buffer allocation failed|SharedArrayBuffer/ },
      ],
      [
        // QuickJS 0.32 builds a view of the WASM memory from address 0 over a buffer detached while
        // the view is constructed: transfer() is gone, so no buffer can be detached.
        'a typed array over a buffer detached by a prototype getter during its construction',
        "const ab = new ArrayBuffer(1 << 16); const nt = function () {}.bind(); Object.defineProperty(nt, 'prototype', { get() { ab.transfer(); return Uint32Array.prototype } }); const t = Reflect.construct(Uint32Array, [ab, 0, 1 << 14], nt); return t[4096]",
        { fails: /TypeError[^\n]*not a function/ },
      ],
      [
        'a resizable buffer shrunk under its views',
        'const b = new ArrayBuffer(64, { maxByteLength: 64 }); const v = new Uint8Array(b); b.resize(0); return v.with(0, 1)[40]',
        { fails: /TypeError[^\n]*not a function/ },
      ],
      [
        // QuickJS 0.32 grows it past its allocation: a window onto the WASM heap and earlier runs' data.
        'a growable SharedArrayBuffer grown past what was allocated',
        'const s = new SharedArrayBuffer(1, { maxByteLength: 1 << 22 }); s.grow(1 << 22); return new Uint8Array(s).some((b) => b !== 0)',
        { fails: THREW("ReferenceError at line 1, column \\d+: '?SharedArrayBuffer'? is not defined") },
      ],
      [
        'WebAssembly memory, which no heap limit counts',
        'const m = new WebAssembly.Memory({ initial: 16384 }); new Uint8Array(m.buffer).fill(1); return m.buffer.byteLength',
        { fails: THREW("ReferenceError at line 1, column \\d+: '?WebAssembly'? is not defined") },
      ],
    ]
    it.each(cases)('survives %s', async (_title, code, outcome) => {
      await attack(code, outcome)
    })

    // Copying tens of megabytes takes a few hundred ms of CPU on a machine busy with other work:
    // these give the CPU room, so that the limit they are about is the one that breaks.
    const roomy: [string, string, Outcome][] = [
      [
        'a single allocation far past the heap limit (fatal in V8 without a catastrophic-error handler)',
        "const m = 'x'.repeat(2 ** 24); const s = 'Error: ' + m; return JSON.stringify([m, s]).length",
        { fails: LIMIT('memoryLimitBytes') },
      ],
      ['a sub-call argument larger than the heap', "return (await tools.echo({ s: 'x'.repeat(2e7) })).s.length", { fails: LIMIT('memoryLimitBytes') }],
      // Refused before it is copied anywhere: the program gets an error naming the limit (uncaught here).
      [
        'a tool answer larger than the heap',
        'return (await tools.big({ n: 6e7 })).length',
        { fails: /The program threw Error.*the result of big \(60000002 characters of JSON\) is too large for the program's memory limit of 33554432 bytes \(memoryLimitBytes\)/ },
      ],
    ]
    it.each(roomy)('survives %s', async (_title, code, outcome) => {
      await attack(code, outcome, { cpuTimeMs: 3_000 })
    })

    it('passes a large (2 MB) sub-call argument and answer through intact where the limit allows it', async () => {
      await attack("return (await tools.echo({ s: 'x'.repeat(2e6) })).s.length", { value: 2e6 }, { maxArgumentBytes: 4_000_000 })
    })

    // Found by the red-team pass (issue 23): on QuickJS the answers of one turn were joined into one
    // string with no bound, and Node died of "Invalid string length" (600 MB of answers).
    it('survives a Promise.all of 200 tool results of 3 MB each: the run ends, the host lives', async () => {
      await attack(
        'const r = await Promise.all(Array.from({ length: 200 }, () => tools.big({ n: 3e6 }))); return r.length',
        // Either the results that fit exhaust the heap, or one that does not fit is refused first.
        { fails: /stopped by its memoryLimitBytes limit|The program threw Error \(ANSWER_TOO_LARGE\).*memoryLimitBytes/ },
        { maxSubCalls: 300, maxSubCallsInFlight: 256, wallTimeMs: 60_000, cpuTimeMs: 5_000 },
      )
    }, 120_000)

    it('hands a tool result larger than the memory limit to the program as an error it can catch', async () => {
      await attack(
        'try { await tools.big({ n: 20e6 }) } catch (e) { return [e.code, e.message, (await tools.echo({ s: "ok" })).s] }',
        {
          value: [
            'ANSWER_TOO_LARGE',
            "the result of big (20000002 characters of JSON) is too large for the program's memory limit of 33554432 bytes (memoryLimitBytes): a result may take half of it, for its text and its value",
            'ok',
          ],
        },
      )
    }, 60_000)

    it('refuses results that would not fit beside those still on their way to the program, naming the limit', async () => {
      // Eight results of 6 MB settle together: those the 32 MiB guest cannot take in beside the
      // ones still on their way are refused before they are copied, or (when the guest took each in
      // before the next came) the run ends at its memory limit. Either way it ends cleanly.
      const session = await attack(
        'const r = await Promise.allSettled(Array.from({ length: 8 }, () => tools.big({ n: 6e6 })))\nreturn r.filter((x) => x.status === "rejected").map((x) => x.reason.code)',
        { failsOrValue: LIMIT('memoryLimitBytes'), value: expect.arrayContaining(['ANSWER_TOO_LARGE']) },
        { wallTimeMs: 30_000, cpuTimeMs: 5_000 },
      )
      expect(session.agent.session.events.filter((e) => e.type === 'tool/code-dispatch')).toHaveLength(8)
    }, 60_000)

    it('refuses an argument over maxArgumentBytes to the program, which can carry on', async () => {
      await attack(
        "try { await tools.echo({ s: 'x'.repeat(2e6) }) } catch (e) { return [e.code, (await tools.echo({ s: 'ok' })).s] }",
        { value: ['INVALID_ARGS', 'ok'] },
      )
    })

    it('has no WebAssembly to reach for, however the program looks', async () => {
      await attack(
        "return [typeof WebAssembly, typeof globalThis.WebAssembly, Object.getOwnPropertyNames(globalThis).includes('WebAssembly'), typeof Function('return this')().WebAssembly]",
        { value: ['undefined', 'undefined', false, 'undefined'] },
      )
    })
  })

  describe('stack', () => {
    const cases: [string, string, Outcome][] = [
      ['runaway recursion', 'function f() { return f() + 1 }\nreturn f()', { fails: LIMIT('stackSizeBytes') }],
      [
        'recursion inside a getter of the returned value',
        'return { get x() { function f() { return f() + 1 } return f() } }',
        { fails: LIMIT('stackSizeBytes') },
      ],
      ['a getter of the returned value that reads itself', 'return { get x() { return this.x } }', { fails: LIMIT('stackSizeBytes') }],
      [
        'recursion in toString called by console.log formatting',
        "const e = new Error('m'); e.name = { toString() { return String(this) } }; console.log(e); console.log({ get a() { function f() { return f() } return f() } }); return 'ok'",
        { value: 'ok' },
      ],
      ['a getter of the returned value that throws', "return { get x() { throw new Error('getter boom') } }", { fails: THREW('Error at line 1, column \\d+: getter boom') }],
      [
        'an Error.prepareStackTrace that recurses',
        'Error.prepareStackTrace = (e) => e.stack; throw new Error("x")',
        { fails: /threw Error at line 1.*: x|stackSizeBytes/ },
      ],
    ]
    it.each(cases)('survives %s', async (_title, code, outcome) => {
      await attack(code, outcome)
    })
  })

  describe('sub-calls', () => {
    it('stops a synchronous flood of sub-calls at a sub-call limit and logs every call it started', async () => {
      // QuickJS starts them all in one slice (in-flight breaks first); isolated-vm answers as it goes.
      await attack('for (let i = 0; i < 1e6; i++) tools.echo({ i }); await new Promise(() => {})', { fails: LIMIT('maxSubCallsInFlight', 'maxSubCalls') })
    })

    it('stops an awaited flood of sub-calls at maxSubCalls', async () => {
      await attack('for (let i = 0; i < 1e6; i++) await tools.echo({ i })', { fails: LIMIT('maxSubCalls') })
    })

    it('stops a Promise.all of hanging sub-calls at maxSubCallsInFlight and drains them', async () => {
      const session = await attack('await Promise.all(Array.from({ length: 100 }, () => tools.hang({})))', {
        fails: LIMIT('maxSubCallsInFlight'),
      })
      const started = session.seen.filter((e) => e === 'hang started').length
      expect(started).toBeLessThanOrEqual(20)
      expect(session.seen.filter((e) => e === 'hang saw abort')).toHaveLength(started)
    })

    it('aborts and logs sub-calls started by microtasks after the program returned', async () => {
      const session = await attack(
        "Promise.resolve().then(() => tools.hang({})).then(() => tools.echo({}));\n(async () => { await null; await null; await tools.hang({}) })();\nreturn 'r'",
        { value: 'r' },
      )
      expect(session.seen.filter((e) => e === 'hang started')).toEqual(session.seen.filter((e) => e === 'hang saw abort').map(() => 'hang started'))
    })

    it('aborts and logs a sub-call started from a finally after an error', async () => {
      const session = await attack("try { throw new Error('first') } finally { tools.hang({}) }", { fails: THREW('Error at line 1, column \\d+: first') })
      expect(session.seen).toEqual(['hang started', 'hang saw abort'])
    })

    it('keeps the program error when a finally awaits a sub-call', async () => {
      await attack("try { throw new Error('first') } finally { await tools.echo({ ok: 1 }) }", { fails: THREW('Error at line 1, column \\d+: first') })
    })

    it('hands a failing tool back as an error the program can catch, then fails cleanly uncaught', async () => {
      await attack("try { await tools.fail({}) } catch (e) { return [e.code, e.message] }", {
        value: ['TOOL_FAILED', expect.stringContaining('the tool failed on purpose')],
      })
      await attack('await tools.fail({})', { fails: THREW('Error.*the tool failed on purpose') })
    })

    it('rejects arguments that are not JSON inside the guest, without a sub-call', async () => {
      const session = await attack(
        [
          'const out = []',
          'const cyclic = {}; cyclic.self = cyclic',
          'let deep = []; for (let i = 0; i < 1e5; i++) deep = [deep]',
          "for (const arg of [cyclic, { deep }, { p: new Proxy({}, { getPrototypeOf() { throw new Error('trap') } }) }, { s: Symbol('s') }, { b: 1n }, [-0]]) {",
          '  try { await tools.echo(arg); out.push("sent") } catch (e) { out.push(e.name) }',
          '}',
          'return out',
        ].join('\n'),
        { value: ['TypeError', 'TypeError', 'Error', 'TypeError', 'TypeError', 'TypeError'] },
      )
      expect(session.agent.session.events.filter((e) => e.type === 'tool/code-dispatch-start')).toEqual([])
    })
  })

  describe('returned values', () => {
    const cases: [string, string, Outcome][] = [
      ['a cycle', 'const o = {}; o.o = o; return o', { fails: NOT_JSON('a circular reference', '$.o') }],
      ['nesting far beyond the walker depth', 'let a = []; for (let i = 0; i < 1e5; i++) a = [a]; return a', { fails: /nesting deeper than 200 levels at \$\[0\]/ }],
      ['a giant string', "return 'x'.repeat(2e6)", { fails: LIMIT('maxResultBytes') }],
      ['a Symbol', "return Symbol('s')", { fails: NOT_JSON('a symbol', '$') }],
      ['a BigInt', 'return { n: 1n }', { fails: NOT_JSON('a BigInt', '$.n') }],
      ['-0', 'return [0, -0]', { fails: NOT_JSON('-0', '$[1]') }],
      ['a sparse array', 'return [1, , 2]', { fails: NOT_JSON('a hole in a sparse array', '$[1]') }],
      ['an invalid Date', 'return [new Date(0), new Date(NaN)]', { fails: NOT_JSON('an invalid Date', '$[1]') }],
      ['a Date', 'return { d: new Date(0) }', { value: { d: '1970-01-01T00:00:00.000Z' } }],
      ['a Proxy pretending to be a Date', 'return new Proxy({}, { getPrototypeOf: () => Date.prototype })', { fails: NOT_JSON('an invalid Date', '$') }],
      ['an object whose toJSON loops', 'return { toJSON() { while (true) {} }, a: 1 }', { fails: NOT_JSON('a function', '$.toJSON') }],
      ['an object whose valueOf loops', 'return [{ valueOf() { while (true) {} } }]', { fails: NOT_JSON('a function', '$[0].valueOf') }],
      ['a Map', 'return { m: new Map([[1, 2]]) }', { fails: NOT_JSON('a Map \\(not JSON\\)', '$.m') }],
      ['a string that looks like a sub-call envelope', 'return \'{"ok":true,"value":"forged"}\'', { value: '{"ok":true,"value":"forged"}' }],
      ['a string that looks like a finish failure marker', 'return \'!{"message":"x","path":"$"}\'', { value: '!{"message":"x","path":"$"}' }],
      ['undefined', 'return undefined', { value: null }],
    ]
    it.each(cases)('survives %s', async (_title, code, outcome) => {
      await attack(code, outcome)
    })

    it('bounds a failure path built from a giant key', async () => {
      const session = setup()
      const result = await session.run("return { ['k'.repeat(2e6)]: () => 1 }")
      expectOutcome(result, { fails: /the returned value is not JSON: a function at \$\["k+\.\.\. \(\d+ more characters\)"\]/ })
    })
  })

  describe('errors', () => {
    it('bounds a thrown Error with a giant message, name and function name', async () => {
      for (const code of [
        "throw new Error('x'.repeat(5e6))",
        "throw new Error('x'.repeat(2 ** 24))",
        "throw 'x'.repeat(2 ** 24)",
        "const e = new Error('m'); e.name = 'N'.repeat(5e6); throw e",
        "const o = { ['f'.repeat(1e6)]() { throw new Error('boom') } }; o['f'.repeat(1e6)]()",
        "await tools['t'.repeat(3e6)]({})",
      ]) {
        await attack(code, { fails: /The program threw [\s\S]*more characters/ })
      }
    })

    it('says how much of a long error name and message was left out, counted once', async () => {
      // The guest cuts them and the host checks again: the host must not cut the guest's note.
      const code = "const e = new Error('m'.repeat(10_000)); e.name = 'N'.repeat(10_000); throw e"
      const escape = (text: string): string => text.replace(/[.()]/g, '\\$&')
      const name = escape(`${'N'.repeat(200)}... (9800 more characters)`)
      const message = escape(`${'m'.repeat(4_000)}... (6000 more characters)`)
      await attack(code, { fails: new RegExp(`threw ${name} at line 1, column \\d+: ${message}(\\n|$)`) })
    })

    it('keeps a message that names host-looking paths as the program wrote it, and takes the line from the real frame', async () => {
      await attack(
        "const a = 1\nthrow new Error('ENOENT: /home/fake/lib/x.js:7:9 at evil (/home/fake/lib/y.js:3:4)\\n    at evil (program.js:1:1)')",
        { fails: /threw Error at line 2, column \d+: ENOENT: \/home\/fake\/lib\/x\.js:7:9 at evil \(\/home\/fake\/lib\/y\.js:3:4\)/ },
      )
    })

    it('never lets an Error.prepareStackTrace forge frames with host paths into the failure', async () => {
      const session = setup()
      const result = await session.run(
        "Error.prepareStackTrace = () => 'Error: x\\n    at evil (/home/host/src/secret.ts:1:1)\\n    at program.js:99:1'\nthrow new Error('x')",
      )
      expectOutcome(result, { fails: /The program threw Error at line 2/ })
      expect(messageOf(result)).not.toContain('secret.ts')
    })

    it('shows a thrown envelope-looking object as an uncaught value, nothing more', async () => {
      await attack("throw { ok: true, value: 'forged' }", { fails: /threw Error: Uncaught \{"ok":true,"value":"forged"\}/ })
    })

    it('gives a program no host path in any stack it can read', async () => {
      const session = await attack(
        "const out = []\ntry { await tools.nope({}) } catch (e) { out.push(String(e.stack)) }\ntry { await tools.fail({}) } catch (e) { out.push(String(e.stack)) }\nout.push(String(new Error('y').stack))\nconst o = {}; if (Error.captureStackTrace) Error.captureStackTrace(o); out.push(String(o.stack))\nreturn out",
        { value: expect.any(Array) },
      )
      expect(session.agent.session.events.length).toBeGreaterThan(0)
    })
  })

  describe('console', () => {
    it('stops a giant line at the log limit', async () => {
      await attack("console.log('x'.repeat(5e6)); return 1", { fails: LIMIT('maxLogBytes') })
    })

    it('stops a flood of empty lines at the log limit, with a bounded failure text', async () => {
      const session = setup({ cpuTimeMs: 5_000, wallTimeMs: 10_000, maxLogBytes: 1_000 })
      const started = performance.now()
      const result = await session.run("for (;;) console.log('')")
      expect(performance.now() - started).toBeLessThan(5_000)
      expectOutcome(result, { fails: LIMIT('maxLogBytes') })
      expect(messageOf(result).length).toBeLessThan(2_000)
    })

    it('prints cyclic, throwing and Proxy values without failing', async () => {
      const session = setup()
      const result = await session.run(
        "const o = {}; o.o = o; console.log(o, [o]); console.log({ get a() { throw new Error('g') } }); console.log(new Proxy({}, { ownKeys() { throw new Error('p') } })); return 1",
      )
      expect(result.value).toEqual({
        result: 1,
        logs: [
          { level: 'log', text: '{"o":[Circular]} [{"o":[Circular]}]' },
          { level: 'log', text: '[unprintable]' },
          { level: 'log', text: '[unprintable]' },
        ],
      })
    })
  })

  describe('pollution and forgery', () => {
    it('keeps sub-calls, errors and results working after Object, Array, Function, Reflect and JSON are polluted', async () => {
      await attack(
        [
          "Object.prototype.toJSON = () => 'x'",
          "Object.defineProperty(Object.prototype, 'ok', { get() { return true }, configurable: true })",
          "Object.prototype.value = 'forged'",
          'Array.prototype.push = null',
          "Function.prototype.call = function () { throw new Error('call') }",
          "Function.prototype.apply = function () { throw new Error('apply') }",
          "Function.prototype.bind = function () { throw new Error('bind') }",
          "Reflect.apply = () => { throw new Error('reflect') }",
          "JSON.parse = () => ({ ok: true, value: 'forged' })",
          "JSON.stringify = () => 'forged'",
          'String.prototype.slice = () => "forged"',
          'const r = await tools.echo({ a: 1 })',
          'let err; try { await tools.nope() } catch (e) { err = e.code }',
          'let failed; try { await tools.fail({}) } catch (e) { failed = e.code }',
          'return { r, err, failed, d: new Date(0) }',
        ].join('\n'),
        { value: { r: { a: 1 }, err: 'UNKNOWN_TOOL', failed: 'TOOL_FAILED', d: '1970-01-01T00:00:00.000Z' } },
      )
    })

    it('hands answers that arrive together to each call whole after the string methods are polluted', async () => {
      await attack(
        [
          'String.prototype.indexOf = () => 0',
          "String.prototype.slice = () => '{\"ok\":true,\"value\":\"forged\"}'",
          "String.prototype.substring = () => 'forged'",
          "String.prototype.split = () => ['forged']",
          "return await Promise.all([tools.echo({ a: 1 }), tools.echo({ b: 'x,2,y' }), tools.echo({ c: [3] })])",
        ].join('\n'),
        { value: [{ a: 1 }, { b: 'x,2,y' }, { c: [3] }] },
      )
    })

    it('cannot forge, drop or add sub-calls by polluting what an engine might queue them with', async () => {
      const session = await attack(
        [
          // Whatever queues calls on the engine side must not run any of these.
          "Object.defineProperty(Array.prototype, '0', { set() { throw new Error('index setter') }, configurable: true })",
          "Object.defineProperty(Array.prototype, '2', { get() { return '{\"forged\":1}' }, configurable: true })",
          "Array.prototype.toJSON = function () { return [[0, 'echo', '{\"forged\":2}'], [1, 'echo', '{}'], [2, 'echo', '{}']] }",
          "Promise = function () { throw new Error('Promise replaced') }",
          "JSON.stringify = () => '[]'",
          'const a = await tools.echo({ n: 1 })',
          'const b = await tools.echo({ n: 2 })',
          'const c = await tools.echo({ n: 3 })',
          'return { a, b, c }',
        ].join('\n'),
        { value: { a: { n: 1 }, b: { n: 2 }, c: { n: 3 } } },
      )
      const dispatched = session.agent.session.events.filter((event) => event.type === 'tool/code-dispatch-start')
      expect(dispatched.map((event) => ('arguments' in event ? event.arguments : undefined))).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }])
    })

    it('stops a flood of sub-calls made without awaiting at the count limit, even with Array.prototype polluted', async () => {
      await attack(
        "Array.prototype.toJSON = () => []\nObject.defineProperty(Array.prototype, '0', { set() {}, configurable: true })\nfor (let i = 0; i < 1e6; i++) tools.echo({ i })\nawait new Promise(() => {})",
        { fails: LIMIT('maxSubCallsInFlight', 'maxSubCalls') },
      )
    })

    it('ends cleanly when Promise.prototype.then is replaced by one that throws, then a sub-call is awaited', async () => {
      // V8 resolves the program's own await of a promise through the replaced then; QuickJS does not.
      await attack("Promise.prototype.then = function () { throw new Error('then polluted') }\nreturn await tools.echo({ a: 1 })", {
        failsOrValue: THREW('Error at line 1, column \\d+: then polluted'),
        value: { a: 1 },
      })
    })

    it('ends a run whose Promise.prototype.then loops, whether it throws or returns', async () => {
      await attack("Promise.prototype.then = function () { while (true) {} }\nthrow new Error('x')", { fails: /threw Error at line 2|cpuTimeMs/ })
      await attack('Promise.prototype.then = function () { while (true) {} }\nreturn 5', { failsOrValue: LIMIT('cpuTimeMs'), value: 5 })
    })

    it('finds no engine internals among the globals, and no host objects', async () => {
      await attack(
        [
          'const names = Object.getOwnPropertyNames(globalThis)',
          'return {',
          '  internals: names.filter((k) => /codemode|settle|^ivm$|^Reference$|ExternalCopy/i.test(k)),',
          '  raw: [typeof __codemode_call, typeof __codemode_log, typeof __codemode_settle],',
          '  host: [typeof process, typeof require, typeof module, typeof Buffer, typeof setTimeout, typeof fetch, typeof WebAssembly],',
          "  viaFunction: [Function('return typeof process')(), globalThis.constructor.constructor('return typeof process')(), tools.constructor.constructor('return typeof require')(), eval('typeof process')],",
          '}',
        ].join('\n'),
        {
          value: {
            internals: [],
            raw: ['undefined', 'undefined', 'undefined'],
            host: ['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined'],
            viaFunction: ['undefined', 'undefined', 'undefined', 'undefined'],
          },
        },
      )
    })

    it('keeps arguments and results exact when the program redefines undefined, NaN, Infinity and tools', async () => {
      // QuickJS lets a program redefine these non-configurable globals; the runtime must not read them.
      await attack(
        'const t = tools\n' +
          "for (const name of ['undefined', 'NaN', 'Infinity', 'tools']) { try { Object.defineProperty(globalThis, name, { value: 1 }) } catch {} }\n" +
          'return { one: 1, list: [1, 2], echoed: await t.echo({ one: 1, nested: { one: 1 } }) }',
        { value: { one: 1, list: [1, 2], echoed: { one: 1, nested: { one: 1 } } } },
      )
    })

    it('delivers a tool result nested 100,000 deep, or refuses it naming the stack limit', async () => {
      await attack(
        'try { let x = await tools.deep({ n: 100000 }), d = 0; while (Array.isArray(x)) { x = x[0]; d++ } return d } catch (e) { return [e.code, e.message] }',
        {
          value:
            engineUnderTest.name === 'quickjs'
              ? ['ANSWER_TOO_DEEP', expect.stringMatching(/nested too deeply .* stack limit of \d+ bytes \(stackSizeBytes\)/)]
              : 100000,
        },
      )
    })

    it('cannot import modules', async () => {
      await attack("return await import('node:child_process')", { fails: /The program threw \w*Error.*(could not load module|Not supported)/ })
    })

    it('cannot call a tool it was not given, by any name', async () => {
      const session = await attack(
        "const out = []\nfor (const name of ['run_code', 'fs.read', 'hang2', '__proto__', 'constructor', 'toString']) { try { await tools[name]({}); out.push('called ' + name) } catch (e) { out.push(e.code ?? e.name) } }\nreturn out",
        { value: expect.any(Array) },
      )
      const names = session.agent.session.events.flatMap((e) => (e.type === 'tool/code-dispatch-start' ? [e.name] : []))
      expect(names.every((name) => ['hang', 'echo', 'fail', 'big', 'deep'].includes(name))).toBe(true)
    })
  })

  describe('blocking', () => {
    it('ends a program that blocks in Atomics.wait', async () => {
      await attack('Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)\nreturn "woke"', {
        fails: /stopped by its (cpuTimeMs|wallTimeMs) limit|Atomics/,
      })
      await attack('await tools.echo({})\nAtomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)\nreturn "woke"', {
        fails: /stopped by its (cpuTimeMs|wallTimeMs) limit|Atomics/,
      })
    })
  })

  describe('cancellation', () => {
    const programs: [string, string][] = [
      ['a synchronous loop', 'while (true) {}'],
      ['a loop after an await', 'await tools.echo({}); while (true) {}'],
      ['a microtask flood', 'Promise.resolve().then(function f() { return Promise.resolve().then(f) }); await new Promise(() => {})'],
      ['a hanging sub-call', 'await tools.hang({})'],
      ['a loop in a getter of the returned value', 'return { get x() { while (true) {} } }'],
      ['a loop in console formatting', 'let x = 1; for (let d = 0; d < 8; d++) x = Array(100).fill(x); console.log(x)'],
      ['a hanging sub-call started from a finally', "try { throw new Error('first') } finally { await tools.hang({}) }"],
      ['a blocking Atomics.wait', 'await tools.echo({}); if (typeof Atomics === "object") Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); while (true) {}'],
    ]
    it.each(programs)('cancels %s at once and drains its sub-calls', async (_title, code) => {
      const session = setup({ cpuTimeMs: 20_000, wallTimeMs: 30_000 })
      const controller = new AbortController()
      setTimeout(() => controller.abort(), 50)
      const started = performance.now()
      const result = await session.run(code, controller.signal)
      expect(performance.now() - started).toBeLessThan(3_000)
      expect(result.isError).toBe(true)
      if (result.isError) expect(['CODE_RUN_FAILED', 'ABORTED']).toContain(result.error.info?.code)
      for (const marker of HOST_PATH_MARKERS) expect(JSON.stringify(result)).not.toContain(marker)
      expectBalancedSession(session)
      expect(session.seen.filter((e) => e === 'hang started').length).toBe(session.seen.filter((e) => e === 'hang saw abort').length)
      const next = await session.run('return 1')
      expect(next.value).toEqual({ result: 1, logs: [] })
    })
  })
})

describe('host safety', () => {
  it('raised no unhandled rejection in the host during this file', async () => {
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(unhandled).toEqual([])
  })
})
