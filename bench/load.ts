/**
 * What a user pays before the first program runs, measured in fresh Node processes from the built
 * package (`dist/`, as `npm run build` writes it), interleaved over a few rounds, medians shown:
 *  - importing `toolbox-codemode/sandbox`: wall time and the RSS it adds;
 *  - the first `return 1` of a process through `run_code` (import, context, QuickJS engine, run);
 *  - whether the main thread loaded TypeScript on the way (a plain JavaScript program must not).
 * `benchLoad()` returns the lines to print; bench/run.ts prints them.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

const ROOT = join(import.meta.dirname, '..')
const ROUNDS = Number(process.env.BENCH_LOAD_ROUNDS ?? 5)

/** The goals of issue 20 and issue 24 for a cold start. */
const GOALS = { importMs: 50, importMiB: 15, firstReturnMs: 150 } as const

// The child's script: its clock starts before the first import of the package, after Node's own start.
const IMPORT_PROBE = `
const rss0 = process.memoryUsage().rss
const cpu0 = process.cpuUsage()
const t0 = performance.now()
await import(process.argv[1])
const ms = performance.now() - t0
const cpu = process.cpuUsage(cpu0)
const cpuMs = (cpu.user + cpu.system) / 1000
const mib = (process.memoryUsage().rss - rss0) / 2 ** 20
const typescript = Object.keys((await import('node:module')).createRequire(import.meta.url).cache).some((p) => /[\\\\/]typescript[\\\\/]/.test(p))
process.stdout.write(JSON.stringify({ ms, cpuMs, mib, typescript }))
`

const FIRST_RUN_PROBE = `
const t0 = performance.now()
const [{ createContext }, { createRunCode }] = await Promise.all([import(process.argv[1]), import(process.argv[2])])
const imported = performance.now()
const agent = createContext({ tools: { mode: 'code', codeMode: createRunCode() } }).agent('bench')
const result = await agent.ctx.tools.execute({ callId: '1', name: 'run_code', arguments: { code: 'return 1' }, signal: new AbortController().signal })
const ms = performance.now() - t0
const runMs = performance.now() - imported
if (result.isError || result.value.result !== 1) throw new Error('the first run failed: ' + JSON.stringify(result))
const typescript = Object.keys((await import('node:module')).createRequire(import.meta.url).cache).some((p) => /[\\\\/]typescript[\\\\/]/.test(p))
process.stdout.write(JSON.stringify({ ms, runMs, typescript }))
`

interface Probe {
  readonly ms: number
  /** CPU time of the whole process (every thread) during the import: steadier than wall time on a busy host. */
  readonly cpuMs?: number
  /** The first run alone, after the imports: context, QuickJS engine and its first workers, the run. */
  readonly runMs?: number
  readonly mib?: number
  readonly typescript: boolean
}

function probe(script: string, args: readonly string[]): Probe {
  const output = execFileSync(process.execPath, ['--no-node-snapshot', '--input-type=module', '-e', script, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  })
  return JSON.parse(output) as Probe
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

function verdict(value: number, goal: number): string {
  return value <= goal ? `[goal < ${goal}: met]` : `[goal < ${goal}: MISSED]`
}

/** Cold-start figures of the built package, as lines to print. */
export async function benchLoad(): Promise<string[]> {
  const sandbox = join(ROOT, 'dist', 'sandbox', 'index.js')
  const core = join(ROOT, 'dist', 'src', 'index.js')
  if (!existsSync(sandbox)) return ['== cold start (dist/) == not measured: dist/ is missing, run `npm run build` first']
  const imports: Probe[] = []
  const firsts: Probe[] = []
  for (let round = 0; round < ROUNDS; round++) {
    // Interleaved, so a burst of load on the machine lands on both figures alike.
    imports.push(probe(IMPORT_PROBE, [sandbox]))
    firsts.push(probe(FIRST_RUN_PROBE, [core, sandbox]))
  }
  const importMs = median(imports.map((p) => p.ms))
  const importMiB = median(imports.map((p) => p.mib ?? 0))
  const firstMs = median(firsts.map((p) => p.ms))
  const importCpuMs = median(imports.map((p) => p.cpuMs ?? 0))
  const runMs = median(firsts.map((p) => p.runMs ?? 0))
  const loadedTypeScript = [...imports, ...firsts].some((p) => p.typescript)
  const range = (values: readonly number[], digits: number): string => `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`
  return [
    `\n== cold start (dist/, ${ROUNDS} fresh processes each, medians) ==`,
    `import toolbox-codemode/sandbox: ${importMs.toFixed(1)} ms (${range(imports.map((p) => p.ms), 0)}) ${verdict(importMs, GOALS.importMs)}`,
    `  CPU time of the import: ${importCpuMs.toFixed(1)} ms (wall time above includes waiting for a core on a busy host)`,
    `  RSS added by the import: ${importMiB.toFixed(1)} MiB (${range(imports.map((p) => p.mib ?? 0), 1)}) ${verdict(importMiB, GOALS.importMiB)}`,
    `first return 1 via run_code on QuickJS (import + context + engine + run): ${firstMs.toFixed(1)} ms (${range(firsts.map((p) => p.ms), 0)}) ${verdict(firstMs, GOALS.firstReturnMs)}`,
    `  of which the run after the imports (context, engine, first workers, run): ${runMs.toFixed(1)} ms`,
    `  TypeScript loaded on the main thread: ${loadedTypeScript ? 'YES [goal: never for plain JavaScript: MISSED]' : 'no [goal: met]'}`,
  ]
}
