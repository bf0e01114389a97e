import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '../..')

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(join(root, path)).isDirectory()) return sourceFiles(path)
    return /\.(ts|js|mjs)$/.test(name) ? [path] : []
  })
}

/** Run `code` as an ES module in a child with the provider SDKs made unloadable. */
function runRefusingSdks(code: string): { status: number | null; stdout: string; stderr: string } {
  const child = spawnSync(
    process.execPath,
    ['--no-node-snapshot', '--import', 'tsx', '--import', './test/fixtures/adapters/refuse-provider-sdks.mjs', '--input-type=module', '-e', code],
    { cwd: root, encoding: 'utf8' },
  )
  return { status: child.status, stdout: child.stdout, stderr: child.stderr }
}

describe('adapters: layering and loading', () => {
  it('nothing in the core, sdk-gen or sandbox imports adapters', () => {
    const offenders = ['src', 'sdk-gen', 'sandbox'].flatMap(sourceFiles).filter((file) => /from\s+['"][./]*adapters\/|import\(\s*['"][./]*adapters\//.test(readFileSync(join(root, file), 'utf8')))
    expect(offenders).toEqual([])
  })

  it('adapters import the provider SDKs for types only, except the lazy import of ai', () => {
    const valueImports = sourceFiles('adapters').flatMap((file) =>
      [...readFileSync(join(root, file), 'utf8').matchAll(/^import\s+(?!type\b)[^'"]*from\s+['"]((?:openai|@anthropic-ai\/sdk|ai)(?:\/[^'"]*)?)['"]/gm)].map((match) => `${file}: ${match[1]}`),
    )
    expect(valueImports).toEqual([])
  })

  it('importing every adapter loads no provider SDK', () => {
    const run = runRefusingSdks(
      "await import('./adapters/openai.ts'); await import('./adapters/anthropic.ts'); await import('./adapters/ai-sdk.ts'); console.log('loaded')",
    )
    expect(run.stderr).toBe('')
    expect(run.stdout.trim()).toBe('loaded')
  })

  it('toAiSdkTools loads ai when it is called, and names the package when it cannot (so the check above is not vacuous)', () => {
    const run = runRefusingSdks(
      "const { createContext } = await import('./src/index.ts'); const { toAiSdkTools } = await import('./adapters/ai-sdk.ts'); await toAiSdkTools(createContext().agent('a')).then(() => console.log('no error'), (error) => console.log(error.message))",
    )
    expect(run.stdout).toContain('toAiSdkTools needs the optional peer dependency "ai" (6.x); install it (npm install ai) (provider SDK loaded: ai)')
  })
})
