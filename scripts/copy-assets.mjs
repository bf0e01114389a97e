// The QuickJS worker entry (and the module it imports) is plain JavaScript loaded by URL at run
// time: tsc does not emit it.
import { copyFileSync, mkdirSync } from 'node:fs'

mkdirSync('dist/sandbox/quickjs', { recursive: true })
for (const file of ['worker.js', 'ring-writer.js']) copyFileSync(`sandbox/quickjs/${file}`, `dist/sandbox/quickjs/${file}`)
