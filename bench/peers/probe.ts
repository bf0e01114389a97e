/**
 * One fresh process of the peers bench: opens one runtime and measures one section, then prints a
 * JSON line. bench/peers/run.ts bundles this file (and the adapters) so the child loads no TypeScript
 * loader: only the runtime's own imports are timed.
 *
 *   node --no-node-snapshot --expose-gc .build/probe.mjs <peer id> <default|raised> <section> [quick]
 *
 * Sections: `main` (start, warm, sub-call, Promise.all, lag), `busy` (warm and sub-call, while
 * run.ts keeps a CPU-bound process beside it), `rss` (growth over many programs), `runaway`.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { programs, type PeerSession } from './peer.ts'
import { PEERS } from './peers.ts'

const [peerId, caps, section, quickFlag] = process.argv.slice(2)
const quick = quickFlag === 'quick'
const WARM_RUNS = quick ? 30 : 100
const SEQUENTIAL_CALLS = 1_000
const SEQUENTIAL_REPS = quick ? 3 : 7
const PARALLEL_CALLS = 100
const PARALLEL_REPS = quick ? 3 : 5
const SPIN_MS = 300
const RSS_PROGRAMS = quick ? 1_000 : 10_000
// 10,000 programs, or as many as fit: the slowest peers need minutes for 10,000.
const RSS_BUDGET_MS = quick ? 20_000 : 30_000
/** The pause before the RSS growth's first sample (see the rss section). */
const SETTLE_MS = 3_000
const RUNAWAY_LIMIT_MS = 100
const RUNAWAY_GIVE_UP_MS = 5_000

// Some peers log every tool call to the console (utcp): the figures measure runtimes, not a pipe.
for (const method of ['log', 'info', 'debug', 'warn'] as const) console[method] = () => {}

type Figures = Record<string, number>
const figures: Figures = {}
const errors: Record<string, string> = {}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

function p90(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.9) - 1)] as number
}

/** RSS of this process and every process below it (isolated-vm children, workerd), in MiB. */
function treeRssMiB(): number {
  const parents = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // The command name may hold spaces and parentheses: the fields start after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {
      // Gone between the listing and the read.
    }
  }
  const tree = new Set([process.pid])
  for (let grew = true; grew; ) {
    grew = false
    for (const [pid, parent] of parents) if (tree.has(parent) && !tree.has(pid)) (tree.add(pid), (grew = true))
  }
  let kib = 0
  for (const pid of tree) {
    try {
      kib += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
    } catch {
      // Gone.
    }
  }
  return kib / 1024
}

/**
 * The host's event-loop lag: the longest a 2 ms timer fired late. A runtime that blocks the main
 * thread shows here even when it blocks it in one piece (the next tick, after `stop`, sees it).
 */
function watchLag(): { stop(): Promise<number> } {
  const TICK_MS = 2
  let last = performance.now()
  let worst = 0
  const timer = setInterval(() => {
    const now = performance.now()
    worst = Math.max(worst, now - last - TICK_MS)
    last = now
  }, TICK_MS)
  return {
    async stop() {
      await new Promise((resolve) => setTimeout(resolve, 4 * TICK_MS))
      clearInterval(timer)
      return worst
    },
  }
}

async function expectRun(session: PeerSession, program: { body: string; expect: unknown }): Promise<number> {
  const start = performance.now()
  const value = await session.run(program.body)
  const ms = performance.now() - start
  if (value !== program.expect) throw new Error(`returned ${JSON.stringify(value)}, expected ${JSON.stringify(program.expect)}`)
  return ms
}

/** Runs `measure`, keeping its figures; a failure is recorded under `name` and the section goes on. */
async function figure(name: string, measure: () => Promise<void>): Promise<void> {
  try {
    await measure()
  } catch (error) {
    errors[name] = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').slice(0, 160)
  }
}

async function warm(session: PeerSession): Promise<number> {
  for (let i = 0; i < 10; i++) await expectRun(session, programs.returnOne)
  const times: number[] = []
  for (let i = 0; i < WARM_RUNS; i++) times.push(await expectRun(session, programs.returnOne))
  return median(times)
}

async function sequential(session: PeerSession, warmMs: number): Promise<void> {
  const program = programs.sequential(SEQUENTIAL_CALLS)
  // The first runs warm the JIT on the host side of the bridge.
  for (let i = 0; i < 2; i++) await expectRun(session, program)
  const perCallUs: number[] = []
  for (let i = 0; i < SEQUENTIAL_REPS; i++) perCallUs.push(((await expectRun(session, program)) - warmMs) * (1000 / SEQUENTIAL_CALLS))
  figures.subCallUs = median(perCallUs)
  figures.subCallP90Us = p90(perCallUs)
}

async function main(): Promise<void> {
  const peer = PEERS.find((candidate) => candidate.id === peerId)
  if (peer === undefined) throw new Error(`unknown peer "${peerId}"; known: ${PEERS.map((p) => p.id).join(', ')}`)
  const settings = { caps: caps === 'raised' ? ('raised' as const) : ('default' as const), ...(section === 'runaway' ? { timeLimitMs: RUNAWAY_LIMIT_MS } : {}) }
  const start = performance.now()
  const session = await peer.open(settings)
  if (section === 'runaway') {
    // Under a 100 ms limit a cold first run may itself be stopped: warm up, whatever the outcome.
    for (let i = 0; i < 5; i++) await session.run(programs.returnOne.body).catch(() => {})
  } else {
    await expectRun(session, programs.returnOne)
    figures.startMs = performance.now() - start
  }
  if (section === 'main' || section === 'busy') {
    let warmMs = Number.NaN
    await figure('warmMs', async () => {
      warmMs = figures.warmMs = await warm(session)
    })
    await figure('subCallUs', () => sequential(session, warmMs))
  }
  if (section === 'main') {
    await figure('parallelMs', async () => {
      const program = programs.parallel(PARALLEL_CALLS)
      await expectRun(session, program)
      const times: number[] = []
      for (let i = 0; i < PARALLEL_REPS; i++) times.push(await expectRun(session, program))
      figures.parallelMs = median(times)
    })
    await figure('lagMs', async () => {
      const lag = watchLag()
      figures.spinMs = await expectRun(session, programs.spin(SPIN_MS))
      figures.lagMs = await lag.stop()
    })
  }
  if (section === 'rss') {
    await figure('rssMiB', async () => {
      for (let i = 0; i < 100; i++) await expectRun(session, programs.returnOne)
      // What a runtime loads in the background at its start (this library's type checker thread) is
      // start-up memory, not growth: every runtime gets the same pause to settle before the sample.
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
      globalThis.gc?.()
      const before = treeRssMiB()
      const began = performance.now()
      let count = 0
      while (count < RSS_PROGRAMS && performance.now() - began < RSS_BUDGET_MS) {
        await expectRun(session, programs.returnOne)
        count += 1
      }
      globalThis.gc?.()
      await new Promise((resolve) => setTimeout(resolve, 200))
      figures.rssMiB = treeRssMiB() - before
      figures.rssPrograms = count
      figures.rssAfterMiB = treeRssMiB()
    })
  }
  if (section === 'runaway') {
    await figure('stoppedMs', async () => {
      const lag = watchLag()
      const began = performance.now()
      const outcome = await Promise.race([
        session.run(programs.runaway.body).then(
          () => 'finished',
          () => 'stopped',
        ),
        new Promise<string>((resolve) => setTimeout(() => resolve('running'), RUNAWAY_GIVE_UP_MS)),
      ])
      const stoppedMs = performance.now() - began
      figures.runawayLagMs = await lag.stop()
      if (outcome === 'running') throw new Error(`not stopped after ${RUNAWAY_GIVE_UP_MS} ms`)
      if (outcome === 'finished') throw new Error('the runaway loop returned')
      figures.stoppedMs = stoppedMs
    })
  }
  process.stdout.write(`${JSON.stringify({ figures, errors })}\n`)
  // A runaway may still hold a thread or a child: run.ts ends the whole process group after this.
  if (section === 'runaway') process.exit(0)
  await Promise.race([session.close(), new Promise((resolve) => setTimeout(resolve, 3_000))])
  process.exit(0)
}

await main()
