/**
 * `@ai-sdk/code-mode`: the AI SDK's Code Mode, on npm `run` underneath; tools are AI SDK `tool()`s,
 * run directly with `experimental_runCodeMode` (no model in the loop).
 */
import { hostTools, type Peer } from '../peer.ts'

/** `@ai-sdk/code-mode` 1.0.42 with `ai` 7. */
export const aiSdkPeer: Peer = {
  id: 'ai-sdk code-mode',
  packages: ['@ai-sdk/code-mode', 'ai'],
  raised:
    'maxBridgeRequests 256 -> 5,000 (the 1,000-call program) and maxInFlightBridgeRequests 32 -> 256 (Promise.all over 100)',
  timeLimit: 'executionPolicy.timeoutMs (wall time)',
  async open(settings) {
    const [{ experimental_runCodeMode: runCodeMode }, { tool, jsonSchema }] = await Promise.all([import('@ai-sdk/code-mode'), import('ai')])
    const anyObject = jsonSchema<Record<string, unknown>>({ type: 'object' })
    const tools = {
      noop: tool({ description: 'noop', inputSchema: anyObject, execute: hostTools.noop }),
      sleep: tool({ description: 'sleep', inputSchema: anyObject, execute: hostTools.sleep }),
    }
    const executionPolicy = {
      ...(settings.caps === 'raised' ? { maxBridgeRequests: 5_000, maxInFlightBridgeRequests: 256 } : {}),
      ...(settings.timeLimitMs === undefined ? {} : { timeoutMs: settings.timeLimitMs }),
    }
    return {
      run: (body) => runCodeMode({ js: body, tools, options: { executionPolicy } }),
      close: async () => {},
    }
  },
}
