/**
 * The Worker that hosts `@cloudflare/codemode` inside a local workerd (bundled by bench/peers/run.ts,
 * loaded by Miniflare): each POST runs one program through a `DynamicWorkerExecutor` on the
 * `LOADER` binding, with the bench's tools as a provider named `tools`. The tools live in the
 * Worker, as they do on Cloudflare.
 */
import { DynamicWorkerExecutor } from '@cloudflare/codemode'

const fns = {
  noop: async () => null,
  sleep: () => new Promise((resolve) => setTimeout(() => resolve(null), 5)),
}

export default {
  async fetch(request: Request, env: { LOADER: never }): Promise<Response> {
    const { code, timeoutMs } = (await request.json()) as { code: string; timeoutMs?: number }
    const executor = new DynamicWorkerExecutor({ loader: env.LOADER, ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }) })
    return Response.json(await executor.execute(code, [{ name: 'tools', fns }]))
  },
}
