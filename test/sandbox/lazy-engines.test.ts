import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')

/** Run a fixture script in a fresh Node process (as the tests' engines run) and return its stdout. */
function runFixture(name: string, timeout: number): string {
  return execFileSync(process.execPath, ['--no-node-snapshot', '--import', 'tsx', `test/fixtures/${name}`], { cwd: root, encoding: 'utf8', timeout })
}

describe('the engine a user does not choose is never loaded', () => {
  it('running a QuickJS program loads neither QuickJS nor isolated-vm on the main thread', () => {
    const output = runFixture('engine-loads.mjs', 60_000)
    const report = JSON.parse(output) as {
      outcome: unknown
      urls: number
      quickjsInMain: string[]
      isolatedVmInMain: string[]
      isolatedVmAddon: string[]
    }
    expect(report.outcome).toEqual({ ok: true, resultJson: '2' })
    // The probe saw the modules that did load, so an empty list below means something.
    expect(report.urls).toBeGreaterThan(10)
    expect(report.quickjsInMain).toEqual([])
    expect(report.isolatedVmInMain).toEqual([])
    expect(report.isolatedVmAddon).toEqual([])
  })
})

describe('an idle engine', () => {
  it('lets the process exit on its own after a run, even never disposed (createRunCode\'s default QuickJS engine)', () => {
    // execFileSync fails on its timeout if the process does not exit.
    const output = runFixture('idle-engine-exits.mjs', 30_000)
    expect(JSON.parse(output)).toEqual({ result: 42, logs: [] })
  })
})

