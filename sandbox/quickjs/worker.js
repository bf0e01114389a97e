// Worker-thread entry of the QuickJS engine. Plain JavaScript on purpose: Node 20 cannot load a
// TypeScript worker without a loader. The main thread (quickjs-engine.ts) owns every decision about
// results; this file only runs one program at a time in a fresh QuickJS runtime and reports.
//
// Protocol (all messages are small plain objects):
//   main → worker  { t: 'run', run, code, toolsJson, names, limits }
//                  { t: 'settle', run, call, envelope }        answer of one sub-call
//   worker → main  { t: 'ready' }                               module loaded, idle
//                  { t: 'calls', run, calls: [[call, name, argsJson], ...] }
//                                                              sub-calls started in one guest slice,
//                                                              in program order
//                  { t: 'log', run, level, text }               one console line
//                  { t: 'done', run, outcome, reset }           outcome: see finishRun()
// `reset: true` means the worker throws its WASM module away and loads a fresh one before its
// next run (after any limit breach or fault); it posts 'ready' again when that is done.

import { parentPort, workerData } from 'node:worker_threads'
import { newQuickJSWASMModuleFromVariant, newVariant } from 'quickjs-emscripten-core'
import releaseSyncVariant from '@jitl/quickjs-wasmfile-release-sync'

const { prelude, runtimeFilename, programFilename, memoryLimitBytes: initialMemoryLimit } = workerData

const PAGE = 65536
// The build needs 16 MiB of initial memory (static data, C stack); the guest heap comes on top.
const BASE_PAGES = 256
// The interpreter's own C stack lives in the WASM memory: deeper JS recursion overflows it.
const MAX_STACK_BYTES = 256 * 1024
const LOG_LEVELS = new Set(['log', 'info', 'warn', 'error'])

/** @type {import('quickjs-emscripten-core').QuickJSWASMModule} */
let quickjs
let moduleMemoryLimit = -1

async function loadModule(memoryLimitBytes) {
  const memory = new WebAssembly.Memory({
    initial: BASE_PAGES,
    maximum: BASE_PAGES + Math.ceil(memoryLimitBytes / PAGE),
  })
  quickjs = await newQuickJSWASMModuleFromVariant(newVariant(releaseSyncVariant, { wasmMemory: memory }))
  moduleMemoryLimit = memoryLimitBytes
}

/** The run in progress, or undefined. */
let current

parentPort.on('message', (message) => {
  if (message.t === 'run') {
    startRun(message)
  } else if (message.t === 'settle') {
    if (current !== undefined && current.id === message.run) settleCall(current, message.call, message.envelope)
  }
})

async function startRun(message) {
  if (moduleMemoryLimit !== message.limits.memoryLimitBytes) {
    await loadModule(message.limits.memoryLimitBytes)
  }
  const limits = message.limits
  const run = {
    id: message.run,
    limits,
    names: new Set(message.names),
    runtime: undefined,
    context: undefined,
    api: undefined,
    promise: undefined,
    pending: new Map(),
    nextCall: 0,
    outbox: [],
    subCalls: 0,
    inFlight: 0,
    logBytes: 0,
    cpuUsed: 0,
    sliceStart: -1,
    deadline: performance.now() + limits.wallTimeMs,
    kill: undefined,
    wallTimer: undefined,
    done: false,
  }
  current = run
  try {
    begin(run, message)
  } catch (error) {
    fault(run, error)
  }
}

function begin(run, message) {
  const runtime = quickjs.newRuntime()
  run.runtime = runtime
  runtime.setMemoryLimit(run.limits.memoryLimitBytes)
  runtime.setMaxStackSize(Math.min(run.limits.stackSizeBytes, MAX_STACK_BYTES))
  runtime.setInterruptHandler(() => shouldInterrupt(run))
  const context = runtime.newContext()
  run.context = context

  const call = context.newFunction('__codemode_call', (nameHandle, argsHandle) => hostCall(run, nameHandle, argsHandle))
  context.setProp(context.global, '__codemode_call', call)
  call.dispose()
  const log = context.newFunction('__codemode_log', (levelHandle, textHandle) => hostLog(run, levelHandle, textHandle))
  context.setProp(context.global, '__codemode_log', log)
  log.dispose()

  const api = guest(run, () => context.evalCode(prelude, runtimeFilename))
  if (api.error !== undefined) return failWith(run, api.error)
  run.api = api.value
  const toolsJson = context.newString(message.toolsJson)
  const init = context.getProp(run.api, 'init')
  const initResult = guest(run, () => context.callFunction(init, context.undefined, toolsJson))
  init.dispose()
  toolsJson.dispose()
  if (initResult.error !== undefined) return failWith(run, initResult.error)
  initResult.value.dispose()

  const program = guest(run, () => context.evalCode(message.code, programFilename))
  if (program.error !== undefined) return failWith(run, program.error)
  run.promise = program.value
  run.wallTimer = setTimeout(() => {
    if (run.done) return
    run.kill ??= 'wallTimeMs'
    finishRun(run, { kind: 'limit', limit: run.kill }, true)
  }, Math.max(0, run.deadline - performance.now()))
  pump(run)
}

/** Run guest code, counting the time spent as the guest's CPU time; then send the calls it started. */
function guest(run, fn) {
  run.sliceStart = performance.now()
  try {
    return fn()
  } finally {
    run.cpuUsed += performance.now() - run.sliceStart
    run.sliceStart = -1
    if (run.kill === undefined) flushCalls(run)
  }
}

function flushCalls(run) {
  if (run.outbox.length === 0) return
  parentPort.postMessage({ t: 'calls', run: run.id, calls: run.outbox })
  run.outbox = []
}

function shouldInterrupt(run) {
  if (run.kill !== undefined) return true
  const now = performance.now()
  if (run.sliceStart >= 0 && run.cpuUsed + (now - run.sliceStart) > run.limits.cpuTimeMs) {
    run.kill = 'cpuTimeMs'
    return true
  }
  if (now > run.deadline) {
    run.kill = 'wallTimeMs'
    return true
  }
  return false
}

function hostCall(run, nameHandle, argsHandle) {
  const context = run.context
  const deferred = context.newPromise()
  if (run.kill !== undefined || run.done) return deferred.handle
  const name = context.typeof(nameHandle) === 'string' ? context.getString(nameHandle) : undefined
  const argsJson = context.typeof(argsHandle) === 'string' ? context.getString(argsHandle) : undefined
  if (name === undefined || argsJson === undefined || !run.names.has(name)) {
    // Only the prelude can reach this function, so this is a broken runtime, not a model error.
    const envelope = context.newString(JSON.stringify({ ok: false, message: 'invalid tool call', code: 'INVALID_ARGS' }))
    deferred.resolve(envelope)
    envelope.dispose()
    return deferred.handle
  }
  run.subCalls += 1
  run.inFlight += 1
  if (run.subCalls > run.limits.maxSubCalls) {
    run.kill = 'maxSubCalls'
  } else if (run.inFlight > run.limits.maxSubCallsInFlight) {
    run.kill = 'maxSubCallsInFlight'
  }
  if (run.kill !== undefined) {
    deferred.dispose()
    return undefined
  }
  const id = run.nextCall++
  run.pending.set(id, deferred)
  // Posted when the guest slice ends (see guest()): one message for a whole Promise.all, and the
  // host starts them all in one turn of its event loop.
  run.outbox.push([id, name, argsJson])
  return deferred.handle
}

function hostLog(run, levelHandle, textHandle) {
  if (run.kill !== undefined || run.done) return
  const context = run.context
  const level = context.typeof(levelHandle) === 'string' ? context.getString(levelHandle) : 'log'
  const text = context.typeof(textHandle) === 'string' ? context.getString(textHandle) : ''
  run.logBytes += text.length
  if (run.logBytes > run.limits.maxLogBytes) {
    run.kill = 'maxLogBytes'
    return
  }
  // Logs go out at once (they must survive a later kill), after the calls started before them.
  flushCalls(run)
  parentPort.postMessage({ t: 'log', run: run.id, level: LOG_LEVELS.has(level) ? level : 'log', text })
}

function settleCall(run, id, envelope) {
  const deferred = run.pending.get(id)
  if (deferred === undefined || run.done) return
  run.pending.delete(id)
  run.inFlight -= 1
  try {
    const text = run.context.newString(envelope)
    deferred.resolve(text)
    text.dispose()
    deferred.dispose()
    pump(run)
  } catch (error) {
    fault(run, error)
  }
}

/** Run pending jobs, then see whether the program is finished, stuck or broke a limit. */
function pump(run) {
  if (run.done) return
  const jobs = guest(run, () => run.runtime.executePendingJobs(-1))
  if (jobs.error !== undefined) {
    if (run.kill !== undefined) {
      jobs.error.dispose()
      return finishRun(run, { kind: 'limit', limit: run.kill }, true)
    }
    return failWith(run, jobs.error)
  }
  if (run.kill !== undefined) return finishRun(run, { kind: 'limit', limit: run.kill }, true)
  const state = run.context.getPromiseState(run.promise)
  if (state.type === 'pending') return
  if (state.type === 'rejected') return failWith(run, state.error)
  const value = state.value
  const finish = run.context.getProp(run.api, 'finish')
  const max = run.context.newNumber(run.limits.maxResultBytes)
  const result = guest(run, () => run.context.callFunction(finish, run.context.undefined, value, max))
  finish.dispose()
  max.dispose()
  if (value !== run.promise) value.dispose()
  if (result.error !== undefined) return failWith(run, result.error)
  const text = run.context.getString(result.value)
  result.value.dispose()
  if (run.kill !== undefined) return finishRun(run, { kind: 'limit', limit: run.kill }, true)
  finishRun(run, { kind: 'finish', text }, text.startsWith('!'))
}

/** The program (or the runtime on its behalf) threw `errorHandle`; describe it and end the run. */
function failWith(run, errorHandle) {
  if (run.kill !== undefined) {
    errorHandle.dispose()
    return finishRun(run, { kind: 'limit', limit: run.kill }, true)
  }
  let raw
  if (run.api !== undefined) {
    const describe = run.context.getProp(run.api, 'describeError')
    const described = guest(run, () => run.context.callFunction(describe, run.context.undefined, errorHandle))
    describe.dispose()
    if (described.error === undefined) {
      raw = JSON.parse(run.context.getString(described.value))
      described.value.dispose()
    } else {
      described.error.dispose()
    }
  }
  if (raw === undefined) {
    // A syntax error in the prelude's absence, or describeError itself failed (out of memory).
    const dumped = run.context.dump(errorHandle)
    raw = {
      name: typeof dumped?.name === 'string' ? dumped.name : 'Error',
      message: typeof dumped?.message === 'string' ? dumped.message : 'the program failed',
      stack: typeof dumped?.stack === 'string' ? dumped.stack : '',
    }
  }
  errorHandle.dispose()
  if (run.kill !== undefined) return finishRun(run, { kind: 'limit', limit: run.kill }, true)
  // Stack and heap exhaustion leave the runtime in a state not worth trusting for the next run.
  const exhausted = raw.name === 'InternalError' && (raw.message === 'stack overflow' || raw.message === 'out of memory')
  finishRun(run, { kind: 'error', error: raw }, exhausted)
}

/** A host-side exception from the QuickJS bindings or the WASM module itself. */
function fault(run, error) {
  if (run.done) return
  if (run.kill !== undefined) return finishRun(run, { kind: 'limit', limit: run.kill }, true)
  const message = String(error?.message ?? error)
  if (error instanceof RangeError && /call stack/i.test(message)) {
    return finishRun(run, { kind: 'limit', limit: 'stackSizeBytes' }, true)
  }
  if (error instanceof WebAssembly.RuntimeError || /memory|abort|unreachable/i.test(message)) {
    return finishRun(run, { kind: 'limit', limit: 'memoryLimitBytes' }, true)
  }
  finishRun(run, { kind: 'fault', message: error instanceof Error ? error.name : 'fault' }, true)
}

/**
 * End the run once. outcome: { kind: 'finish', text } (prelude `finish` text) | { kind: 'error',
 * error: {name, message, stack} } | { kind: 'limit', limit } | { kind: 'fault', message }.
 */
function finishRun(run, outcome, reset) {
  if (run.done) return
  run.done = true
  clearTimeout(run.wallTimer)
  if (current === run) current = undefined
  parentPort.postMessage({ t: 'done', run: run.id, outcome, reset })
  if (reset) {
    // Nothing of a breached runtime is trusted or freed piecemeal: the whole module goes.
    quickjs = undefined
    moduleMemoryLimit = -1
    loadModule(run.limits.memoryLimitBytes).then(
      () => parentPort.postMessage({ t: 'ready' }),
      () => process.exit(1),
    )
    return
  }
  try {
    for (const deferred of run.pending.values()) deferred.dispose()
    run.pending.clear()
    run.promise?.dispose()
    run.api?.dispose()
    run.context?.dispose()
    run.runtime?.dispose()
    parentPort.postMessage({ t: 'ready' })
  } catch {
    // Freeing failed (a leaked handle): start over with a fresh module rather than guess.
    quickjs = undefined
    moduleMemoryLimit = -1
    loadModule(run.limits.memoryLimitBytes).then(
      () => parentPort.postMessage({ t: 'ready' }),
      () => process.exit(1),
    )
  }
}

loadModule(initialMemoryLimit).then(
  () => parentPort.postMessage({ t: 'ready' }),
  (error) => {
    parentPort.postMessage({ t: 'fatal', message: String(error?.message ?? error) })
    process.exit(1)
  },
)
