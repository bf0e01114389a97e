import { Worker } from 'node:worker_threads'
import type { TypeCheckDiagnostic } from '../sdk-gen/type-check.ts'

/**
 * Type checks for `run_code` (`typeCheck: true`) off the main thread. Checking a program can take
 * unbounded time (measured: a 250-byte program of nested recursive conditional types held the
 * checker 15 s), so checks run in one worker thread, one at a time in arrival order, each under a
 * deadline counted from its submission; a check past its deadline, or whose run is cancelled, is
 * stopped by terminating the worker (a fresh one starts for the next check, loading TypeScript
 * again: about a second). The worker never keeps the process alive while idle.
 */

/** How one check ended. */
export type OffThreadCheck =
  | { readonly ok: true; readonly diagnostics: readonly TypeCheckDiagnostic[] }
  | { readonly ok: false; readonly reason: 'timeout' | 'aborted' | 'failed' }

interface Job {
  readonly id: number
  readonly declarations: string
  readonly program: string
  readonly timeoutMs: number
  readonly signal: AbortSignal
  readonly resolve: (outcome: OffThreadCheck) => void
  timer?: ReturnType<typeof setTimeout>
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

  /**
   * Check `program` against `declarations`, within `timeoutMs` of this call (waiting for the
   * worker included), unless `signal` aborts first.
   */
  check(declarations: string, program: string, options: { timeoutMs: number; signal: AbortSignal }): Promise<OffThreadCheck> {
    if (options.signal.aborted) return Promise.resolve({ ok: false, reason: 'aborted' })
    return new Promise((resolve) => {
      const job: Job = { id: ++this.#ids, declarations, program, timeoutMs: options.timeoutMs, signal: options.signal, resolve }
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
    const job = this.#queue.shift()
    if (job === undefined) {
      this.#worker?.unref()
      return
    }
    this.#current = job
    const worker = this.#spawned()
    worker.ref()
    worker.postMessage({ id: job.id, declarations: job.declarations, program: job.program })
  }

  #spawned(): Worker {
    if (this.#worker !== undefined) return this.#worker
    const worker = new Worker(new URL('../sdk-gen/type-check-worker.js', import.meta.url), { execArgv: [] })
    worker.on('message', (reply: WorkerReply) => {
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
    return worker
  }

  /**
   * End the running check now: its worker is terminated, and a fresh one starts at once and loads
   * TypeScript (about a second) before the next check needs it.
   */
  #stop(job: Job, reason: 'timeout' | 'aborted'): void {
    if (this.#current !== job) return
    const worker = this.#worker
    this.#worker = undefined
    void worker?.terminate()
    this.#spawned().postMessage({ id: WARM_UP, declarations: '', program: '' })
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
    if (job.onAbort !== undefined) job.signal.removeEventListener('abort', job.onAbort)
    job.resolve(outcome)
  }
}
