// The guest CPU time of one QuickJS run, as the worker counts it. Plain JavaScript, like the
// worker that imports it (a worker cannot load TypeScript on Node 20).
//
// The guest's CPU time is counted as the wall time of its slices: cheap to read, and never less
// than the CPU time it stands for. On a busy machine it can be much more (the thread waits for a
// core), so before a run is stopped for its CPU limit, the thread's own CPU time since the run
// began is asked for (Linux: /proc/thread-self/stat), which never under-counts the guest either
// (it includes the worker's own work for the run), and the smaller of the two is kept. Where the
// thread's CPU time cannot be read, wall time alone decides.

import { openSync, readSync } from 'node:fs'

/** The kernel's clock ticks per second for thread times (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100
/** Both thread-time readings are truncated to whole ticks: one tick covers the difference. */
const TICK_MS = 1000 / TICKS_PER_SECOND

/**
 * A reader of the calling thread's CPU milliseconds (user + system), or of NaN where that cannot
 * be known. The file is opened once, by the thread that will read it (`/proc/thread-self` names
 * the opener); a read costs about 6 us.
 * @returns {() => number}
 */
export function openThreadCpuClock() {
  let fd = -1
  try {
    fd = openSync('/proc/thread-self/stat', 'r')
  } catch {
    return () => Number.NaN
  }
  const buffer = Buffer.alloc(512)
  return () => {
    try {
      const text = buffer.latin1Slice(0, readSync(fd, buffer, 0, buffer.length, 0))
      // The fields after the command name (which may hold spaces) in parentheses: utime and stime
      // are the 12th and 13th.
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND
    } catch {
      return Number.NaN
    }
  }
}

/**
 * One run's guest CPU count. `threadCpuMs` reads this thread's CPU time (see openThreadCpuClock).
 * The count is also published, as it changes, for another thread to check: `published[0]` is the
 * start of the running slice in ms since the epoch (-1 between slices), `published[1]` the count
 * of the ended slices.
 */
export class GuestCpuClock {
  /** CPU ms of the run's ended slices (corrected down when the thread's own time was less). */
  used = 0
  /** `performance.now()` at the start of the running slice, or -1 between slices. */
  sliceStart = -1
  #threadStart
  #threadCpuMs
  #published

  /** @param {() => number} threadCpuMs @param {Float64Array} published */
  constructor(threadCpuMs, published = new Float64Array(2)) {
    this.#threadCpuMs = threadCpuMs
    this.#threadStart = threadCpuMs()
    this.#published = published
    this.#publish()
  }

  /** @param {number} now */
  startSlice(now) {
    this.sliceStart = now
    this.#publish()
  }

  /** @param {number} now */
  endSlice(now) {
    this.used += now - this.sliceStart
    this.sliceStart = -1
    this.#publish()
  }

  #publish() {
    this.#published[1] = this.used
    this.#published[0] = this.sliceStart < 0 ? -1 : performance.timeOrigin + this.sliceStart
  }

  /** CPU ms counted so far, the running slice included. @param {number} now */
  counted(now) {
    return this.sliceStart >= 0 ? this.used + (now - this.sliceStart) : this.used
  }

  /**
   * Whether the run is over `limitMs`. When the count by wall time is over but the thread's own
   * CPU time is not, the count drops to the thread's time (the run was waiting for a core, not
   * computing): the next look at the thread's time comes only once that much more has passed.
   * @param {number} now
   * @param {number} limitMs
   */
  over(now, limitMs) {
    const counted = this.counted(now)
    if (counted <= limitMs) return false
    const thread = this.#threadCpuMs() - this.#threadStart + TICK_MS
    if (!(thread < limitMs)) return true
    this.used -= counted - thread
    this.#publish()
    return false
  }
}
