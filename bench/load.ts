/**
 * What a user pays before the first program runs, measured in fresh Node processes from the built
 * package (`dist/`, as `npm run build` writes it), interleaved over a few rounds, medians shown:
 *  - importing `toolbox-codemode/sandbox`: wall time and the RSS it adds;
 *  - the first `return 1` of a process through `run_code` (import, context, QuickJS engine, run),
 *    by default and with `typeCheck: 'off'` (no TypeScript thread warming up beside it);
 *  - whether the main thread loaded TypeScript on the way (a plain JavaScript program must not).
 * Each round also starts an empty Node process (`node -e ''`, the same flags) as the baseline: the
 * whole-process figures are printed as ratios to it, per round and as a median, so a busy host moves
 * both sides alike. `benchLoad()` returns the lines to print; bench/run.ts prints them.
 *
 * `node --import tsx bench/load.ts` runs this section alone; `BENCH_LOAD_DIST=<dir>` measures
 * another build (a `dist` directory) instead of the repository's, and `BENCH_LOAD_COMPARE=<dir>`
 * adds that build to every round too (before/after figures from one run).
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(import.meta.dirname, '..')
const ROUNDS = Number(process.env.BENCH_LOAD_ROUNDS ?? 7)

/** The goals of issue 20 and issue 24 for a cold start. */
const GOALS = { importMs: 50, importMiB: 15, firstReturnMs: 150 } as const

/** Flags of every probe: those `npm run demo` and the bench use (isolated-vm needs them). */
const NODE_FLAGS = ['--no-node-snapshot']

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
const agent = createContext({ tools: { mode: 'code', codeMode: createRunCode(JSON.parse(process.argv[3])) } }).agent('bench')
const result = await agent.ctx.tools.execute({ callId: '1', name: 'run_code', arguments: { code: 'return 1' }, signal: new AbortController().signal })
const ms = performance.now() - t0
const runMs = performance.now() - imported
const cpu = process.cpuUsage()
if (result.isError || result.value.result !== 1) throw new Error('the first run failed: ' + JSON.stringify(result))
const typescript = Object.keys((await import('node:module')).createRequire(import.meta.url).cache).some((p) => /[\\\\/]typescript[\\\\/]/.test(p))
process.stdout.write(JSON.stringify({ ms, runMs, cpuMs: (cpu.user + cpu.system) / 1000, typescript }))
// The process ends here, as a script that has its answer would: idle workers do not hold it.
`

interface Probe {
  readonly ms: number
  /** CPU time of the whole process (every thread): the import's, or the process's up to the first result. */
  readonly cpuMs?: number
  /** The first run alone, after the imports: context, QuickJS engine and its first workers, the run. */
  readonly runMs?: number
  readonly mib?: number
  readonly typescript: boolean
  /** Wall time of the whole child process, spawn to exit, as the parent saw it. */
  readonly processMs: number
}

function probe(script: string, args: readonly string[], flags: readonly string[] = NODE_FLAGS): Probe {
  const started = performance.now()
  const output = execFileSync(process.execPath, [...flags, '--input-type=module', '-e', script, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  })
  const processMs = performance.now() - started
  return { ...(output === '' ? { ms: 0, typescript: false } : (JSON.parse(output) as Omit<Probe, 'processMs'>)), processMs }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

function verdict(value: number, goal: number): string {
  return value <= goal ? `[goal < ${goal}: met]` : `[goal < ${goal}: MISSED]`
}

const range = (values: readonly number[], digits: number): string => `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`

/** One build's probes over the rounds. */
interface Build {
  readonly label: string
  readonly dist: string
  readonly imports: Probe[]
  readonly firsts: Probe[]
  /** The same first run with `typeCheck: 'off'`: no TypeScript thread warming up beside it. */
  readonly unchecked: Probe[]
  /** The import under plain `node`, with Node's startup snapshot (QuickJS needs no flag). */
  readonly snapshotImports: Probe[]
}

/** The lines for one build, each whole-process figure as a ratio to the empty process of its round. */
function report(build: Build, baselines: readonly Probe[]): string[] {
  const { imports, firsts, unchecked, snapshotImports } = build
  const importMs = median(imports.map((p) => p.ms))
  const importMiB = median(imports.map((p) => p.mib ?? 0))
  const firstMs = median(firsts.map((p) => p.ms))
  const importCpuMs = median(imports.map((p) => p.cpuMs ?? 0))
  const runMs = median(firsts.map((p) => p.runMs ?? 0))
  const firstCpuMs = median(firsts.map((p) => p.cpuMs ?? 0))
  const ratios = firsts.map((p, round) => p.processMs / (baselines[round] as Probe).processMs)
  const importRatios = imports.map((p, round) => p.processMs / (baselines[round] as Probe).processMs)
  const loadedTypeScript = [...imports, ...firsts, ...unchecked].some((p) => p.typescript)
  return [
    `${build.label}:`,
    `import toolbox-codemode/sandbox: ${importMs.toFixed(1)} ms (${range(imports.map((p) => p.ms), 0)}) ${verdict(importMs, GOALS.importMs)}`,
    `  CPU time of the import: ${importCpuMs.toFixed(1)} ms (wall time above includes waiting for a core on a busy host)`,
    `  RSS added by the import: ${importMiB.toFixed(1)} MiB (${range(imports.map((p) => p.mib ?? 0), 1)}) ${verdict(importMiB, GOALS.importMiB)}`,
    `  whole process that imports it, to the empty process: x${median(importRatios).toFixed(2)} (${range(importRatios, 2)})`,
    `  under plain node (its startup snapshot; QuickJS needs no flag): ${median(snapshotImports.map((p) => p.ms)).toFixed(1)} ms, CPU ${median(snapshotImports.map((p) => p.cpuMs ?? 0)).toFixed(1)} ms`,
    `first return 1 via run_code on QuickJS (import + context + engine + run): ${firstMs.toFixed(1)} ms (${range(firsts.map((p) => p.ms), 0)}) ${verdict(firstMs, GOALS.firstReturnMs)}`,
    `  of which the run after the imports (context, engine, first worker, run): ${runMs.toFixed(1)} ms`,
    `  CPU time of the process up to the result, every thread: ${firstCpuMs.toFixed(0)} ms`,
    `  whole process (spawn to exit) to the empty process: x${median(ratios).toFixed(2)}, per round ${ratios.map((r) => r.toFixed(2)).join(' ')}`,
    `  with typeCheck 'off' (no TypeScript thread warming up beside the first run): ${median(unchecked.map((p) => p.ms)).toFixed(1)} ms, ` +
      `CPU ${median(unchecked.map((p) => p.cpuMs ?? 0)).toFixed(0)} ms, whole process x${median(unchecked.map((p, round) => p.processMs / (baselines[round] as Probe).processMs)).toFixed(2)}`,
    `  TypeScript loaded on the main thread: ${loadedTypeScript ? 'YES [goal: never for plain JavaScript: MISSED]' : 'no [goal: met]'}`,
  ]
}

/** Cold-start figures of the built package, as lines to print. */
export async function benchLoad(): Promise<string[]> {
  const given = process.env.BENCH_LOAD_DIST
  const compare = process.env.BENCH_LOAD_COMPARE
  const builds: Build[] = [{ label: given === undefined ? 'dist/' : resolve(given), dist: resolve(given ?? join(ROOT, 'dist')), imports: [], firsts: [], unchecked: [], snapshotImports: [] }]
  if (compare !== undefined) builds.push({ label: resolve(compare), dist: resolve(compare), imports: [], firsts: [], unchecked: [], snapshotImports: [] })
  for (const build of builds) {
    if (!existsSync(join(build.dist, 'sandbox', 'index.js'))) return [`== cold start (dist/) == not measured: ${build.dist} has no build, run \`npm run build\` first`]
  }
  const baselines: Probe[] = []
  for (let round = 0; round < ROUNDS; round++) {
    // Interleaved, so a burst of load on the machine lands on every figure alike.
    baselines.push(probe('', []))
    for (const build of builds) {
      const sandbox = join(build.dist, 'sandbox', 'index.js')
      build.imports.push(probe(IMPORT_PROBE, [sandbox]))
      build.snapshotImports.push(probe(IMPORT_PROBE, [sandbox], []))
      const core = join(build.dist, 'src', 'index.js')
      build.firsts.push(probe(FIRST_RUN_PROBE, [core, sandbox, '{}']))
      build.unchecked.push(probe(FIRST_RUN_PROBE, [core, sandbox, JSON.stringify({ typeCheck: 'off' })]))
    }
  }
  const empty = baselines.map((p) => p.processMs)
  return [
    `\n== cold start (${ROUNDS} rounds of fresh processes, node ${NODE_FLAGS.join(' ')}, medians) ==`,
    `baseline: an empty process (node -e '') ${median(empty).toFixed(1)} ms spawn to exit (${range(empty, 0)})`,
    ...builds.flatMap((build) => report(build, baselines)),
  ]
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const line of await benchLoad()) console.log(line)
}
