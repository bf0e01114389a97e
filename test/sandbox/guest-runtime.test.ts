import { runInContext, createContext as createVmContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { deferredRuntimeSource, guestRuntimeSource } from '../../sandbox/guest-runtime.ts'

/**
 * The prelude alone, against stub host functions (node:vm is only a harness here, not a sandbox):
 * what it hands the engine through the raw globals of its contract.
 */
function preludeWithStubs(maxLogChars: number, maxArgumentChars = 1_000, maxTotalArgumentChars = 10_000) {
  const logged: [string, string, boolean][] = []
  const sent: [string, string][] = []
  const context = createVmContext({
    __codemode_call: (name: string, argsJson: string) => {
      sent.push([name, argsJson])
      return new Promise(() => {})
    },
    __codemode_log: (level: string, text: string, over: boolean) => void logged.push([level, text, over]),
  })
  const api = runInContext(guestRuntimeSource(), context) as { init(toolsJson: string, ...limits: number[]): void }
  api.init('[["echo","echo"]]', maxLogChars, maxArgumentChars, maxTotalArgumentChars)
  return { logged, sent, evaluate: (code: string) => runInContext(code, context) }
}

describe('the prelude console', () => {
  it('sends lines while they fit the log limit, counting each line break', () => {
    const { logged, evaluate } = preludeWithStubs(12)
    evaluate("console.log('12345'); console.warn('a', 1)")
    expect(logged).toEqual([
      ['log', '12345', false],
      ['warn', 'a 1', false],
    ])
  })

  it('never sends a line past the limit: the host hears only that it broke, then nothing more', () => {
    const { logged, evaluate } = preludeWithStubs(100)
    evaluate("console.log('fits'); let s = 'x'.repeat(1 << 20); for (let i = 0; i < 4; i++) s = s + s; console.error(s); console.log('after')")
    expect(logged).toEqual([
      ['log', 'fits', false],
      ['error', '', true],
    ])
  })
})

describe('the prelude tools', () => {
  it('refuses an argument past the per-call or the run-wide limit before it is handed to the engine', async () => {
    const { sent, evaluate } = preludeWithStubs(100, 20, 30)
    const outcome = (code: string) => (evaluate(code) as Promise<unknown>).then(() => 'sent', (error: Error & { code?: string }) => `${error.code}: ${error.message}`)
    expect(await outcome("tools.echo({ s: 'x'.repeat(30) })")).toBe(
      'INVALID_ARGS: the arguments of "echo" are 38 characters of JSON; the limit is 20 (maxArgumentBytes): pass less data per call',
    )
    void evaluate("tools.echo({ s: 'x'.repeat(8) })")
    expect(await outcome("tools.echo({ s: 'x'.repeat(8) })")).toBe(
      `INVALID_ARGS: the arguments of "echo" would take this program's tool calls past 30 characters of JSON arguments in all (maxTotalArgumentBytes): pass less data`,
    )
    expect(sent).toEqual([['echo', '{"s":"xxxxxxxx"}']])
  })
})

describe("the prelude's deferred part", () => {
  it('reads no global when it is compiled and run: it uses only what the prelude hands it', () => {
    const logged: string[] = []
    const context = createVmContext({
      __codemode_call: () => new Promise(() => {}),
      __codemode_log: (_level: string, text: string) => void logged.push(text),
    })
    const api = runInContext(guestRuntimeSource(), context) as { init(toolsJson: string, ...limits: number[]): void; describeError(reason: unknown): string }
    api.init('[]', 10_000, 1_000, 10_000)
    const log = runInContext('console.log', context) as (...values: unknown[]) => void
    const values = runInContext('["a", 1, [true, null], { b: new Date(0) }, -0, 2n, Symbol("s"), function f() {}, new Map()]', context) as unknown[]
    const reasons = runInContext('[new TypeError("bad"), "text", { code: "X", message: "m" }]', context) as unknown[]
    // Every name the deferred source spells becomes a global the program planted, which records
    // each read: a name the deferred part took from the global scope would be the program's.
    const read: string[] = []
    const global = runInContext('globalThis', context) as object
    const planted = new Set(deferredRuntimeSource().match(/[A-Za-z_$][\w$]*/g))
    // Node formats a vm context's error stack through that context's global Error (the harness,
    // not the prelude: the deferred source spells Error only inside strings).
    planted.delete('Error')
    for (const name of planted) {
      if (Object.getOwnPropertyDescriptor(global, name)?.configurable === false) continue
      Object.defineProperty(global, name, {
        configurable: true,
        get: () => {
          read.push(name)
          return undefined
        },
      })
    }
    expect(planted.size).toBeGreaterThan(50)
    log(...values)
    const described = reasons.map((reason) => api.describeError(reason))
    expect(read).toEqual([])
    expect(logged).toEqual(['a 1 [true,null] {"b":1970-01-01T00:00:00.000Z} -0 2n Symbol(s) [Function: f] Map {}'])
    expect(described.map((text) => (JSON.parse(text) as { name: string; message: string }).message)).toEqual(['bad', 'Uncaught "text"', 'm'])
  })
})
