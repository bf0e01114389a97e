// Worker-thread entry for the TypeScript work of `run_code` that may take unbounded time
// (sandbox/type-check-thread.ts): type checks (deeply recursive conditional types keep the checker
// busy for seconds) and the type removal of programs too costly to parse on the main thread
// (nested speculative parses: seconds for a few hundred bytes). Neither runs on the host's main
// thread, and the main thread can stop either.
//
// Protocol: main → worker { id, kind: 'check', declarations, program } or { id, kind: 'strip',
// program }; worker → main { id, diagnostics } (a check: each with its code and whether it is a
// certain failure), { id, stripped } (a strip: the same
// result stripTypes gives on the main thread) or { id, error } (the checker or the parser itself
// failed).

import { parentPort } from 'node:worker_threads'
import { classifiedDiagnostics } from '../sdk-gen/type-check-core.js'
import { loadStripper, stripTypes } from './strip-types-core.js'

// Asynchronously, so any Node 20 loads the blanker (an ES module); messages wait in the port.
await loadStripper()

parentPort.on('message', (request) => {
  const { id } = request
  let reply
  try {
    reply = request.kind === 'strip' ? { id, stripped: stripTypes(request.program) } : { id, diagnostics: classifiedDiagnostics(request.declarations, request.program) }
  } catch (error) {
    reply = { id, error: error instanceof Error ? error.name : 'Error' }
  }
  parentPort.postMessage(reply)
})
