/**
 * Host memory over many programs, per engine, each in a fresh Node process running the built
 * package (`dist/`): after a warm-up, `return 1` through `engine.run` back to back, the host's RSS
 * read after `gc()` at 10,000 programs and again at the end (50,000 by default). Issue 24's goals:
 * under 15 MiB of growth over the first 10,000, none between 10,000 and the end.
 *
 * RSS of a Node process that allocates steadily also grows for a reason that is not a leak: V8
 * doubles its young generation (the semi-spaces, up to 16 MiB each on 64-bit) as objects keep
 * surviving scavenges, and `gc()` does not shrink it back. Any allocating host code does that, the
 * library's or the user's, so each figure is printed whole and with the young generation's share
 * beside it; the difference is what the engine itself holds. A second probe per engine runs with a
 * young generation too large to collect in, and reports the bytes the host's main thread allocates
 * per program: the rate that drives the young generation's growth.
 *
 * The baseline, in the same run: the same loop awaiting an async function that does nothing.
 * `node --import tsx bench/memory.ts` runs this section alone; `BENCH_MEMORY_RUNS=<n>` sets the
 * end (at least 10,000), `BENCH_MEMORY_DIST=<dir>` measures another build.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'

const ROOT = join(import.meta.dirname, '..')
const WARM_RUNS = 3_000
const CHECKPOINT = 10_000
const END = Math.max(CHECKPOINT, Number(process.env.BENCH_MEMORY_RUNS ?? 50_000))
const ALLOCATION_RUNS = 1_000
const GOAL_GROWTH_MIB = 15

type EngineName = 'quickjs' | 'isolated-vm' | 'isolated-vm in-process' | 'baseline'

// The child's script. argv: sandbox module, engine name, warm-up, checkpoint, end. Prints one JSON line.
const GROWTH_PROBE = `
import v8 from 'node:v8'
const [sandboxPath, which, warm, checkpoint, end] = process.argv.slice(1)
const sandbox = await import(sandboxPath)
const engine = which === 'baseline' ? undefined
  : which === 'quickjs' ? sandbox.createQuickJSEngine()
  : await sandbox.createIsolatedVmEngine(which === 'isolated-vm' ? {} : { isolation: 'in-process' })
const host = { call: async () => ({ ok: false, message: 'no tools', code: 'TOOL_FAILED' }), log() {} }
const nothing = async () => ({ ok: true })
const runOne = async () => {
  const outcome = engine === undefined ? await nothing() : await engine.run({ code: 'return 1', tools: [], limits: sandbox.DEFAULT_LIMITS, host, signal: new AbortController().signal })
  if (!outcome.ok) throw new Error('a run failed: ' + JSON.stringify(outcome))
}
const young = () => v8.getHeapSpaceStatistics().filter((s) => s.space_name.startsWith('new_')).reduce((sum, s) => sum + s.physical_space_size, 0)
const sample = () => { globalThis.gc(); return { rss: process.memoryUsage().rss, young: young() } }
if (process.env.ALLOCATION === '1') {
  for (let i = 0; i < Number(warm); i++) await runOne()
  globalThis.gc()
  const before = process.memoryUsage().heapUsed
  for (let i = 0; i < Number(checkpoint); i++) await runOne()
  process.stdout.write(JSON.stringify({ bytesPerRun: (process.memoryUsage().heapUsed - before) / Number(checkpoint) }))
} else {
  for (let i = 0; i < Number(warm); i++) await runOne()
  const start = sample()
  for (let i = 0; i < Number(checkpoint); i++) await runOne()
  const mid = sample()
  for (let i = Number(checkpoint); i < Number(end); i++) await runOne()
  const last = sample()
  process.stdout.write(JSON.stringify({ start, mid, last }))
}
await engine?.dispose()
`

interface Sample {
  readonly rss: number
  readonly young: number
}

interface Growth {
  readonly start: Sample
  readonly mid: Sample
  readonly last: Sample
}

function probe<T>(engine: EngineName, sandbox: string, args: { warm: number; checkpoint: number; end: number }, flags: readonly string[], env: Record<string, string> = {}): T {
  const output = execFileSync(
    process.execPath,
    ['--no-node-snapshot', '--expose-gc', ...flags, '--input-type=module', '-e', GROWTH_PROBE, sandbox, engine, String(args.warm), String(args.checkpoint), String(args.end)],
    { cwd: ROOT, encoding: 'utf8', timeout: 20 * 60_000, env: { ...process.env, ...env } },
  )
  return JSON.parse(output) as T
}

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`

/** `grew X MiB (young generation Y, the rest Z)` between two samples. */
function growth(from: Sample, to: Sample): { line: string; rest: number; whole: number } {
  const whole = to.rss - from.rss
  const young = to.young - from.young
  return { line: `${mib(whole)} (V8 young generation ${mib(young)}, the rest ${mib(whole - young)})`, rest: whole - young, whole }
}

function verdict(bytes: number, goalMiB: number): string {
  return bytes <= goalMiB * 2 ** 20 ? `[goal < ${goalMiB} MiB: met]` : `[goal < ${goalMiB} MiB: MISSED]`
}

/** The section's lines; bench/run.ts prints them. */
export async function benchMemory(): Promise<string[]> {
  const dist = resolve(process.env.BENCH_MEMORY_DIST ?? join(ROOT, 'dist'))
  const sandbox = join(dist, 'sandbox', 'index.js')
  if (!existsSync(sandbox)) return [`\n== host memory over ${END} programs == not measured: ${dist} has no build, run \`npm run build\` first`]
  let engines: EngineName[] = ['baseline', 'quickjs', 'isolated-vm', 'isolated-vm in-process']
  try {
    createRequire(import.meta.url)('isolated-vm')
  } catch {
    engines = ['baseline', 'quickjs']
  }
  const lines = [
    `\n== host memory over ${END} programs (\`return 1\` through engine.run, fresh process each, after ${WARM_RUNS} warm-up runs) ==`,
  ]
  for (const engine of engines) {
    const { start, mid, last } = probe<Growth>(engine, sandbox, { warm: WARM_RUNS, checkpoint: CHECKPOINT, end: END }, [])
    // A young generation that never fills: heapUsed then counts every byte allocated.
    const { bytesPerRun } = probe<{ bytesPerRun: number }>(engine, sandbox, { warm: 300, checkpoint: ALLOCATION_RUNS, end: ALLOCATION_RUNS }, ['--min-semi-space-size=64', '--max-semi-space-size=64'], { ALLOCATION: '1' })
    const first = growth(start, mid)
    const then = growth(mid, last)
    lines.push(
      `${engine}:`,
      `  RSS growth over the first ${CHECKPOINT}: ${first.line} ${engine === 'baseline' ? '' : `the rest ${verdict(first.rest, GOAL_GROWTH_MIB)}, whole ${verdict(first.whole, GOAL_GROWTH_MIB)}`}`,
      `  RSS growth from ${CHECKPOINT} to ${END}: ${then.line}`,
      `  host main-thread allocation: ${(bytesPerRun / 1024).toFixed(1)} KiB per program`,
    )
  }
  return lines
}

if (import.meta.url === `file://${process.argv[1]}`) for (const line of await benchMemory()) console.log(line)
