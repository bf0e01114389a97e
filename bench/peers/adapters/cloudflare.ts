/**
 * Cloudflare's `@cloudflare/codemode` (its `DynamicWorkerExecutor`: a fresh dynamic Worker per
 * program) in a local workerd through Miniflare, offline. Node only sends the program over
 * `dispatchFetch` and reads the answer; tools run in the host Worker.
 */
import { readFileSync } from 'node:fs'
import type { Peer } from '../peer.ts'

/** `@cloudflare/codemode` 0.5.6 on Miniflare's workerd. */
export const cloudflarePeer: Peer = {
  id: 'cloudflare codemode',
  packages: ['@cloudflare/codemode', 'miniflare', '@cloudflare/workerd-linux-64'],
  timeLimit: 'executor timeout (a timer raced against the program inside the Worker)',
  async open(settings) {
    const { Miniflare } = await import('miniflare')
    // Built next to the probe's bundle by bench/peers/run.ts.
    const script = readFileSync(new URL('./cloudflare-host.mjs', import.meta.url), 'utf8')
    const mf = new Miniflare({
      modules: true,
      script,
      compatibilityDate: '2025-06-01',
      compatibilityFlags: ['nodejs_compat'],
      workerLoaders: { LOADER: {} },
    })
    return {
      async run(body) {
        const response = await mf.dispatchFetch('http://bench/', { method: 'POST', body: JSON.stringify({ code: body, timeoutMs: settings.timeLimitMs }) })
        const out = (await response.json()) as { result?: unknown; error?: string }
        if (out.error !== undefined) throw new Error(out.error)
        return out.result
      },
      close: () => mf.dispose(),
    }
  },
}
