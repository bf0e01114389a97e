/**
 * The limits a watchdog reports: the two time limits, and memory, because isolated-vm disposes an
 * isolate on its own when it runs out of heap, silently if no host call is waiting on it.
 */
export type WatchdogLimit = 'cpuTimeMs' | 'wallTimeMs' | 'memoryLimitBytes'

/** What the watchdog needs to know about one running isolate. */
export interface WatchedRun {
  /**
   * Guest CPU time in nanoseconds so far (isolated-vm's `isolate.cpuTime`, live while it runs);
   * throws once the isolate is disposed.
   */
  cpuTimeNs(): bigint
  /** CPU nanoseconds the run may reach (its starting `cpuTime` plus its budget). */
  readonly cpuLimitNs: bigint
  /** `performance.now()` after which the run is over its wall-time budget. */
  readonly deadline: number
  /** Called at most once, on the first breach; the run must stop its isolate here. */
  breach(limit: WatchdogLimit): void
}

/**
 * Polls every running isolate's CPU time and wall deadline on the host's event loop.
 *
 * isolated-vm's `timeout` option only bounds one synchronous entry into the isolate; a loop that
 * starts after an awaited host call runs in a later microtask turn that no `timeout` covers. The
 * guest runs on its own thread, so the host loop stays free to notice and dispose the isolate.
 * One shared interval serves every run and exists only while some run is watched.
 */
export class Watchdog {
  readonly #runs = new Set<WatchedRun>()
  readonly #intervalMs: number
  #timer: ReturnType<typeof setInterval> | undefined

  /** `intervalMs` bounds how far past a limit a run may get before it is stopped. */
  constructor(intervalMs = 4) {
    this.#intervalMs = intervalMs
  }

  /** Start watching `run`; the returned function stops watching it (idempotent). */
  watch(run: WatchedRun): () => void {
    this.#runs.add(run)
    if (this.#timer === undefined) this.#timer = setInterval(() => this.#poll(), this.#intervalMs)
    return () => this.#unwatch(run)
  }

  /** Runs currently watched. */
  get size(): number {
    return this.#runs.size
  }

  /** Stop polling and forget every run (without breaching them). */
  dispose(): void {
    this.#runs.clear()
    this.#stop()
  }

  #unwatch(run: WatchedRun): void {
    this.#runs.delete(run)
    if (this.#runs.size === 0) this.#stop()
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
  }

  #poll(): void {
    const now = performance.now()
    for (const run of [...this.#runs]) {
      const limit = check(run, now)
      if (limit === undefined) continue
      this.#unwatch(run)
      run.breach(limit)
    }
  }
}

function check(run: WatchedRun, now: number): WatchdogLimit | undefined {
  if (now > run.deadline) return 'wallTimeMs'
  let cpu: bigint
  try {
    cpu = run.cpuTimeNs()
  } catch {
    // Disposed while still watched: runs unwatch before disposing, so isolated-vm did it (heap).
    return 'memoryLimitBytes'
  }
  return cpu > run.cpuLimitNs ? 'cpuTimeMs' : undefined
}
