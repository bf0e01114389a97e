// `npm test`'s first step. vitest bundles the test files with rolldown, whose prebuilt native
// binding is an optional dependency: `npm ci --omit=optional` (meant to leave isolated-vm out)
// leaves it out too, and vitest then stops with a message about an npm bug. Say what happened
// and what to run instead, before vitest starts.
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
  console.error(
    [
      `npm test cannot start: ${binding}, the native part of vitest's bundler, is not installed.`,
      '`npm ci --omit=optional` leaves out every optional dependency, this one too, not only isolated-vm.',
      'Install with `npm ci`: isolated-vm is optional, and where it cannot build (no C++ toolchain) the install',
      'goes on without it (its test suites are then skipped, except under CI=true, where they fail).',
      `Or add the binding alone: npm install --no-save --omit=optional ${binding}@${version}`,
    ].join('\n'),
  )
  process.exit(1)
}
