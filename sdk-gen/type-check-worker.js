// Worker-thread entry that type-checks `run_code` programs (sandbox/type-check-thread.ts): a
// type check can take unbounded time on a small hostile program (deeply recursive conditional
// types), so it never runs on the host's main thread, and the main thread can stop it.
//
// Protocol: main → worker { id, declarations, program }; worker → main { id, diagnostics } or
// { id, error } (the checker itself failed).

import { parentPort } from 'node:worker_threads'
import { programDiagnostics } from './type-check-core.js'

parentPort.on('message', ({ id, declarations, program }) => {
  let reply
  try {
    reply = { id, diagnostics: programDiagnostics(declarations, program) }
  } catch (error) {
    reply = { id, error: error instanceof Error ? error.name : 'Error' }
  }
  parentPort.postMessage(reply)
})
