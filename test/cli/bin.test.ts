import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { enginesUnderTest } from '../sandbox/engines.ts'

const root = join(import.meta.dirname, '..', '..')
// Built beside the repository's dist/, which other test files import while this one runs.
const staging = join(root, '.tmp', 'cli-bin-build')
const bin = join(staging, 'dist', 'cli', 'main.js')

beforeAll(() => {
  rmSync(staging, { recursive: true, force: true })
  mkdirSync(staging, { recursive: true })
  copyFileSync(join(root, 'package.json'), join(staging, 'package.json'))
  symlinkSync(join(root, 'node_modules'), join(staging, 'node_modules'), 'dir')
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--outDir', join(staging, 'dist')], {
    cwd: root,
    stdio: 'pipe',
    timeout: 120_000,
  })
  execFileSync(process.execPath, ['scripts/copy-assets.mjs', join(staging, 'dist')], { cwd: root, stdio: 'pipe' })
}, 180_000)

/** Run the built bin with plain Node: no tsx, no --no-node-snapshot, as `npx toolbox-codemode` would. */
function runBin(args: readonly string[]) {
  return spawnSync(process.execPath, [bin, ...args], { cwd: staging, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } })
}

describe('the built bin, dist/cli/main.js', () => {
  it('is the package bin and starts with a node shebang', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> }
    expect(pkg.bin['toolbox-codemode']).toBe('./dist/cli/main.js')
    expect(readFileSync(bin, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node')
  })

  it('prints its help with plain Node', () => {
    const outcome = runBin(['--help'])
    expect(outcome.status).toBe(0)
    expect(outcome.stdout).toContain('Code Mode over any MCP server')
  })

  it.each(enginesUnderTest().map((engine) => engine.name))('runs a program on %s from plain Node, with no --no-node-snapshot anywhere', (engine) => {
    const program = join(staging, 'program.ts')
    writeFileSync(program, 'const graph = await tools.m_read_graph({})\nreturn graph.entities.length\n')
    const memory = join(staging, `memory-${engine}.jsonl`)
    const outcome = spawnSync(process.execPath, [bin, 'run', program, '--engine', engine, '--mcp', `m=${join(root, 'node_modules', '.bin', 'mcp-server-memory')}`], {
      cwd: staging,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, NODE_OPTIONS: '', MEMORY_FILE_PATH: memory },
    })
    expect(outcome.stderr).not.toContain('--no-node-snapshot')
    expect(outcome.status).toBe(0)
    expect(outcome.stdout.trim()).toBe('0')
  })
})
