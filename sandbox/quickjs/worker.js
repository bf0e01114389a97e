// Worker-thread entry of the QuickJS engine. Plain JavaScript on purpose: Node 20 cannot load a
// TypeScript worker without a loader. The main thread (quickjs-engine.ts) owns every decision about
// results; this file only runs one program at a time in a fresh QuickJS runtime and reports.
//
// Protocol:
//   main → worker  { t: 'run', run, code, toolsJson, names, limits, queuedMs }   on parentPort
//                                                       (queuedMs: how long the run waited for
//                                                       a worker, which its wall time includes)
//                  answers of sub-calls (ring.js `encodeAnswers`), as frames in the answer ring,
//                                                       or on the `replies` port when a frame does
//                                                       not fit; the main thread then bumps
//                                                       `ring[REPLIES]`, and notifies it if the
//                                                       worker sleeps (`ring[WORKER_SLEEPING]`)
//   worker → main, as JSON frames in the message ring (see ring.js), with an empty message on
//   the `bell` port when the main thread is not polling the ring:
//                  { t: 'ready' }                       idle, with a prepared context
//                  { t: 'calls', run, calls: [[call, name, argsJson], ...] }
//                                                       sub-calls started in one guest slice,
//                                                       in program order
//                  { t: 'log', run, level, text }       one console line
//                  { t: 'idle', run }                   the program waits on no sub-call: it
//                                                       holds this worker without using it
//                  { t: 'done', run, outcome, reset }   outcome: see finishRun()
//                  { t: 'fatal', message }              the module or prelude cannot load
// `reset: true` means the worker throws its WASM module away and loads a fresh one before its
// next run (after any limit breach or fault); it posts 'ready' again when that is done.
//
// Five things keep the per-run and per-call costs low:
//  - Preparing a context costs about 3 ms (QuickJS compiles the prelude's 17 KB at about 10 KB per
//    ms in WASM), many times everything else a short run does, and quickjs-emscripten has no way
//    to keep or load bytecode. So the worker prepares one context per WASM module, right after
//    loading it (runtime, context, host functions, prelude and its deferred part), and keeps an
//    image of the module's memory at that moment (see takeImage). After each run that ended
//    cleanly it copies the image back (about 0.1 ms): the next program starts in a byte-for-byte
//    copy of that never-used context, nothing of the run before reachable from it, with a fresh
//    Math.random seed. After a limit breach or a fault the whole module is thrown away instead.
//    Modules are instances of one compiled binary (quickjsBinary).
//  - While a run waits for sub-call answers, the worker does not go back to its event loop: it
//    blocks in `Atomics.wait` on `ring[REPLIES]` (never past the run's wall deadline) and takes
//    every answer that has arrived (from the answer ring, and the port), then runs the guest once
//    for all of them. That skips the event loop and message-event dispatch on every answer. The main
//    thread still ends a run by terminating the worker (which interrupts the wait) on abort or
//    when its own watchdog fires.
//  - Waking a sleeping thread costs 40-100 us on the small VMs this runs on, more than a whole
//    sub-call should, and the thread that wakes it pays too: the main thread's Atomics.notify of a
//    sleeping worker measured 80-250 us. So before it sleeps, the worker may spin for a short while
//    (at most `spinMicros`) on `ring[REPLIES]`: a fast tool's answer is usually there within tens of
//    microseconds. Whether and how long is spin-policy.js's call: a few times the recent answer
//    time, none while the machine has more runnable threads than cores (a spin then keeps the
//    main thread it waits for off a core), backing off after spins that went unanswered. The main
//    thread stays awake for the worker's next message in a similar way, without blocking its event
//    loop (sandbox/keep-awake.ts).
//  - Messages both ways go through shared memory, not `postMessage`, whose wake-up of an idle event
//    loop costs a system call of about 10 us per message on those VMs, and whose structured clone
//    costs more than the rest of the trip (ring.js).
//  - Sub-calls do not cross into the host one by one: the guest queues them and the worker takes
//    the whole queue after each guest slice (see CALL_QUEUE), so a call costs no host-function
//    crossing and no promise capability of the bindings, each several microseconds.

import { readFileSync } from 'node:fs'
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads'
import { newQuickJSWASMModuleFromVariant, newVariant } from 'quickjs-emscripten-core'
import releaseSyncVariant from '@jitl/quickjs-wasmfile-release-sync'
import { GuestCpuClock, openThreadCpuClock } from './guest-cpu.js'
import { ANSWERS_TAKEN, FieldReader, REPLIES, RING_HEADER_BYTES, RingReader, WORKER_IDLE, WORKER_SLEEPING, createMessageSender, decodeAnswers } from './ring.js'
import { PREEMPTED_MICROS, SpinPolicy, openRunQueueClock } from './spin-policy.js'
import { staticDataEnd } from './wasm-layout.js'

const {
  prelude,
  runtimeFilename,
  programFilename,
  memoryLimitBytes: initialMemoryLimit,
  ring,
  answerRing,
  clock,
  replies,
  bell,
  spinMicros,
  // The engine's stack ceiling: runs come with limits already held to it.
  maxStackBytes,
  precompileDeferred = true,
} = workerData

const sendText = createMessageSender(ring, () => bell.postMessage(0))
const ringWords = new Int32Array(ring, 0, RING_HEADER_BYTES / 4)
const answerReader = new RingReader(answerRing)

/** Send one message to the main thread, as a JSON frame in the message ring (ring.js). */
function send(message) {
  sendText(JSON.stringify(message))
}

/** When and how long to spin for an answer (spin-policy.js): it learns from every spin's outcome. */
const spinPolicy = new SpinPolicy(spinMicros, spinMicros > 0 ? openRunQueueClock() : undefined)

/**
 * Spin until `ring[REPLIES]` moves off `seen` or the policy's budget is spent; true if it moved.
 * A gap in the clock reads means this thread lost its core: the main thread may need that core to
 * answer, so the spin ends there.
 */
function spinForReply(seen) {
  const start = performance.now()
  const budget = spinPolicy.budget(start)
  if (budget <= 0) return false
  const until = start + budget / 1000
  const gap = PREEMPTED_MICROS / 1000
  let last = start
  let preempted = false
  // The clock is read every 16 looks only: `performance.now()` allocates, and garbage made while
  // spinning is collected while the guest runs.
  for (;;) {
    for (let i = 0; i < 16; i++) {
      if (Atomics.load(ringWords, REPLIES) !== seen) {
        spinPolicy.record((performance.now() - start) * 1000, true, preempted)
        return true
      }
    }
    const now = performance.now()
    if (now - last > gap) preempted = true
    if (preempted || now >= until) {
      const answered = Atomics.load(ringWords, REPLIES) !== seen
      spinPolicy.record((now - start) * 1000, answered, preempted)
      return answered
    }
    last = now
  }
}
/**
 * Published for the main thread's CPU check: [start of the running guest slice in ms since the
 * epoch, or -1; CPU ms of the run's ended slices; 1 + index in KILL_LIMITS of the limit this worker
 * already decided to stop the run for, or 0]. QuickJS can spin in native code without ever calling
 * the interrupt handler (measured: `for (;;) new Promise(() => {})` in this build), and it calls it
 * only every few thousand operations, so the in-worker checks alone cannot be relied on.
 */
const cpuClock = new Float64Array(clock)
const KILL_LIMITS = ['cpuTimeMs', 'wallTimeMs', 'maxSubCalls', 'maxSubCallsInFlight', 'maxLogBytes', 'memoryLimitBytes']

/** Stop the run at the next interrupt check for `limit`, and tell the main thread why. */
function decideKill(run, limit) {
  run.kill = limit
  cpuClock[2] = KILL_LIMITS.indexOf(limit) + 1
}

/** This thread's CPU time, which confirms a CPU-limit breach counted by wall time (guest-cpu.js). */
const threadCpuMs = openThreadCpuClock()

const PAGE = 65536
// The build needs 16 MiB of initial memory: static data and the C stack take about 5 MiB of it, the
// rest is heap. That rest is reserved at load (see reserveBasePages) but for HEADROOM_BYTES, where
// the interpreter's own runtime, context and prelude live; the guest heap comes on top, up to the
// memory limit.
const BASE_PAGES = 256
const HEADROOM_BYTES = 1024 * 1024
// QuickJS's own allocation count (setMemoryLimit) at a smaller limit fails the prelude itself.
const MIN_HEAP_BYTES = 1024 * 1024
const LOG_LEVELS = new Set(['log', 'info', 'warn', 'error'])
/**
 * Most code units of the prelude's reports beyond a result's own JSON (a failure's message, path
 * and stack, each clipped by the prelude): longer text is never sent to the main thread.
 */
const MAX_REPORT_CHARS = 64 * 1024

/**
 * The QuickJS binary, compiled once for the worker's life (every module is an instance of it:
 * loading one took 9-14 ms compiling it again each time, 3-5 ms with it compiled), and where its
 * static data ends (wasm-layout.js). Undefined if the file is not where the pinned package keeps
 * it: then each module compiles its own, and images take the whole memory below the heap.
 */
const quickjsBinary = readQuickJSBinary()

function readQuickJSBinary() {
  let bytes
  try {
    bytes = readFileSync(new URL('./emscripten-module.wasm', import.meta.resolve('@jitl/quickjs-wasmfile-release-sync')))
  } catch {
    return undefined
  }
  return { module: new WebAssembly.Module(bytes), staticEnd: staticDataEnd(bytes) }
}

/** @type {import('quickjs-emscripten-core').QuickJSWASMModule | undefined} */
let quickjs
let moduleMemoryLimit = -1
/** The tenant (a number the engine assigns) whose runs the current module has served; none yet: undefined. */
let moduleTenant
/** The current module's WASM memory, which only grows; at its maximum the guest heap is exhausted. */
let wasmMemory
let wasmMaxBytes = 0

/**
 * The current module's context: `{ runtime, context, api, box, calls }`, the prelude evaluated;
 * `box.run` is the run it serves, undefined between runs; `calls` holds the call queue's control
 * functions (see CALL_QUEUE). One per module: each run starts on the memory image taken right after
 * it was prepared (see takeImage). Undefined while a run holds it, or no module is loaded.
 */
let spare
/** The memory image of the current module with its context prepared and unused (see takeImage). */
let image

/** Load a fresh WASM module, prepare its context and take its image; then `spare` is ready. */
async function loadModule(memoryLimitBytes) {
  spare = undefined
  image = undefined
  quickjs = undefined
  moduleMemoryLimit = -1
  moduleTenant = undefined
  const maximum = BASE_PAGES + Math.ceil(heapBytes(memoryLimitBytes) / PAGE)
  const memory = new WebAssembly.Memory({ initial: BASE_PAGES, maximum })
  wasmMemory = memory
  wasmMaxBytes = maximum * PAGE
  const compiled = quickjsBinary === undefined ? {} : { wasmModule: quickjsBinary.module }
  const module = await newQuickJSWASMModuleFromVariant(newVariant(releaseSyncVariant, { wasmMemory: memory, ...compiled }))
  const reserved = reserveBasePages(module, memory)
  quickjs = module
  moduleMemoryLimit = memoryLimitBytes
  const prepared = prepareContext()
  if (precompileDeferred) compileDeferred(prepared.context, prepared.api)
  image = takeImage(prepared, reserved)
  spare = prepared
}

/** The guest heap a memory limit gives: the limit, at least MIN_HEAP_BYTES. */
function heapBytes(memoryLimitBytes) {
  return Math.max(memoryLimitBytes, MIN_HEAP_BYTES)
}

/**
 * Allocate, once and for the module's life, the free part of the initial 16 MiB but HEADROOM_BYTES.
 * Without it a program gets about 10 MiB beyond its memory limit (measured: with a 4 MiB limit a
 * program held 14 MiB of strings; QuickJS's own setMemoryLimit does not stop it). The allocator's first block shows where the heap starts; the
 * emscripten module is an internal of quickjs-emscripten (pinned), checked here so a change in it
 * is a clear error at start, not a silently larger heap.
 */
function reserveBasePages(module, memory) {
  const emscripten = module.module
  if (typeof emscripten?._malloc !== 'function' || typeof emscripten?._free !== 'function') {
    throw new Error('quickjs-emscripten no longer exposes its emscripten module (module._malloc); the guest heap cannot be bounded')
  }
  const first = emscripten._malloc(16)
  emscripten._free(first)
  const free = BASE_PAGES * PAGE - first - HEADROOM_BYTES
  // Never freed: the module is thrown away whole.
  const start = free > 0 ? emscripten._malloc(free) : first
  if (start === 0) throw new Error('could not reserve the base pages of a new QuickJS module')
  if (memory.buffer.byteLength !== BASE_PAGES * PAGE) throw new Error('reserving the base pages of a new QuickJS module grew its memory')
  return { start, end: start + Math.max(free, 0) }
}

/**
 * The image of the module's memory with its context prepared and never used: its static data (the
 * allocator's state among it) and every byte from the end of the base-page reservation to the end
 * of the memory (the runtime, the context, the prelude). Left out: the C stack, dead between runs
 * (wasm-layout.js; the whole memory below the heap is taken when the binary's layout is not known),
 * and the reservation, an allocated block nobody writes to. Copying the image back (restoreImage)
 * turns the memory, the allocator's bookkeeping included, back into exactly that state: what a run
 * allocated past it is free again, referenced by nothing, and overwritten as the next runs
 * allocate. Not copied back, so left as the run wrote them: the dead stack, and any memory the
 * run grew past the image's end (free again too, as the allocator's restored state says). Neither
 * is zeroed, as no allocator zeroes what it frees; a program could read them only through a memory
 * bug in QuickJS. Only done between runs, when no QuickJS code is on the stack. The handles the
 * worker keeps (the context's, the prelude's, the host functions') are all from before the image,
 * and a run's own are dropped, never freed; the host functions live as long as the module does
 * (prepareContext), so quickjs-emscripten's table of them, outside the memory, never changes.
 */
function takeImage(prepared, reserved) {
  const randomState = findRandomState(prepared.context)
  // The context's handles quickjs-emscripten creates on first use: created now, inside the image.
  const { context } = prepared
  void [context.undefined, context.null, context.true, context.false, context.global]
  const bytes = new Uint8Array(wasmMemory.buffer)
  const lowEnd = Math.min(quickjsBinary?.staticEnd ?? reserved.start, reserved.start)
  const size = lowEnd + bytes.length - reserved.end
  if (imageBytes.length < size) imageBytes = new Uint8Array(size)
  const low = imageBytes.subarray(0, lowEnd)
  const high = imageBytes.subarray(lowEnd, size)
  low.set(bytes.subarray(0, lowEnd))
  high.set(bytes.subarray(reserved.end))
  return { low, high, highStart: reserved.end, randomState }
}

/**
 * Where every module of this worker keeps its image (about 1.1 MiB), allocated once: the first
 * write to a page costs about 10 us on the VMs this runs on, and a worker switching tenants loads
 * modules often.
 */
let imageBytes = new Uint8Array(0)

/** Turn the module's memory back into its image (see takeImage). */
function restoreImage() {
  const bytes = new Uint8Array(wasmMemory.buffer)
  bytes.set(image.low, 0)
  bytes.set(image.high, image.highStart)
}

/**
 * Where the context keeps `Math.random`'s state (QuickJS: `JSContext.random_state`, the xorshift64*
 * state seeded from the clock when the context is made). Each run starts from the same image, so
 * each run is given a seed of its own (seedRandom); otherwise every program would draw the same
 * numbers. Found, not assumed: the one 8-byte word of the context's struct whose xorshift64* output
 * is the number `Math.random()` just drew, then checked by seeding it and drawing again. A build
 * where that fails cannot give runs their own numbers: the worker refuses to start, as for a heap
 * it cannot bound.
 */
function findRandomState(context) {
  const struct = context.ctx?.value
  if (typeof struct !== 'number') throw new Error('quickjs-emscripten no longer exposes its context pointer (context.ctx); Math.random cannot be seeded per run')
  const drawn = drawRandom(context)
  const view = new DataView(wasmMemory.buffer)
  const found = []
  for (let offset = 0; offset < 4096 && struct + offset + 8 <= view.byteLength; offset += 8) {
    if (randomOutput(view.getBigUint64(struct + offset, true)) === drawn) found.push(struct + offset)
  }
  if (found.length === 1 && seedsAt(context, view, found[0])) return found[0]
  throw new Error('the QuickJS context keeps its Math.random state where the worker cannot find it; runs cannot be given their own seed')
}

/** Whether seeding the word at `address` makes `Math.random()` draw what QuickJS's generator would. */
function seedsAt(context, view, address) {
  return [1n, 0x9e3779b97f4a7c15n].every((seed) => {
    view.setBigUint64(address, seed, true)
    return randomOutput(xorshift64(seed)) === drawRandom(context)
  })
}

const U64 = (1n << 64n) - 1n

/** One step of QuickJS's xorshift64*: the next state. */
function xorshift64(state) {
  let x = state
  x ^= x >> 12n
  x = (x ^ (x << 25n)) & U64
  x ^= x >> 27n
  return x
}

/** The 52 mantissa bits `Math.random()` returns for state `state` (already stepped). */
function randomOutput(state) {
  return ((state * 0x2545f4914f6cdd1dn) & U64) >> 12n
}

/** `Math.random()` drawn in `context`, as its 52 mantissa bits. */
function drawRandom(context) {
  const result = context.evalCode('Math.random()', 'codemode-random.js')
  if (result.error !== undefined) {
    result.error.dispose()
    throw new Error('Math.random() failed in a fresh QuickJS context')
  }
  const value = context.getNumber(result.value)
  result.value.dispose()
  return BigInt(value * 2 ** 52)
}

/** Give the run about to start its own `Math.random` sequence (see findRandomState). */
function seedRandom() {
  do crypto.getRandomValues(seed)
  while (seed[0] === 0n)
  new DataView(wasmMemory.buffer).setBigUint64(image.randomState, seed[0], true)
}
const seed = new BigUint64Array(1)

/**
 * The guest half of `__codemode_call` (contract step 1 of guest-runtime.ts), evaluated before the
 * prelude. Crossing into the host costs several microseconds per call through the QuickJS
 * bindings (a host function, a promise capability, handles to free), so sub-calls do not cross
 * one by one: a call queues `[id, name, argsJson]` and returns a promise of its own; after each
 * guest slice the worker takes the whole queue as one text (`take`), and settles each answer
 * with one call (`settle`). The counts are checked here, as each call is made: the limit's number
 * goes to the host at once (`__codemode_breach`) and the run is stopped at the next interrupt check.
 * The completion value is the control object; the worker keeps it host-side and nothing the
 * program can reach refers to it. Every array is prototype-free and every intrinsic captured, so
 * a polluted `Array.prototype` or a replaced `JSON`/`Promise` never sees or changes the queue.
 * The queue's text is built by plain string concatenation, not `JSON.stringify`: QuickJS's
 * stringify pushes each object it visits onto an internal array through `Array.prototype`, so a
 * program's index setter would be handed the entries. Each entry is
 * `<id>,<name length>,<arguments length>,<name><arguments>` (lengths in UTF-16 code units).
 */
const CALL_QUEUE = `(function () {
'use strict';
var undefined = void 0;
var g = globalThis;
var breach = g.__codemode_breach;
delete g.__codemode_breach;
var PromiseCtor = Promise;
var setPrototypeOf = Object.setPrototypeOf;
function list() { var a = []; setPrototypeOf(a, null); return a; }
var queue = '';
// Per pending call id: the promise's resolve and reject.
var waiting = list();
var failing = list();
// The prelude's decode (see settle), the same function on every call.
var decode;
var made = 0, inFlight = 0, maxCalls = 0, maxInFlight = 0;
function never() {}
g.__codemode_call = function (name, argsJson, decodeAnswer) {
  made = made + 1;
  inFlight = inFlight + 1;
  if (made > maxCalls) { breach(0); return new PromiseCtor(never); }
  if (inFlight > maxInFlight) { breach(1); return new PromiseCtor(never); }
  var id = made - 1;
  if (typeof name !== 'string') name = '';
  if (typeof argsJson !== 'string') argsJson = '';
  queue = queue + id + ',' + name.length + ',' + argsJson.length + ',' + name + argsJson;
  decode = decodeAnswer;
  return new PromiseCtor(function (resolve, reject) { waiting[id] = resolve; failing[id] = reject; });
};
return Object.freeze({
  configure: function (calls, inFlightCalls) { maxCalls = calls; maxInFlight = inFlightCalls; },
  take: function () {
    var text = queue;
    queue = '';
    return text;
  },
  settle: function (id, envelope) {
    var resolve = waiting[id];
    if (typeof resolve !== 'function') return;
    var reject = failing[id];
    waiting[id] = undefined;
    failing[id] = undefined;
    inFlight = inFlight - 1;
    decode(envelope, resolve, reject);
  },
});
})()`

/** Which count `__codemode_breach` reports, by its argument. */
const QUEUE_LIMITS = ['maxSubCalls', 'maxSubCallsInFlight']

/**
 * A fresh runtime+context in the current module with the raw host functions installed and the
 * prelude evaluated (contract steps 1 and 2 of guest-runtime.ts). The host functions and the
 * interrupt handler act for `box.run`, which stays undefined until a run takes the context; the
 * prelude calls neither while it is evaluated. Throws if the prelude fails (a broken install).
 */
function prepareContext() {
  const runtime = quickjs.newRuntime()
  const box = { run: undefined }
  let context
  // Every handle the worker keeps for the module's life; all freed before the context. The two host
  // functions among them are held too, though the program is handed them only through the queue
  // and the console: a program that drops the console lets QuickJS free the log function, and
  // quickjs-emscripten then forgets it in its table of host functions, which lives outside the
  // module's memory. The image would bring the function back; the table would not know it.
  const handles = []
  const keep = (handle) => (handles.push(handle), handle)
  try {
    runtime.setMemoryLimit(heapBytes(moduleMemoryLimit))
    runtime.setMaxStackSize(maxStackBytes)
    runtime.setInterruptHandler(() => box.run !== undefined && shouldInterrupt(box.run))
    context = runtime.newContext()
    const breach = keep(context.newFunction('__codemode_breach', (limitHandle) => {
      if (box.run !== undefined) hostBreach(box.run, context.getNumber(limitHandle))
    }))
    context.setProp(context.global, '__codemode_breach', breach)
    const queue = keep(evaluate(context, CALL_QUEUE, 'codemode-calls.js'))
    const [configure, take, settle] = ['configure', 'take', 'settle'].map((name) => keep(context.getProp(queue, name)))
    const log = keep(context.newFunction('__codemode_log', (levelHandle, textHandle, overHandle) => {
      if (box.run !== undefined) hostLog(box.run, levelHandle, textHandle, overHandle)
    }))
    context.setProp(context.global, '__codemode_log', log)
    const api = evaluate(context, prelude, runtimeFilename)
    return { runtime, context, api, box, calls: { handles, configure, take, settle } }
  } catch (error) {
    for (const handle of handles.reverse()) handle.dispose()
    context?.dispose()
    runtime.dispose()
    throw error
  }
}

/** Evaluate one of the worker's own scripts; it failing means a broken install. */
function evaluate(context, source, filename) {
  const result = context.evalCode(source, filename)
  if (result.error === undefined) return result.value
  const dumped = context.dump(result.error)
  result.error.dispose()
  throw new Error(`${filename} failed: ${typeof dumped?.message === 'string' ? dumped.message : String(dumped)}`)
}

/** Call the prelude's `loadDeferred` in `context`; a failure (an exhausted heap) is dropped. */
function compileDeferred(context, api) {
  const load = context.getProp(api, 'loadDeferred')
  const result = context.callFunction(load, context.undefined)
  load.dispose()
  ;(result.error ?? result.value).dispose()
}


parentPort.on('message', (message) => {
  if (message.t === 'run') void startRun(message)
})

async function startRun(message) {
  const limits = message.limits
  // A run with another heap size than the warm module's gets a module built for it (rare), and so
  // does a run of another tenant than the module last ran for: freed memory keeps what a run left
  // in it, which a memory-safety bug of QuickJS would let the next program read.
  const otherTenant = moduleTenant !== undefined && moduleTenant !== message.tenant
  const freshHeap = moduleMemoryLimit !== limits.memoryLimitBytes || otherTenant
  if (freshHeap) await loadModule(limits.memoryLimitBytes)
  moduleTenant = message.tenant
  const run = {
    id: message.run,
    limits,
    names: new Set(message.names),
    runtime: undefined,
    context: undefined,
    api: undefined,
    promise: undefined,
    /** The call queue's control functions (see CALL_QUEUE and `spare`). */
    calls: undefined,
    /** The module's context this run took (`spare`), given back after the run. */
    prepared: undefined,
    /** Ids of the sub-calls sent to the main thread and not yet answered. */
    pending: new Set(),
    /** Sub-calls taken from the guest's queue so far. */
    subCalls: 0,
    logBytes: 0,
    /** The guest's CPU time (guest-cpu.js). */
    cpu: new GuestCpuClock(threadCpuMs, cpuClock),
    deadline: performance.now() + limits.wallTimeMs - (message.queuedMs ?? 0),
    /** Whether the main thread was told the program waits on nothing ('idle'). */
    saidIdle: false,
    kill: undefined,
    done: false,
    reset: false,
    /** Whether the run got a module built for it (another heap size, another tenant). */
    freshHeap,
  }
  try {
    begin(run, message)
    while (!run.done) awaitReplies(run)
  } catch (error) {
    fault(run, error)
  }
  recycle(run)
}

function begin(run, message) {
  const prepared = spare
  spare = undefined
  run.prepared = prepared
  const { runtime, context } = prepared
  seedRandom()
  run.runtime = runtime
  run.context = context
  run.api = prepared.api
  run.calls = prepared.calls
  runtime.setMemoryLimit(heapBytes(run.limits.memoryLimitBytes))
  runtime.setMaxStackSize(run.limits.stackSizeBytes)
  prepared.box.run = run
  const maxCalls = context.newNumber(run.limits.maxSubCalls)
  const maxInFlight = context.newNumber(run.limits.maxSubCallsInFlight)
  context.unwrapResult(context.callFunction(prepared.calls.configure, context.undefined, maxCalls, maxInFlight)).dispose()
  maxCalls.dispose()
  maxInFlight.dispose()

  const toolsJson = context.newString(message.toolsJson)
  const figures = message.initLimits.map((n) => context.newNumber(n))
  const init = context.getProp(run.api, 'init')
  const initResult = guest(run, () => context.callFunction(init, context.undefined, toolsJson, ...figures))
  init.dispose()
  toolsJson.dispose()
  for (const figure of figures) figure.dispose()
  if (initResult.error !== undefined) return failWith(run, initResult.error)
  initResult.value.dispose()

  const program = guest(run, () => context.evalCode(message.code, programFilename))
  if (program.error !== undefined) return failWith(run, program.error)
  run.promise = program.value
  pump(run)
}

/**
 * The guest is waiting (on sub-calls, or on nothing at all): spin briefly, then block, until the
 * main thread sends an answer or the wall deadline passes; then settle whatever arrived. The main
 * thread bumps `ring[REPLIES]` AFTER writing an answer (to the answer ring or the port), and `seen`
 * is read BEFORE either is drained, so an answer that lands between the drain and the wait ends
 * the wait at once instead of being missed.
 */
function awaitReplies(run) {
  const seen = Atomics.load(ringWords, REPLIES)
  if (takeReplies(run) || run.done) return
  const remaining = run.deadline - performance.now()
  if (remaining <= 0) {
    if (run.kill === undefined) decideKill(run, 'wallTimeMs')
    return finishRun(run, { kind: 'limit', limit: run.kill }, true)
  }
  // Tell the main thread nothing will come from here until it answers (keep-awake.ts): it stays
  // awake longer only for a worker that is working toward its next message.
  Atomics.store(ringWords, WORKER_IDLE, 1)
  // A program waiting on nothing (a timer-free `await new Promise(() => {})`) just sleeps, and the
  // pool hears it: another agent's run must not wait behind it (worker-pool.ts).
  if (run.pending.size === 0 && !run.saidIdle) {
    run.saidIdle = true
    send({ t: 'idle', run: run.id })
  }
  if (run.pending.size === 0 || !spinForReply(seen)) {
    // Only a sleeping worker is notified (ring.js): the flag is set before the wait reads the word.
    Atomics.store(ringWords, WORKER_SLEEPING, 1)
    Atomics.wait(ringWords, REPLIES, seen, remaining)
    Atomics.store(ringWords, WORKER_SLEEPING, 0)
  }
  Atomics.store(ringWords, WORKER_IDLE, 0)
}

/** Resolve every answer that has arrived for this run, then run the guest once for all of them. */
function takeReplies(run) {
  answerReader.drain(receive)
  for (let entry = receiveMessageOnPort(replies); entry !== undefined; entry = receiveMessageOnPort(replies)) {
    receive(entry.message)
  }
  if (received.length === 0) return false
  // Frames come through the ring, and through the port when the ring cannot take them: settle them
  // in the order the main thread sent them. (A frame posted to the port is there before any frame
  // written to the ring after it, so one pass over both sees every earlier frame.)
  if (received.length > 1) received.sort(bySequence)
  let settled = false
  try {
    for (const frame of received) settled = settleFrame(run, frame) || settled
  } finally {
    received.length = 0
  }
  if (settled) pump(run)
  return settled
}
/** Answer frames taken and not yet settled (decoded). */
const received = []
const receive = (text) => {
  // Counted as taken before decoding: a frame that fails to decode ends the run all the same.
  Atomics.add(answerReader.words, ANSWERS_TAKEN, text.length)
  received.push(decodeAnswers(text))
}
const bySequence = (a, b) => a.seq - b.seq

/**
 * Settle the answers of one frame; true if any was for a pending call of this run. One call into
 * the guest per answer: measured, that is cheaper than handing the guest all of a frame's answers
 * as one text to take apart (2.1 us per answer against 3.7-4.9, the guest's string handling being
 * slower than the bindings' crossing). The whole frame is one CPU slice of the guest, copying the
 * answers into its heap included (the guest asked for them).
 */
function settleFrame(run, frame) {
  // Late answers to an earlier run (it ended before the host answered) are dropped here.
  if (frame.run !== run.id) return false
  const list = frame.answers
  let settled = false
  // Settling can run program code: resolving a call's promise with an object looks up its `then`,
  // which a program may have planted on Object.prototype. That is the guest's time, under its limits.
  startSlice(run)
  try {
    for (let i = 0; i < list.length; i += 2) {
      if (!run.pending.delete(list[i])) continue
      settle(run, list[i], list[i + 1])
      settled = true
    }
  } finally {
    endSlice(run)
  }
  return settled
}

/** Run guest code, counting the time spent as the guest's CPU time; then send the calls it started. */
function guest(run, fn) {
  startSlice(run)
  try {
    return fn()
  } finally {
    endSlice(run)
    if (run.kill === undefined) flushCalls(run)
  }
}

function startSlice(run) {
  run.cpu.startSlice(performance.now())
}

function endSlice(run) {
  run.cpu.endSlice(performance.now())
}

/** Settle the guest's promise of sub-call `id` with what the envelope text decodes to. */
function settle(run, id, envelope) {
  // An answer longer than the whole guest heap cannot be held there (QuickJS keeps at least a
  // byte per character): the memory limit is broken now, without copying it in first.
  if (envelope.length > run.limits.memoryLimitBytes) {
    decideKill(run, 'memoryLimitBytes')
    throw new Error('a sub-call answer larger than the guest heap')
  }
  const { context } = run
  const idHandle = context.newNumber(id)
  const text = context.newString(envelope)
  const result = context.callFunction(run.calls.settle, context.undefined, idHandle, text)
  idHandle.dispose()
  text.dispose()
  // `settle` hands the envelope to the prelude's decode, which settles the promise and never throws
  // (a program's thenable is adopted in a later job): this fails only on an exhausted heap, or when
  // the run is being stopped for a limit (run.kill, which fault() reports first).
  if (result.error !== undefined) throw new Error('out of memory while settling a sub-call')
  result.value.dispose()
}

/**
 * Send the main thread the sub-calls the guest queued, in program order. The queue is the
 * worker's own guest code, out of the program's reach; an entry of any other shape means a broken
 * runtime, and ends the run as a fault.
 */
function flushCalls(run) {
  if (run.done) return
  const { context } = run
  const taken = context.callFunction(run.calls.take, context.undefined)
  if (taken.error !== undefined) {
    // `take` runs no program code: it fails only on an exhausted heap. Not failWith: this may run
    // inside a guest slice (from hostLog), and describing the error would start a nested one.
    taken.error.dispose()
    decideKill(run, 'memoryLimitBytes')
    return
  }
  const text = context.getString(taken.value)
  taken.value.dispose()
  if (text === '') return
  const calls = parseQueue(text)
  for (const [id, name] of calls) {
    if (!run.names.has(name) || run.pending.has(id)) throw new Error('the call queue handed over an invalid call')
    run.pending.add(id)
  }
  // The queue already stops a program at its limits; the host counts too, so the limits hold even
  // if the queue were ever reached or broken: the run stops here rather than trusting guest code.
  run.subCalls += calls.length
  if (run.subCalls > run.limits.maxSubCalls) return decideKill(run, 'maxSubCalls')
  if (run.pending.size > run.limits.maxSubCallsInFlight) return decideKill(run, 'maxSubCallsInFlight')
  send({ t: 'calls', run: run.id, calls })
}

/** `[[id, name, argsJson], ...]` from the queue's text (see CALL_QUEUE); throws on anything else. */
function parseQueue(text) {
  const fields = new FieldReader(text, 'the call queue handed over an invalid call')
  const calls = []
  while (!fields.done) {
    const id = fields.integer()
    const nameLength = fields.integer()
    const argsLength = fields.integer()
    calls.push([id, fields.text(nameLength), fields.text(argsLength)])
  }
  return calls
}

function shouldInterrupt(run) {
  if (run.kill !== undefined) return true
  const now = performance.now()
  if (run.cpu.over(now, run.limits.cpuTimeMs)) {
    decideKill(run, 'cpuTimeMs')
    return true
  }
  if (now > run.deadline) {
    decideKill(run, 'wallTimeMs')
    return true
  }
  return false
}

/** The call queue found a count over its limit (`which` indexes QUEUE_LIMITS). */
function hostBreach(run, which) {
  if (run.kill === undefined) decideKill(run, QUEUE_LIMITS[which] ?? 'maxSubCalls')
}

function hostLog(run, levelHandle, textHandle, overHandle) {
  if (run.kill !== undefined || run.done) return
  const context = run.context
  const level = context.typeof(levelHandle) === 'string' ? context.getString(levelHandle) : 'log'
  const text = context.typeof(textHandle) === 'string' ? context.getString(textHandle) : ''
  // Each line counts its line break too, so a flood of empty lines is bounded like any other.
  run.logBytes += text.length + 1
  const over = overHandle !== undefined && context.typeof(overHandle) === 'boolean' && context.dump(overHandle) === true
  if (run.logBytes > run.limits.maxLogBytes || over) {
    decideKill(run, 'maxLogBytes')
    return
  }
  // Logs go out at once (they must survive a later kill), after the calls started before them.
  flushCalls(run)
  send({ t: 'log', run: run.id, level: LOG_LEVELS.has(level) ? level : 'log', text })
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
  if (state.type === 'pending') {
    // Running out of heap inside a promise job throws nothing here: it rejects a promise of the
    // program's, and a flood of jobs ends that way, the program left waiting on nothing (measured:
    // a self-renewing chain died so, then idled until its wall-time limit). A program waiting on
    // no sub-call can never go on (there are no timers): with the heap at its maximum, that is
    // the memory limit, now.
    if (run.pending.size === 0 && heapNearlyFull()) finishRun(run, { kind: 'limit', limit: 'memoryLimitBytes' }, true)
    return
  }
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
  // `finish` is guest code and holds the result to its limit; the host does not take its word.
  if (text.length > run.limits.maxResultBytes + MAX_REPORT_CHARS) return finishRun(run, { kind: 'limit', limit: 'maxResultBytes' }, true)
  finishRun(run, { kind: 'finish', text }, overResultLimit(text))
}

/**
 * Whether `finish` text reports the result-size limit broken (a breach: the module goes). A value
 * that is not JSON is the program's error, like a throw: the image is restored as after any run.
 */
function overResultLimit(text) {
  if (!text.startsWith('!')) return false
  try {
    return JSON.parse(text.slice(1)).limit === 'maxResultBytes'
  } catch {
    return true // the prelude never writes this; whatever did is not trusted
  }
}

/**
 * Whether the guest heap is (as good as) exhausted: its WASM memory, which only grows, within a few
 * MiB of its maximum. That maximum is what bounds a program's memory: QuickJS's own limit counts
 * 8 bytes per allocation in this build (it has no malloc_usable_size), whatever its size. When a
 * small allocation fails, the memory stays below the maximum by up to the last growth step the
 * allocator could not take (measured: 64 KiB to 1.5 MiB, for limits of 8 to 128 MiB).
 */
function heapNearlyFull() {
  const heap = heapBytes(moduleMemoryLimit)
  return wasmMaxBytes - wasmMemory.buffer.byteLength <= Math.min(4 * 2 ** 20 + heap / 16, heap / 4)
}

/** The program (or the runtime on its behalf) threw `errorHandle`; describe it and end the run. */
function failWith(run, errorHandle) {
  if (run.kill !== undefined) {
    errorHandle.dispose()
    return finishRun(run, { kind: 'limit', limit: run.kill }, true)
  }
  // QuickJS throws `null` when its heap is too full to build even its "out of memory" error.
  if (run.context.sameValue(errorHandle, run.context.null) && heapNearlyFull()) {
    errorHandle.dispose()
    return finishRun(run, { kind: 'limit', limit: 'memoryLimitBytes' }, true)
  }
  let raw
  if (run.api !== undefined) {
    const describe = run.context.getProp(run.api, 'describeError')
    const described = guest(run, () => run.context.callFunction(describe, run.context.undefined, errorHandle))
    describe.dispose()
    if (described.error === undefined) {
      const text = run.context.getString(described.value)
      described.value.dispose()
      // describeError clips what it reports; were it broken, the text stays in the worker.
      if (text.length <= MAX_REPORT_CHARS) raw = JSON.parse(text)
    } else {
      described.error.dispose()
    }
  }
  errorHandle.dispose()
  if (run.kill !== undefined) return finishRun(run, { kind: 'limit', limit: run.kill }, true)
  // Stack and heap exhaustion leave the runtime in a state not worth trusting for the next run.
  let exhausted = false
  if (raw === undefined) {
    // describeError itself failed (out of memory, exhausted stack). Nothing more is read from the
    // thrown value: reading it (a dump, a property) runs the program's getters and toJSON outside
    // any CPU slice, where no limit is counted.
    if (heapNearlyFull()) return finishRun(run, { kind: 'limit', limit: 'memoryLimitBytes' }, true)
    raw = { name: 'Error', message: 'the program threw a value that could not be described: describing it exhausted the heap or the stack', stack: '' }
    exhausted = true
  }
  exhausted ||= raw.name === 'InternalError' && (raw.message === 'stack overflow' || raw.message === 'out of memory')
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
 * End the run once: report it at once, so the result does not wait for the clean-up (see
 * recycle()). outcome: { kind: 'finish', text } (prelude `finish` text) | { kind: 'error',
 * error: {name, message, stack} } | { kind: 'limit', limit } | { kind: 'fault', message }.
 */
function finishRun(run, outcome, reset) {
  if (run.done) return
  run.done = true
  // A module whose memory grew to (nearly) its maximum is rebuilt too: the next run gets the whole
  // heap, and a `null` it throws is not taken for an exhausted heap (see heapNearlyFull).
  // So is one whose table of host functions no longer matches the image (see hostFunctionsKept).
  run.reset = reset || heapNearlyFull() || (run.prepared !== undefined && !hostFunctionsKept(run.prepared))
  send({ t: 'done', run: run.id, outcome, reset: run.reset, freshHeap: run.freshHeap })
}

/**
 * After a run: turn the module back into its image (the run's handles are dropped with it, never
 * freed), or after a breach or fault load a fresh module; then say 'ready'.
 */
function recycle(run) {
  if (!run.reset && run.prepared !== undefined) {
    restoreImage()
    run.prepared.box.run = undefined
    spare = run.prepared
    announceReady()
    return
  }
  // Nothing of a breached runtime is trusted: the whole module goes.
  loadModule(run.limits.memoryLimitBytes).then(announceReady, () => process.exit(1))
}

/**
 * Whether quickjs-emscripten's table of host functions is as the image expects: none freed. The
 * worker holds every host function it made (prepareContext), so this is a second line: were one
 * freed all the same, restoring the image would bring back a function the table no longer knows,
 * and every later call of it would fail (and be printed to the host's stderr). Reads the pinned
 * version's internals; if they ever change shape this says no, and every run gets a fresh module,
 * which the engine counts (its rebuilt modules) and the tests check.
 */
function hostFunctionsKept(prepared) {
  return prepared.runtime.hostRefs?.freelist?.length === 0
}

function announceReady() {
  send({ t: 'ready' })
}

loadModule(initialMemoryLimit).then(announceReady, (error) => {
  send({ t: 'fatal', message: String(error?.message ?? error) })
  process.exit(1)
})
