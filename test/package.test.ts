import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..')

describe('the built package', () => {
  it('builds, and plain Node imports every subpath by name and runs a Code Mode program', () => {
    execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'pipe', timeout: 120_000 })
    const output = execFileSync(process.execPath, ['--no-node-snapshot', 'test/fixtures/plain-node-consumer.mjs'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(JSON.parse(output)).toEqual({ value: { result: 10, logs: [] }, bindings: [{ binding: 'add', name: 'add' }] })
  })
})
