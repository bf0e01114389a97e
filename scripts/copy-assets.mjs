// The worker entries and the modules they import are plain JavaScript loaded by URL at run time
// (a worker cannot load TypeScript on Node 20): tsc does not emit them, nor the declarations
// written by hand beside them.
import { copyFileSync, mkdirSync } from 'node:fs'

const ASSETS = [
  'sandbox/quickjs/worker.js',
  'sandbox/quickjs/ring.js',
  'sandbox/quickjs/ring.d.ts',
  'sandbox/quickjs/guest-cpu.js',
  'sandbox/quickjs/guest-cpu.d.ts',
  'sandbox/quickjs/wasm-layout.js',
  'sandbox/quickjs/wasm-layout.d.ts',
  'sdk-gen/type-check-core.js',
  'sdk-gen/type-check-core.d.ts',
  'sandbox/strip-types-core.js',
  'sandbox/strip-types-core.d.ts',
  'sandbox/type-check-worker.js',
]

// The output directory: `dist` (npm run build), or another one given (the package test builds aside,
// so that tests importing the package from dist never see it half-written).
const out = process.argv[2] ?? 'dist'
mkdirSync(`${out}/sandbox/quickjs`, { recursive: true })
mkdirSync(`${out}/sdk-gen`, { recursive: true })
for (const file of ASSETS) copyFileSync(file, `${out}/${file}`)
