/**
 * `@sebastianwessel/quickjs`: QuickJS (WebAssembly, the quickjs-ng variant it documents) on the
 * host's main thread, one fresh runtime per program; a program is an ES module whose default export
 * is the result, and host values reach the guest under `env`.
 */
import { hostTools, type Peer } from '../peer.ts'

/** `@sebastianwessel/quickjs` 3.1.0 with `@jitl/quickjs-ng-wasmfile-release-sync`. */
export const sebastianwesselPeer: Peer = {
  id: 'sebastianwessel quickjs',
  packages: ['@sebastianwessel/quickjs', '@jitl/quickjs-ng-wasmfile-release-sync'],
  timeLimit: 'executionTimeout (wall time, checked by an interrupt handler)',
  async open(settings) {
    const [{ loadQuickJs }, variant] = await Promise.all([import('@sebastianwessel/quickjs'), import('@jitl/quickjs-ng-wasmfile-release-sync')])
    // Its types describe the CommonJS build; imported as a module, the default export is the variant.
    const { runSandboxed } = await loadQuickJs(variant.default as unknown as Parameters<typeof loadQuickJs>[0])
    const options = { env: { tools: hostTools }, ...(settings.timeLimitMs === undefined ? {} : { executionTimeout: settings.timeLimitMs }) }
    return {
      async run(body) {
        const code = `const tools = env.tools\nexport default await (async () => {\n${body}\n})()`
        const result = await runSandboxed(async ({ evalCode }) => evalCode(code), options)
        if (!result.ok) throw new Error(`${result.error.name}: ${result.error.message}`)
        return result.data
      },
      close: async () => {},
    }
  },
}
