/** See spin-policy.js. */

/** A gap this long between two of a spinning thread's clock reads means it lost its core. */
export declare const PREEMPTED_MICROS: number

/**
 * A reader of the calling thread's total time waiting for a core, in ms (Linux schedstat), or
 * undefined where it cannot be read. One per thread, opened by the thread that reads it.
 */
export declare function openRunQueueClock(): (() => number) | undefined

/**
 * How many waits to skip spinning for: a few unpaid waits in a row are tolerated, then each further
 * one doubles the skip (2, 4 ... 64 waits); one paid wait resets it.
 */
export declare class SpinBackoff {
  /** Whether to spin this time. */
  shouldSpin(): boolean
  /** The other side answered while this one was awake. */
  hit(): void
  /** This side stayed awake for nothing. */
  miss(): void
}

/**
 * One side's spin decisions: how long to spin for the next wait (a few times the recent answer
 * time, at most `maxMicros`), none while the machine is contended (this thread waits for a core),
 * backing off after unpaid spins, and capped per second.
 */
export declare class SpinPolicy {
  /**
   * @param maxMicros the longest spin; 0 never spins
   * @param runQueueMs this thread's time waiting for a core, in ms ({@link openRunQueueClock}); none judges by outcomes alone
   */
  constructor(maxMicros: number, runQueueMs: (() => number) | undefined)
  /** Microseconds to spin for the wait starting at `now` (`performance.now()`), or 0 not to spin. */
  budget(now: number): number
  /** Whether a spin under way should go on at `now`: not once the machine is found contended, nor past the per-second caps. */
  keepSpinning(now: number): boolean
  /** The spin given a budget ended after `spentMicros`; whether it was answered, whether this thread lost its core meanwhile. */
  record(spentMicros: number, answered: boolean, preempted: boolean): void
}
