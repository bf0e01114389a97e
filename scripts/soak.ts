/**
 * `npm run soak`: the soak run (test/soak/soak.ts) at full size on both engines. Arguments: the
 * number of programs per engine (default 3000) and of agents sending them at once (default 16).
 * Exits non-zero if any engine left a problem.
 */
import { createRequire } from 'node:module'
import { createIsolatedVmEngine, createQuickJSEngine } from '../sandbox/index.ts'
import type { SandboxEngine } from '../sandbox/index.ts'
import { soak } from '../test/soak/soak.ts'

const runs = Number(process.argv[2] ?? 3_000)
const agents = Number(process.argv[3] ?? 16)
/** `quickjs` or `isolated-vm` to soak one engine only. */
const only = process.argv[4]
const engines: [string, () => Promise<SandboxEngine>][] = [['quickjs', async () => createQuickJSEngine()]]
try {
  createRequire(import.meta.url).resolve('isolated-vm')
  engines.push(['isolated-vm', () => createIsolatedVmEngine()])
} catch {
  console.log('isolated-vm is not installed: soaking QuickJS only')
}
let failed = false
for (const [name, create] of engines.filter(([name]) => only === undefined || name === only)) {
  const report = await soak(create, { runs, agents })
  console.log(`\n== ${name}: ${report.runs} programs from ${agents} agents in ${report.seconds.toFixed(1)} s ==`)
  console.log(`endings: ${JSON.stringify(report.byEnding)}`)
  console.log(`rss: ${report.rssStartMiB.toFixed(1)} MiB before, ${report.rssEndMiB.toFixed(1)} MiB after the engine was disposed`)
  console.log(`handles before: ${JSON.stringify(report.handlesBefore)}; after: ${JSON.stringify(report.handlesAfter)}`)
  const problems = [...report.problems]
  if (report.rssEndMiB - report.rssStartMiB > 15) problems.push(`RSS grew ${(report.rssEndMiB - report.rssStartMiB).toFixed(1)} MiB (goal: within 15)`)
  console.log(problems.length === 0 ? 'no problem found' : `PROBLEMS:\n  ${problems.join('\n  ')}`)
  failed ||= problems.length > 0
}
process.exit(failed ? 1 : 0)
