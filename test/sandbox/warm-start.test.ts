/**
 * What starts beside a QuickJS engine's first worker waits for it: the engine says when that
 * worker is ready (run_code's TypeScript thread warms up then, not while the first run needs the cores).
 */
import { describe, expect, it } from 'vitest'
import { createQuickJSEngine, DEFAULT_LIMITS } from '../../sandbox/index.ts'

describe('QuickJS engine start', () => {
  it('tells when its first worker is ready, without a run', async () => {
    const engine = createQuickJSEngine({ workers: 1 })
    try {
      const ready = (engine as unknown as { firstWorkerReady: Promise<void> }).firstWorkerReady
      await expect(ready).resolves.toBeUndefined()
      // Ready means ready: a run now finds the worker up.
      const outcome = await engine.run({ code: 'return 1', tools: [], limits: DEFAULT_LIMITS, host: { call: async () => ({ ok: false, message: 'none', code: 'TOOL_FAILED' }), log() {} }, signal: new AbortController().signal })
      expect(outcome).toMatchObject({ ok: true })
    } finally {
      await engine.dispose()
    }
  })
})
