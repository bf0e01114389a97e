import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')

describe('TypeScript is loaded only by a program that needs it, and never on the main thread by run_code', () => {
  it('importing the sandbox and running plain JavaScript loads no TypeScript; a typed program has its types removed in another thread', () => {
    const output = execFileSync(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'test/fixtures/typescript-loads.mjs'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    })
    const report = JSON.parse(output) as Record<string, unknown>
    // The probe saw the modules that did load (tsx's own, at least), so `false` below means something.
    expect(report.modules).toBeGreaterThan(10)
    expect(report).toMatchObject({ afterImport: false, plain: [2, 4, 6], afterPlain: false, typed: 3, afterTyped: false })
  })
})
