import { describe, expect, it } from 'vitest'
import { showProgress } from '../../cli/progress.ts'
import { createContext } from '../../src/context.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import { call, rawTool } from '../helpers.ts'

function setup() {
  const context = createContext({ tools: { mode: 'code', codeMode: createRunCode() } })
  context.tools.register(rawTool('ok'))
  context.tools.register(
    rawTool('bad', {
      execute: async () => {
        throw new Error('no\nway')
      },
    }),
  )
  return context
}

const CODE = 'await tools.ok({}); try { await tools.bad({}) } catch {} return 1'

describe('live progress of a program', () => {
  it('prints a plain line per start and end when the sink is not a terminal', async () => {
    const context = setup()
    const written: string[] = []
    const stop = showProgress(context, 'p1', { write: (text) => written.push(text), isTTY: false })
    await context.tools.execute(call('run_code', { code: CODE }, { callId: 'p1', agent: context.agent('a') }))
    stop()
    const lines = written.join('').split('\n').map((line) => line.replace(/ \(\d+ ms\)/, ''))
    expect(lines).toEqual(['start ok', 'done ok', 'start bad', 'fail bad: no way', ''])
  })

  it('on a terminal, redraws one status line of running calls and scrolls settled ones above it', async () => {
    const context = setup()
    const written: string[] = []
    const stop = showProgress(context, 'p2', { write: (text) => written.push(text), isTTY: true }, 60)
    await context.tools.execute(call('run_code', { code: CODE }, { callId: 'p2', agent: context.agent('a') }))
    stop()
    const text = written.join('')
    expect(text).toContain('\r\x1b[2K… 1 running: ok')
    expect(text).toMatch(/\r\x1b\[2K✓ ok \(\d+ ms\)\n/)
    expect(text).toMatch(/\r\x1b\[2K✗ bad \(\d+ ms\): no way\n/)
    // Nothing is left running, so no status line is left behind.
    expect(text.endsWith('\n')).toBe(true)
  })

  it('prints console lines as the program writes them, between its calls, whole', async () => {
    const context = setup()
    const written: string[] = []
    const stop = showProgress(context, 'p4', { write: (text) => written.push(text), isTTY: false })
    const code = `console.log("before"); await tools.ok({}); console.warn("${'w'.repeat(150)}"); return 1`
    await context.tools.execute(call('run_code', { code }, { callId: 'p4', agent: context.agent('a') }))
    stop()
    const lines = written.join('').split('\n').map((line) => line.replace(/ \(\d+ ms\)/, ''))
    expect(lines).toEqual(['before', 'start ok', 'done ok', `[warn] ${'w'.repeat(150)}`, ''])
  })

  it('ignores calls that are not sub-calls of the watched program', async () => {
    const context = setup()
    const written: string[] = []
    const stop = showProgress(context, 'p3', { write: (text) => written.push(text), isTTY: false })
    await context.tools.execute(call('run_code', { code: CODE }, { callId: 'other', agent: context.agent('a') }))
    stop()
    expect(written).toEqual([])
  })
})
