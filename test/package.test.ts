import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, rmSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..')

describe('the built package', () => {
  it('builds, and plain Node imports every subpath by name and runs a Code Mode program', () => {
    // Built into a package of its own beside the repository's dist/, which other test files import
    // while this one runs (npm run build would delete it first).
    const staging = join(root, '.tmp', 'package-build')
    rmSync(staging, { recursive: true, force: true })
    mkdirSync(join(staging, 'test', 'fixtures'), { recursive: true })
    copyFileSync(join(root, 'package.json'), join(staging, 'package.json'))
    copyFileSync(join(root, 'test', 'fixtures', 'plain-node-consumer.mjs'), join(staging, 'test', 'fixtures', 'plain-node-consumer.mjs'))
    symlinkSync(join(root, 'node_modules'), join(staging, 'node_modules'), 'dir')
    // The package's own build (npm run build), into the directory given.
    execFileSync(process.execPath, ['scripts/build.mjs', join(staging, 'dist')], { cwd: root, stdio: 'pipe', timeout: 300_000 })
    const output = execFileSync(process.execPath, ['--no-node-snapshot', 'test/fixtures/plain-node-consumer.mjs'], {
      cwd: staging,
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(JSON.parse(output)).toEqual({ value: { result: 10, logs: [] }, bindings: [{ binding: 'add', name: 'add' }] })
  }, 360_000)
})
