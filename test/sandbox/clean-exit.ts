/**
 * A process running an engine must be able to exit cleanly at any moment: `process.exit()` or
 * `dispose()` while a program spins, right after a flood of answers, after a stopped or lost run.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PROBE = fileURLToPath(new URL('../fixtures/exit-at-worst-moment.mjs', import.meta.url))
/** From the probe's `exiting` to its exit. */
const EXIT_WITHIN_MS = 1_000

/** Run the probe (see the fixture) and expect exit code 0, no signal, within a second of leaving. */
export async function expectCleanExit(engine: string, moment: string, how: string): Promise<void> {
  const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', PROBE, engine, moment, how], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '' },
  })
  let leaving: number | undefined
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => {
    if (leaving === undefined && chunk.toString().includes('exiting')) leaving = performance.now()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const killer = setTimeout(() => child.kill('SIGKILL'), 40_000)
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])))
  clearTimeout(killer)
  const took = leaving === undefined ? undefined : performance.now() - leaving
  expect({ code, signal, stderr: stderr.slice(-2_000) }).toEqual({ code: 0, signal: null, stderr: '' })
  expect(took).toBeDefined()
  expect(took as number).toBeLessThan(EXIT_WITHIN_MS)
}
