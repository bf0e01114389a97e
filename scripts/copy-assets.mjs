// The QuickJS worker entry and the modules it imports are plain JavaScript loaded by URL at run
// time: tsc does not emit them (nor the declarations written by hand beside one of them).
import { copyFileSync, mkdirSync } from 'node:fs'

mkdirSync('dist/sandbox/quickjs', { recursive: true })
for (const file of ['quickjs/worker.js', 'quickjs/ring.js', 'quickjs/ring.d.ts', 'quickjs/guest-cpu.js', 'quickjs/guest-cpu.d.ts']) {
  copyFileSync(`sandbox/${file}`, `dist/sandbox/${file}`)
}
