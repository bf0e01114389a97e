/**
 * `npm run bench`: Code Mode costs per engine, each printed beside a baseline measured in the same
 * run on this machine, so the ratios hold even on a busy shared host.
 *
 *  - first run and warm `return 1` through `run_code` (the full pipeline), and through `engine.run`;
 *    back to back, and with a 10 ms pause between runs (an agent's runs are seconds apart);
 *  - per-sub-call cost over 1,000 sequential `await tools.noop()` against the same 1,000 calls
 *    through `execute()` natively;
 *  - wall time of `Promise.all` over 100 calls of a 5 ms concurrency-safe tool, against the same
 *    100 calls through `execute()` natively; back to back, and 30 ms apart;
 *  - a bystander agent's `return 1` while 50 other agents' programs await, against the same
 *    bystander alone.
 */
import { setMaxListeners } from 'node:events'
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import { createContext } from '../src/context.ts'
import type { Agent } from '../src/context.ts'
import type { ToolDefinition } from '../src/tool.ts'
import { createIsolatedVmEngine, createQuickJSEngine, createRunCode, resolveLimits } from '../sandbox/index.ts'
import type { SandboxEngine } from '../sandbox/index.ts'
import { benchAdapters } from './adapters.ts'
import { benchLoad } from './load.ts'
import { benchMcp } from './mcp.ts'
import { benchMemory } from './memory.ts'

const SEQUENTIAL_CALLS = 1_000
const PARALLEL_CALLS = 100
const SLEEP_MS = 5
const WARM_RUNS = Number(process.env.BENCH_WARM_RUNS ?? 300)
const PAUSE_MS = 10
const PARALLEL_PAUSE_MS = 30

const TARGETS = {
  quickjs: { warmReturnMs: 2, subCallUs: 50, parallelMs: 15 },
  'isolated-vm': { warmReturnMs: Number.POSITIVE_INFINITY, subCallUs: 100, parallelMs: 15 },
  'isolated-vm in-process': { warmReturnMs: Number.POSITIVE_INFINITY, subCallUs: 100, parallelMs: 15 },
} as const

function tool(name: string, execute: ToolDefinition['execute'], concurrent = false): ToolDefinition {
  return {
    name,
    description: name,
    parameters: { type: 'object', additionalProperties: true },
    output: { schema: {}, render: () => [{ type: 'text', text: 'ok' }] },
    execute,
    ...(concurrent ? { isConcurrencySafe: () => true } : {}),
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

function fmt(ms: number, unit: 'ms' | 'us' = 'ms'): string {
  return unit === 'us' ? `${(ms * 1000).toFixed(1)} us` : `${ms.toFixed(2)} ms`
}

function verdict(value: number, target: number): string {
  if (!Number.isFinite(target)) return ''
  return value <= target ? `  [target < ${target}: met]` : `  [target < ${target}: MISSED]`
}

function deployment(engine: SandboxEngine) {
  const limits = resolveLimits({ maxSubCalls: 5_000, maxSubCallsInFlight: 200 })
  const ctx = createContext({
    tools: { mode: 'code', maxParallelSubCalls: 128, codeMode: createRunCode({ engine, limits }) },
  })
  ctx.tools.register(tool('noop', async () => null))
  ctx.tools.register(
    tool('sleep', () => new Promise((resolve) => setTimeout(() => resolve(null), SLEEP_MS)), true),
  )
  const agent = ctx.agent('bench')
  const nativeCtx = createContext()
  nativeCtx.tools.register(tool('noop', async () => null))
  nativeCtx.tools.register(tool('sleep', () => new Promise((resolve) => setTimeout(() => resolve(null), SLEEP_MS)), true))
  return { ctx, agent, nativeCtx }
}

let callCounter = 0
async function runCode(agent: Agent, code: string): Promise<void> {
  callCounter += 1
  const result = await agent.ctx.tools.execute({
    callId: `bench-${callCounter}`,
    name: 'run_code',
    arguments: { code },
    signal: new AbortController().signal,
  })
  if (result.isError) throw new Error(`bench program failed: ${result.error.message}`)
}

async function benchEngine(name: keyof typeof TARGETS, create: () => Promise<SandboxEngine>): Promise<void> {
  const targets = TARGETS[name]
  console.log(`\n== ${name} ==`)
  const createStart = performance.now()
  const engine = await create()
  const created = performance.now() - createStart
  const { agent, nativeCtx } = deployment(engine)
  const first = await time(() => runCode(agent, 'return 1'))
  console.log(`first run: engine created in ${fmt(created)}, first return 1 via run_code ${fmt(first)}`)

  for (let i = 0; i < 30; i++) await runCode(agent, 'return 1')
  const warm: number[] = []
  for (let i = 0; i < WARM_RUNS; i++) warm.push(await time(() => runCode(agent, 'return 1')))
  const direct: number[] = []
  const limits = resolveLimits()
  const host = { call: async () => ({ ok: false as const, message: 'none', code: 'NONE' }), log() {} }
  for (let i = 0; i < WARM_RUNS; i++) {
    direct.push(await time(() => engine.run({ code: 'return 1', tools: [], limits, host, signal: new AbortController().signal })))
  }
  const warmMedian = median(warm)
  console.log(
    `warm return 1: run_code median ${fmt(warmMedian)} (p95 ${fmt(percentile(warm, 0.95))}); engine.run median ${fmt(median(direct))}` +
      verdict(warmMedian, targets.warmReturnMs),
  )
  const paused: number[] = []
  for (let i = 0; i < Math.min(WARM_RUNS, 100); i++) {
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS))
    paused.push(await time(() => runCode(agent, 'return 1')))
  }
  console.log(`warm return 1 with ${PAUSE_MS} ms between runs: run_code median ${fmt(median(paused))} (p95 ${fmt(percentile(paused, 0.95))})`)

  const sequential = `for (let i = 0; i < ${SEQUENTIAL_CALLS}; i++) await tools.noop({ i })\nreturn ${SEQUENTIAL_CALLS}`
  // Warm the JIT on both paths before timing: the first thousands of calls run unoptimized code.
  for (let i = 0; i < 5; i++) await runCode(agent, sequential)
  for (let i = 0; i < 5 * SEQUENTIAL_CALLS; i++) {
    await nativeCtx.tools.execute({ callId: `w${i}`, name: 'noop', arguments: { i }, signal: new AbortController().signal })
  }
  const codeRuns: number[] = []
  for (let i = 0; i < 9; i++) codeRuns.push(await time(() => runCode(agent, sequential)))
  const nativeRuns: number[] = []
  for (let r = 0; r < 9; r++) {
    nativeRuns.push(
      await time(async () => {
        for (let i = 0; i < SEQUENTIAL_CALLS; i++) {
          await nativeCtx.tools.execute({ callId: `n${i}`, name: 'noop', arguments: { i }, signal: new AbortController().signal })
        }
      }),
    )
  }
  const perSubCall = (median(codeRuns) - warmMedian) / SEQUENTIAL_CALLS
  const perNative = median(nativeRuns) / SEQUENTIAL_CALLS
  console.log(
    `sub-call (${SEQUENTIAL_CALLS} sequential): ${fmt(perSubCall, 'us')} each; native execute() ${fmt(perNative, 'us')} each; ` +
      `ratio ${(perSubCall / perNative).toFixed(2)}x; bridge overhead ${fmt(perSubCall - perNative, 'us')}` +
      verdict((perSubCall - perNative) * 1000, targets.subCallUs),
  )

  const parallel = `await Promise.all(Array.from({ length: ${PARALLEL_CALLS} }, () => tools.sleep({})))\nreturn ${PARALLEL_CALLS}`
  await runCode(agent, parallel)
  const parallelRuns: number[] = []
  for (let i = 0; i < 10; i++) parallelRuns.push(await time(() => runCode(agent, parallel)))
  const nativeParallel: number[] = []
  for (let i = 0; i < 10; i++) {
    nativeParallel.push(
      await time(() =>
        Promise.all(
          Array.from({ length: PARALLEL_CALLS }, (_, n) =>
            nativeCtx.tools.execute({ callId: `p${n}`, name: 'sleep', arguments: {}, signal: new AbortController().signal }),
          ),
        ),
      ),
    )
  }
  const parallelMedian = median(parallelRuns)
  console.log(
    `Promise.all ${PARALLEL_CALLS} x ${SLEEP_MS} ms: ${fmt(parallelMedian)}; native ${fmt(median(nativeParallel))}; ` +
      `ratio ${(parallelMedian / median(nativeParallel)).toFixed(2)}x` +
      verdict(parallelMedian, targets.parallelMs),
  )
  // Back to back, a run can wait for the engine to finish preparing after the previous one (an
  // isolated-vm isolate takes about 10 ms here): the same runs on an engine given time to settle.
  const settledParallel: number[] = []
  for (let i = 0; i < 10; i++) {
    await new Promise((resolve) => setTimeout(resolve, PARALLEL_PAUSE_MS))
    settledParallel.push(await time(() => runCode(agent, parallel)))
  }
  const settledMedian = median(settledParallel)
  console.log(
    `Promise.all ${PARALLEL_CALLS} x ${SLEEP_MS} ms with ${PARALLEL_PAUSE_MS} ms between runs: ${fmt(settledMedian)}; ` +
      `ratio ${(settledMedian / median(nativeParallel)).toFixed(2)}x` +
      verdict(settledMedian, targets.parallelMs),
  )
  const memory = process.memoryUsage()
  console.log(`host memory after the runs: rss ${(memory.rss / 2 ** 20).toFixed(0)} MiB, heap ${(memory.heapUsed / 2 ** 20).toFixed(0)} MiB`)
  await engine.dispose()
}

/**
 * Waiting is not holding: a bystander agent's `return 1` while HOLDERS other agents' programs await
 * (half a tool that answers only when aborted, half a promise that never settles), against the
 * same runs on the same engine before the holders came.
 */
const HOLDERS = 50
const BYSTANDER_RUNS = 200
const BYSTANDER_P99_MS = 5

async function benchBystander(name: string, create: () => Promise<SandboxEngine>): Promise<void> {
  const engine = await create()
  const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, limits: { wallTimeMs: 600_000 } }) } })
  let holding = 0
  const held = (_args: unknown, exec: { signal: AbortSignal }) => {
    holding += 1
    return new Promise<null>((resolve) => exec.signal.addEventListener('abort', () => resolve(null), { once: true }))
  }
  ctx.tools.register(tool('hold', held as ToolDefinition['execute'], true))
  const bystander = ctx.agent('bystander')
  const sample = async (): Promise<number[]> => {
    const times: number[] = []
    for (let i = 0; i < BYSTANDER_RUNS; i++) times.push(await time(() => runCode(bystander, 'return 1')))
    return times
  }
  for (let i = 0; i < 30; i++) await runCode(bystander, 'return 1')
  const alone = await sample()
  const stop = new AbortController()
  // Every holder's run listens on the one signal that ends them all.
  setMaxListeners(HOLDERS * 4, stop.signal)
  const holders = Array.from({ length: HOLDERS }, (_, i) => {
    const agent = ctx.agent(`holder-${i}`)
    const code = i % 2 === 0 ? 'await tools.hold({})' : 'await new Promise(() => {})'
    return agent.ctx.tools.execute({ callId: `hold-${i}`, name: 'run_code', arguments: { code }, signal: stop.signal })
  })
  const settling = performance.now()
  while (holding < HOLDERS / 2) await new Promise((resolve) => setTimeout(resolve, 10))
  // The other half shows nothing to wait for: give every program time to be under way.
  await new Promise((resolve) => setTimeout(resolve, 2_000))
  const settled = performance.now() - settling
  const beside = await sample()
  const rss = process.memoryUsage().rss / 2 ** 20
  stop.abort()
  await Promise.all(holders)
  await engine.dispose()
  const p99 = percentile(beside, 0.99)
  console.log(
    `${name}: bystander return 1 beside ${HOLDERS} awaiting programs (under way in ${fmt(settled)}): median ${fmt(median(beside))}, ` +
      `p99 ${fmt(p99)}; alone median ${fmt(median(alone))}, p99 ${fmt(percentile(alone, 0.99))}; rss ${rss.toFixed(0)} MiB` +
      verdict(p99, BYSTANDER_P99_MS),
  )
}

async function main(): Promise<void> {
  console.log(`Code Mode bench: Node ${process.version}, ${WARM_RUNS} warm runs per figure (medians)`)
  await benchEngine('quickjs', async () => createQuickJSEngine())
  let ivmMissing: string | undefined
  try {
    createRequire(import.meta.url)('isolated-vm')
  } catch (error) {
    ivmMissing = error instanceof Error ? error.message : String(error)
  }
  if (ivmMissing === undefined) {
    // The default runs isolates in child processes; in-process beside it shows what the boundary costs.
    await benchEngine('isolated-vm', () => createIsolatedVmEngine())
    await benchEngine('isolated-vm in-process', () => createIsolatedVmEngine({ isolation: 'in-process' }))
  } else {
    console.log(`\n== isolated-vm == not available here: ${ivmMissing}`)
  }
  console.log('\n== waiting is not holding ==')
  await benchBystander('quickjs', async () => createQuickJSEngine())
  // In child processes (the default) an awaiting run holds its process: 50 of them need 50 processes.
  if (ivmMissing === undefined) await benchBystander('isolated-vm in-process', () => createIsolatedVmEngine({ isolation: 'in-process' }))
  // Each section's lines start with its own heading, but the adapters'.
  for (const line of await (await import('./subcall.ts')).benchSubCall()) console.log(line)
  for (const line of await benchLoad()) console.log(line)
  for (const line of await benchMemory()) console.log(line)
  console.log('\n== MCP ==')
  for (const line of (await benchMcp()).slice(1)) console.log(line)
  console.log('\n== provider adapters ==')
  for (const line of await benchAdapters()) console.log(line)
  for (const line of await (await import('./description.ts')).benchDescription()) console.log(line)
  for (const line of await (await import('./checker.ts')).benchChecker()) console.log(line)
}

await main()
