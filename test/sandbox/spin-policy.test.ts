import { describe, expect, it } from 'vitest'
import { SpinPolicy, openRunQueueClock } from '../../sandbox/quickjs/spin-policy.js'

/** A stand-in for the thread's run-queue clock: `waited` ms so far. */
function runQueue(): { waited: number; read: () => number } {
  const clock = { waited: 0, read: () => clock.waited }
  return clock
}

describe('spin policy', () => {
  it('spins a few times the recent answer time, at least 40 us and never more than its maximum', () => {
    const policy = new SpinPolicy(200, undefined)
    expect(policy.budget(0)).toBe(200)
    for (let i = 0; i < 50; i++) policy.record(5, true, false)
    expect(policy.budget(1)).toBe(40)
    for (let i = 0; i < 50; i++) policy.record(30, true, false)
    expect(policy.budget(2)).toBeGreaterThan(100)
    for (let i = 0; i < 50; i++) policy.record(150, true, false)
    expect(policy.budget(3)).toBe(200)
  })

  it('counts a spin answered only after its thread lost its core as unanswered, and backs off after three', () => {
    const policy = new SpinPolicy(200, undefined)
    for (let i = 0; i < 3; i++) policy.record(100, true, true)
    expect([policy.budget(0), policy.budget(0), policy.budget(0)].map((b) => b > 0)).toEqual([false, false, true])
    // One spin answered in time resets the backoff.
    policy.record(10, true, false)
    policy.record(200, false, false)
    expect(policy.budget(0)).toBeGreaterThan(0)
  })

  it('does not spin while its thread waits for a core, holding off longer each time it finds the machine still busy, shorter once quiet', () => {
    const clock = runQueue()
    const policy = new SpinPolicy(200, clock.read)
    expect(policy.budget(0)).toBeGreaterThan(0)
    // 5 ms later, 3 ms of them spent waiting for a core (more than half): contended, a hold of 50 ms.
    clock.waited = 3
    expect(policy.budget(5)).toBe(0)
    expect(policy.budget(40)).toBe(0)
    // After the hold it spins again, counting afresh...
    expect(policy.budget(56)).toBeGreaterThan(0)
    // ...and the first sample while spinning finds the machine still busy: a hold twice as long.
    clock.waited = 6
    expect(policy.budget(61)).toBe(0)
    expect(policy.budget(150)).toBe(0)
    expect(policy.budget(162)).toBeGreaterThan(0)
    // Quiet while spinning: the next hold is half as long.
    expect(policy.budget(168)).toBeGreaterThan(0)
    clock.waited = 10
    expect(policy.budget(174)).toBe(0)
    expect(policy.budget(270)).toBe(0)
    expect(policy.budget(275)).toBeGreaterThan(0)
  })

  it('spins at most 750 ms per second, and stops for the second once unanswered spins took 50 ms', () => {
    const busy = new SpinPolicy(200, undefined)
    expect(busy.budget(0)).toBeGreaterThan(0)
    for (let i = 0; i < 7_500; i++) busy.record(100, true, false)
    expect(busy.budget(900)).toBe(0)
    expect(busy.keepSpinning(900)).toBe(false)
    expect(busy.budget(1_001)).toBeGreaterThan(0)
    const wasted = new SpinPolicy(200, undefined)
    expect(wasted.budget(0)).toBeGreaterThan(0)
    // Misses with a hit between them: never backing off, but the waste adds up.
    for (let i = 0; i < 300; i++) {
      wasted.record(200, false, false)
      wasted.record(10, true, false)
    }
    expect(wasted.budget(500)).toBe(0)
    expect(wasted.budget(1_001)).toBeGreaterThan(0)
  })

  it('holds a long window answered again and again to the cap in every second, not only the first', () => {
    const window = new SpinPolicy(200, undefined)
    expect(window.budget(0)).toBeGreaterThan(0)
    for (let second = 0; second < 6; second++) {
      const start = second * 1_000
      // A new second: spinning may go on until that second's spins reach the cap.
      expect(window.keepSpinning(start + 1)).toBe(true)
      for (let i = 0; i < 7_500; i++) window.record(100, true, false)
      expect(window.keepSpinning(start + 900)).toBe(false)
    }
  })

  it('keeps spinning on a machine whose threads wait for a core a fifth of the time, as a quiet two-core host can', () => {
    const clock = runQueue()
    const policy = new SpinPolicy(200, clock.read)
    expect(policy.budget(0)).toBeGreaterThan(0)
    clock.waited = 2
    expect(policy.budget(10)).toBeGreaterThan(0)
    clock.waited = 4
    expect(policy.budget(20)).toBeGreaterThan(0)
  })

  it('tells a spin under way to stop once its thread is found waiting for a core', () => {
    const clock = runQueue()
    const policy = new SpinPolicy(200, clock.read)
    expect(policy.budget(0)).toBeGreaterThan(0)
    expect(policy.keepSpinning(3)).toBe(true)
    clock.waited = 4
    expect(policy.keepSpinning(6)).toBe(false)
    expect(policy.budget(7)).toBe(0)
  })

  it('never spins with a maximum of 0', () => {
    const policy = new SpinPolicy(0, runQueue().read)
    expect([0, 10, 100, 2_000].map((now) => policy.budget(now))).toEqual([0, 0, 0, 0])
  })

  it("reads this thread's time waiting for a core on Linux, as a count that never goes back", () => {
    const read = openRunQueueClock()
    if (process.platform !== 'linux') {
      expect(read).toBeUndefined()
      return
    }
    expect(read).toBeTypeOf('function')
    const first = (read as () => number)()
    expect(Number.isFinite(first)).toBe(true)
    expect((read as () => number)()).toBeGreaterThanOrEqual(first)
  })
})
