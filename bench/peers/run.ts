/**
 * `npm run bench:peers`: this library beside published Code Mode runtimes (bench/peers/adapters/),
 * each in fresh processes, interleaved in rounds, every figure printed with its ratio to this
 * library on QuickJS measured in the same round. The peers are installed here only (npm ci in
 * bench/peers/), never as dependencies of the library; the library is loaded from its built dist/.
 *
 *   npm run bench:peers [-- --quick] [-- --only=run,utcp]
 *
 * Per round and runtime (each runtime with its defaults, then with caps raised where a default
 * fails): the fresh-process start (import + setup + first `return 1`), warm `return 1`, one
 * sequential sub-call (1,000 calls minus an empty run), `Promise.all` over 100 calls of a 5 ms
 * tool, the host's event-loop lag while a guest spins for 300 ms, and the sub-call again beside a
 * CPU-bound process (the busy neighbour). Once per runtime: RSS growth over 10,000 programs or as
 * many as run in 30 s (after gc(), every process of the runtime counted) and when a
 * `while (true) {}` under a 100 ms limit is stopped.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { build } from 'esbuild'
import type { Peer } from './peer.ts'
import { PEERS } from './peers.ts'

const HERE = import.meta.dirname
const ROOT = join(HERE, '..', '..')
const BUILD = join(HERE, '.build')
const QUICK = process.argv.includes('--quick')
const ROUNDS = QUICK ? 1 : Number(process.env.BENCH_PEERS_ROUNDS ?? 4)
const ONLY = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length).split(',')
// Ample for a full probe on a loaded host (the RSS probe runs 30 s); a hung runtime is reported as such.
const PROBE_TIMEOUT_MS = 120_000

type Section = 'main' | 'busy' | 'rss' | 'runaway'
interface Outcome {
  readonly figures: Record<string, number>
  readonly errors: Record<string, string>
  /** Set when the process itself failed (the runtime did not install, load or start). */
  readonly failed?: string
}
interface Config {
  readonly peer: Peer
  readonly caps: 'default' | 'raised'
  readonly label: string
}

/** Installs the peers from the lockfile when node_modules is missing or older than it. */
function ensureInstalled(): void {
  const marker = join(HERE, 'node_modules', '.package-lock.json')
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(join(HERE, 'package-lock.json')).mtimeMs) return
  console.log('installing the peers (npm ci in bench/peers/)...')
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: HERE, stdio: 'inherit' })
  if (result.status !== 0) console.log('npm ci failed in bench/peers/: the runtimes that did not install are reported as failing')
}

/** The newest modification time of a TypeScript source under the library's roots. */
function newestSourceMs(dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMs(path))
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

function checkDist(): void {
  const built = join(ROOT, 'dist', 'sandbox', 'index.js')
  if (!existsSync(built)) {
    console.log('dist/ is missing: run `npm run build` first (the library is measured as users import it)')
    return
  }
  const stale = ['src', 'sandbox', 'sdk-gen'].some((root) => newestSourceMs(join(ROOT, root)) > statSync(built).mtimeMs)
  if (stale) console.log('note: dist/ is older than the sources; `npm run build` measures the current code')
}

/** Bundles the probe (peers stay external) and the Worker that hosts Cloudflare's executor. */
async function bundle(): Promise<void> {
  await build({
    entryPoints: [join(HERE, 'probe.ts')],
    outfile: join(BUILD, 'probe.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'error',
  })
  try {
    await build({
      entryPoints: [join(HERE, 'adapters', 'cloudflare-host.ts')],
      outfile: join(BUILD, 'cloudflare-host.mjs'),
      bundle: true,
      platform: 'neutral',
      format: 'esm',
      mainFields: ['module', 'main'],
      conditions: ['workerd', 'worker', 'import'],
      external: ['cloudflare:*'],
      nodePaths: [join(HERE, 'node_modules')],
      logLevel: 'silent',
    })
  } catch (error) {
    console.log(`the Cloudflare host Worker did not bundle (its runtime will be reported as failing): ${String(error).split('\n')[0]}`)
  }
}

function version(name: string): string {
  try {
    return (JSON.parse(readFileSync(join(HERE, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version
  } catch {
    return 'not installed'
  }
}

function libraryVersion(): string {
  const { version: own } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
  const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim()
  return `${own} (${commit || 'no git'}, dist/)`
}

/** Runs one probe in a fresh process group, optionally beside a CPU-bound neighbour; never throws. */
function probe(config: Config, section: Section, busy = false): Promise<Outcome> {
  // A full run takes minutes on a busy host: one dot per fresh process shows it is moving.
  if (process.stderr.isTTY) process.stderr.write('.')
  const neighbour = busy ? spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }) : undefined
  const args = ['--no-node-snapshot', '--expose-gc', join(BUILD, 'probe.mjs'), config.peer.id, config.caps, section, QUICK ? 'quick' : 'full']
  const child = spawn(process.execPath, args, { cwd: HERE, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  return new Promise((resolve) => {
    let settled = false
    const settle = (outcome: Outcome): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      // workerd, isolated-vm children, a runaway's thread: whatever the probe left behind goes too.
      killGroup(child.pid)
      neighbour?.kill('SIGKILL')
      resolve(outcome)
    }
    const timer = setTimeout(
      () => settle({ figures: {}, errors: {}, failed: `no answer in ${PROBE_TIMEOUT_MS / 1000} s: the process hung and was killed` }),
      PROBE_TIMEOUT_MS,
    )
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk
      // Done once the answer is in: an exit can hang (isolated-vm tearing down live isolates).
      if (stdout.endsWith('\n')) {
        try {
          settle(JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as Outcome)
        } catch {
          // Not an answer yet.
        }
      }
    })
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
    child.on('close', (code) => {
      const reason = stderr.trim().split('\n').filter((l) => /error|Error|cannot|Cannot/.test(l)).at(0) ?? stderr.trim().split('\n').at(-1)
      settle({ figures: {}, errors: {}, failed: `exit ${code}: ${(reason || 'no output').slice(0, 200)}` })
    })
  })
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {
    // The group is already gone.
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

const COLUMNS = [
  { key: 'startMs', title: 'fresh start', unit: 'ms' },
  { key: 'warmMs', title: 'warm return 1', unit: 'ms' },
  { key: 'subCallUs', title: 'sub-call', unit: 'us' },
  { key: 'subCallP90Us', title: 'sub-call p90', unit: 'us' },
  { key: 'parallelMs', title: 'Promise.all 100', unit: 'ms' },
  { key: 'lagMs', title: 'host lag, 300 ms spin', unit: 'ms' },
  { key: 'busySubCallUs', title: 'sub-call, busy neighbour', unit: 'us' },
  { key: 'busySubCallP90Us', title: 'busy p90', unit: 'us' },
] as const

function fmt(value: number, unit: string): string {
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2
  return `${value.toFixed(digits)} ${unit}`
}

/** One cell: the value and its ratio to the baseline's (how many times the baseline's figure). */
function cell(value: number | undefined, base: number | undefined, unit: string, error: string | undefined): string {
  if (value === undefined || Number.isNaN(value)) return error === undefined ? '-' : 'fails'
  const ratio = base === undefined || base <= 0 ? '' : ` (${(value / base).toFixed(2)}x)`
  return `${fmt(value, unit)}${ratio}`
}

function table(rows: readonly { label: string; figures: Record<string, number>; errors: Record<string, string> }[], baseline: Record<string, number>): string[] {
  const header = `| runtime | ${COLUMNS.map((c) => c.title).join(' | ')} |`
  const lines = [header, `| --- | ${COLUMNS.map(() => '---').join(' | ')} |`]
  for (const row of rows) {
    const cells = COLUMNS.map((c) => cell(row.figures[c.key], baseline[c.key], c.unit, row.errors[c.key] ?? row.errors[c.key.replace(/^busy(.)/, (_, l: string) => l.toLowerCase())]))
    lines.push(`| ${row.label} | ${cells.join(' | ')} |`)
  }
  return lines
}

function failures(label: string, outcome: Outcome, prefix = ''): string[] {
  if (outcome.failed !== undefined) return [`  ${label}${prefix}: did not run: ${outcome.failed}`]
  return Object.entries(outcome.errors).map(([figure, message]) => `  ${label}${prefix}: ${figure} failed: ${message}`)
}

async function main(): Promise<void> {
  ensureInstalled()
  checkDist()
  await bundle()
  const peers = PEERS.filter((peer, index) => index === 0 || ONLY === undefined || ONLY.some((name) => peer.id.includes(name)))
  const configs: Config[] = peers.flatMap((peer) => [
    { peer, caps: 'default' as const, label: peer.id },
    ...(peer.raised === undefined ? [] : [{ peer, caps: 'raised' as const, label: `${peer.id} (caps raised)` }]),
  ])
  const load = cpus().length
  console.log(`Code Mode peers bench: Node ${process.version}, ${load} CPUs, ${ROUNDS} round(s)${QUICK ? ' (--quick)' : ''}, load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`)
  console.log(`  toolbox-codemode ${libraryVersion()}`)
  for (const peer of peers.slice(2)) console.log(`  ${peer.id}: ${peer.packages.map((name) => `${name} ${version(name)}`).join(', ')}`)
  console.log('Ratios are runtime / toolbox quickjs in the same round: above 1 means this library is faster (or smaller).')

  const perRound: Map<string, Record<string, number>[]> = new Map(configs.map((c) => [c.label, []]))
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order each round, so no runtime always runs right after the same neighbour.
    const order = configs.map((_, i) => configs[(i + round) % configs.length] as Config)
    const results = new Map<string, { figures: Record<string, number>; errors: Record<string, string> }>()
    const notes: string[] = []
    for (const config of order) {
      const main = await probe(config, 'main')
      // Beside a busy neighbour only what ran quietly: a default that fails the sub-call fails it there too.
      const busy = main.figures.subCallUs === undefined ? { figures: {}, errors: {} } : await probe(config, 'busy', true)
      const figures: Record<string, number> = { ...main.figures }
      if (busy.figures.subCallUs !== undefined) figures.busySubCallUs = busy.figures.subCallUs
      if (busy.figures.subCallP90Us !== undefined) figures.busySubCallP90Us = busy.figures.subCallP90Us
      results.set(config.label, { figures, errors: { ...main.errors, ...(main.failed === undefined ? {} : { startMs: main.failed }) } })
      notes.push(...failures(config.label, main), ...failures(config.label, busy, ' (busy neighbour)'))
      perRound.get(config.label)?.push(figures)
    }
    const baseline = results.get(configs[0]?.label ?? '')?.figures ?? {}
    if (process.stderr.isTTY) process.stderr.write('\n')
    console.log(`\n== round ${round + 1} of ${ROUNDS} ==`)
    for (const line of table(configs.map((c) => ({ label: c.label, ...(results.get(c.label) ?? { figures: {}, errors: {} }) })), baseline)) console.log(line)
    for (const note of notes) console.log(note)
  }

  console.log(`\n== medians over ${ROUNDS} round(s) ==`)
  const medians = configs.map((c) => {
    const rounds = perRound.get(c.label) ?? []
    const figures: Record<string, number> = {}
    for (const { key } of COLUMNS) {
      const values = rounds.map((r) => r[key]).filter((v): v is number => v !== undefined)
      if (values.length > 0) figures[key] = median(values)
    }
    return { label: c.label, figures, errors: Object.fromEntries(COLUMNS.filter((col) => figures[col.key] === undefined).map((col) => [col.key, 'no round'])) }
  })
  for (const line of table(medians, medians[0]?.figures ?? {})) console.log(line)
  // The sub-call is bimodal on a loaded host (issue 24): every round's figure, not only the median.
  console.log('\nsub-call per round, quiet / beside a busy neighbour (us):')
  for (const c of configs) {
    const rounds = perRound.get(c.label) ?? []
    const list = (key: string) => rounds.map((r) => (r[key] === undefined ? '-' : (r[key] as number).toFixed(0))).join(', ')
    if (rounds.some((r) => r.subCallUs !== undefined)) console.log(`  ${c.label}: ${list('subCallUs')} / ${list('busySubCallUs')}`)
  }

  console.log('\n== once per runtime (defaults): RSS over many programs, and a runaway loop under a 100 ms limit ==')
  console.log('| runtime | RSS growth (after gc) | programs | per 1,000 | RSS after | runaway stopped after (limit 100 ms) | host lag meanwhile | its limit |')
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
  const notes: string[] = []
  let baseRss: number | undefined
  for (const peer of peers) {
    const config = { peer, caps: 'default' as const, label: peer.id }
    const rss = await probe(config, 'rss')
    const runaway = await probe(config, 'runaway')
    baseRss ??= rss.figures.rssMiB
    // A ratio to a baseline near zero says nothing: shown only when the baseline grew by 1 MiB or more.
    const ratio = rss.figures.rssMiB !== undefined && baseRss !== undefined && baseRss >= 1 && peer !== peers[0] ? ` (${(rss.figures.rssMiB / baseRss).toFixed(2)}x)` : ''
    const growth = rss.figures.rssMiB === undefined ? 'fails' : `${rss.figures.rssMiB.toFixed(1)} MiB${ratio}`
    // A slow runtime runs fewer programs in the time budget: growth per 1,000 compares them.
    const { rssMiB, rssPrograms } = rss.figures
    const perThousand = rssMiB === undefined || !rssPrograms ? '-' : `${((rssMiB * 1000) / rssPrograms).toFixed(1)} MiB`
    const stopped = runaway.figures.stoppedMs === undefined ? (runaway.errors.stoppedMs ?? 'fails') : fmt(runaway.figures.stoppedMs, 'ms')
    const lag = runaway.figures.runawayLagMs === undefined ? '-' : fmt(runaway.figures.runawayLagMs, 'ms')
    console.log(
      `| ${peer.id} | ${growth} | ${rss.figures.rssPrograms ?? '-'} | ${perThousand} | ${rss.figures.rssAfterMiB === undefined ? '-' : `${rss.figures.rssAfterMiB.toFixed(0)} MiB`} | ${stopped} | ${lag} | ${peer.timeLimit} |`,
    )
    notes.push(...failures(peer.id, rss, ' (rss)'), ...failures(peer.id, runaway, ' (runaway)').filter((n) => !n.includes('not stopped')))
  }
  for (const note of notes) console.log(note)
  console.log('\nCaps raised where a default fails:')
  for (const peer of peers) if (peer.raised !== undefined) console.log(`  ${peer.id}: ${peer.raised}`)
}

await main()
