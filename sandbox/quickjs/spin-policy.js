// When one side of a sub-call should spin (stay awake) for the other, and for how long: the QuickJS
// worker waiting for an answer, and the host's main thread waiting for the worker's next call
// (sandbox/keep-awake.ts). Plain JavaScript so the worker can import it; spin-policy.d.ts declares it.
//
// A spin pays only when the other thread answers while this one still runs: on a quiet machine
// that saves a wake-up of 40-100 us per side. When another process keeps a core busy, both threads
// often share the other core, and a spin then keeps the very thread it waits for off the CPU
// until the scheduler preempts the spinner (measured: 400-540 ms per 1,000 sub-calls, a core
// burnt, against 26-35 ms quiet). So each wait's outcome is recorded, and the policy adapts:
//  - a hit (answered within the spin) teaches how long answers take: the next spin lasts a few
//    times that, never more than `maxMicros`, so a miss wastes little;
//  - a miss, or a hit that came only after this thread lost its core (a gap in its own clock
//    reads: the other side ran while this one was off the CPU, so sleeping would have done as
//    well), counts against spinning: after GRACE in a row, SpinBackoff's skips (2, 4 ... 64 waits
//    with no spin), each probe that misses doubling them and one that hits resetting them;
//  - the thread's own time waiting for a core is sampled (Linux: /proc/thread-self/schedstat, every
//    SAMPLE_MS at most, about 7 us a read): when it waited for one more than CONTENDED of the
//    sampled time, the machine has more runnable threads than cores, a spin only takes a core
//    from someone (often the very thread it waits for), and spinning stops for a hold of 50 ms,
//    doubled (up to 2 s) each time the first sample after a hold finds the machine as busy, halved
//    each time a sample finds it quiet;
//  - per second, spinning stops once it took SHARE_PER_SECOND of a core, or once spins that
//    missed took WASTE_PER_SECOND: on a machine where answers never come in time, a waiting
//    thread uses at most that.

import { openSync, readSync } from 'node:fs'

/** Consecutive unpaid waits tolerated before backing off. */
const GRACE = 3
/** Most waits skipped in a row once backing off. */
const MAX_SKIP = 64
/** A spin lasts this many times the answer time of recent hits... */
const LATENCY_FACTOR = 4
/** ...but never less than this many microseconds (clock reads are coarse, hits vary). */
const MIN_SPIN_MICROS = 40
/** A gap this long between two of this thread's clock reads while spinning: it lost its core. */
export const PREEMPTED_MICROS = 30
/** Most of a second one thread spends spinning, in all and in spins that missed. */
const SHARE_PER_SECOND = 0.75
const WASTE_PER_SECOND = 0.05

/**
 * How often the thread's wait for a core is sampled, and the share of it that means contention.
 * Half: a quiet two-core machine already shows a tenth (the host's and V8's own threads), and
 * holding the spin back there lost most of what it saves (BENCHMARKS.md, the sub-call spin).
 */
const SAMPLE_MS = 5
const CONTENDED = 0.5
/** How long spinning stops once the machine is found contended: the first hold, the longest. */
const FIRST_HOLD_MS = 50
const MAX_HOLD_MS = 2000

/**
 * A reader of the calling thread's total time spent runnable but waiting for a core, in ms (Linux
 * schedstat, nanosecond counts), or undefined where that cannot be read. Opened by the thread that
 * will read it (`/proc/thread-self` names the opener), once per thread: the descriptor lives as
 * long as the thread.
 * @returns {(() => number) | undefined}
 */
export function openRunQueueClock() {
  if (runQueueClock !== null) return runQueueClock
  runQueueClock = undefined
  let fd
  try {
    fd = openSync('/proc/thread-self/schedstat', 'r')
  } catch {
    return undefined
  }
  const buffer = Buffer.alloc(128)
  const read = () => {
    // "<ns on a core> <ns waiting for one> <slices>"
    const text = buffer.latin1Slice(0, readSync(fd, buffer, 0, buffer.length, 0))
    const from = text.indexOf(' ') + 1
    return Number(text.slice(from, text.indexOf(' ', from))) / 1e6
  }
  try {
    if (!Number.isFinite(read())) return undefined
  } catch {
    return undefined
  }
  runQueueClock = read
  return read
}
/** This thread's reader: null until first asked for. @type {(() => number) | undefined | null} */
let runQueueClock = null

/**
 * How many waits to skip spinning for. Staying awake only pays when the other side answers within
 * it. A few unpaid waits in a row are tolerated (a stall on either side looks like one), then each
 * further one doubles how many waits are skipped, up to 64. One paid wait resets everything.
 */
export class SpinBackoff {
  #misses = 0
  #skip = 0

  /** Whether to spin this time. */
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

/** One side's spin decisions (see the file's comment). Times in milliseconds of `performance.now()`. */
export class SpinPolicy {
  #maxMicros
  #backoff = new SpinBackoff()
  /** Recent answer time of hits, microseconds (an average that forgets: each hit weighs 1/8). */
  #answerMicros
  #second = 0
  #spentMs = 0
  #wastedMs = 0

  /** Reads this thread's time waiting for a core (ms), if it can be known. */
  #runQueueMs
  #sampled = false
  #sampledAt = 0
  #sampledWait = 0
  /** Spinning is off until `#holdUntil` (the machine was found contended); the next hold's length. */
  #holding = false
  #holdUntil = 0
  #holdMs = FIRST_HOLD_MS

  /**
   * @param {number} maxMicros the longest spin; 0 never spins
   * @param {(() => number) | undefined} runQueueMs this thread's time waiting for a core, in ms
   *   ({@link openRunQueueClock}); undefined judges by outcomes alone
   */
  constructor(maxMicros, runQueueMs) {
    this.#maxMicros = maxMicros
    this.#answerMicros = maxMicros / LATENCY_FACTOR
    this.#runQueueMs = runQueueMs
  }

  /** Whether the machine has been found contended, sampling if due. */
  #contended(now) {
    const clock = this.#runQueueMs
    if (clock === undefined) return false
    if (this.#holding) {
      if (now < this.#holdUntil) return true
      // The hold is over: count afresh, so the next sample covers spinning time only.
      this.#holding = false
      this.#sample(now, clock)
      return false
    }
    // The first sample only sets where counting starts: the thread's wait before it says nothing.
    if (!this.#sampled) {
      this.#sample(now, clock)
      return false
    }
    const elapsed = now - this.#sampledAt
    if (elapsed < SAMPLE_MS) return false
    const waited = this.#sample(now, clock)
    // A sample spanning a long idle gap says little about now: start a fresh one.
    if (elapsed > 20 * SAMPLE_MS) return false
    if (waited <= CONTENDED * elapsed) {
      // One quiet sample on a busy machine can be luck: the holds shorten gradually.
      this.#holdMs = Math.max(FIRST_HOLD_MS, this.#holdMs / 2)
      return false
    }
    this.#holding = true
    this.#holdUntil = now + this.#holdMs
    this.#holdMs = Math.min(this.#holdMs * 2, MAX_HOLD_MS)
    return true
  }

  /** Take a sample; returns the ms waited for a core since the previous one. */
  #sample(now, clock) {
    let total
    try {
      total = clock()
    } catch {
      this.#runQueueMs = undefined
      return 0
    }
    const waited = total - this.#sampledWait
    this.#sampled = true
    this.#sampledAt = now
    this.#sampledWait = total
    return waited
  }

  /**
   * Microseconds to spin for the wait starting at `now`, or 0 not to spin. A wait told 0 is not
   * to be recorded.
   * @param {number} now
   */
  budget(now) {
    if (this.#maxMicros <= 0) return 0
    if (this.#overCaps(now)) return 0
    if (this.#contended(now) || !this.#backoff.shouldSpin()) return 0
    const micros = Math.max(MIN_SPIN_MICROS, LATENCY_FACTOR * this.#answerMicros)
    return Math.min(this.#maxMicros, micros, (SHARE_PER_SECOND * 1000 - this.#spentMs) * 1000)
  }

  /**
   * Whether a spin under way (a window answered again and again) should go on at `now`: not once
   * the machine is found contended, nor past the per-second caps.
   * @param {number} now
   */
  keepSpinning(now) {
    return !this.#overCaps(now) && !this.#contended(now)
  }

  /** Whether this second's spinning reached a cap, a new second (counters reset) begun first if due. */
  #overCaps(now) {
    if (now - this.#second >= 1000) {
      this.#second = now
      this.#spentMs = 0
      this.#wastedMs = 0
    }
    return this.#spentMs >= SHARE_PER_SECOND * 1000 || this.#wastedMs >= WASTE_PER_SECOND * 1000
  }

  /**
   * The spin given a budget ended after `spentMicros`: `answered` if the other side answered in
   * it, `preempted` if this thread lost its core meanwhile.
   * @param {number} spentMicros
   * @param {boolean} answered
   * @param {boolean} preempted
   */
  record(spentMicros, answered, preempted) {
    this.#spentMs += spentMicros / 1000
    if (answered && !preempted) {
      this.#answerMicros += (spentMicros - this.#answerMicros) / 8
      this.#backoff.hit()
      return
    }
    if (!answered) this.#wastedMs += spentMicros / 1000
    this.#backoff.miss()
  }
}
