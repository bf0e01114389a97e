// The worker entries and the modules they import are plain JavaScript loaded by URL at run time
// (a worker cannot load TypeScript on Node 20): tsc does not emit them, nor the declarations
// written by hand beside them. Every such file of the source roots is copied, so a new one cannot
// be forgotten in a list (scripts/bundle.mjs then bundles the QuickJS worker entry over its copy).
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'

const ROOTS = ['src', 'sdk-gen', 'sandbox', 'mcp', 'adapters', 'cli']

// The output directory: `dist` (npm run build), or another one given (the package test builds aside,
// so that tests importing the package from dist never see it half-written).
const out = process.argv[2] ?? 'dist'
// Walked by hand: `readdirSync`'s `recursive` and `Dirent.parentPath` need a later Node 20 than `engines` allows.
function* filesBelow(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* filesBelow(path)
    else if (entry.isFile()) yield path
  }
}

for (const root of ROOTS) {
  for (const file of filesBelow(root)) {
    if (!/\.(js|d\.ts)$/.test(file)) continue
    mkdirSync(dirname(join(out, file)), { recursive: true })
    copyFileSync(file, join(out, file))
  }
}
