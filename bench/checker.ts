/**
 * The cost of checking programs before they run (issue 21), each figure beside a baseline
 * measured in the same run:
 *  - the first program of a fresh process that names a tool it does not have: how long until the
 *    default check refuses it (the checker started with the transport), against the same
 *    program with `typeCheck: 'off'` (failing at run time);
 *  - a warm check of a 40-line program against a 20-tool SDK, in the TypeScript thread (goal:
 *    under 10 ms), against the check of `return 1` against the same SDK;
 *  - the check's share of a `run_code` call of that program: the call with the default check
 *    against the same call with `typeCheck: 'off'`.
 */
import { execFileSync } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { createContext } from '../src/context.ts'
import type { ToolDefinition } from '../src/tool.ts'
import { createQuickJSEngine, createRunCode } from '../sandbox/index.ts'
import type { RunCodeOptions } from '../sandbox/index.ts'
import { TypeCheckThread } from '../sandbox/type-check-thread.ts'
import { generateSdk } from '../sdk-gen/index.ts'

const TOOLS = 20
const CHECKS = 60
const CALLS = 40
const PROCESSES = 3
/** The goal of issue 21 for a warm check of a 40-line program against a 20-tool SDK. */
const WARM_CHECK_GOAL_MS = 10

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number
}

/** Twenty tools of the shapes real servers have: a few typed keys in, an object with a list out. */
function benchTools(): ToolDefinition[] {
  return Array.from({ length: TOOLS }, (_, index) => ({
    name: `tool_${index}`,
    description: `Tool number ${index}: looks things up.`,
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What to look for.' },
        limit: { type: 'integer' },
        mode: { type: 'string', enum: ['fast', 'full'] },
      },
      required: ['query'],
      additionalProperties: false,
    },
    output: {
      schema: {
        type: 'object',
        properties: {
          items: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, score: { type: 'number' } }, required: ['id', 'score'], additionalProperties: false } },
          total: { type: 'integer' },
        },
        required: ['items', 'total'],
        additionalProperties: false,
      },
      render: () => [{ type: 'text', text: 'ok' }],
    },
    isConcurrencySafe: () => true,
    execute: async (args) => ({ items: [{ id: String((args as { query: string }).query), score: 1 }], total: 1 }),
  }))
}

/** A 40-line program in the style models write: types, a helper, a loop, Promise.all, a result object. */
const PROGRAM = [
  'interface Hit { id: string; score: number }',
  'type Summary = { tool: string; best: number; ids: string[] }',
  '',
  'const queries = ["alpha", "beta", "gamma"] as const',
  'function best(items: Hit[]): number {',
  '  let top = 0',
  '  for (const item of items) {',
  '    if (item.score > top) top = item.score',
  '  }',
  '  return top',
  '}',
  '',
  'const first = await tools.tool_0({ query: "start", limit: 5 })',
  'const summaries: Summary[] = []',
  'for (const query of queries) {',
  '  const found = await tools.tool_1({ query, mode: "fast" })',
  '  summaries.push({ tool: "tool_1", best: best(found.items), ids: found.items.map((i) => i.id) })',
  '}',
  '',
  'const parallel = await Promise.all([',
  '  tools.tool_2({ query: "x" }),',
  '  tools.tool_3({ query: "y", limit: 2 }),',
  '  tools.tool_4({ query: "z", mode: "full" }),',
  '])',
  'for (const [index, result] of parallel.entries()) {',
  '  summaries.push({ tool: `tool_${index + 2}`, best: best(result.items), ids: result.items.map((i) => i.id) })',
  '}',
  '',
  'const byTool = new Map<string, number>()',
  'for (const summary of summaries) {',
  '  byTool.set(summary.tool, (byTool.get(summary.tool) ?? 0) + summary.best)',
  '}',
  'const total = summaries.reduce((sum, s) => sum + s.ids.length, 0)',
  'const top = [...byTool.entries()].sort((a, b) => b[1] - a[1])[0]',
  'console.log(`checked ${summaries.length} summaries`)',
  '',
  'return {',
  '  first: first.total,',
  '  total,',
  '  top: top?.[0] ?? null,',
  '}',
].join('\n')

/** The child's script: a fresh process's first program, a faulty one, timed from before the context. */
const CHILD = `
const { createContext } = await import('./src/context.ts')
const { createRunCode, createQuickJSEngine } = await import('./sandbox/index.ts')
const options = JSON.parse(process.argv[1])
const started = performance.now()
const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine: createQuickJSEngine(), ...options }) } })
ctx.tools.register({ name: 'write_file', description: 'Write a file.', parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false }, output: { schema: {}, render: () => [] }, execute: async () => null })
const agent = ctx.agent('first')
const result = await agent.ctx.tools.execute({ callId: 'c', name: 'run_code', arguments: { code: 'await tools.write_file({ path: "a" })\\nreturn await tools.readFile({ path: "a" })' }, signal: new AbortController().signal })
const ms = performance.now() - started
const refused = result.isError && result.error.message.includes('not run')
process.stdout.write(JSON.stringify({ ms, refused }))
process.exit(0)
`

function firstProgram(options: RunCodeOptions & Record<string, unknown>): { ms: number; refused: boolean } {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const output = execFileSync(process.execPath, ['--no-node-snapshot', '--import', 'tsx', '--input-type=module', '-e', CHILD, JSON.stringify(options)], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  })
  return JSON.parse(output) as { ms: number; refused: boolean }
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

/** The bench's lines, its heading first. */
export async function benchChecker(): Promise<string[]> {
  const lines = ['\n== checked programs (issue 21) ==']

  // 1. The first program of a fresh process.
  const checked: { ms: number; refused: boolean }[] = []
  const unchecked: { ms: number; refused: boolean }[] = []
  const waited: { ms: number; refused: boolean }[] = []
  for (let round = 0; round < PROCESSES; round++) {
    unchecked.push(firstProgram({ typeCheck: 'off' }))
    checked.push(firstProgram({}))
    waited.push(firstProgram({ typeCheckWaitMs: 60_000 }))
  }
  const refusedCount = (probes: { refused: boolean }[]) => probes.filter((probe) => probe.refused).length
  lines.push(
    `first program of a fresh process (a write, then an unknown tool; context and engine included), medians of ${PROCESSES}:`,
    `  typeCheck 'off' (fails at run time, after the write): ${median(unchecked.map((p) => p.ms)).toFixed(0)} ms`,
    `  default 'guard' (waits at most 1 s for the checker): ${median(checked.map((p) => p.ms)).toFixed(0)} ms, refused before the write in ${refusedCount(checked)} of ${PROCESSES}` +
      ` (ratio ${(median(checked.map((p) => p.ms)) / median(unchecked.map((p) => p.ms))).toFixed(2)}x)`,
    `  'guard' waiting for the checker however long it takes to load: ${median(waited.map((p) => p.ms)).toFixed(0)} ms, refused in ${refusedCount(waited)} of ${PROCESSES}`,
  )

  // 2. A warm check in the TypeScript thread.
  const tools = benchTools()
  const { declarations } = generateSdk(tools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters, output: tool.output.schema })))
  const thread = new TypeCheckThread()
  const signal = new AbortController().signal
  try {
    const check = async (program: string) => {
      const outcome = await thread.check(declarations, program, { timeoutMs: 60_000, signal })
      if (!outcome.ok) throw new Error(`the bench check failed: ${outcome.reason}`)
      return outcome.diagnostics
    }
    const diagnostics = await check(PROGRAM)
    if (diagnostics.length > 0) throw new Error(`the bench program has diagnostics: ${JSON.stringify(diagnostics)}`)
    for (let i = 0; i < 10; i++) await check(`${PROGRAM}\n// ${i}`)
    const warm: number[] = []
    const trivial: number[] = []
    for (let i = 0; i < CHECKS; i++) {
      // A new text each time, as every program is: nothing is answered from a cache of programs.
      warm.push(await time(() => check(`${PROGRAM}\n// run ${i}`)))
      trivial.push(await time(() => check(`return ${i}`)))
    }
    const warmMs = median(warm)
    lines.push(
      `warm check of a ${PROGRAM.split('\n').length}-line program against a ${TOOLS}-tool SDK (TypeScript thread, round trip): median ${warmMs.toFixed(2)} ms, ` +
        `p90 ${percentile(warm, 0.9).toFixed(2)} ms; \`return 1\` against the same SDK ${median(trivial).toFixed(2)} ms  ` +
        (warmMs <= WARM_CHECK_GOAL_MS ? `[goal < ${WARM_CHECK_GOAL_MS} ms: met]` : `[goal < ${WARM_CHECK_GOAL_MS} ms: MISSED]`),
    )
  } finally {
    await thread.dispose()
  }

  // 3. The check's share of a run_code call.
  const engine = createQuickJSEngine()
  try {
    const runner = (options: RunCodeOptions) => {
      const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, ...options }) } })
      for (const tool of tools) ctx.tools.register(tool)
      const agent = ctx.agent('bench')
      let calls = 0
      return async () => {
        const result = await agent.ctx.tools.execute({ callId: `c${++calls}`, name: 'run_code', arguments: { code: `${PROGRAM}\n// ${calls}` }, signal })
        if (result.isError) throw new Error(`the bench program failed: ${result.error.message}`)
      }
    }
    const guarded = runner({ typeCheckWaitMs: 60_000 })
    const off = runner({ typeCheck: 'off' })
    for (let i = 0; i < 10; i++) {
      await guarded()
      await off()
    }
    const withCheck: number[] = []
    const without: number[] = []
    for (let i = 0; i < CALLS; i++) {
      withCheck.push(await time(guarded))
      without.push(await time(off))
    }
    const checkedMs = median(withCheck)
    const offMs = median(without)
    lines.push(
      `run_code of that program (7 tool calls, QuickJS): default check ${checkedMs.toFixed(2)} ms, typeCheck 'off' ${offMs.toFixed(2)} ms ` +
        `(types removed in the thread either way): the check's share ${Math.max(0, ((checkedMs - offMs) / checkedMs) * 100).toFixed(0)}%`,
    )
  } finally {
    await engine.dispose()
  }
  return lines
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const line of await benchChecker()) console.log(line)
}
