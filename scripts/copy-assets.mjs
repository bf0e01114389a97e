// The QuickJS worker entry is plain JavaScript loaded by URL at run time: tsc does not emit it.
import { copyFileSync, mkdirSync } from 'node:fs'

mkdirSync('dist/sandbox/quickjs', { recursive: true })
copyFileSync('sandbox/quickjs/worker.js', 'dist/sandbox/quickjs/worker.js')
