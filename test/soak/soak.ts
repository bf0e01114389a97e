/**
 * The soak run: many agents at once send a mix of programs (succeeding, throwing, over each limit,
 * aborted, hostile) through `run_code` on one engine, then the engine is disposed and the host is
 * checked for what the programs may have left behind: unsettled or thrown runs, unbalanced session
 * logs, unhandled rejections, workers, processes, timers and handles, and memory.
 *
 * `npm run soak` runs it at full size on both engines (scripts/soak.ts); test/sandbox/soak.test.ts
 * runs a reduced count in CI.
 */
import { setMaxListeners } from 'node:events'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createContext } from '../../src/context.ts'
import type { ToolExecutionResult } from '../../src/execution.ts'
import type { ToolDefinition } from '../../src/tool.ts'
import type { SandboxEngine, SandboxLimits } from '../../sandbox/engine.ts'
import { createRunCode } from '../../sandbox/run-code.ts'

/** One kind of program, and how its run must end. */
interface Program {
  readonly name: string
  readonly code: string
  /** A value (`ok`), a failure of any kind (`fails`), or either when timing decides (`any`). */
  readonly ends: 'ok' | 'fails' | 'any'
  /** Abort the run after this many ms. */
  readonly abortAfterMs?: number
}

const PROGRAMS: readonly Program[] = [
  { name: 'return', code: 'return 1', ends: 'ok' },
  { name: 'sub-calls', code: 'let n = 0\nfor (let i = 0; i < 5; i++) n += (await tools.echo({ i })).i\nreturn n', ends: 'ok' },
  { name: 'parallel', code: 'return (await Promise.all(Array.from({ length: 20 }, (_, i) => tools.slow({ i })))).length', ends: 'ok' },
  { name: 'typescript', code: 'const xs: number[] = [1, 2, 3]\nreturn xs.map((x: number) => x * 2)', ends: 'ok' },
  { name: 'throws', code: 'throw new Error("on purpose")', ends: 'fails' },
  { name: 'tool fails', code: 'try { await tools.fail({}) } catch (e) { return e.code }', ends: 'ok' },
  { name: 'cpu', code: 'await tools.echo({}); for (;;) {}', ends: 'fails' },
  { name: 'memory', code: 'const a = []; for (;;) a.push("x".repeat(1e5) + a.length)', ends: 'fails' },
  { name: 'stack', code: 'const f = (n) => f(n + 1) + 1; return f(0)', ends: 'fails' },
  { name: 'sub-call flood', code: 'for (;;) tools.echo({})', ends: 'fails' },
  { name: 'log flood', code: 'for (;;) console.log("y".repeat(1000))', ends: 'fails' },
  { name: 'big result', code: 'return "z".repeat(2e6)', ends: 'fails' },
  { name: 'big argument', code: 'try { await tools.echo({ s: "a".repeat(3e5) }) } catch (e) { return e.code }', ends: 'ok' },
  { name: 'big answers', code: 'await Promise.all(Array.from({ length: 12 }, () => tools.big({})))\nreturn 1', ends: 'any' },
  { name: 'never settles', code: 'await new Promise(() => {})', ends: 'fails' },
  { name: 'aborted', code: 'await tools.hang({})', ends: 'fails', abortAfterMs: 30 },
  { name: 'aborted spin', code: 'await tools.echo({}); for (;;) {}', ends: 'fails', abortAfterMs: 30 },
  {
    name: 'polluted',
    code: "Object.prototype.then = () => 1; Array.prototype[Symbol.iterator] = null; JSON.parse = null\nreturn (await tools.echo({ a: 1 })).a",
    ends: 'any',
  },
  { name: 'cyclic result', code: 'const o = {}; o.o = o; return o', ends: 'fails' },
  { name: 'finally sub-call', code: "try { throw new Error('x') } finally { tools.hang({}) }", ends: 'fails' },
]

const LIMITS: Partial<SandboxLimits> = {
  cpuTimeMs: 150,
  wallTimeMs: 4_000,
  memoryLimitBytes: 32 * 1024 * 1024,
  maxSubCalls: 100,
  maxSubCallsInFlight: 40,
  maxLogBytes: 8 * 1024,
}

/** What a soak run saw. Empty `problems` means it passed. */
export interface SoakReport {
  readonly runs: number
  readonly byEnding: Readonly<Record<string, number>>
  readonly problems: readonly string[]
  readonly rssStartMiB: number
  readonly rssEndMiB: number
  readonly handlesBefore: Readonly<Record<string, number>>
  readonly handlesAfter: Readonly<Record<string, number>>
  readonly seconds: number
}

function tool(name: string, execute: ToolDefinition['execute']): ToolDefinition {
  return {
    name,
    description: name,
    parameters: { type: 'object', additionalProperties: true },
    output: { schema: {}, render: () => [{ type: 'text', text: name }] },
    execute,
    isConcurrencySafe: () => true,
  }
}

const BIG = 'b'.repeat(3e6)

function tools(): ToolDefinition[] {
  return [
    tool('echo', async (args) => args),
    tool('slow', (args) => new Promise((resolve) => setTimeout(() => resolve(args), 5))),
    tool('big', async () => BIG),
    tool('fail', async () => Promise.reject(new Error('the tool failed'))),
    tool('hang', (_args, exec) => new Promise((resolve) => exec.signal.addEventListener('abort', () => resolve(null), { once: true }))),
  ]
}

/** Node's active handles and requests by kind (Timeout, MessagePort, ChildProcess, ...). */
function handles(): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1
  return counts
}

function collectGarbage(): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}

function rssMiB(): number {
  collectGarbage()
  return process.memoryUsage().rss / 2 ** 20
}

/**
 * Soak `createEngine`'s engine with `runs` programs from `agents` agents at once. The engine is
 * created and disposed inside, so the handles and memory it leaves can be seen.
 */
export async function soak(createEngine: () => Promise<SandboxEngine>, options: { runs: number; agents: number }): Promise<SoakReport> {
  const started = performance.now()
  const problems: string[] = []
  const unhandled = (reason: unknown): void => {
    problems.push(`unhandled rejection: ${reason instanceof Error ? reason.message : String(reason)}`)
  }
  process.on('unhandledRejection', unhandled)
  // What a process pays once (TypeScript in the type-removal thread, validators, compiled code, the
  // allocator's per-thread arenas for as many threads as the agents make the pools start) is paid
  // by a first round at the same concurrency on an engine of its own; the soak starts after it.
  await round(createEngine, PROGRAMS.length * 2, options.agents, () => {})
  await new Promise((resolve) => setTimeout(resolve, 200))
  const handlesBefore = handles()
  const rssStartMiB = rssMiB()
  const byEnding: Record<string, number> = {}
  const runs = await round(createEngine, options.runs, options.agents, (program, result) => {
    if (result instanceof Error) {
      problems.push(`${program.name}: execute() threw ${result.message}`)
      return
    }
    const ending = result.isError ? `fails:${result.error.info?.code ?? 'none'}` : 'ok'
    byEnding[ending] = (byEnding[ending] ?? 0) + 1
    if (program.ends === 'ok' && result.isError) problems.push(`${program.name}: failed: ${result.error.message.slice(0, 200)}`)
    if (program.ends === 'fails' && !result.isError) problems.push(`${program.name}: returned a value`)
    if (result.isError && !['CODE_RUN_FAILED', 'ABORTED', 'ABORTED_BEFORE_DISPATCH'].includes(result.error.info?.code ?? '')) {
      problems.push(`${program.name}: failed with ${result.error.info?.code}: ${result.error.message.slice(0, 200)}`)
    }
  })
  problems.push(...runs.problems)
  const handlesAfter = handles()
  for (const [kind, count] of Object.entries(handlesAfter)) {
    if (count > (handlesBefore[kind] ?? 0)) problems.push(`left behind: ${count - (handlesBefore[kind] ?? 0)} more ${kind} than before`)
  }
  const rssEndMiB = rssMiB()
  process.off('unhandledRejection', unhandled)
  return { runs: options.runs, byEnding, problems, rssStartMiB, rssEndMiB, handlesBefore, handlesAfter, seconds: (performance.now() - started) / 1000 }
}

/**
 * `runs` programs (the list in turn) from `agentCount` agents at once on a new engine, each result
 * to `seen`; then the session logs are checked and the engine disposed.
 */
async function round(
  createEngine: () => Promise<SandboxEngine>,
  runs: number,
  agentCount: number,
  seen: (program: Program, result: ToolExecutionResult | Error) => void,
): Promise<{ problems: string[] }> {
  const problems: string[] = []
  const engine = await createEngine()
  const ctx = createContext({ tools: { mode: 'code', maxParallelSubCalls: 16, codeMode: createRunCode({ engine, limits: LIMITS }) } })
  for (const definition of tools()) ctx.tools.register(definition)
  const agents = Array.from({ length: agentCount }, (_, i) => ctx.agent(`soak-${i}`))
  let next = 0
  const one = async (agentIndex: number, index: number): Promise<void> => {
    const agent = agents[agentIndex] as (typeof agents)[number]
    const program = PROGRAMS[index % PROGRAMS.length] as Program
    const controller = new AbortController()
    setMaxListeners(64, controller.signal)
    const timer = program.abortAfterMs === undefined ? undefined : setTimeout(() => controller.abort(), program.abortAfterMs)
    try {
      seen(program, await agent.ctx.tools.execute({ callId: `soak-${index}`, name: 'run_code', arguments: { code: program.code }, signal: controller.signal }))
    } catch (error) {
      seen(program, error instanceof Error ? error : new Error(String(error)))
    } finally {
      clearTimeout(timer)
    }
  }
  await Promise.all(
    agents.map(async (_agent, agentIndex) => {
      for (let index = next++; index < runs; index = next++) await one(agentIndex, index)
    }),
  )
  for (const agent of agents) {
    const events = agent.session.events
    const starts = events.filter((event) => event.type === 'tool/code-dispatch-start').length
    const ends = events.filter((event) => event.type === 'tool/code-dispatch').length
    if (starts !== ends) problems.push(`${agent.id}: ${starts} code-dispatch-start events but ${ends} code-dispatch`)
    const calls = events.filter((event) => event.type === 'tool/call').length
    const results = events.filter((event) => event.type === 'tool/result').length
    if (calls !== results) problems.push(`${agent.id}: ${calls} tool/call events but ${results} tool/result`)
  }
  await engine.dispose()
  // Terminated workers and killed processes are reaped in the next turns.
  await new Promise((resolve) => setTimeout(resolve, 500))
  return { problems }
}
