/**
 * Hostile programs: what a model reads when its program loops, hoards memory, recurses, floods
 * calls or logs, returns something that is not JSON, pollutes the realm, or reaches for the host.
 *
 * Each one gets a `CODE_RUN_FAILED` result naming what it broke (never a host stack or path), with
 * the console output it wrote before. The host does not notice: its event loop keeps ticking
 * (programs run off the main thread), the next run gets a clean realm, and a normal program
 * afterwards just works. Limits here are small so the demo is quick; the defaults are roomier.
 *
 * Run: node --no-node-snapshot --import tsx examples/hostile-programs.ts [quickjs|isolated-vm]
 */
import { createContext } from 'toolbox-codemode'
import type { JsonValue, ToolExecutionResult } from 'toolbox-codemode'
import { createRunCode } from 'toolbox-codemode/sandbox'
import type { RunCodeValue, SandboxLimits } from 'toolbox-codemode/sandbox'
import { createEngine, engineName } from './engines.ts'
import type { EngineName } from './engines.ts'
import { clip, contentText, errorCode, heading, indent, isMain } from './format.ts'
import type { Print } from './format.ts'
import { createMemoryFs, fileTools } from './tools.ts'

/** Small limits, so every hostile program is stopped within a fraction of a second. */
export const LIMITS: Partial<SandboxLimits> = {
  cpuTimeMs: 300,
  wallTimeMs: 3_000,
  memoryLimitBytes: 16 * 1024 * 1024,
  maxSubCalls: 40,
  maxSubCallsInFlight: 8,
  maxLogBytes: 2_000,
  maxResultBytes: 10_000,
}

/** A hostile program and the text its failure must contain. */
export interface HostileProgram {
  readonly name: string
  readonly code: string
  readonly expect: string
}

export const HOSTILE: readonly HostileProgram[] = [
  // An await first: an engine that only times synchronous code would miss the loop that follows.
  { name: 'infinite loop after an await', code: 'await tools.list_files({})\nwhile (true) {}', expect: 'by its cpuTimeMs limit' },
  // Big chunks: heap limits bite long before the CPU limit does (small ones would spend it on GC).
  { name: 'allocation without end', code: 'const hoard = []\nwhile (true) hoard.push(new Array(1_000_000).fill(hoard.length))', expect: 'by its memoryLimitBytes limit' },
  { name: 'runaway recursion', code: 'const dive = (n: number): number => dive(n + 1) + 1\nreturn dive(0)', expect: 'by its stackSizeBytes limit' },
  {
    name: 'a Promise flood of 1000 sub-calls',
    code: 'await Promise.all(Array.from({ length: 1000 }, () => tools.read_file({ path: "README.md" })))',
    expect: 'by its maxSubCallsInFlight limit',
  },
  { name: 'sub-calls one after another, forever', code: 'for (let i = 0; ; i++) await tools.list_files({})', expect: 'by its maxSubCalls limit' },
  { name: 'a console flood', code: 'while (true) console.log("spam ".repeat(20))', expect: 'by its maxLogBytes limit' },
  { name: 'a giant return value', code: 'return "x".repeat(1_000_000)', expect: 'by its maxResultBytes limit' },
  { name: 'a cyclic return value', code: 'const node: any = { name: "loop" }\nnode.next = node\nreturn node', expect: '$.next' },
  {
    name: 'reaching for host globals',
    code: [
      'const doors = { process: typeof process, require: typeof require, fetch: typeof fetch,',
      '  viaFunction: typeof Function("return this")().process }',
      'console.log("what the program found:", JSON.stringify(doors))',
      'require("node:fs").readFileSync("/etc/passwd", "utf8")',
    ].join('\n'),
    expect: 'ReferenceError',
  },
]

/** Poisons the realm, then returns normally: this one succeeds. */
export const POLLUTE = [
  'Object.prototype.isAdmin = true',
  'Array.prototype.map = () => "pwned"',
  'JSON.stringify = () => "{}"',
  'globalThis.backdoor = "open"',
  'return "polluted"',
].join('\n')

/** Run right after {@link POLLUTE}: it must see none of it. */
export const INSPECT = 'return { isAdmin: ({} as any).isAdmin ?? null, doubled: [1, 2].map((n) => n * 2), backdoor: typeof (globalThis as any).backdoor }'

/** A normal program, run last. */
export const NORMAL = 'const files = await tools.list_files({ prefix: "src/" })\nreturn { files, count: files.length }'

/** One hostile run as the model saw it. */
export interface HostileOutcome {
  readonly name: string
  readonly expect: string
  readonly code: string | undefined
  /** The failure text the model reads. */
  readonly text: string
  readonly ms: number
}

/** What the example did, for tests and for the demo. */
export interface HostileSummary {
  readonly engine: string
  readonly outcomes: readonly HostileOutcome[]
  /** The values returned by {@link POLLUTE} and then by {@link INSPECT}. */
  readonly pollution: { readonly polluted: JsonValue; readonly nextRun: JsonValue }
  /** The value of {@link NORMAL}, run after everything else. */
  readonly finalRun: { readonly isError: boolean; readonly result: JsonValue }
  /** Longest the host's event loop went without a timer tick while all this ran. */
  readonly eventLoopMaxGapMs: number
}

function resultOf(result: ToolExecutionResult): JsonValue {
  return result.isError ? null : (result.value as unknown as RunCodeValue).result
}

/** Runs every hostile program on `engine` (default QuickJS), then a normal one; disposes the engine. */
export async function main({ engine: name = 'quickjs' as EngineName, print = console.log as Print } = {}): Promise<HostileSummary> {
  // Disposed last (after the context below), whichever way this function ends.
  await using engine = await createEngine(name, LIMITS)
  // A 10 ms ticker: if a program ever blocked the host thread, the gap between ticks would show it.
  let last = performance.now()
  let maxGap = 0
  const ticker = setInterval(() => {
    const now = performance.now()
    maxGap = Math.max(maxGap, now - last)
    last = now
  }, 10)
  try {
    using root = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, limits: LIMITS }) } })
    for (const tool of fileTools(createMemoryFs())) root.tools.register(tool)
    const agent = root.agent('mallory')
    let n = 0
    const run = (code: string): Promise<ToolExecutionResult> =>
      agent.ctx.tools.execute({ callId: `run_${++n}`, name: 'run_code', arguments: { code }, signal: AbortSignal.timeout(15_000) })

    heading(print, `Hostile programs on ${engine.name}`)
    print(`limits: ${JSON.stringify(LIMITS)}`)
    const outcomes: HostileOutcome[] = []
    for (const program of HOSTILE) {
      const started = performance.now()
      const result = await run(program.code)
      const outcome = { name: program.name, expect: program.expect, code: errorCode(result), text: contentText(result), ms: Math.round(performance.now() - started) }
      outcomes.push(outcome)
      const named = outcome.code === 'CODE_RUN_FAILED' && outcome.text.includes(program.expect)
      print(`\n${named ? '✓' : '✗ UNEXPECTED'} ${program.name}  (${outcome.ms} ms)`)
      print(indent(program.code, '  > '))
      print(indent(clip(`${outcome.code}: ${outcome.text}`, 500), '  < '))
    }

    heading(print, 'Prototype pollution stays in its own run')
    const polluted = resultOf(await run(POLLUTE))
    const nextRun = resultOf(await run(INSPECT))
    print(indent(POLLUTE, '  > '))
    print(`  < ${JSON.stringify(polluted)}`)
    print(indent(INSPECT, '  > '))
    print(`  < ${JSON.stringify(nextRun)}`)

    heading(print, 'The host is fine')
    const final = await run(NORMAL)
    print(indent(NORMAL, '  > '))
    print(`  < ${final.isError ? `${errorCode(final)}: ${contentText(final)}` : JSON.stringify(resultOf(final))}`)
    const eventLoopMaxGapMs = Math.round(maxGap)
    print(`  the host event loop never waited more than ${eventLoopMaxGapMs} ms for a 10 ms timer`)

    return {
      engine: engine.name,
      outcomes,
      pollution: { polluted, nextRun },
      finalRun: { isError: final.isError, result: resultOf(final) },
      eventLoopMaxGapMs,
    }
  } finally {
    clearInterval(ticker)
  }
}

if (isMain(import.meta.url)) await main({ engine: engineName(process.argv[2]) })
