import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, posix } from 'node:path'
import { build } from 'esbuild'
import { beforeAll, describe, expect, it } from 'vitest'

/**
 * The package as npm publishes it: built aside (other test files import the repository's dist/),
 * packed with `npm pack`, unpacked into a consumer's node_modules that has every dependency but the
 * optional isolated-vm, then imported, type-checked and bundled the way users do.
 */

const root = join(import.meta.dirname, '..', '..')
const staging = join(root, '.tmp', 'published')
const pkg = join(staging, 'pkg')
const consumer = join(staging, 'consumer')
const installed = join(consumer, 'node_modules', 'toolbox-codemode')
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')

interface PackageJson {
  readonly files: readonly string[]
  readonly exports: Record<string, { readonly types: string; readonly default: string }>
  readonly bin: Record<string, string>
}
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson

/** The files in the packed tarball, as `npm pack` lists them (paths relative to the package). */
let packed: Set<string>

beforeAll(() => {
  rmSync(staging, { recursive: true, force: true })
  mkdirSync(pkg, { recursive: true })
  // What `files` names, as it is in the repository, and dist/ built fresh beside it.
  for (const entry of ['package.json', ...manifest.files]) {
    if (entry !== 'dist' && existsSync(join(root, entry))) cpSync(join(root, entry), join(pkg, entry), { recursive: true })
  }
  // The package's own build (npm run build), into the directory given.
  execFileSync(process.execPath, ['scripts/build.mjs', join(pkg, 'dist')], { cwd: root, stdio: 'pipe', timeout: 300_000 })
  // --ignore-scripts: `prepare` would build again, in a directory with no compiler settings.
  const output = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', staging], { cwd: pkg, encoding: 'utf8', timeout: 120_000 })
  const [report] = JSON.parse(output) as [{ filename: string; files: { path: string }[] }]
  packed = new Set(report.files.map((file) => file.path))
  mkdirSync(installed, { recursive: true })
  // A package of its own: inside the repository, the nearest package.json would otherwise be the
  // repository's, and Node, TypeScript and esbuild would resolve `toolbox-codemode` to it by name.
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
  execFileSync('tar', ['-xzf', join(staging, report.filename), '-C', installed, '--strip-components=1'])
  // Every dependency the repository installed, except the optional engine a machine without a C++
  // toolchain would not have.
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (name === 'isolated-vm' || name === 'toolbox-codemode' || name.startsWith('.')) continue
    symlinkSync(join(root, 'node_modules', name), join(consumer, 'node_modules', name), 'dir')
  }
}, 300_000)

/** `./x.js` imports and `new URL('./x.js', import.meta.url)` locations of a packed JavaScript file. */
function relativeTargets(file: string): string[] {
  const text = readFileSync(join(installed, file), 'utf8')
  const specifiers = [
    ...text.matchAll(/(?:^|[\s;])(?:import|export)\b[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]/gm),
    ...text.matchAll(/\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g),
    ...text.matchAll(/new URL\(\s*['"](\.{1,2}\/[^'"]+)['"],\s*import\.meta\.url\s*\)/g),
  ].map((match) => match[1] as string)
  return specifiers.map((specifier) => posix.normalize(posix.join(posix.dirname(file), specifier)))
}

describe('the packed package', () => {
  it('holds every export, both its types and its code, and the bin', () => {
    const wanted = [
      ...Object.values(manifest.exports).flatMap((target) => [target.types, target.default]),
      ...Object.values(manifest.bin),
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
    ].map((path) => posix.normalize(path))
    expect(wanted.filter((path) => !packed.has(path))).toEqual([])
  })

  it('holds every file its JavaScript imports or loads by URL at run time (worker entries, their modules)', () => {
    const missing: string[] = []
    for (const file of packed) {
      if (!file.startsWith('dist/') || !file.endsWith('.js')) continue
      for (const target of relativeTargets(file)) if (!packed.has(target)) missing.push(`${file} -> ${target}`)
    }
    expect(missing).toEqual([])
  })

  it('publishes no @internal member and no reference to the optional isolated-vm in its declarations', () => {
    const offenders: string[] = []
    for (const file of packed) {
      if (!file.endsWith('.d.ts')) continue
      const text = readFileSync(join(installed, file), 'utf8')
      if (text.includes('@internal')) offenders.push(`${file}: @internal`)
      if (/from ['"]isolated-vm['"]|import\(['"]isolated-vm['"]\)/.test(text)) offenders.push(`${file}: isolated-vm`)
    }
    expect(offenders).toEqual([])
  })
})

/** A consumer of the core subpaths, which need nothing but Node's own types. */
const CORE_CONSUMER = `
import { createContext, defineTool, runToolCalls } from 'toolbox-codemode'
import { createQuickJSEngine, createRunCode, createIsolatedVmEngine } from 'toolbox-codemode/sandbox'
import type { SandboxEngine, RunCodeOptions } from 'toolbox-codemode/sandbox'
import { generateSdk } from 'toolbox-codemode/sdk-gen'

const options: RunCodeOptions = { typeCheck: false, limits: { wallTimeMs: 1_000 } }
const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode(options) } })
const engine: SandboxEngine = createQuickJSEngine()
export const used = [ctx, engine, defineTool, runToolCalls, createIsolatedVmEngine, generateSdk]
`

/** A consumer of the edge subpaths, whose SDKs' own declarations need the DOM library. */
const EDGE_CONSUMER = `
import * as mcp from 'toolbox-codemode/mcp'
import * as openai from 'toolbox-codemode/openai'
import * as anthropic from 'toolbox-codemode/anthropic'
import * as aiSdk from 'toolbox-codemode/ai-sdk'
export const used = [mcp, openai, anthropic, aiSdk]
`

/**
 * tsc's diagnostics for `source` under `compilerOptions`, skipLibCheck off; `ours`: only those in
 * the consumer or in this package's declarations (the provider SDKs' own declarations need more
 * than a consumer of this package does: @types/json-schema, for one).
 */
function typeCheck(name: string, source: string, compilerOptions: Record<string, unknown>, ours = false): string[] {
  const dir = join(consumer, `types-${name}-${String(compilerOptions.moduleResolution)}`)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'index.ts'), source)
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', lib: ['ES2023', 'ESNext.Disposable'], strict: true, noEmit: true, skipLibCheck: false, types: ['node'], ...compilerOptions },
      files: ['index.ts'],
    }),
  )
  const result = spawnSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: dir, encoding: 'utf8', timeout: 240_000 })
  const lines = `${result.stdout}${result.stderr}`.split('\n').filter((line) => /error TS\d+/.test(line))
  return ours ? lines.filter((line) => line.startsWith('index.ts') || line.includes('node_modules/toolbox-codemode/')) : lines
}

const RESOLUTIONS = [
  { module: 'nodenext', moduleResolution: 'nodenext' },
  { module: 'esnext', moduleResolution: 'bundler' },
] as const

describe.each(RESOLUTIONS)('a TypeScript consumer of the packed package under moduleResolution $moduleResolution, without isolated-vm, skipLibCheck off', (resolution) => {
  it('type-checks the core subpaths with no error anywhere, and without the DOM library', () => {
    expect(typeCheck('core', CORE_CONSUMER, resolution)).toEqual([])
  }, 240_000)

  it('type-checks the edge subpaths with no error in the package or the consumer', () => {
    expect(typeCheck('edge', EDGE_CONSUMER, { ...resolution, lib: ['ES2023', 'ESNext.Disposable', 'DOM'] }, true)).toEqual([])
  }, 240_000)
})

/** A consumer running a Code Mode program with plain Node. */
const CONSUMER_RUN = `
import { createContext } from 'toolbox-codemode'
import { createRunCode } from 'toolbox-codemode/sandbox'
const agent = createContext({ tools: { mode: 'code', codeMode: createRunCode() } }).agent('a')
const result = await agent.ctx.tools.execute({ callId: '1', name: 'run_code', arguments: { code: 'const n: number = 20\\nreturn [1, n + 1]' }, signal: new AbortController().signal })
process.stdout.write(JSON.stringify(result.isError ? { error: result.error.message } : result.value))
`

function runNode(file: string): string {
  return execFileSync(process.execPath, ['--no-node-snapshot', file], { cwd: consumer, encoding: 'utf8', timeout: 60_000 })
}

describe('a JavaScript consumer of the packed package, without isolated-vm', () => {
  it("runs the README's first example as written (it is plain JavaScript too)", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    const section = readme.slice(readme.indexOf('## Install and first program'))
    const example = /```ts\n([\s\S]*?)```/.exec(section)?.[1]
    if (example === undefined) throw new Error('README.md has no TypeScript example under "Install and first program"')
    writeFileSync(join(consumer, 'readme.mjs'), example)
    expect(runNode('readme.mjs').trim()).toBe('{ result: 50, logs: [] }')
  })

  it('runs a TypeScript program on QuickJS with plain Node', () => {
    writeFileSync(join(consumer, 'run.mjs'), CONSUMER_RUN)
    expect(JSON.parse(runNode('run.mjs'))).toEqual({ result: [1, 21], logs: [] })
  })

  it('shares one copy of each class between its subpaths: a ToolError thrown by the sandbox is a ToolError of the core', () => {
    writeFileSync(
      join(consumer, 'classes.mjs'),
      `import { DisposedError, ToolError } from 'toolbox-codemode'
import { createQuickJSEngine } from 'toolbox-codemode/sandbox'
const engine = createQuickJSEngine({ workers: 1 })
await engine.dispose()
// Thrown by the sandbox subpath's code, caught with the core's classes.
const error = await engine.run({ code: 'return 1', bindings: [], host: undefined, limits: undefined, signal: new AbortController().signal }).then(() => undefined, (thrown) => thrown)
process.stdout.write(JSON.stringify({ disposed: error instanceof DisposedError, toolError: error instanceof ToolError }))
`,
    )
    expect(JSON.parse(runNode('classes.mjs'))).toEqual({ disposed: true, toolError: true })
  })

  it('runs its command line tool from the packed bin', () => {
    const bin = join(installed, manifest.bin['toolbox-codemode'] as string)
    expect(execFileSync(process.execPath, [bin, '--help'], { cwd: consumer, encoding: 'utf8', timeout: 60_000 })).toContain('toolbox-codemode serve')
  })

  it('runs it bundled by esbuild with the package marked external, as the README says', async () => {
    writeFileSync(join(consumer, 'run.mjs'), CONSUMER_RUN)
    await build({ entryPoints: [join(consumer, 'run.mjs')], outfile: join(consumer, 'out', 'external.mjs'), bundle: true, platform: 'node', format: 'esm', external: ['toolbox-codemode'], logLevel: 'silent' })
    expect(JSON.parse(runNode('out/external.mjs'))).toEqual({ result: [1, 21], logs: [] })
  })

  it('bundled with the package inlined, fails naming the fix (mark it external) instead of a worker that silently failed to start', async () => {
    writeFileSync(join(consumer, 'run.mjs'), CONSUMER_RUN)
    const outfile = join(consumer, 'out', 'inlined.mjs')
    await build({ entryPoints: [join(consumer, 'run.mjs')], outfile, bundle: true, platform: 'node', format: 'esm', packages: 'bundle', logLevel: 'silent', external: ['typescript'] })
    expect(existsSync(join(dirname(outfile), 'worker.js'))).toBe(false)
    const output = JSON.parse(runNode('out/inlined.mjs')) as { error?: string }
    expect(output.error).toMatch(/QuickJS worker \(dist\/sandbox\/quickjs\/worker\.js\) is not beside the code that loads it: was the package bundled\?.*mark it external/)
  })
})
