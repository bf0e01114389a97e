/**
 * Gates, approval services, wrappers and post-execute listeners must watch `exec.signal` (the
 * spec asks it of them). One that does fails when the caller cancels: that is a cancellation, and
 * reads as one. Also: a nested call's `rootCallId` is resolved by the registry from its parent, and
 * the caller's input is read once.
 */
import { describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { CodeModeHost } from '../../src/context.ts'
import type { ToolExecutionInput, ToolExecutionResult } from '../../src/execution.ts'
import { call, rawTool } from '../helpers.ts'

function codeOf(result: ToolExecutionResult): string | undefined {
  return result.isError ? result.error.info?.code : undefined
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first: a cooperative listener. */
function watch(signal: AbortSignal, ms = 1_000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(signal.reason)
    }, { once: true })
  })
}

/** Executes `t` with a signal the caller aborts a moment later; counts body runs. */
async function cancelledRun(install: (ctx: ReturnType<typeof createContext>) => void, options: Parameters<typeof createContext>[0] = {}) {
  const ctx = createContext(options)
  let bodyRuns = 0
  ctx.tools.register(rawTool('t', { execute: async () => ++bodyRuns }))
  install(ctx)
  const agent = ctx.agent('a')
  const controller = new AbortController()
  setTimeout(() => controller.abort(), 5)
  const result = await agent.ctx.tools.execute(call('t', {}, { signal: controller.signal }))
  return { result, bodyRuns }
}

describe('cancellation a listener notices itself', () => {
  type Setup = [where: string, code: string, bodyRuns: number, install: (ctx: ReturnType<typeof createContext>) => void, options?: Parameters<typeof createContext>[0]]
  const cases: Setup[] = [
    ['a pre-execute gate', 'ABORTED_BEFORE_DISPATCH', 0, (ctx) => void ctx.on('tools/pre-execute', async (exec, next) => (await watch(exec.signal), next()))],
    [
      'the approval service',
      'ABORTED_BEFORE_DISPATCH',
      0,
      (ctx) => void ctx.on('tools/pre-execute', async () => ({ kind: 'ask' })),
      { approval: { request: async ({ signal }) => (await watch(signal), 'allowed-once') } },
    ],
    ['a tools/execute wrapper, before next()', 'ABORTED_BEFORE_DISPATCH', 0, (ctx) => void ctx.on('tools/execute', async (exec, next) => (await watch(exec.signal), next()))],
    ['a post-execute listener, after the body ran', 'ABORTED', 1, (ctx) => void ctx.on('tools/post-execute', async (exec, _result, next) => (await watch(exec.signal), next()))],
  ]
  it.each(cases)('in %s is %s, not a failed policy or a denial', async (_where, code, bodyRuns, install, options) => {
    const run = await cancelledRun(install, options)
    expect(codeOf(run.result)).toBe(code)
    expect(run.bodyRuns).toBe(bodyRuns)
  })

  it('leaves a listener failure that is not a cancellation a LISTENER_FAILED', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    ctx.on('tools/pre-execute', async () => {
      throw new Error('policy broke')
    })
    expect(codeOf(await ctx.tools.execute(call('t')))).toBe('LISTENER_FAILED')
  })
})

describe('a nested call', () => {
  it('gets the root call id of its parent, whatever its dispatcher passes', async () => {
    const ctx = createContext({
      tools: {
        mode: 'code',
        codeMode: (host: CodeModeHost) => ({
          ...rawTool('run_code'),
          describe: () => 'a stand-in transport',
          execute: async (_args, exec) => {
            const base = { name: 'n', arguments: {}, parent: exec.token, signal: exec.signal, ...(exec.agent ? { agent: exec.agent } : {}) }
            await host.execute({ ...base, callId: `${exec.callId}:code:1` })
            await host.execute({ ...base, callId: `${exec.callId}:code:2`, rootCallId: 'some-other-root' })
            return null
          },
        }),
      },
    })
    ctx.tools.register(rawTool('n'))
    const roots: Record<string, string> = {}
    ctx.on('tools/result', (exec) => void (roots[exec.callId] = exec.rootCallId))
    const agent = ctx.agent('a')
    await agent.ctx.tools.execute(call('run_code', {}, { callId: 'outer' }))
    expect(roots).toEqual({ 'outer:code:1': 'outer', 'outer:code:2': 'outer', outer: 'outer' })
  })
})

describe("the caller's input", () => {
  it('is read once: a getter cannot pass validation with one value and run with another', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const seen: unknown[] = []
    ctx.on('tools/result', (exec) => void seen.push(exec.callId))
    let reads = 0
    const input = { name: 't', arguments: {}, signal: new AbortController().signal } as unknown as ToolExecutionInput
    Object.defineProperty(input, 'callId', { enumerable: true, get: () => (++reads === 1 ? 'valid-id' : 42) })
    const result = await ctx.tools.execute(input)
    expect(result.isError).toBe(false)
    expect(seen).toEqual(['valid-id'])
  })
})
