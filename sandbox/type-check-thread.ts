import { Worker } from 'node:worker_threads'
import type { ClassifiedDiagnostic } from '../sdk-gen/type-check-core.js'
import { packageFile } from './package-files.ts'
import type { StripTypesResult } from './strip-types.ts'

/**
 * The TypeScript work of `run_code` that can take unbounded time, off the main thread: type checks
 * (`typeCheck: true`; measured: a 250-byte program of nested recursive conditional types held the
 * checker 15 s) and the type removal of every program that is not plain JavaScript (the main
 * thread never loads TypeScript; measured: 165 bytes of nested `async (` took the parser 1.6 s). Jobs
 * run in one worker thread, one at a time, each under a deadline counted from its submission and
 * at most {@link MAX_CHECK_MS} (a check) or {@link MAX_STRIP_MS} (a strip) of the worker's time; a
 * job past either, or whose run is cancelled, is stopped by terminating the worker (a fresh one
 * starts for the next job, loading TypeScript again: about a second). Waiting jobs are taken by
 * owner (the agent) in turn, so one agent sending slow programs delays another's job by at most
 * one job per other owner waiting, never until the other's deadline. The worker never keeps the
 * process alive while idle.
 */

/** The longest one check may hold the checker (a real program's check takes milliseconds). */
export const MAX_CHECK_MS = 5_000

/**
 * The longest one type removal may hold the worker (measured: a 256 KiB program of ordinary code,
 * the default source limit, takes 100-300 ms).
 */
export const MAX_STRIP_MS = 2_000

/** The checker thread's heap (TypeScript and a large SDK's declarations need well under half of it). */
const MAX_CHECKER_HEAP_MB = 512

/** Why a job gave no answer: `too-slow` is a job stopped at its share of the worker's time. */
export type OffThreadFailure = { readonly ok: false; readonly reason: 'timeout' | 'too-slow' | 'aborted' | 'failed' }

/** How one check ended: `too-slow` is a check stopped at {@link MAX_CHECK_MS}. */
export type OffThreadCheck = { readonly ok: true; readonly diagnostics: readonly ClassifiedDiagnostic[] } | OffThreadFailure

/** How one type removal ended: `too-slow` is one stopped at {@link MAX_STRIP_MS}. */
export type OffThreadStrip = { readonly ok: true; readonly stripped: StripTypesResult } | OffThreadFailure

/** Declarations remembered as prepared, as many as the worker keeps parsed (type-check-core.js). */
const MAX_PREPARED = 8

/** The signal of preparation jobs, which nothing cancels. */
const NEVER_ABORTED = new AbortController().signal

/** The turn key of preparation jobs, which never keep the process alive. */
const PREPARING = {}

/** The longest a preparation job may wait for the worker (loading TypeScript included). */
const MAX_PREPARE_WAIT_MS = 60_000

/** The turn key of jobs submitted without an owner. */
const NO_OWNER = {}

type WorkerRequest =
  | { readonly kind: 'check'; readonly declarations: string; readonly program: string }
  | { readonly kind: 'strip'; readonly program: string }

type WorkerReply =
  | { readonly id: number; readonly diagnostics: ClassifiedDiagnostic[] }
  | { readonly id: number; readonly stripped: StripTypesResult }
  | { readonly id: number; readonly error: string }

type JobOutcome = { readonly ok: true; readonly reply: WorkerReply } | OffThreadFailure

interface Job {
  readonly id: number
  readonly request: WorkerRequest
  /** The most of the worker's time this job may hold. */
  readonly maxMs: number
  readonly timeoutMs: number
  readonly signal: AbortSignal
  readonly owner: object
  readonly resolve: (outcome: JobOutcome) => void
  timer?: ReturnType<typeof setTimeout>
  /** Stops the job at `maxMs` of the worker's time, once it runs. */
  slice?: ReturnType<typeof setTimeout>
  /** Sent to the worker (which then is ready for its kind). */
  posted?: boolean
  onAbort?: () => void
}

/** Options of one job: its deadline from submission, its run's signal, whose turn it is. */
export interface OffThreadJobOptions {
  readonly timeoutMs: number
  readonly signal: AbortSignal
  readonly owner?: object
  /**
   * At the deadline, answer `timeout` but let the worker finish the job if it is working on it
   * (within its share of the worker): the worker stays warm for the next job instead of being
   * terminated and loading TypeScript again. A cancelled job is stopped all the same.
   */
  readonly keepRunning?: boolean
}

/** The id of a worker's throwaway job of each kind, sent before the first real one; job ids start at 1. */
const WARM_UP = 0

/**
 * What a worker does to be ready for a kind of job: a strip loads TypeScript; a check also parses
 * the standard library's declarations (more time and memory, which a process that only strips never pays).
 */
const WARM_UPS: { readonly [K in WorkerRequest['kind']]: WorkerRequest & { readonly kind: K } } = {
  check: { kind: 'check', declarations: '', program: '' },
  strip: { kind: 'strip', program: '' },
}

export class TypeCheckThread {
  #worker: Worker | undefined
  readonly #queue: Job[] = []
  #current: Job | undefined
  #ids = 0
  /** When each owner's last job started (a turn count), for taking waiting jobs in turn. */
  readonly #served = new WeakMap<object, number>()
  #turns = 0
  readonly #maxCheckMs: number
  readonly #maxStripMs: number
  readonly #workerUrl: URL
  /** The kinds of job the worker is ready for (it answered their warm-ups). */
  readonly #warm = new Set<WorkerRequest['kind']>()
  /** The kinds of job the worker was sent a warm-up of and has not answered, in order (it answers in order). */
  readonly #warming: WorkerRequest['kind'][] = []
  /** Declarations the worker was asked to prepare (it keeps the parses of the last few). */
  readonly #prepared = new Set<string>()

  /**
   * @param options.maxCheckMs the most one check may hold the checker (default {@link MAX_CHECK_MS}).
   * @param options.maxStripMs the most one type removal may hold the worker (default {@link MAX_STRIP_MS}).
   */
  constructor(options: { maxCheckMs?: number; maxStripMs?: number } = {}) {
    // Checked here, at the first run that needs the thread, so that a bundled package says why.
    this.#workerUrl = packageFile(new URL('./type-check-worker.js', import.meta.url), 'TypeScript worker (dist/sandbox/type-check-worker.js)')
    this.#maxCheckMs = options.maxCheckMs ?? MAX_CHECK_MS
    this.#maxStripMs = options.maxStripMs ?? MAX_STRIP_MS
  }

  /**
   * Check `program` against `declarations`, within `timeoutMs` of this call (waiting for the
   * worker included), unless `signal` aborts first. `owner` (the agent) is whose turn it is.
   */
  async check(declarations: string, program: string, options: OffThreadJobOptions): Promise<OffThreadCheck> {
    const outcome = await this.#submit({ kind: 'check', declarations, program }, this.#maxCheckMs, options)
    if (!outcome.ok) return outcome
    return 'diagnostics' in outcome.reply ? { ok: true, diagnostics: outcome.reply.diagnostics } : { ok: false, reason: 'failed' }
  }

  /**
   * Remove the types of `program` as `stripTypes` does (the same result, message and position),
   * within `timeoutMs` of this call (waiting for the worker included), unless `signal` aborts
   * first. `owner` (the agent) is whose turn it is.
   */
  async strip(program: string, options: OffThreadJobOptions): Promise<OffThreadStrip> {
    const outcome = await this.#submit({ kind: 'strip', program }, this.#maxStripMs, options)
    if (!outcome.ok) return outcome
    return 'stripped' in outcome.reply ? { ok: true, stripped: outcome.reply.stripped } : { ok: false, reason: 'failed' }
  }

  #submit(request: WorkerRequest, maxMs: number, options: OffThreadJobOptions): Promise<JobOutcome> {
    if (options.signal.aborted) return Promise.resolve({ ok: false, reason: 'aborted' })
    return new Promise((resolve) => {
      const owner = options.owner ?? NO_OWNER
      const job: Job = { id: ++this.#ids, request, maxMs, timeoutMs: options.timeoutMs, signal: options.signal, owner, resolve }
      const end = (reason: 'timeout' | 'aborted'): void => {
        if (this.#current !== job) this.#finishQueued(job, { ok: false, reason })
        else if (reason === 'timeout' && options.keepRunning === true && job.posted === true) resolve({ ok: false, reason })
        else this.#stop(job, reason)
      }
      job.onAbort = () => end('aborted')
      options.signal.addEventListener('abort', job.onAbort, { once: true })
      // From submission: time spent waiting behind another run's job counts too.
      job.timer = setTimeout(() => end('timeout'), job.timeoutMs)
      if (owner === PREPARING) job.timer.unref()
      this.#queue.push(job)
      this.#next()
    })
  }

  /**
   * Start the worker now and have it load TypeScript and its libraries for checks, so that the
   * first program is not the one that waits for them (about a second). Idempotent; the worker does
   * not keep the process alive while it warms up or idles.
   */
  warm(): void {
    const worker = this.#spawned('check')
    this.#warmUp(worker, 'check')
    if (this.#current === undefined) worker.unref()
  }

  /**
   * Have the worker parse and bind `declarations` (an SDK about to be used) and check an empty
   * program against them, so a program's first check finds them ready. A job of its own, taken
   * only when no job runs or waits: it never delays a run already waiting, and a run that comes
   * later waits for it as for any job (its share of the worker starts with it). Skipped for
   * declarations prepared already.
   */
  prepare(declarations: string): void {
    if (this.#current !== undefined || this.#queue.length > 0 || this.#prepared.has(declarations)) return
    this.#prepared.add(declarations)
    if (this.#prepared.size > MAX_PREPARED) this.#prepared.delete(this.#prepared.values().next().value as string)
    // Its wait may include loading TypeScript (seconds on a busy machine); its share of the worker is a check's.
    void this.#submit({ kind: 'check', declarations, program: '' }, this.#maxCheckMs, { timeoutMs: MAX_PREPARE_WAIT_MS, signal: NEVER_ABORTED, owner: PREPARING })
  }

  /** Terminate the worker; waiting jobs end as aborted. */
  async dispose(): Promise<void> {
    for (const job of this.#queue.splice(0)) this.#settle(job, { ok: false, reason: 'aborted' })
    const current = this.#current
    if (current !== undefined) this.#settle(current, { ok: false, reason: 'aborted' })
    this.#current = undefined
    const worker = this.#worker
    this.#worker = undefined
    await worker?.terminate()
  }

  #next(): void {
    if (this.#current !== undefined) return
    const job = this.#take()
    if (job === undefined) {
      this.#worker?.unref()
      return
    }
    this.#current = job
    this.#served.set(job.owner, ++this.#turns)
    const worker = this.#spawned(job.request.kind)
    this.#warmUp(worker, job.request.kind)
    // A preparation job is no reason for the process to stay up.
    if (job.owner === PREPARING) worker.unref()
    else worker.ref()
    if (this.#warm.has(job.request.kind)) this.#post(worker, job)
  }

  /**
   * Hand the job to a worker ready for it: its share of the worker starts now. A job is sent only
   * then, so one that ends while TypeScript still loads (its deadline, its run cancelled) leaves
   * the worker loading for the next job instead of killing it and starting the load over.
   */
  #post(worker: Worker, job: Job): void {
    if (job.posted === true) return
    job.posted = true
    job.slice = setTimeout(() => this.#stop(job, 'too-slow'), job.maxMs)
    if (job.owner === PREPARING) job.slice.unref()
    worker.postMessage({ id: job.id, ...job.request })
  }

  /** The waiting job whose owner was served longest ago (never served: first), oldest first among equals. */
  #take(): Job | undefined {
    let best = -1
    let bestTurn = Number.POSITIVE_INFINITY
    for (let index = 0; index < this.#queue.length; index++) {
      const turn = this.#served.get((this.#queue[index] as Job).owner) ?? 0
      if (turn < bestTurn) {
        best = index
        bestTurn = turn
      }
    }
    return best < 0 ? undefined : this.#queue.splice(best, 1)[0]
  }

  /** Send the worker a warm-up for `kind` unless it is ready for it or has one already. */
  #warmUp(worker: Worker, kind: WorkerRequest['kind']): void {
    if (this.#warm.has(kind) || this.#warming.includes(kind)) return
    this.#warming.push(kind)
    worker.postMessage({ id: WARM_UP, ...WARM_UPS[kind] })
  }

  /** The worker, or a new one started and sent a warm-up for `kind` (the job it is started for). */
  #spawned(kind: WorkerRequest['kind']): Worker {
    if (this.#worker !== undefined) return this.#worker
    const worker = new Worker(this.#workerUrl, {
      execArgv: [],
      // A kilobyte of mapped template-literal types can make the checker allocate gigabytes: past
      // this the worker dies alone, and the job reports the worker failed.
      resourceLimits: { maxOldGenerationSizeMb: MAX_CHECKER_HEAP_MB },
    })
    worker.on('message', (reply: WorkerReply) => {
      if (reply.id === WARM_UP) {
        if (this.#worker !== worker) return
        const kind = this.#warming.shift()
        if (kind !== undefined) this.#warm.add(kind)
        const current = this.#current
        if (current !== undefined && this.#warm.has(current.request.kind)) this.#post(worker, current)
        return
      }
      if (reply.id !== this.#current?.id) return
      this.#finishCurrent({ ok: true, reply })
    })
    worker.on('error', () => {
      // 'exit' follows.
    })
    worker.on('exit', () => {
      if (this.#worker !== worker) return
      this.#worker = undefined
      this.#finishCurrent({ ok: false, reason: 'failed' })
    })
    this.#worker = worker
    this.#warm.clear()
    this.#warming.length = 0
    this.#prepared.clear()
    // Loads TypeScript (and, for a check, its libraries: about a second) before any job counts its time.
    this.#warmUp(worker, kind)
    return worker
  }

  /**
   * End the running job now. One the worker works on: the worker is terminated, and a fresh one
   * starts at once and loads TypeScript (about a second) before the next job needs it. One not
   * sent yet: the worker goes on loading.
   */
  #stop(job: Job, reason: 'timeout' | 'too-slow' | 'aborted'): void {
    if (this.#current !== job) return
    // Not sent yet: the worker is still loading TypeScript, which the next job needs too.
    if (job.posted !== true) {
      this.#finishCurrent({ ok: false, reason })
      return
    }
    const worker = this.#worker
    this.#worker = undefined
    void worker?.terminate()
    // A fresh worker starts loading TypeScript now, before the next job needs it.
    this.#spawned(job.request.kind)
    this.#finishCurrent({ ok: false, reason })
  }

  /** The running job is over: settle it and start the next one. */
  #finishCurrent(outcome: JobOutcome): void {
    const job = this.#current
    if (job === undefined) return
    this.#current = undefined
    this.#settle(job, outcome)
    this.#next()
  }

  #finishQueued(job: Job, outcome: JobOutcome): void {
    const index = this.#queue.indexOf(job)
    if (index >= 0) this.#queue.splice(index, 1)
    this.#settle(job, outcome)
  }

  #settle(job: Job, outcome: JobOutcome): void {
    clearTimeout(job.timer)
    clearTimeout(job.slice)
    if (job.onAbort !== undefined) job.signal.removeEventListener('abort', job.onAbort)
    job.resolve(outcome)
  }
}
