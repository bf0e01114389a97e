/**
 * npm `run` (vercel-labs/run): a QuickJS (WebAssembly) runtime in a pool of worker threads; host
 * functions become globals named by their group, so the group is called `tools`.
 */
import { hostTools, type Peer } from '../peer.ts'

/** `run` 2.1.5 through one `createRunner`. */
export const runPeer: Peer = {
  id: 'run',
  packages: ['run'],
  raised:
    'maxBridgeRequests 256 -> 5,000 (the 1,000-call program) and maxInFlightBridgeRequests 32 -> 256 (Promise.all over 100)',
  timeLimit: 'limits.timeoutMs (wall time)',
  async open(settings) {
    const { createRunner } = await import('run')
    const limits = {
      ...(settings.caps === 'raised' ? { maxBridgeRequests: 5_000, maxInFlightBridgeRequests: 256 } : {}),
      ...(settings.timeLimitMs === undefined ? {} : { timeoutMs: settings.timeLimitMs }),
    }
    const runner = createRunner({ limits })
    return {
      async run(body) {
        const result = await runner.run({ source: body, hostFunctions: { tools: hostTools } })
        if (result.status !== 'completed') throw new Error(`run ended ${result.status}`)
        return result.value
      },
      close: async () => {},
    }
  },
}
