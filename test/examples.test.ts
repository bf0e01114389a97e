import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import * as codeMode from '../examples/code-mode.ts'
import * as hostile from '../examples/hostile-programs.ts'
import * as nativeAgent from '../examples/native-agent.ts'
import { enginesUnderTest } from './sandbox/engines.ts'

const silent = (): void => {}
const root = join(import.meta.dirname, '..')
// isolated-vm joins when it loads here, and is never silently skipped in CI (see engines.ts).
const engineNames = enginesUnderTest().map((engine) => engine.name as 'quickjs' | 'isolated-vm')

describe('examples/native-agent', () => {
  let summary: nativeAgent.NativeAgentSummary
  beforeAll(async () => {
    summary = await nativeAgent.main({ print: silent })
  })
  const result = (callId: string) => summary.results.find((r) => r.callId === callId)

  it('shows the model one schema per tool', () => {
    expect(summary.toolNames).toEqual(['list_files', 'read_file', 'search', 'write_file'])
  })

  it('returns every result in call order', () => {
    expect(summary.results.map((r) => r.callId)).toEqual(['call_1', 'call_2', 'call_3', 'call_4', 'call_5', 'call_6', 'call_7', 'call_8', 'call_9'])
    expect(summary.results.slice(0, 5).every((r) => !r.isError)).toBe(true)
  })

  it('gives the invalid call INVALID_ARGS with the failing path and the expected type', () => {
    expect(result('call_6')).toMatchObject({ isError: true, code: 'INVALID_ARGS' })
    expect(result('call_6')?.text).toContain('$.path: expected string, found number 42')
  })

  it('asks approval for each write, runs the approved one and denies the other', () => {
    expect(summary.approvals).toEqual([
      { callId: 'call_5', reason: 'write TODO.md', answer: 'allowed-once' },
      { callId: 'call_8', reason: 'write src/cart.ts', answer: 'denied' },
    ])
    expect(result('call_5')?.text).toBe('Created TODO.md (38 bytes)')
    expect(summary.files).toContain('TODO.md')
    expect(result('call_8')).toMatchObject({ isError: true, code: 'DENIED' })
  })

  it('lets the guard deny reading a secret, with its reason', () => {
    expect(result('call_7')).toMatchObject({ isError: true, code: 'DENIED' })
    expect(result('call_7')?.text).toContain('files holding secrets are off limits')
  })

  it('answers an unknown tool by listing the tools that exist', () => {
    expect(result('call_9')).toMatchObject({ code: 'UNKNOWN_TOOL' })
    expect(result('call_9')?.text).toContain('Available tools: list_files, read_file, search, write_file')
  })

  it('overlaps the concurrency-safe calls and runs the write alone', () => {
    // The four reads all start before any settles; the write's call and result are adjacent.
    expect(summary.sessionEvents.slice(0, 4)).toEqual(['tool/call', 'tool/call', 'tool/call', 'tool/call'])
    expect(summary.sessionEvents.slice(8, 10)).toEqual(['tool/call', 'tool/result'])
    expect(summary.sessionEvents).toHaveLength(18)
  })

  it('replays a read card and a search card from the session log alone', () => {
    const read = summary.cards.find((card) => card.callId === 'call_3')
    expect(read?.call).toMatchObject({ card: 'generic', kind: 'read', title: 'Read src/tax.ts' })
    expect(read?.result).toEqual({
      card: 'read',
      title: 'Read src/tax.ts',
      path: 'src/tax.ts',
      offset: 2,
      totalLines: 3,
      lines: [{ number: 2, text: '// TODO: per-country rates' }],
      lang: 'typescript',
    })
    const search = summary.cards.find((card) => card.callId === 'call_4')
    expect(search?.result).toMatchObject({ card: 'search', shape: 'matches', total: 2, truncated: false })
    expect(summary.cards.find((card) => card.callId === 'call_6')).toMatchObject({ isError: true, result: { card: 'generic' } })
  })
})

describe.each(engineNames)('examples/code-mode on %s', (engine) => {
  let summary: codeMode.CodeModeSummary
  beforeAll(async () => {
    summary = await codeMode.main({ engine, print: silent })
  })

  it('runs on the engine it was asked for', () => {
    expect(summary.engine).toBe(engine)
  })

  it('shows the code agent only run_code, with the SDK of its restricted view, and the native agent every tool', () => {
    expect(summary.codeAgentTools).toEqual(['run_code'])
    expect(summary.runCodeDescription).toContain('read_file(args: {')
    expect(summary.runCodeDescription).toContain('list_files(args: {')
    expect(summary.runCodeDescription).not.toContain('write_file')
    expect(summary.nativeAgentTools).toEqual(['list_files', 'read_file', 'search', 'write_file'])
  })

  it('lets a live observer follow the program: each read as it starts and settles, and its console line', () => {
    expect(summary.progress.filter((line) => line.startsWith('▸ '))).toHaveLength(summary.subCallIds.length)
    expect(summary.progress.filter((line) => line.startsWith('✓ '))).toHaveLength(summary.subCallIds.length)
    expect(summary.progress.at(-1)).toBe('console.log: read 3 files, 3 regions')
  })

  it("returns the program's processed JSON value and its console output", () => {
    expect(summary.result).toEqual({ quarters: 3, totals: { north: 360, south: 280, east: 200 }, best: { region: 'north', amount: 360 } })
    expect(summary.logs).toEqual([{ level: 'log', text: 'read 3 files, 3 regions' }])
  })

  it('numbers sub-calls <callId>:code:<n> in dispatch order and overlaps the Promise.all reads', () => {
    expect(summary.subCallIds).toEqual(['call_1:code:1', 'call_1:code:2', 'call_1:code:3', 'call_1:code:4'])
    expect(summary.peakConcurrentReads).toBeGreaterThan(1)
  })

  it('logs the run_code call, every dispatch start and end, then the result', () => {
    const run = summary.sessionEvents.slice(0, summary.sessionEvents.indexOf('tool/result call_1') + 1)
    expect(run[0]).toBe('tool/call call_1')
    expect(run.at(-1)).toBe('tool/result call_1')
    for (let n = 1; n <= 4; n++) {
      const start = run.indexOf(`tool/code-dispatch-start call_1:code:${n}`)
      expect(start).toBeGreaterThan(0)
      expect(run.indexOf(`tool/code-dispatch call_1:code:${n}`)).toBeGreaterThan(start)
    }
    expect(run).toHaveLength(10)
  })

  it('refuses a direct native call from the code agent but not from the native agent', () => {
    expect(summary.directCall.code).toBe('UNKNOWN_TOOL')
    expect(summary.directCall.text).toContain('run_code')
    expect(summary.nativeCall).toEqual({ isError: false, text: 'README.md (4 lines)\n   1  # shop' })
  })
})

describe.each(engineNames)('examples/hostile-programs on %s', (engine) => {
  let summary: hostile.HostileSummary
  beforeAll(async () => {
    summary = await hostile.main({ engine, print: silent })
  })

  it.each(hostile.HOSTILE.map((program) => [program.name, program.expect]))('stops %s with CODE_RUN_FAILED naming %s', (name, expected) => {
    const outcome = summary.outcomes.find((o) => o.name === name)
    expect(outcome?.code).toBe('CODE_RUN_FAILED')
    expect(outcome?.text).toContain(expected)
  })

  it('never shows the model a host path', () => {
    for (const outcome of summary.outcomes) expect(outcome.text).not.toMatch(/\/work\/|node_modules|file:\/\/|\.ts:\d/)
  })

  it('keeps console output written before the failure in the message', () => {
    const doors = summary.outcomes.find((o) => o.name === 'reaching for host globals')
    expect(doors?.text).toContain('what the program found: {"process":"undefined","require":"undefined","fetch":"undefined","viaFunction":"undefined"}')
  })

  it('gives the run after a prototype pollution a clean realm', () => {
    expect(summary.pollution).toEqual({ polluted: 'polluted', nextRun: { isAdmin: null, doubled: [2, 4], backdoor: 'undefined' } })
  })

  it('runs a normal program afterwards', () => {
    expect(summary.finalRun).toEqual({ isError: false, result: { files: ['src/cart.ts', 'src/tax.ts'], count: 2 } })
  })

  it('never blocks the host event loop for as long as a runaway loop runs', () => {
    // A program on the host thread would stall it for the whole CPU limit.
    expect(summary.eventLoopMaxGapMs).toBeLessThan(hostile.LIMITS.cpuTimeMs as number)
  })
})

describe('examples/demo', () => {
  it('walks through every act, exits 0 on its own, and reports every hostile program stopped', async () => {
    // A child process: an engine left open would keep it alive, and the test would time out.
    const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'examples/demo.ts'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
    expect(stderr).toBe('')
    expect(code).toBe(0)
    for (const act of ['Act 1', 'Act 2', 'Act 3', 'Act 4', 'Summary']) expect(stdout).toContain(act)
    expect(stdout).toContain(`hostile programs: ${hostile.HOSTILE.length}/${hostile.HOSTILE.length} stopped and named`)
    expect(stdout).toMatch(/final run: +ok /)
  }, 60_000)
})
