import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')

/** The modules a fresh Node process resolves while importing one root. */
function probe(rootDir: string): { urls: number; mcpSdk: number } {
  const output = execFileSync(process.execPath, ['--import', 'tsx', join('test', 'mcp', 'fixtures', 'sdk-loads.mjs'), rootDir], { cwd: root, encoding: 'utf8', timeout: 60_000 })
  return JSON.parse(output) as { urls: number; mcpSdk: number }
}

describe('the MCP SDK loads only with the mcp subpath', () => {
  it.each(['src', 'sdk-gen', 'sandbox'])('importing %s loads none of it', (rootDir) => {
    const report = probe(rootDir)
    // The probe saw the modules that did load, so zero below means something.
    expect(report.urls).toBeGreaterThan(5)
    expect(report.mcpSdk).toBe(0)
  })

  it('importing mcp loads it (the probe can see it)', () => {
    expect(probe('mcp').mcpSdk).toBeGreaterThan(0)
  })
})
