import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads'
import { DisposedError, ToolError, ToolErrorCode } from '../../src/errors.ts'
import type { SandboxLimitName } from '../engine.ts'
import { atCap, heldByOwner, nextFairWaiter } from '../fair-share.ts'
import type { AwakePoller, KeepAwake } from '../keep-awake.ts'
import { packageFile } from '../package-files.ts'
import { ANSWERS_TAKEN, MAIN_AWAKE, REPLIES, RingReader, RingWriter, WORKER_IDLE, WORKER_SLEEPING, createRingBuffer, encodeAnswers } from './ring.js'

/**
 * A pool of warm QuickJS worker threads, one program at a time per worker.
 *
 * The pool owns the threads: it spawns them, hands an idle one to a waiting run (bounded queue;
 * the run of the agent holding the fewest workers first, then the oldest), terminates one on
 * request and replaces it with a fresh warm one, grows past its warm size (up to a ceiling) and
 * retires the extra workers once they stay idle, and terminates them all on `dispose()`.
 *
 * Waiting is not holding: a program awaiting a tool, a person's approval or nothing at all uses no
 * core, so while any busy worker waits the pool keeps one more worker warm and idle (a spare), and
 * a run that finds none starts one at once. Runs behind workers that compute grow the pool only
 * after GROW_AFTER_MS: another thread would only compete for the same cores.
 *
 * It knows nothing of programs or results: a run attaches a {@link WorkerRunHandler} for the
 * worker's messages while it holds the worker.
 */

/** What the worker receives at start (see worker.js). */
export interface WorkerBootData {
  readonly prelude: string
  readonly runtimeFilename: string
  readonly programFilename: string
  /** Guest heap size the warm module is built for; a run with another size rebuilds it. */
  readonly memoryLimitBytes: number
  /** How long the worker spins for a sub-call's answer before it sleeps (see worker.js). */
  readonly spinMicros: number
  /** The deepest C stack the interpreter gets (the engine's `stackSizeBytes` ceiling). */
  readonly maxStackBytes: number
  /** Whether the prepared context gets the prelude's deferred part compiled (see worker.js). */
  readonly precompileDeferred?: boolean
}

/** The messages a worker sends while it runs a program. */
export type WorkerRunMessage =
  | { readonly t: 'calls'; readonly run: number; readonly calls: readonly (readonly [call: number, name: string, argsJson: string])[] }
  | { readonly t: 'log'; readonly run: number; readonly level: string; readonly text: string }
  | { readonly t: 'done'; readonly run: number; readonly outcome: WorkerOutcome; readonly reset: boolean; readonly freshHeap: boolean }

/** How a program ended, as the worker saw it. */
export type WorkerOutcome =
  | { readonly kind: 'finish'; readonly text: string }
  | { readonly kind: 'error'; readonly error: { readonly name: string; readonly message: string; readonly stack?: string } }
  | { readonly kind: 'limit'; readonly limit: string }
  | { readonly kind: 'fault'; readonly message: string }

/** Receives a held worker's messages; `lost` fires if the thread dies while held. */
export interface WorkerRunHandler {
  message(message: WorkerRunMessage): void
  lost(reason: 'crashed' | 'disposed'): void
}

/** A worker lent to one run. Post run messages with `post`; give it back with the pool's `release`/`discard`. */
export interface LeasedWorker {
  post(message: unknown): void
  /**
   * Answer sub-calls of run `run`: `answers` is `[call, envelope, call, envelope, …]` (envelope
   * text). The worker may be blocked waiting for it (see worker.js).
   */
  reply(run: number, answers: (number | string)[]): void
  /**
   * UTF-16 code units of answer text sent to this worker and not yet taken by it: what is on its
   * way into the guest's heap. The engine bounds it by the run's memory limit.
   */
  answersInTransit(): number
  attach(handler: WorkerRunHandler): void
  /**
   * Guest CPU milliseconds of the current run as the worker publishes them, the slice running
   * now included: the main thread's own check, for a worker stuck where its interrupt handler
   * is never called. Reset to 0 by {@link resetCpuClock} before each run.
   */
  guestCpuMs(): number
  /** The limit the worker already decided to stop the current run for, if any. */
  decidedKill(): SandboxLimitName | undefined
  resetCpuClock(): void
}

type SlotState = 'starting' | 'idle' | 'busy' | 'dead'

/** The limits a worker stops a run for itself, in the order worker.js publishes them. */
const KILL_LIMITS: readonly SandboxLimitName[] = [
  'cpuTimeMs',
  'wallTimeMs',
  'maxSubCalls',
  'maxSubCallsInFlight',
  'maxLogBytes',
  'memoryLimitBytes',
]

class Slot implements LeasedWorker, AwakePoller {
  state: SlotState = 'starting'
  handler: WorkerRunHandler | undefined
  /** True once the thread has been ready at least once (a crash before that is a startup failure). */
  everReady = false
  /** Released by its run and getting ready for the next (restoring its image): idle in a moment. */
  recycling = false
  /** Stops the main thread's keep-awake polling of this worker; set while it is busy. */
  unpoll: (() => void) | undefined
  /** The tenant of the last run given this worker: its module's heap holds what that run left. */
  tenant: number | undefined
  /** The agent whose run holds it now (for the per-agent cap); undefined when idle or anonymous. */
  owner: number | undefined
  /** Retires this worker when it stays idle while the pool has more than its warm size. */
  retire: NodeJS.Timeout | undefined
  /** Messages read from the ring, not yet handled. */
  readonly #inbox: unknown[] = []
  #deliveryScheduled = false
  /** Answer frames sent to this worker so far (their sequence numbers). */
  #answerFrames = 0
  /** Code units of answer frames sent, wrapping as an Int32 like the worker's ANSWERS_TAKEN count. */
  #answerChars = 0

  /**
   * @param answers Sub-call answers to the worker (ring.js).
   * @param replies Our end of the channel for answers too big for the answer ring's free room; the
   *   worker reads its end with `receiveMessageOnPort` while it blocks, never through its event loop.
   * @param ring Every message the worker sends (JSON frames); `ring.words[REPLIES]` is bumped after
   *   each answer, and notified when the worker sleeps in `Atomics.wait` (see {@link reply}).
   * @param bell Our end of the port the worker rings when it wrote to the ring unwatched.
   * @param onMessage Handles one worker message.
   * @param onFault Called instead when reading or handling the worker's messages throws: the
   *   worker is not to be trusted any more (nothing reached from its messages may throw uncaught).
   */
  constructor(
    readonly worker: Worker,
    readonly answers: RingWriter,
    readonly replies: MessagePort,
    readonly ring: RingReader,
    readonly bell: MessagePort,
    readonly onMessage: (message: unknown) => void,
    readonly onFault: () => void,
    /**
     * `[start of the running guest slice (ms since the epoch) or -1, CPU ms of the run's ended
     * slices, 1 + index in KILL_LIMITS of a limit the worker already stopped the run for, or 0]`.
     */
    readonly clock: Float64Array,
  ) {}

  guestCpuMs(): number {
    const start = this.clock[0] as number
    const used = this.clock[1] as number
    return start >= 0 ? used + (performance.timeOrigin + performance.now() - start) : used
  }

  decidedKill(): SandboxLimitName | undefined {
    return KILL_LIMITS[(this.clock[2] as number) - 1]
  }

  resetCpuClock(): void {
    this.clock[0] = -1
    this.clock[1] = 0
    this.clock[2] = 0
  }

  post(message: unknown): void {
    this.worker.postMessage(message)
  }

  reply(run: number, answers: (number | string)[]): void {
    // Write first, then bump: the worker reads the word before taking answers (worker.js).
    const frame = encodeAnswers(this.#answerFrames++, run, answers)
    this.#answerChars = (this.#answerChars + frame.length) | 0
    // The port takes what the ring cannot: a frame bigger than its free room, or text with a lone
    // surrogate, which UTF-8 cannot carry (a custom GuestHost's value; the bridge escapes them).
    if (!(frame as string & { isWellFormed(): boolean }).isWellFormed() || !this.answers.tryWrite(frame)) {
      this.replies.postMessage(frame)
    }
    Atomics.store(this.ring.words, WORKER_IDLE, 0)
    Atomics.add(this.ring.words, REPLIES, 1)
    // A spinning worker sees the bump by itself. The worker sets WORKER_SLEEPING before its wait
    // compares the word, and this reads it after the bump: either it sees the flag, or the wait
    // sees the new value and does not sleep.
    if (Atomics.load(this.ring.words, WORKER_SLEEPING) === 1) Atomics.notify(this.ring.words, REPLIES)
  }

  answersInTransit(): number {
    return (this.#answerChars - Atomics.load(this.answers.words, ANSWERS_TAKEN)) | 0
  }

  attach(handler: WorkerRunHandler): void {
    this.handler = handler
  }

  /**
   * Read whatever the worker has written and handle it. One message is handled at once and each
   * further one in a turn of its own, as if each had been a message event: the promise reactions
   * of one (sub-calls getting under way) run before the next (say, the run's end) is handled.
   */
  drain(): void {
    try {
      this.ring.drain(this.#receive)
    } catch {
      return this.onFault()
    }
    if (!this.#deliveryScheduled) this.#deliver()
  }

  readonly #receive = (frame: string): void => {
    this.#inbox.push(JSON.parse(frame))
  }

  readonly #deliver = (): void => {
    this.#deliveryScheduled = false
    const message = this.#inbox.shift()
    if (message === undefined) return
    if (this.#inbox.length > 0) {
      this.#deliveryScheduled = true
      setImmediate(this.#deliver)
    }
    try {
      this.onMessage(message)
    } catch {
      this.#inbox.length = 0
      this.onFault()
    }
  }

  awake(on: boolean): void {
    Atomics.store(this.ring.words, MAIN_AWAKE, on ? 1 : 0)
  }

  poll(): void {
    if (this.ring.hasData()) this.drain()
  }

  working(): boolean {
    return Atomics.load(this.ring.words, WORKER_IDLE) === 0
  }

  /** The main thread no longer polls this worker's ring when it stays awake. */
  stopPolling(): void {
    this.unpoll?.()
    this.unpoll = undefined
  }

  close(): void {
    this.stopPolling()
    this.replies.close()
    this.bell.close()
  }
}

interface Waiter {
  resolve(slot: LeasedWorker | undefined): void
  reject(error: unknown): void
  signal: AbortSignal
  /** Whose run it is: a worker whose module last ran for the same tenant is preferred. */
  tenant: number | undefined
  /** The agent whose run it is, for fairness and the per-agent cap (undefined: anonymous, uncapped). */
  owner: number | undefined
  onAbort: () => void
  /** When it started waiting (`performance.now()`). */
  since: number
}

/** Consecutive workers that die before they ever get ready before the pool gives up on a waiter. */
const MAX_STARTUP_FAILURES = 3

/**
 * How long runs wait for a busy pool before it starts an extra worker (a program that only awaits
 * holds its worker until its wall-time limit, and others must not wait that long), and how long an
 * extra worker stays idle before it is retired. A worker takes 100-170 ms to start: short queues
 * are cheaper to wait out.
 */
const GROW_AFTER_MS = 50
const RETIRE_AFTER_MS = 10_000
/**
 * How long after its first worker is ready and free the pool starts the rest: a script that runs
 * one program and ends never starts them (a thread still starting holds up the process's exit).
 */
const FILL_AFTER_MS = 100

/** Owns the worker threads of one engine. */
export class WorkerPool {
  readonly #size: number
  readonly #maxSize: number
  readonly #maxPerAgent: number
  #growTimer: NodeJS.Timeout | undefined
  readonly #boot: WorkerBootData
  readonly #maxQueued: number
  readonly #slots = new Set<Slot>()
  readonly #keepAwake: KeepAwake
  readonly #waiters: Waiter[] = []
  #startupFailures = 0
  /** Whether a worker of this pool was ever ready with no run taking it; until then only one starts (see #fillSlots). */
  #anyReady = false
  #resolveFirstReady: (() => void) | undefined
  readonly #firstReady = new Promise<void>((resolve) => {
    this.#resolveFirstReady = resolve
  })
  #disposed = false

  readonly #workerUrl: URL

  /**
   * @param options.keepAwake Polls busy workers' rings while the main thread stays awake after an
   *   answer (the engine tells it when it answers).
   */
  constructor(options: {
    size: number
    maxSize: number
    /** Workers one agent may hold at once. */
    maxPerAgent: number
    boot: WorkerBootData
    maxQueued: number
    keepAwake: KeepAwake
    workerUrl?: URL
  }) {
    this.#maxPerAgent = options.maxPerAgent
    this.#workerUrl = options.workerUrl ?? packageFile(new URL('./worker.js', import.meta.url), 'QuickJS worker (dist/sandbox/quickjs/worker.js)')
    this.#keepAwake = options.keepAwake
    this.#size = options.size
    this.#maxSize = Math.max(options.size, options.maxSize)
    this.#boot = options.boot
    this.#maxQueued = options.maxQueued
    this.#fillSlots()
  }

  /** Settles once a worker of this pool is first ready (never, if none ever starts). */
  get firstReady(): Promise<void> {
    return this.#firstReady
  }

  /**
   * An idle worker, or `undefined` if `signal` aborts first. Waiters are served in arrival order.
   * Throws `DisposedError` after dispose, and a `ToolError` when the queue is full or workers
   * cannot start.
   */
  /**
   * An idle worker at once, preferring one whose module last ran for `tenant`, when no run is
   * waiting; otherwise undefined (then `acquire`). The usual case, kept free of a promise and of
   * abort listeners, which cost tens of microseconds on a cold core.
   */
  tryAcquire(tenant?: number, owner?: number): LeasedWorker | undefined {
    if (this.#disposed || this.#waiters.length > 0 || this.#atCap(owner)) return undefined
    const chosen = this.#idleFor(tenant)
    if (chosen === undefined) return undefined
    this.#lease(chosen, tenant, owner)
    this.#updateRefs()
    return chosen
  }

  acquire(signal: AbortSignal, tenant?: number, owner?: number): Promise<LeasedWorker | undefined> {
    if (this.#disposed) return Promise.reject(new DisposedError('QuickJS engine'))
    if (this.#waiters.length >= this.#maxQueued) {
      return Promise.reject(
        new ToolError(ToolErrorCode.CODE_RUN_FAILED, `QuickJS engine: more than ${this.#maxQueued} runs are waiting for a worker`),
      )
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        tenant,
        owner,
        since: performance.now(),
        onAbort: () => {
          const index = this.#waiters.indexOf(waiter)
          if (index >= 0) this.#waiters.splice(index, 1)
          this.#updateRefs()
          resolve(undefined)
        },
      }
      signal.addEventListener('abort', waiter.onAbort, { once: true })
      this.#waiters.push(waiter)
      this.#fillSlots()
      this.#dispatch()
      if (this.#waiters.includes(waiter)) this.#keepSpare()
    })
  }

  /** The run is over; the worker announces itself ready again when it is (after a reset if needed). */
  release(worker: LeasedWorker): void {
    const slot = worker as Slot
    slot.handler = undefined
    slot.owner = undefined
    slot.recycling = true
    slot.stopPolling()
  }

  /** A lease that was never used (its run was cancelled first): the worker is idle as it was. */
  giveBack(worker: LeasedWorker): void {
    const slot = worker as Slot
    slot.handler = undefined
    slot.stopPolling()
    if (slot.state !== 'busy') return
    this.#idle(slot)
  }

  /** The run gave up on this worker (abort, watchdog): kill the thread now and start a fresh one. */
  discard(worker: LeasedWorker): void {
    const slot = worker as Slot
    slot.handler = undefined
    this.#kill(slot)
    this.#fillSlots()
    // Below the ceiling again: runs still waiting may get an extra worker.
    this.#dispatch()
  }

  /** Terminate every worker; queued runs reject with `DisposedError`, held ones are told `lost`. */
  async dispose(): Promise<void> {
    if (this.#disposed) return
    this.#disposed = true
    clearTimeout(this.#growTimer)
    for (const waiter of this.#waiters.splice(0)) {
      waiter.signal.removeEventListener('abort', waiter.onAbort)
      waiter.reject(new DisposedError('QuickJS engine'))
    }
    const terminations: Promise<number>[] = []
    for (const slot of [...this.#slots]) {
      const handler = slot.handler
      slot.handler = undefined
      terminations.push(this.#kill(slot))
      handler?.lost('disposed')
    }
    await Promise.allSettled(terminations)
  }

  #spawn(): void {
    const ring = createRingBuffer()
    const answerRing = createRingBuffer()
    const clock = new Float64Array(new SharedArrayBuffer(24))
    clock[0] = -1
    const replies = new MessageChannel()
    const bell = new MessageChannel()
    const worker = new Worker(this.#workerUrl, {
      workerData: { ...this.#boot, ring, answerRing, clock: clock.buffer, replies: replies.port2, bell: bell.port2 },
      transferList: [replies.port2, bell.port2],
      // The worker is plain JavaScript: no loaders or test-runner flags of the parent.
      execArgv: [],
    })
    const onMessage = (raw: unknown): void => {
      const message = raw as { t: string }
      if (message.t === 'ready') {
        if (slot.state === 'dead') return
        slot.everReady = true
        this.#startupFailures = 0
        this.#resolveFirstReady?.()
        this.#idle(slot)
        // The others start a moment after the first is ready and free (after the first run, if one
        // took it), or at once for a run that has to wait (acquire).
        if (!this.#anyReady && slot.state === 'idle') {
          this.#anyReady = true
          setTimeout(() => this.#fillSlots(), FILL_AFTER_MS).unref()
        }
      } else if (message.t === 'idle') {
        // The program waits on nothing the host will ever answer: its worker is held, not used.
        this.#keepSpare(true)
      } else if (slot.handler !== undefined && message.t !== 'fatal') {
        // A run that starts sub-calls waits for them next.
        if (message.t === 'calls') this.#keepSpare(true)
        slot.handler.message(message as WorkerRunMessage)
      }
    }
    // Whatever went wrong reading or handling its messages, the worker goes and its run is told.
    const onFault = (): void => {
      if (slot.state === 'dead') return
      const handler = slot.handler
      slot.handler = undefined
      void this.#kill(slot)
      handler?.lost('crashed')
      this.#fillSlots()
      this.#dispatch()
    }
    const slot = new Slot(worker, new RingWriter(answerRing), replies.port1, new RingReader(ring), bell.port1, onMessage, onFault, clock)
    this.#slots.add(slot)
    // Neither port may keep the process alive: the worker's own ref does that while it is busy.
    bell.port1.on('message', () => slot.drain())
    bell.port1.unref()
    replies.port1.unref()
    worker.on('error', () => {
      // 'exit' follows; an uncaught worker error is handled there.
    })
    worker.on('exit', () => {
      if (slot.state === 'dead') return
      const handler = slot.handler
      const diedAtStartup = !slot.everReady
      slot.handler = undefined
      slot.state = 'dead'
      this.#slots.delete(slot)
      slot.close()
      handler?.lost('crashed')
      if (this.#disposed) return
      if (diedAtStartup) {
        this.#startupFailures += 1
        if (this.#startupFailures >= MAX_STARTUP_FAILURES) {
          this.#startupFailures = 0
          this.#failWaiters(new ToolError(ToolErrorCode.CODE_RUN_FAILED, 'QuickJS engine: the worker thread failed to start'))
          return
        }
      }
      this.#fillSlots()
      this.#dispatch()
    })
    this.#updateRefs()
  }

  /** `slot` is free: serve a waiting run, or, while the pool is past its warm size, retire it if it stays idle. */
  #idle(slot: Slot): void {
    slot.state = 'idle'
    slot.recycling = false
    this.#dispatch()
    if (slot.state !== 'idle' || this.#slots.size <= this.#size) return
    clearTimeout(slot.retire)
    slot.retire = setTimeout(() => {
      // Not the spare a waiting worker keeps (see #keepSpare): it would only be started again.
      if (slot.state === 'idle' && this.#slots.size > this.#size && !this.#someWorkerWaits()) void this.#kill(slot)
      else if (slot.state === 'idle') this.#idle(slot)
    }, RETIRE_AFTER_MS)
    slot.retire.unref()
  }

  #kill(slot: Slot): Promise<number> {
    slot.state = 'dead'
    clearTimeout(slot.retire)
    this.#slots.delete(slot)
    slot.close()
    return slot.worker.terminate()
  }

  #fillSlots(): void {
    if (this.#disposed) return
    // The first worker starts alone: on a small machine the others would take cores from it (and
    // from the host's own start) while a first run waits for it (see FILL_AFTER_MS).
    const size = this.#anyReady ? this.#size : 1
    while (this.#slots.size < size) this.#spawn()
  }

  #dispatch(): void {
    // Oldest waiter first, each to an idle worker whose module last ran for its tenant if there is
    // one (a worker switching tenants builds a fresh module first: about 8 ms), else any idle one.
    while (this.#waiters.length > 0) {
      const index = this.#nextWaiter()
      if (index === undefined) break
      const waiter = this.#waiters[index] as Waiter
      const chosen = this.#idleFor(waiter.tenant)
      if (chosen === undefined) break
      this.#waiters.splice(index, 1)
      waiter.signal.removeEventListener('abort', waiter.onAbort)
      this.#lease(chosen, waiter.tenant, waiter.owner)
      waiter.resolve(chosen)
    }
    if (this.#waiters.length > 0) this.#growSoon()
    // The refs must follow every change of state, a worker turning idle too.
    this.#updateRefs()
  }

  /**
   * Which waiting run is served next: the oldest of the agent holding the fewest workers, so that
   * one agent's many runs cannot keep another's from ever getting one; none of an agent at its cap.
   */
  #nextWaiter(): number | undefined {
    return nextFairWaiter(this.#waiters, this.#held(), this.#maxPerAgent)
  }

  /** Workers held now, by agent. */
  #held(): Map<number, number> {
    return heldByOwner(this.#slots)
  }

  /** Whether `owner` holds as many workers as one agent may. */
  #atCap(owner: number | undefined): boolean {
    return atCap(this.#slots, owner, this.#maxPerAgent)
  }

  /** Whether a busy worker waits (for sub-call answers, or on nothing). */
  #someWorkerWaits(): boolean {
    for (const slot of this.#slots) if (slot.state === 'busy' && !slot.working()) return true
    return false
  }

  /** An idle worker, one whose module last ran for `tenant` if there is one; undefined if none is idle. */
  #idleFor(tenant: number | undefined): Slot | undefined {
    let chosen: Slot | undefined
    for (const slot of this.#slots) {
      if (slot.state !== 'idle') continue
      if (slot.tenant === tenant) return slot
      chosen ??= slot
    }
    return chosen
  }

  #lease(slot: Slot, tenant: number | undefined, owner: number | undefined): void {
    clearTimeout(slot.retire)
    slot.state = 'busy'
    slot.tenant = tenant
    slot.owner = owner
    slot.unpoll = this.#keepAwake.register(slot)
    this.#keepSpare()
  }

  /**
   * While some busy worker only waits (for sub-call answers, or on nothing), keep one worker idle or
   * starting, up to the ceiling, so that another agent's run never waits for a program that uses no
   * core. Busy workers that compute do not count: a spare would compete for their cores.
   */
  #keepSpare(aboutToWait = false): void {
    if (this.#disposed || this.#slots.size >= this.#maxSize) return
    // A worker about to wait (it sent sub-calls, or said it idles) may not show it yet.
    let waiting = aboutToWait
    for (const slot of this.#slots) {
      // A worker recycling after its run is idle within a millisecond or so: starting another
      // (100-170 ms of CPU) behind every run that found only it would slow the runs it is for.
      if (slot.state === 'idle' || slot.state === 'starting' || slot.recycling) return
      waiting ||= slot.state === 'busy' && !slot.working()
    }
    if (waiting) this.#spawn()
  }

  /**
   * Runs are waiting and every worker is busy: once the oldest has waited GROW_AFTER_MS, start one
   * extra worker per run that has waited that long and is not already covered by a starting
   * worker, up to the pool's ceiling. Runs that each wait a moment behind busy workers (a steady
   * stream of short programs) never make it grow.
   */
  #growSoon(): void {
    const oldest = this.#waiters[0]
    if (oldest === undefined || this.#growTimer !== undefined || this.#slots.size >= this.#maxSize) return
    this.#growTimer = setTimeout(() => {
      this.#growTimer = undefined
      if (this.#disposed) return
      const now = performance.now()
      let starting = 0
      for (const slot of this.#slots) if (slot.state === 'starting') starting += 1
      // Waiters are in arrival order: the ones that waited long enough come first.
      let waitedLong = 0
      while (waitedLong < this.#waiters.length && now - (this.#waiters[waitedLong] as Waiter).since >= GROW_AFTER_MS) waitedLong += 1
      for (let missing = waitedLong - starting; missing > 0 && this.#slots.size < this.#maxSize; missing -= 1) this.#spawn()
      this.#growSoon()
    }, Math.max(0, oldest.since + GROW_AFTER_MS - performance.now()))
    this.#growTimer.unref()
  }

  /**
   * An idle pool must not keep the process alive; a busy worker must, and so must a starting one
   * while runs wait for it (nothing else may be pending on the host).
   */
  #updateRefs(): void {
    const waiting = this.#waiters.length > 0
    for (const slot of this.#slots) {
      if (slot.state === 'busy' || (slot.state === 'starting' && waiting)) slot.worker.ref()
      else slot.worker.unref()
    }
  }

  #failWaiters(error: unknown): void {
    for (const waiter of this.#waiters.splice(0)) {
      waiter.signal.removeEventListener('abort', waiter.onAbort)
      waiter.reject(error)
    }
  }
}
