// `npm run build` (dist/), or `node scripts/build.mjs <outDir>` (the package tests build aside, so
// that they never see the repository's dist/ half-written): the package, in three steps: tsc
// (declarations, and the modules loaded by URL in threads and processes of their own), the plain
// JavaScript files tsc does not emit (copy-assets.mjs), and the bundled entry points (bundle.mjs).
import { execFileSync } from 'node:child_process'
import { join, resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
const out = resolve(root, process.argv[2] ?? 'dist')
const node = (args, timeout) => execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit', timeout })

node([join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--outDir', out], 240_000)
node([join(root, 'scripts', 'copy-assets.mjs'), out], 60_000)
node([join(root, 'scripts', 'bundle.mjs'), out], 120_000)
