import { Worker } from 'node:worker_threads'
import type { TypeCheckDiagnostic } from '../sdk-gen/type-check.ts'

/**
 * Type checks for `run_code` (`typeCheck: true`) off the main thread. Checking a program can take
 * unbounded time (measured: a 250-byte program of nested recursive conditional types held the
 * checker 15 s), so checks run in one worker thread, one at a time, each under a deadline counted
 * from its submission and at most {@link MAX_CHECK_MS} of the checker's time; a check past either,
 * or whose run is cancelled, is stopped by terminating the worker (a fresh one starts for the next
 * check, loading TypeScript again: about a second). Waiting checks are taken by owner (the agent)
 * in turn, so one agent sending slow programs delays another's check by at most one check per
 * other owner waiting, never until the other's deadline. The worker never keeps the process alive
 * while idle.
 */

/** The longest one check may hold the checker (a real program's check takes milliseconds). */
export const MAX_CHECK_MS = 5_000

/** The checker thread's heap (TypeScript and a large SDK's declarations need well under half of it). */
const MAX_CHECKER_HEAP_MB = 512

/** How one check ended: `too-slow` is a check stopped at {@link MAX_CHECK_MS}. */
export type OffThreadCheck =
  | { readonly ok: true; readonly diagnostics: readonly TypeCheckDiagnostic[] }
  | { readonly ok: false; readonly reason: 'timeout' | 'too-slow' | 'aborted' | 'failed' }

/** The turn key of checks submitted without an owner. */
const NO_OWNER = {}

interface Job {
  readonly id: number
  readonly declarations: string
  readonly program: string
  readonly timeoutMs: number
  readonly signal: AbortSignal
  readonly owner: object
  readonly resolve: (outcome: OffThreadCheck) => void
  timer?: ReturnType<typeof setTimeout>
  /** Stops the check at MAX_CHECK_MS of the checker's time, once it runs. */
  slice?: ReturnType<typeof setTimeout>
  onAbort?: () => void
}

/** The id of a replacement worker's first, throwaway check; job ids start at 1. */
const WARM_UP = 0

type WorkerReply = { readonly id: number; readonly diagnostics: TypeCheckDiagnostic[] } | { readonly id: number; readonly error: string }

export class TypeCheckThread {
  #worker: Worker | undefined
  readonly #queue: Job[] = []
  #current: Job | undefined
  #ids = 0
  /** When each owner's last check started (a turn count), for taking waiting checks in turn. */
  readonly #served = new WeakMap<object, number>()
  #turns = 0
  readonly #maxCheckMs: number
  /** Whether the worker has loaded TypeScript (answered its warm-up check). */
  #warm = false

  /** @param options.maxCheckMs the most one check may hold the checker (default {@link MAX_CHECK_MS}). */
  constructor(options: { maxCheckMs?: number } = {}) {
    this.#maxCheckMs = options.maxCheckMs ?? MAX_CHECK_MS
  }

  /**
   * Check `program` against `declarations`, within `timeoutMs` of this call (waiting for the
   * worker included), unless `signal` aborts first. `owner` (the agent) is whose turn it is.
   */
  check(declarations: string, program: string, options: { timeoutMs: number; signal: AbortSignal; owner?: object }): Promise<OffThreadCheck> {
    if (options.signal.aborted) return Promise.resolve({ ok: false, reason: 'aborted' })
    return new Promise((resolve) => {
      const owner = options.owner ?? NO_OWNER
      const job: Job = { id: ++this.#ids, declarations, program, timeoutMs: options.timeoutMs, signal: options.signal, owner, resolve }
      const end = (reason: 'timeout' | 'aborted'): void => {
        if (this.#current === job) this.#stop(job, reason)
        else this.#finishQueued(job, { ok: false, reason })
      }
      job.onAbort = () => end('aborted')
      options.signal.addEventListener('abort', job.onAbort, { once: true })
      // From submission: time spent waiting behind another run's check counts too.
      job.timer = setTimeout(() => end('timeout'), job.timeoutMs)
      this.#queue.push(job)
      this.#next()
    })
  }

  /** Terminate the worker; waiting checks end as aborted. */
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
    const worker = this.#spawned()
    if (this.#warm) this.#startSlice(job)
    worker.ref()
    worker.postMessage({ id: job.id, declarations: job.declarations, program: job.program })
  }

  /** The check's share of the checker starts when the checker can work on it (TypeScript loaded). */
  #startSlice(job: Job): void {
    job.slice ??= setTimeout(() => this.#stop(job, 'too-slow'), this.#maxCheckMs)
  }

  /** The waiting check whose owner was served longest ago (never served: first), oldest first among equals. */
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

  #spawned(): Worker {
    if (this.#worker !== undefined) return this.#worker
    const worker = new Worker(new URL('../sdk-gen/type-check-worker.js', import.meta.url), {
      execArgv: [],
      // A kilobyte of mapped template-literal types can make the checker allocate gigabytes: past
      // this the worker dies alone, and the check reports the checker failed.
      resourceLimits: { maxOldGenerationSizeMb: MAX_CHECKER_HEAP_MB },
    })
    worker.on('message', (reply: WorkerReply) => {
      if (reply.id === WARM_UP) {
        if (this.#worker !== worker) return
        this.#warm = true
        if (this.#current !== undefined) this.#startSlice(this.#current)
        return
      }
      if (reply.id !== this.#current?.id) return
      this.#finishCurrent('diagnostics' in reply ? { ok: true, diagnostics: reply.diagnostics } : { ok: false, reason: 'failed' })
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
    this.#warm = false
    // Loads TypeScript and its libraries (about a second) before any check counts its time.
    worker.postMessage({ id: WARM_UP, declarations: '', program: '' })
    return worker
  }

  /**
   * End the running check now: its worker is terminated, and a fresh one starts at once and loads
   * TypeScript (about a second) before the next check needs it.
   */
  #stop(job: Job, reason: 'timeout' | 'too-slow' | 'aborted'): void {
    if (this.#current !== job) return
    const worker = this.#worker
    this.#worker = undefined
    void worker?.terminate()
    // A fresh worker starts loading TypeScript now, before the next check needs it.
    this.#spawned()
    this.#finishCurrent({ ok: false, reason })
  }

  /** The running check is over: settle it and start the next one. */
  #finishCurrent(outcome: OffThreadCheck): void {
    const job = this.#current
    if (job === undefined) return
    this.#current = undefined
    this.#settle(job, outcome)
    this.#next()
  }

  #finishQueued(job: Job, outcome: OffThreadCheck): void {
    const index = this.#queue.indexOf(job)
    if (index >= 0) this.#queue.splice(index, 1)
    this.#settle(job, outcome)
  }

  #settle(job: Job, outcome: OffThreadCheck): void {
    clearTimeout(job.timer)
    clearTimeout(job.slice)
    if (job.onAbort !== undefined) job.signal.removeEventListener('abort', job.onAbort)
    job.resolve(outcome)
  }
}
