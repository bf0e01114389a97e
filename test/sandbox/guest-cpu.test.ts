/**
 * The QuickJS worker's count of a run's guest CPU time: the wall time of its slices, confirmed by
 * the thread's own CPU time before a run is stopped for `cpuTimeMs`, so a guest that waited for a
 * core on a busy machine is not stopped for computing it did not do.
 */
import { describe, expect, it } from 'vitest'
import { GuestCpuClock, openThreadCpuClock } from '../../sandbox/quickjs/guest-cpu.js'

/** A thread clock the test sets by hand. */
function fakeThread(startMs: number) {
  const thread = { ms: startMs }
  return { thread, read: () => thread.ms }
}

describe('GuestCpuClock', () => {
  it('counts the wall time of ended slices and of the running one', () => {
    const { read } = fakeThread(0)
    const clock = new GuestCpuClock(read)
    clock.startSlice(100)
    clock.endSlice(130)
    expect(clock.counted(500)).toBe(30)
    clock.startSlice(1_000)
    expect(clock.counted(1_050)).toBe(80)
  })

  it('is not over its limit while the thread used less CPU than the wall time counted, and counts the thread time from then on', () => {
    const { thread, read } = fakeThread(5_000)
    const clock = new GuestCpuClock(read)
    clock.startSlice(0)
    // 400 ms of wall time in the slice, but the thread ran for 100 ms of it (it waited for a core).
    thread.ms = 5_100
    expect(clock.over(400, 300)).toBe(false)
    // The count is now the thread's 100 ms (plus one tick for the truncated readings).
    expect(clock.counted(400)).toBe(110)
    // Under the limit by wall time again: the thread's clock is not read until it passes the limit.
    thread.ms = Number.NaN
    expect(clock.over(500, 300)).toBe(false)
  })

  it('is over once the thread itself used more than the limit', () => {
    const { thread, read } = fakeThread(0)
    const clock = new GuestCpuClock(read)
    clock.startSlice(0)
    thread.ms = 100
    expect(clock.over(400, 300)).toBe(false)
    thread.ms = 295
    expect(clock.over(700, 300)).toBe(true)
  })

  it("publishes the running slice's start (ms since the epoch) and the count as they change, a correction included", () => {
    const { thread, read } = fakeThread(0)
    const published = new Float64Array([123, 456])
    const clock = new GuestCpuClock(read, published)
    expect([...published]).toEqual([-1, 0])
    clock.startSlice(10)
    expect([...published]).toEqual([performance.timeOrigin + 10, 0])
    thread.ms = 50
    expect(clock.over(410, 300)).toBe(false)
    expect(published[1]).toBe(clock.used)
    clock.endSlice(420)
    expect([...published]).toEqual([-1, clock.used])
  })

  it('lets wall time decide where the thread time cannot be read', () => {
    const clock = new GuestCpuClock(() => Number.NaN)
    clock.startSlice(0)
    expect(clock.over(299, 300)).toBe(false)
    expect(clock.over(301, 300)).toBe(true)
  })
})

describe('openThreadCpuClock', () => {
  it("reads this thread's CPU time on Linux, growing with work done on it, and NaN elsewhere", () => {
    const read = openThreadCpuClock()
    const before = read()
    if (process.platform !== 'linux') {
      // No /proc/thread-self: wall time alone decides (see GuestCpuClock.over).
      expect(before).toBeNaN()
      return
    }
    expect(Number.isFinite(before)).toBe(true)
    // Work until the reading moves (it moves in 10 ms ticks); a clock that never moves times out.
    let x = 0
    for (let i = 0; read() === before; i++) x += Math.sqrt(i)
    expect(read()).toBeGreaterThan(before)
  })
})
