/**
 * This library, from its built `dist/` (as a user imports it), on either engine: `run_code` through
 * a context, so every figure includes the whole pipeline (schema checks, limits, the bridge).
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { hostTools, type Peer, type PeerSession, type PeerSettings } from '../peer.ts'

const ROOT = join(import.meta.dirname, '..', '..', '..')
// The bench's bundle runs from bench/peers/.build/; the library is always the repository's dist/.
const DIST = process.env.BENCH_PEERS_DIST ?? join(ROOT, 'dist')

async function open(engineName: 'quickjs' | 'isolated-vm', settings: PeerSettings): Promise<PeerSession> {
  // Computed URLs: the bundler must leave the library out, so its own load is what gets timed.
  const core = await import(pathToFileURL(join(DIST, 'src', 'index.js')).href)
  const sandbox = await import(pathToFileURL(join(DIST, 'sandbox', 'index.js')).href)
  const engine = await (engineName === 'quickjs' ? sandbox.createQuickJSEngine() : sandbox.createIsolatedVmEngine())
  const limits = settings.timeLimitMs === undefined ? {} : { wallTimeMs: settings.timeLimitMs, cpuTimeMs: settings.timeLimitMs }
  const ctx = core.createContext({ tools: { mode: 'code', codeMode: sandbox.createRunCode({ engine, limits }) } })
  const tool = (name: keyof typeof hostTools, concurrent: boolean) => ({
    name,
    description: name,
    parameters: { type: 'object', additionalProperties: true },
    output: { schema: {}, render: () => [{ type: 'text', text: 'ok' }] },
    execute: hostTools[name],
    // A tool says itself whether calls may overlap: sleep may, as any read-only tool.
    ...(concurrent ? { isConcurrencySafe: () => true } : {}),
  })
  ctx.tools.register(tool('noop', false))
  ctx.tools.register(tool('sleep', true))
  // The peers keep no transcript; the library's in-memory session log keeps every event by design
  // (a user's choice of log), so the bench's agent logs nowhere and RSS shows the runtime alone.
  const agent = ctx.agent('bench', { session: discardingSessionLog() })
  let calls = 0
  return {
    async run(body) {
      const result = await agent.ctx.tools.execute({
        callId: `peers-${++calls}`,
        name: 'run_code',
        arguments: { code: body },
        signal: new AbortController().signal,
      })
      if (result.isError) throw new Error(result.error.message)
      return result.value.result
    },
    close: () => engine.dispose(),
  }
}

/** A session log that keeps nothing (the `SessionLog` interface of the library's src/session-log.ts). */
function discardingSessionLog() {
  return {
    append: async () => {},
    events: [],
    close: async () => {},
    [Symbol.asyncDispose]: async () => {},
  }
}

/** toolbox-codemode on QuickJS (its default engine). */
export const toolboxQuickJS: Peer = {
  id: 'toolbox quickjs',
  packages: [],
  timeLimit: 'wallTimeMs and cpuTimeMs',
  open: (settings) => open('quickjs', settings),
}

/** toolbox-codemode on isolated-vm (isolates in child processes, its default isolation). */
export const toolboxIsolatedVm: Peer = {
  id: 'toolbox isolated-vm',
  packages: [],
  timeLimit: 'wallTimeMs and cpuTimeMs',
  open: (settings) => open('isolated-vm', settings),
}
