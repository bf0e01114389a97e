import { availableParallelism } from 'node:os'
import { DisposedError } from '../../src/errors.ts'
import type {
  EngineFailure,
  EngineRunRequest,
  EngineRunResult,
  HostCallOutcome,
  LogLevel,
  SandboxEngine,
  SandboxLimitName,
  SandboxLimits,
} from '../engine.ts'
import {
  PROGRAM_FILENAME,
  RUNTIME_FILENAME,
  answerEnvelope,
  failureEnvelope,
  guestFailure,
  guestRuntimeSource,
  limitOfGuestError,
  parseFinish,
  initLimits,
  toolsJson,
  wrapProgram,
} from '../guest-runtime.ts'
import { DEFAULT_SPIN_MICROS, KeepAwake, spinMicrosOption } from '../keep-awake.ts'
import { DEFAULT_LIMITS, describeLimit, neverStarted, resolveLimits, withCeilings } from '../limits.ts'
import { TenantNumbers } from '../tenants.ts'
import { type LeasedWorker, type WorkerOutcome, WorkerPool, type WorkerRunMessage } from './worker-pool.ts'

/**
 * The deepest stack a QuickJS program gets: the interpreter's C stack lives in the WASM memory,
 * and deeper JavaScript recursion overflows it. A ceiling over every run; the worker is given it.
 */
const QUICKJS_MAX_STACK_BYTES = 256 * 1024

/** Options of {@link createQuickJSEngine}. */
export interface QuickJSEngineOptions {
  /** Worker threads kept warm (default: `min(2, available cores)`). */
  readonly workers?: number
  /**
   * Most worker threads at once (default {@link DEFAULT_MAX_WORKERS}, never fewer than `workers`).
   * A program that only awaits (a slow tool, a person's approval, a promise that never settles)
   * holds its worker without using a core, and other agents' runs must not wait behind it: while
   * any busy worker waits, the pool keeps one more warm and idle, up to this ceiling. Runs behind
   * workers that compute make it grow only after waiting 50 ms. Extra workers are retired after
   * 10 s idle. Each thread costs memory (about 10 MB, plus the guest heap its program grows, up to
   * `memoryLimitBytes`): at most `maxWorkers` × (10 MB + `memoryLimitBytes`) in all; lower it on a
   * small host, raise it for many agents that await at once. At the ceiling, a waiting run
   * of the agent holding the fewest workers is served first; the time a run waits counts in its
   * `wallTimeMs`.
   */
  readonly maxWorkers?: number
  /**
   * Workers one agent (a run's `tenant`) may hold at once (default a quarter of `maxWorkers`, at
   * least 1): its further runs wait, so one agent's programs that only await cannot hold every
   * worker, nor the memory of every heap. Runs with no tenant are not counted.
   */
  readonly maxWorkersPerAgent?: number
  /**
   * Ceilings for every run: a run gets the lower of its own limit and the figure given here.
   * `memoryLimitBytes` also sizes the warm workers' WASM memory (runs with another size rebuild it).
   */
  readonly limits?: Partial<SandboxLimits>
  /** Runs allowed to wait for a worker before `run()` throws (default 1000). */
  readonly maxQueuedRuns?: number
  /**
   * Microseconds each side of a sub-call stays awake for the other before it sleeps (default
   * {@link DEFAULT_SPIN_MICROS}): the worker spins for an answer, and after each answer the main
   * thread keeps its event loop turning (never blocking it; see sandbox/keep-awake.ts) for the
   * worker's next message, longer (up to `STRETCH` times as long) while the worker is still
   * working toward it. Waking a sleeping thread costs 40-100 us on small VMs, most of what a
   * sequential sub-call would cost (and the main thread pays for waking the worker). Both sides
   * adapt (sandbox/quickjs/spin-policy.js): a spin lasts a few times the recent answer time, up to
   * this; neither spins while its thread waits for a core (another process wants the CPU), and
   * both back off when spins go unanswered; at most 3/4 of a core per thread per second. 0 never
   * spins (least CPU; each sub-call then pays both wake-ups).
   */
  readonly spinMicros?: number
  /**
   * Whether runs of different tenants (agents) get separate WASM heaps (default true). A worker
   * reuses its module from run to run, and freed memory keeps what a run left in it; a worker
   * that switches tenants builds a fresh module first (about 8 ms), so a memory-safety bug of
   * QuickJS cannot show one agent another's data. The pool prefers a worker that last ran for the
   * same tenant. `false` shares modules across tenants (for agents that trust each other).
   */
  readonly isolateTenants?: boolean
  /** @internal Tests only: a stand-in worker entry speaking the same protocol. */
  readonly workerUrl?: URL
  /**
   * @internal Tests only: whether the worker compiles the prelude's deferred part into the context
   * it prepares (default true, see worker.js); false: every run compiles it when it first logs or
   * fails.
   */
  readonly precompileDeferred?: boolean
}

/**
 * Most code units of sub-call answers sent to a worker in one frame (the answer ring's size): a
 * batch past it goes out and a new one starts.
 */
const MAX_ANSWER_FRAME_CHARS = 1 << 20
/** Default {@link QuickJSEngineOptions.maxWorkers}: enough for many agents awaiting at once. */
const DEFAULT_MAX_WORKERS = 64

/** After the wall deadline, how long the worker gets to report before the main thread kills it. */
const WATCHDOG_GRACE_MS = 500

const LOG_LEVELS: ReadonlySet<string> = new Set<LogLevel>(['log', 'info', 'warn', 'error'])

/**
 * The default sandbox engine: QuickJS (the original, `-sync` release build) compiled to WASM, run in
 * a pool of warm `worker_threads` workers so a program never blocks the host's event loop.
 *
 * Each run starts in a QuickJS runtime and context no program has used: a worker prepares one per
 * WASM module, keeps an image of the module's memory at that moment, and copies it back after each
 * run (see worker.js), which costs a tenth of preparing a context again. CPU time (time inside
 * the interpreter only, not waiting on sub-calls), the wall deadline, sub-call counts and log
 * volume are enforced inside the worker; the main thread also keeps a hard watchdog (wall deadline
 * plus a grace period, and the abort signal) that terminates a worker outright. After any limit
 * breach, abort or fault the worker's WASM module (or the whole worker) is thrown away.
 *
 * This module never loads QuickJS itself: only the worker does.
 */
export function createQuickJSEngine(options: QuickJSEngineOptions = {}): SandboxEngine {
  return new QuickJSEngine(options)
}

class QuickJSEngine implements SandboxEngine {
  readonly name = 'quickjs'
  readonly #pool: WorkerPool
  readonly #keepAwake: KeepAwake
  readonly #ceilings: Readonly<Partial<SandboxLimits>>
  #nextRun = 0
  readonly #tenants = new TenantNumbers()
  readonly #isolateTenants: boolean
  #freshHeapRuns = 0
  #rebuiltModules = 0
  #disposed = false
  readonly #active = new Set<() => void>()

  constructor(options: QuickJSEngineOptions) {
    // Validates the ceilings the same way as run limits.
    resolveLimits(options.limits)
    // A ceiling like any other, so a run asking more is told the stack it gets.
    const stackSizeBytes = Math.min(options.limits?.stackSizeBytes ?? QUICKJS_MAX_STACK_BYTES, QUICKJS_MAX_STACK_BYTES)
    this.#ceilings = Object.freeze({ ...options.limits, stackSizeBytes })
    const workers = options.workers ?? Math.min(2, availableParallelism())
    if (!Number.isSafeInteger(workers) || workers < 1) throw new RangeError('workers must be a positive integer')
    const maxWorkers = options.maxWorkers ?? Math.max(DEFAULT_MAX_WORKERS, workers)
    if (!Number.isSafeInteger(maxWorkers) || maxWorkers < workers) throw new RangeError('maxWorkers must be an integer no smaller than workers')
    this.#isolateTenants = options.isolateTenants ?? true
    const spinMicros = spinMicrosOption(options.spinMicros)
    this.#keepAwake = new KeepAwake(spinMicros, { yieldToContention: true })
    const maxPerAgent = options.maxWorkersPerAgent ?? Math.max(1, Math.floor(maxWorkers / 4))
    if (!Number.isSafeInteger(maxPerAgent) || maxPerAgent < 1) throw new RangeError('maxWorkersPerAgent must be a positive integer')
    this.#pool = new WorkerPool({
      size: workers,
      maxSize: maxWorkers,
      maxPerAgent,
      keepAwake: this.#keepAwake,
      maxQueued: options.maxQueuedRuns ?? 1000,
      ...(options.workerUrl === undefined ? {} : { workerUrl: options.workerUrl }),
      boot: {
        prelude: guestRuntimeSource(),
        runtimeFilename: RUNTIME_FILENAME,
        programFilename: PROGRAM_FILENAME,
        memoryLimitBytes: options.limits?.memoryLimitBytes ?? DEFAULT_LIMITS.memoryLimitBytes,
        spinMicros,
        maxStackBytes: QUICKJS_MAX_STACK_BYTES,
        ...(options.precompileDeferred === undefined ? {} : { precompileDeferred: options.precompileDeferred }),
      },
    })
  }

  /**
   * @internal Settles once the engine's first worker is ready: what starts beside it (the run_code
   * transport's TypeScript thread) waits for this rather than take the cores a first run needs.
   */
  get firstWorkerReady(): Promise<void> {
    return this.#pool.firstReady
  }

  get ceilings(): Readonly<Partial<SandboxLimits>> {
    return this.#ceilings
  }

  async run(request: EngineRunRequest): Promise<EngineRunResult> {
    if (this.#disposed) throw new DisposedError('QuickJS engine')
    const limits = withCeilings(request.limits, this.#ceilings)
    if (Buffer.byteLength(request.code, 'utf8') > limits.maxSourceBytes) return limitResult('maxSourceBytes', limits)
    if (request.signal.aborted) return abortedResult()
    // Fairness and the per-agent cap count agents whatever isolateTenants says; anonymous runs are not counted.
    const owner = request.tenant === undefined ? undefined : this.#tenants.of(request.tenant)
    // A number the workers compare for isolation (0: every run shares the anonymous tenant).
    const tenant = this.#isolateTenants ? (owner ?? 0) : 0
    let worker = this.#pool.tryAcquire(tenant, owner)
    // Time spent waiting for a worker is the run's wall time too.
    let queuedMs = 0
    if (worker === undefined) {
      const queued = performance.now()
      worker = await this.#acquireWithin(request.signal, tenant, owner, limits.wallTimeMs)
      if (this.#disposed) {
        if (worker !== undefined) this.#pool.giveBack(worker)
        return failure({ kind: 'aborted', message: 'the engine was disposed during the run' })
      }
      if (worker === undefined) return request.signal.aborted ? abortedResult() : failure(neverStarted(limits, 'worker'))
      queuedMs = performance.now() - queued
    }
    // An abort between the lease and the run's own listener (the await above) would go unheard.
    if (request.signal.aborted) {
      this.#pool.giveBack(worker)
      return abortedResult()
    }
    return this.#runOn(worker, request, limits, tenant, queuedMs)
  }

  /** A worker, or undefined once `signal` aborts or the run's whole wall time passed in the queue. */
  async #acquireWithin(signal: AbortSignal, tenant: number, owner: number | undefined, wallTimeMs: number): Promise<LeasedWorker | undefined> {
    const gaveUp = new AbortController()
    const giveUp = (): void => gaveUp.abort()
    const timer = setTimeout(giveUp, wallTimeMs)
    signal.addEventListener('abort', giveUp, { once: true })
    try {
      return await this.#pool.acquire(gaveUp.signal, tenant, owner)
    } catch (error) {
      // Disposed while the run waited: it ends as aborted, like the runs under way.
      if (error instanceof DisposedError) return undefined
      throw error
    } finally {
      clearTimeout(timer)
      signal.removeEventListener('abort', giveUp)
    }
  }

  /** @internal Tests only: runs that got a WASM module built for them (another heap size or tenant). */
  get freshHeapRuns(): number {
    return this.#freshHeapRuns
  }

  /** @internal Tests only: runs after which their worker threw its module away (a limit, a fault). */
  get rebuiltModules(): number {
    return this.#rebuiltModules
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return
    this.#disposed = true
    await this.#pool.dispose()
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose()
  }

  #runOn(worker: LeasedWorker, request: EngineRunRequest, limits: SandboxLimits, tenant: number, queuedMs: number): Promise<EngineRunResult> {
    const runId = this.#nextRun++
    const { host, signal, code } = request
    return new Promise<EngineRunResult>((resolve, reject) => {
      let over = false
      const end = (): boolean => {
        if (over) return false
        over = true
        clearTimeout(watchdog)
        clearTimeout(cpuWatchdog)
        signal.removeEventListener('abort', onAbort)
        return true
      }
      // The main thread's own guarantees: a worker that stops answering, or an abort, ends the run now.
      const kill = (result: EngineRunResult): void => {
        if (!end()) return
        this.#pool.discard(worker)
        resolve(result)
      }
      const watchdog = setTimeout(() => kill(limitResult('wallTimeMs', limits)), limits.wallTimeMs - queuedMs + WATCHDOG_GRACE_MS)
      // The worker stops a CPU-bound guest itself, from QuickJS's interrupt handler; a guest stuck
      // where QuickJS never calls it is stopped here, from the CPU time the worker publishes. CPU
      // time never runs ahead of wall time, so the first look is due no earlier than the budget.
      const cpuBudget = limits.cpuTimeMs + WATCHDOG_GRACE_MS
      const checkCpu = (): void => {
        const used = worker.guestCpuMs()
        // A worker slow to act on a limit it already found broken is stopped for that limit.
        if (used > cpuBudget) kill(limitResult(worker.decidedKill() ?? 'cpuTimeMs', limits))
        else cpuWatchdog = setTimeout(checkCpu, Math.max(10, cpuBudget - used))
      }
      let cpuWatchdog = setTimeout(checkCpu, cpuBudget)
      const onAbort = (): void => kill(abortedResult())
      signal.addEventListener('abort', onAbort, { once: true })

      // Sub-call answers. The first goes out at once; answers that come in while it is on its way
      // (tools of one Promise.all finishing in the same turn of the event loop) go together at
      // the end of that turn, so the worker wakes and runs the guest once for all of them. A batch
      // goes out early once it holds MAX_ANSWER_FRAME_CHARS, so no frame nears V8's string limit.
      let batch: (number | string)[] | undefined
      let batchChars = 0
      const send = (answers: (number | string)[]): void => {
        worker.reply(runId, answers)
        this.#keepAwake.answered()
      }
      const flushBatch = (): void => {
        const answers = batch as (number | string)[]
        batch = undefined
        batchChars = 0
        if (!over && answers.length > 0) send(answers)
      }
      const answer = (call: number, envelope: string): void => {
        if (over) return
        if (batch === undefined) {
          send([call, envelope])
          batch = []
          setImmediate(flushBatch)
          return
        }
        if (batchChars > 0 && batchChars + envelope.length > MAX_ANSWER_FRAME_CHARS) {
          send(batch)
          batch = []
          batchChars = 0
        }
        batch.push(call, envelope)
        batchChars += envelope.length
      }
      // What the guest cannot hold is refused before it is copied anywhere: the answer text on its
      // way to the guest (sent, not yet taken by the worker, or still batched) stays within the
      // memory limit. The program gets an error it can catch; the host never holds more for it.
      const envelopeOf = (name: string, valueJson: string): string =>
        answerEnvelope(name, valueJson, limits.memoryLimitBytes, worker.answersInTransit() + batchChars)
      const fail = (): void => kill(faultResult())

      worker.attach({
        message: (message: WorkerRunMessage) => {
          if (over || message.run !== runId) return
          this.#keepAwake.activity()
          switch (message.t) {
            case 'calls':
              for (const [call, name, argsJson] of message.calls) {
                callHost(host, name, argsJson, envelopeOf, (envelope) => answer(call, envelope), fail)
              }
              return
            case 'log':
              try {
                host.log({ level: LOG_LEVELS.has(message.level) ? (message.level as LogLevel) : 'log', text: message.text })
              } catch {
                // A failing log sink is the host's problem, not the program's.
              }
              return
            case 'done': {
              if (!end()) return
              if (message.freshHeap) this.#freshHeapRuns += 1
              if (message.reset) this.#rebuiltModules += 1
              let result: EngineRunResult
              try {
                result = resultOf(message.outcome, limits, code)
              } catch {
                // The worker reported something its protocol never sends: it is not trusted again.
                this.#pool.discard(worker)
                return resolve(faultResult())
              }
              this.#pool.release(worker)
              resolve(result)
              return
            }
          }
        },
        lost: (reason) => {
          if (!end()) return
          // A run the engine's owner ended is reported like isolated-vm reports it: aborted, not thrown.
          if (reason === 'disposed') resolve({ ok: false, error: { kind: 'aborted', message: 'the engine was disposed during the run' } })
          else resolve({ ok: false, error: { kind: 'guest', name: 'InternalError', message: 'the sandbox worker stopped unexpectedly' } })
        },
      })
      worker.resetCpuClock()
      worker.post({
        t: 'run',
        run: runId,
        code: wrapProgram(code),
        toolsJson: toolsJson(request.tools),
        initLimits: initLimits(limits),
        names: request.tools.map((t) => t.name),
        limits,
        tenant,
        queuedMs,
      })
    })
  }
}

/**
 * One sub-call through the host; `answer` gets its envelope text, made by `envelopeOf` from a
 * value. `GuestHost.call` never rejects; if it throws or rejects anyway, or answers with something
 * that is not an outcome, contain it. Should answering itself throw, `fail` ends the run: nothing
 * reached from guest activity may throw uncaught on the host. A plain `then` (no async function,
 * no `catch` after it) keeps this hot path to one promise reaction per call.
 */
function callHost(
  host: EngineRunRequest['host'],
  name: string,
  argsJson: string,
  envelopeOf: (name: string, valueJson: string) => string,
  answer: (envelope: string) => void,
  fail: () => void,
): void {
  const deliver = (envelope: string): void => {
    try {
      answer(envelope)
    } catch {
      fail()
    }
  }
  const failed = (): void => deliver(failureEnvelope(`the tool call ${name} failed in the host`, 'TOOL_FAILED'))
  let pending: Promise<HostCallOutcome>
  try {
    pending = host.call(name, argsJson)
  } catch {
    return failed()
  }
  void Promise.resolve(pending).then((outcome) => {
    let envelope: string
    try {
      envelope = outcome.ok ? envelopeOf(name, outcome.valueJson) : failureEnvelope(outcome.message, outcome.code)
    } catch {
      return failed()
    }
    deliver(envelope)
  }, failed)
}

function resultOf(outcome: WorkerOutcome, limits: SandboxLimits, code: string): EngineRunResult {
  switch (outcome.kind) {
    case 'finish': {
      const finished = parseFinish(outcome.text)
      if (finished.ok) return { ok: true, resultJson: finished.json }
      if (finished.limit !== undefined) return limitResult(finished.limit, limits)
      return failure({ kind: 'result', message: finished.message, path: finished.path })
    }
    case 'error': {
      const limit = limitOfGuestError(outcome.error)
      return limit === undefined ? failure(guestFailure(outcome.error, { code })) : limitResult(limit, limits)
    }
    case 'limit':
      return limitResult(outcome.limit as SandboxLimitName, limits)
    case 'fault':
      return failure({ kind: 'guest', name: 'InternalError', message: 'the sandbox failed while running the program' })
  }
}

function failure(error: EngineFailure): EngineRunResult {
  return { ok: false, error }
}

function limitResult(limit: SandboxLimitName, limits: SandboxLimits): EngineRunResult {
  return failure({ kind: 'limit', limit, message: describeLimit(limit, limits) })
}

/** A host-side fault while handling the run (never the program's doing alone): the worker goes. */
function faultResult(): EngineRunResult {
  return failure({ kind: 'guest', name: 'InternalError', message: 'the sandbox failed while running the program' })
}

function abortedResult(): EngineRunResult {
  return failure({ kind: 'aborted', message: 'the run was aborted' })
}
