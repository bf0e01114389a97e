/**
 * Keeps the host's event loop from going to sleep for a short while after a sub-call is answered.
 *
 * A sequential `await tools.x()` loop is a ping-pong between the host's main thread and the
 * engine's thread. When the main thread has nothing to do it sleeps in its event loop's poll, and
 * waking a sleeping thread is slow on small virtual machines: 40-100 us on the 2-core VMs this
 * library is measured on, more than the whole rest of a sub-call. The guest's next call usually
 * comes within tens of microseconds of an answer, so for a moment after each answer the main
 * thread stays awake: a chain of `setImmediate` turns, each of which asks the registered pollers
 * whether the engine has posted something (a poll costs about 1 us). It never blocks: timers and
 * I/O run in every turn as usual; it only spends CPU instead of sleeping.
 *
 * Staying awake pays off only if the guest calls back quickly, and only while the engine's thread
 * has a core of its own: a main thread turning its loop on the core the engine needs delays the
 * very answer it waits for. How long each window lasts, and whether one opens at all, is a
 * {@link SpinPolicy}'s call (quickjs/spin-policy.js): a few times the recent call-back time, none
 * while the main thread waits for a core itself, backing off after windows with no call back, so a
 * program calling slow tools, or thinking between calls, costs a few idle windows rather than one
 * per call, and so does a busy machine where staying awake only delays the other thread.
 *
 * A window does not close while a poller says its engine is working toward its next message (it
 * was just woken by the answer, or is running the guest), up to {@link STRETCH} windows after the
 * answer. Without that, the main thread's backoff and the worker's sleep feed each other on a slow
 * machine: the main thread gives up on a worker that was asleep and needed a slow wake-up before
 * it could call again, so the next answers find the main thread asleep too, and every call pays
 * both wake-ups (measured: 300-370 us per sub-call instead of 60-90 in the same minutes).
 */
import { PREEMPTED_MICROS, SpinBackoff, SpinPolicy, openRunQueueClock } from './quickjs/spin-policy.js'

export interface AwakePoller {
  /** Told when the main thread starts (`true`) and stops (`false`) polling for it. */
  awake(on: boolean): void
  /** Look for work from the engine (cheap when there is none). */
  poll(): void
  /** Whether the engine is working toward its next message (not waiting for an answer). */
  working(): boolean
}

/** Default of the engines' `spinMicros` option: the window after each answer, in microseconds. */
export const DEFAULT_SPIN_MICROS = 200

/** How many windows after an answer the main thread stays awake for an engine still working. */
export const STRETCH = 5

export { SpinBackoff }

/** An engine's `spinMicros` option, checked; `undefined` gives {@link DEFAULT_SPIN_MICROS}. */
export function spinMicrosOption(value: number | undefined): number {
  const micros = value ?? DEFAULT_SPIN_MICROS
  if (typeof micros !== 'number' || !Number.isFinite(micros) || micros < 0 || micros > 10_000) {
    throw new RangeError(`spinMicros must be a number of microseconds from 0 to 10000, got ${String(micros)}`)
  }
  return micros
}

/** Options of a {@link KeepAwake}. */
export interface KeepAwakeOptions {
  /**
   * Yield the core to contention (the engines turn it on; off, windows follow outcomes alone):
   * open no window while this thread waits for a core more than half of the time (see
   * spin-policy.js), and end a window at once when the main thread lost its core in it (a turn
   * came late), counting it as unpaid: the engine's thread may need that core to answer.
   */
  readonly yieldToContention?: boolean
}

/** Stays awake after each answer, for as long as its {@link SpinPolicy} says (see the module comment). */
export class KeepAwake {
  readonly #windowMs: number
  readonly #yieldWhenPreempted: boolean
  /** An array, not a Set: iterating a Set allocates, and the pollers are iterated on every poll. */
  readonly #pollers: AwakePoller[] = []
  /** When the latest answer went out. */
  #answeredAt = 0
  /** Length of the window open now (the policy's budget when it opened), ms. */
  #spanMs = 0
  #until = 0
  #running = false
  /** Activity since the latest answer (the wait for it is recorded). */
  #active = false
  /** The latest turn started at, and whether the main thread lost its core since the latest answer. */
  #turnAt = 0
  #preempted = false
  readonly #policy: SpinPolicy

  /**
   * @param windowMicros the longest window after each answer; 0 turns the whole thing off.
   */
  constructor(windowMicros: number, options: KeepAwakeOptions = {}) {
    this.#windowMs = windowMicros / 1000
    this.#yieldWhenPreempted = options.yieldToContention ?? false
    this.#policy = new SpinPolicy(windowMicros, this.#yieldWhenPreempted && windowMicros > 0 ? openRunQueueClock() : undefined)
  }

  /** Poll `poller` on every turn while awake; returns the function that stops that. */
  register(poller: AwakePoller): () => void {
    this.#pollers.push(poller)
    if (this.#running) poller.awake(true)
    return () => {
      const index = this.#pollers.indexOf(poller)
      if (index < 0) return
      this.#pollers.splice(index, 1)
      if (!this.#running) return
      // Withdrawn mid-window: look once more, as a closing window does, or a message the engine
      // posted while it still saw the announcement would never be read. Not from inside the
      // caller, which may be handling one of this poller's messages.
      poller.awake(false)
      setImmediate(() => poller.poll())
    }
  }

  /**
   * The engine heard from the guest (a call, a message). While awake, the wait for it is recorded
   * at once: a window that goes on for hundreds of calls closes only when something stalls (a
   * collection on either thread), so outcomes counted only at a window's close would make a few
   * stalls minutes apart look like misses in a row, and the main thread would back off in the
   * middle of a busy loop.
   */
  activity(): void {
    if (this.#running && !this.#active) {
      this.#policy.record((performance.now() - this.#answeredAt) * 1000, true, this.#preempted)
    }
    this.#active = true
  }

  /** An answer just went to the guest: stay awake for a window (unless the policy says not to). */
  answered(): void {
    if (this.#windowMs <= 0) return
    const now = performance.now()
    // A wait still open (answers of one Promise.all) is superseded by this one, unrecorded.
    if (!this.#running) {
      const budget = this.#policy.budget(now)
      if (budget <= 0) return
      this.#spanMs = budget / 1000
    }
    this.#answeredAt = now
    this.#until = now + this.#spanMs
    this.#active = false
    this.#preempted = false
    // The wait starts now: a late turn after this is not the main thread's own work.
    this.#turnAt = now
    if (this.#running) return
    this.#running = true
    for (const poller of this.#pollers) poller.awake(true)
    setImmediate(this.#turn)
  }

  readonly #turn = (): void => {
    const now = performance.now()
    // A turn far later than the previous one while waiting (nothing handled since the answer):
    // this thread was off its core.
    if (!this.#active && now - this.#turnAt > PREEMPTED_MICROS / 1000) this.#preempted = true
    this.#turnAt = now
    try {
      const pollers = this.#pollers
      for (let i = 0; i < pollers.length; i++) {
        const poller = pollers[i] as AwakePoller
        poller.poll()
        // Handling a message may withdraw a poller (a run ended); do not skip the one that moved up.
        if (pollers[i] !== poller) i--
      }
    } finally {
      // Whatever a poller's handler did, the window either goes on or closes properly: a window
      // left half open would keep every engine believing the main thread polls it.
      if (this.#stayAwake()) setImmediate(this.#turn)
      else this.#close()
    }
  }

  #stayAwake(): boolean {
    if (this.#preempted && this.#yieldWhenPreempted) return false
    const now = performance.now()
    // A window answered again and again stays open for as long as the calls come: it must still
    // close once the machine turns busy (checked against a clock read every few ms, not each turn).
    if (this.#yieldWhenPreempted && !this.#policy.keepSpinning(now)) return false
    if (now < this.#until) return true
    if (now >= this.#answeredAt + STRETCH * this.#spanMs) return false
    for (const poller of this.#pollers) if (poller.working()) return true
    return false
  }

  #close(): void {
    this.#running = false
    // Stop announcing first, then look once more: a poller whose engine posted just before it saw
    // the announcement withdrawn is read here; one that posted after it rings its own bell.
    for (const poller of this.#pollers) poller.awake(false)
    try {
      // A copy: handling a message may withdraw a poller, which must not make the next one skipped.
      for (const poller of [...this.#pollers]) poller.poll()
    } finally {
      // A wait that saw activity was recorded then (see activity).
      if (!this.#active) this.#policy.record((performance.now() - this.#answeredAt) * 1000, false, this.#preempted)
    }
  }
}
