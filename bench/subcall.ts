/**
 * The sequential sub-call, on a quiet machine and beside a CPU-bound process (issue 24): one
 * `await tools.noop()` in a loop of 1,000 through `run_code`, minus an empty run, per call, over
 * many rounds; median and p90 over the rounds, and the CPU this process spent per call (every
 * thread: the QuickJS worker's spin and the main thread's keep-awake window included). Each engine
 * runs beside the same engine with `spinMicros: 0` and beside native `execute()`, interleaved in
 * the same rounds, so the ratios hold on a busy shared host. The busy condition is one child
 * process spinning on a core for the whole of it.
 *
 * `benchSubCall()` returns the lines to print; bench/run.ts prints them.
 * `node --no-node-snapshot --import tsx bench/subcall.ts` runs it alone.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { createContext } from '../src/context.ts'
import type { Agent } from '../src/context.ts'
import type { ToolDefinition } from '../src/tool.ts'
import { createIsolatedVmEngine, createQuickJSEngine, createRunCode, resolveLimits } from '../sandbox/index.ts'
import type { SandboxEngine } from '../sandbox/index.ts'

const CALLS = 1_000
const ROUNDS = Number(process.env.BENCH_SUBCALL_ROUNDS ?? 15)
/** Issue 24's goals for QuickJS (median, p90 over rounds) and isolated-vm (median), in microseconds. */
const GOALS = { quickjs: { median: 25, p90: 50 }, 'isolated-vm': { median: 50, p90: Number.POSITIVE_INFINITY } } as const

interface Config {
  readonly label: string
  readonly goal?: keyof typeof GOALS
  readonly create: () => SandboxEngine | Promise<SandboxEngine>
}

function noop(): ToolDefinition {
  return {
    name: 'noop',
    description: 'noop',
    parameters: { type: 'object', additionalProperties: true },
    output: { schema: {}, render: () => [{ type: 'text', text: 'ok' }] },
    execute: async () => null,
  }
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] as number
}

let callIds = 0
async function runCode(agent: Agent, code: string): Promise<void> {
  const result = await agent.ctx.tools.execute({ callId: `sub-${callIds++}`, name: 'run_code', arguments: { code }, signal: new AbortController().signal })
  if (result.isError) throw new Error(`bench program failed: ${result.error.message}`)
}

/** Wall and CPU milliseconds of `fn` (CPU of every thread of this process). */
async function measure(fn: () => Promise<unknown>): Promise<{ wall: number; cpu: number }> {
  const cpu0 = process.cpuUsage()
  const start = performance.now()
  await fn()
  const wall = performance.now() - start
  const cpu = process.cpuUsage(cpu0)
  return { wall, cpu: (cpu.user + cpu.system) / 1000 }
}

interface Sample {
  /** Per call: wall microseconds, CPU microseconds (1,000 calls minus an empty run, divided). */
  readonly wallUs: number
  readonly cpuUs: number
}

class Subject {
  readonly samples: Sample[] = []
  #engine: SandboxEngine | undefined
  #agent: Agent | undefined

  constructor(readonly config: Config) {}

  async open(): Promise<void> {
    const engine = await this.config.create()
    const ctx = createContext({
      tools: { mode: 'code', codeMode: createRunCode({ engine, limits: resolveLimits({ maxSubCalls: 5_000 }) }) },
    })
    ctx.tools.register(noop())
    this.#engine = engine
    this.#agent = ctx.agent('subcall')
    // Warm both threads' JIT before timing.
    for (let i = 0; i < 4; i++) await this.round(false)
  }

  async round(keep = true): Promise<void> {
    const agent = this.#agent as Agent
    const empty = await measure(() => runCode(agent, 'return 0'))
    const loop = await measure(() => runCode(agent, `for (let i = 0; i < ${CALLS}; i++) await tools.noop({ i })\nreturn ${CALLS}`))
    if (keep) this.samples.push({ wallUs: ((loop.wall - empty.wall) / CALLS) * 1000, cpuUs: ((loop.cpu - empty.cpu) / CALLS) * 1000 })
  }

  async close(): Promise<void> {
    await this.#engine?.dispose()
  }
}

/** The same 1,000 calls through `execute()` natively, per call. */
class Native {
  readonly samples: Sample[] = []
  readonly #ctx = createContext()

  constructor() {
    this.#ctx.tools.register(noop())
  }

  async round(keep = true): Promise<void> {
    const { wall, cpu } = await measure(async () => {
      for (let i = 0; i < CALLS; i++) {
        await this.#ctx.tools.execute({ callId: `n${i}`, name: 'noop', arguments: { i }, signal: new AbortController().signal })
      }
    })
    if (keep) this.samples.push({ wallUs: (wall / CALLS) * 1000, cpuUs: (cpu / CALLS) * 1000 })
  }
}

/** One child process spinning on a core until it is killed. */
function burnCore(): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' })
  child.unref()
  return child
}

function summary(samples: readonly Sample[]): { median: number; p90: number; cpu: number; range: string } {
  const walls = samples.map((s) => s.wallUs)
  return {
    median: quantile(walls, 0.5),
    p90: quantile(walls, 0.9),
    cpu: quantile(samples.map((s) => s.cpuUs), 0.5),
    range: `${Math.min(...walls).toFixed(0)}-${Math.max(...walls).toFixed(0)}`,
  }
}

function verdict(value: number, goal: number, what: string): string {
  if (!Number.isFinite(goal)) return ''
  return value <= goal ? ` [${what} goal < ${goal}: met]` : ` [${what} goal < ${goal}: MISSED]`
}

async function condition(name: string, configs: readonly Config[]): Promise<string[]> {
  const subjects = configs.map((config) => new Subject(config))
  const native = new Native()
  for (const subject of subjects) await subject.open()
  for (let i = 0; i < 3; i++) await native.round(false)
  for (let round = 0; round < ROUNDS; round++) {
    // Interleaved, so a burst of load on the machine lands on every figure alike.
    await native.round()
    for (const subject of subjects) await subject.round()
  }
  for (const subject of subjects) await subject.close()
  const base = summary(native.samples)
  const lines = [`${name}: native execute() ${base.median.toFixed(1)} us per call (CPU ${base.cpu.toFixed(1)} us)`]
  const summaries = new Map(subjects.map((subject) => [subject.config.label, summary(subject.samples)]))
  for (const subject of subjects) {
    const s = summaries.get(subject.config.label) as ReturnType<typeof summary>
    const goal = subject.config.goal === undefined ? undefined : GOALS[subject.config.goal]
    lines.push(
      `  ${subject.config.label}: median ${s.median.toFixed(1)} us, p90 ${s.p90.toFixed(1)} us (rounds ${s.range}), ` +
        `CPU ${s.cpu.toFixed(1)} us per call, ${(s.median / base.median).toFixed(1)}x native` +
        (goal === undefined ? '' : verdict(s.median, goal.median, 'median') + verdict(s.p90, goal.p90, 'p90')),
    )
  }
  // What spinning buys on QuickJS in this condition: the same engine with and without it.
  const spinning = summaries.get('quickjs')
  const sleeping = summaries.get('quickjs spinMicros 0')
  if (spinning !== undefined && sleeping !== undefined) {
    lines.push(
      `  the spin on QuickJS: saves ${(sleeping.median - spinning.median).toFixed(1)} us per call (median), ` +
        `costs ${(spinning.cpu - sleeping.cpu).toFixed(1)} us of CPU per call`,
    )
  }
  return lines
}

/** Sub-call figures, quiet and beside a busy core, as lines to print. */
export async function benchSubCall(): Promise<string[]> {
  let ivm = true
  try {
    createRequire(import.meta.url)('isolated-vm')
  } catch {
    ivm = false
  }
  // BENCH_SUBCALL_ENGINES=quickjs measures QuickJS alone (quicker, for A/B runs of the engine).
  if (process.env.BENCH_SUBCALL_ENGINES === 'quickjs') ivm = false
  const configs: Config[] = [
    { label: 'quickjs', goal: 'quickjs', create: () => createQuickJSEngine() },
    { label: 'quickjs spinMicros 0', create: () => createQuickJSEngine({ spinMicros: 0 }) },
    ...(ivm
      ? [
          { label: 'isolated-vm (child process)', goal: 'isolated-vm', create: () => createIsolatedVmEngine() } as const,
          { label: 'isolated-vm in-process', create: () => createIsolatedVmEngine({ isolation: 'in-process' }) } as const,
        ]
      : []),
  ]
  const lines = [`\n== sequential sub-call under load (${CALLS} calls minus an empty run, ${ROUNDS} rounds, per call) ==`]
  lines.push(...(await condition('quiet', configs)))
  const burner = burnCore()
  try {
    lines.push(...(await condition('beside one busy core (a CPU-bound child process)', configs)))
  } finally {
    burner.kill('SIGKILL')
  }
  if (!ivm) lines.push('  isolated-vm: not installed here, not measured')
  return lines
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const line of await benchSubCall()) console.log(line)
}
