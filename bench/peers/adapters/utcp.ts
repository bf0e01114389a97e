/**
 * `@utcp/code-mode`: a fresh isolated-vm isolate per program; tools come from a UTCP manual
 * (here served by `@utcp/direct-call`) and are synchronous in the guest (`applySyncPromise`), so a
 * `Promise.all` over them runs one call after another. Its tools live under the manual's name.
 */
import { hostTools, type Peer } from '../peer.ts'

const toolEntry = (name: string) => ({
  name,
  description: name,
  inputs: { type: 'object' },
  outputs: { type: 'null' },
  tags: [],
  tool_call_template: { call_template_type: 'direct-call', callable_name: `bench_${name}` },
})

/** `@utcp/code-mode` 1.2.12 on isolated-vm 5.0.4. */
export const utcpPeer: Peer = {
  id: 'utcp code-mode',
  packages: ['@utcp/code-mode', '@utcp/sdk', 'isolated-vm'],
  timeLimit: 'callToolChain timeout (isolated-vm script timeout plus a host timer)',
  async open(settings) {
    const [{ CodeModeUtcpClient }, { addFunctionToUtcpDirectCall }] = await Promise.all([import('@utcp/code-mode'), import('@utcp/direct-call')])
    addFunctionToUtcpDirectCall('bench_manual', async () => ({ utcp_version: '1.0.0', manual_version: '1.0.0', tools: [toolEntry('noop'), toolEntry('sleep')] }))
    addFunctionToUtcpDirectCall('bench_noop', hostTools.noop)
    addFunctionToUtcpDirectCall('bench_sleep', hostTools.sleep)
    const client = await CodeModeUtcpClient.create()
    const registered = await client.registerManual({ name: 'bench', call_template_type: 'direct-call', callable_name: 'bench_manual' })
    if (!registered.success) throw new Error(`registering the bench manual failed: ${registered.errors.join('; ')}`)
    const timeout = settings.timeLimitMs ?? 30_000
    return {
      async run(body) {
        const { result, logs } = await client.callToolChain(`const tools = bench\n${body}`, timeout)
        // A failed run comes back as a null result and an "[ERROR]" log line.
        const failure = logs.find((line: string) => line.startsWith('[ERROR] Code execution failed'))
        if (failure !== undefined) throw new Error(failure)
        return result
      },
      close: async () => {},
    }
  },
}
