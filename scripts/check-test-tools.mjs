// `npm test`'s first step. vitest bundles the test files with rolldown, whose prebuilt native
// binding is an optional dependency: `npm ci --omit=optional` (meant to leave isolated-vm out)
// leaves it out too, and vitest then stops with a message about an npm bug. Add that one binding
// (as esbuild's own install does for its binary), or say what happened and what to run.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/** The binding package rolldown wants on this machine, e.g. @rolldown/binding-linux-x64-gnu. */
function bindingName() {
  const libc = process.platform === 'linux' ? (process.report.getReport().header.glibcVersionRuntime ? '-gnu' : '-musl') : ''
  const abi = process.platform === 'win32' ? '-msvc' : ''
  return `@rolldown/binding-${process.platform}-${process.arch}${libc}${abi}`
}

let rolldownDir
try {
  rolldownDir = require.resolve('rolldown/package.json', { paths: [require.resolve('vitest/package.json')] })
} catch {
  // vitest bundles with something else in this version: nothing to check.
  process.exit(0)
}
const rolldown = JSON.parse(readFileSync(rolldownDir, 'utf8'))
const binding = bindingName()
if (!(binding in (rolldown.optionalDependencies ?? {}))) process.exit(0)
try {
  require.resolve(`${binding}/package.json`, { paths: [rolldownDir] })
} catch {
  const version = rolldown.optionalDependencies[binding]
  const install = ['install', '--no-save', '--omit=optional', '--no-audit', '--no-fund', `${binding}@${version}`]
  console.error(
    `${binding}, the native part of vitest's bundler, is not installed: \`npm ci --omit=optional\` leaves out every ` +
      `optional dependency, not only isolated-vm. Adding it alone: npm ${install.join(' ')}`,
  )
  try {
    // npm_execpath is npm's own script when this runs as `npm test`.
    const npm = process.env.npm_execpath
    if (npm !== undefined && npm.endsWith('.js')) execFileSync(process.execPath, [npm, ...install], { stdio: 'inherit' })
    else execFileSync('npm', install, { stdio: 'inherit', shell: process.platform === 'win32' })
    require.resolve(`${binding}/package.json`, { paths: [rolldownDir] })
  } catch (error) {
    console.error(
      [
        `npm test cannot start without ${binding}: ${error instanceof Error ? error.message : String(error)}`,
        'Install with `npm ci` instead: isolated-vm is optional, and where it cannot build (no C++ toolchain) the',
        'install goes on without it (its test suites are then skipped, except under CI=true, where they fail).',
      ].join('\n'),
    )
    process.exit(1)
  }
}
