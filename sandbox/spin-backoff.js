// When a thread should stay awake for the other side of a sub-call, shared by the main thread
// (keep-awake.ts) and the QuickJS worker (quickjs/worker.js). Plain JavaScript so the worker can
// import it; spin-backoff.d.ts declares it for TypeScript.

/** Consecutive idle waits tolerated before backing off. */
const GRACE = 3
/** Most waits skipped in a row once backing off. */
const MAX_SKIP = 64

/**
 * Staying awake (spinning, or keeping an event loop turning) only pays when the other side answers
 * within the budget. It pays a lot on an idle machine, where a sleeping thread takes 40-100 us to
 * wake, and it costs when the machine is busy: a scheduler that puts both threads on one core
 * cannot run the other side while this one spins. So a few misses in a row are tolerated (one
 * side answering late is often because the other was asleep), then each further miss doubles how
 * many waits are skipped, up to 64. One hit resets everything.
 */
export class SpinBackoff {
  #misses = 0
  #skip = 0

  /** Whether to stay awake for this wait. */
  shouldSpin() {
    if (this.#skip === 0) return true
    this.#skip -= 1
    return false
  }

  /** The other side answered while this one was awake. */
  hit() {
    this.#misses = 0
    this.#skip = 0
  }

  /** This side stayed awake for nothing. */
  miss() {
    this.#misses += 1
    if (this.#misses >= GRACE) this.#skip = Math.min(2 ** (this.#misses - GRACE + 1), MAX_SKIP)
  }
}
