import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..')

function sourceFiles(dir: string): string[] {
  const out: string[] = []
  for (const name of readdirSync(join(root, dir))) {
    const path = join(dir, name)
    if (statSync(join(root, path)).isDirectory()) out.push(...sourceFiles(path))
    else if (/\.(ts|js|mjs)$/.test(name)) out.push(path)
  }
  return out
}

function imports(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8')
  const specifiers: string[] = []
  for (const match of text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    specifiers.push((match[1] ?? match[2]) as string)
  }
  return specifiers
}

function resolvesInto(file: string, specifier: string, dir: string): boolean {
  if (!specifier.startsWith('.')) return false
  const target = relative(root, join(root, file, '..', specifier))
  return target === dir || target.startsWith(`${dir}/`)
}

describe('layering: dependencies point one way, sandbox -> sdk-gen -> src', () => {
  it('src imports neither sdk-gen, sandbox, nor an engine', () => {
    const offenders = sourceFiles('src').flatMap((file) =>
      imports(file)
        .filter((spec) => resolvesInto(file, spec, 'sdk-gen') || resolvesInto(file, spec, 'sandbox') || /quickjs|isolated-vm/.test(spec))
        .map((spec) => `${file} -> ${spec}`),
    )
    expect(offenders).toEqual([])
  })

  it('sdk-gen imports neither sandbox nor an engine', () => {
    const offenders = sourceFiles('sdk-gen').flatMap((file) =>
      imports(file)
        .filter((spec) => resolvesInto(file, spec, 'sandbox') || /quickjs|isolated-vm/.test(spec))
        .map((spec) => `${file} -> ${spec}`),
    )
    expect(offenders).toEqual([])
  })

  it('src, sdk-gen and sandbox import none of the edge roots (mcp, adapters, cli)', () => {
    const edges = ['mcp', 'adapters', 'cli']
    const offenders = ['src', 'sdk-gen', 'sandbox'].flatMap((inner) =>
      sourceFiles(inner).flatMap((file) =>
        imports(file)
          .filter((spec) => edges.some((edge) => resolvesInto(file, spec, edge)) || spec.startsWith('@modelcontextprotocol/'))
          .map((spec) => `${file} -> ${spec}`),
      ),
    )
    expect(offenders).toEqual([])
  })

  it('the edge roots do not import each other, except the CLI, which drives mcp', () => {
    const offenders = ['mcp', 'adapters'].flatMap((edge) =>
      sourceFiles(edge).flatMap((file) =>
        imports(file)
          .filter((spec) => ['mcp', 'adapters', 'cli'].some((other) => other !== edge && resolvesInto(file, spec, other)))
          .map((spec) => `${file} -> ${spec}`),
      ),
    )
    expect(offenders).toEqual([])
  })

  it('the checker itself sees imports (a guard against a vacuous pass)', () => {
    expect(imports('src/pipeline.ts')).toContain('./events.ts')
    expect(resolvesInto('sandbox/run-code.ts', '../sdk-gen/index.ts', 'sdk-gen')).toBe(true)
    expect(imports('cli/servers.ts')).toContain('../mcp/import-tools.ts')
  })
})
