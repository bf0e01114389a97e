/** See guest-cpu.js. */

/** A reader of the calling thread's CPU milliseconds, or of NaN where that cannot be known. */
export declare function openThreadCpuClock(): () => number

/** One run's guest CPU count, by wall time of its slices, confirmed by the thread's CPU time. */
export declare class GuestCpuClock {
  /** CPU ms of the run's ended slices (corrected down when the thread's own time was less). */
  used: number
  /** `performance.now()` at the start of the running slice, or -1 between slices. */
  sliceStart: number
  /** `published` receives [start of the running slice in ms since the epoch or -1, count of the ended slices]. */
  constructor(threadCpuMs: () => number, published?: Float64Array)
  startSlice(now: number): void
  endSlice(now: number): void
  /** CPU ms counted so far, the running slice included. */
  counted(now: number): number
  /** Whether the run is over `limitMs`, asking the thread's CPU time before saying so. */
  over(now: number, limitMs: number): boolean
}
