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
 * Staying awake pays off only if the guest calls back quickly. Windows that end with no
 * {@link KeepAwake.activity} since the last answer, with no activity in any window between them,
 * make later answers skip opening one ({@link SpinBackoff}), so a
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

/** An engine's `spinMicros` option, checked; `undefined` gives {@link DEFAULT_SPIN_MICROS}. */
export function spinMicrosOption(value: number | undefined): number {
  const micros = value ?? DEFAULT_SPIN_MICROS
  if (typeof micros !== 'number' || !Number.isFinite(micros) || micros < 0 || micros > 10_000) {
    throw new RangeError(`spinMicros must be a number of microseconds from 0 to 10000, got ${String(micros)}`)
  }
  return micros
}

export class KeepAwake {
  readonly #windowMs: number
  /** An array, not a Set: iterating a Set allocates, and the pollers are iterated on every poll. */
  readonly #pollers: AwakePoller[] = []
  /** When the latest answer went out. */
  #answeredAt = 0
  #until = 0
  #running = false
  #active = false
  readonly #backoff = new SpinBackoff()

  /** @param windowMicros how long to stay awake after each answer; 0 turns the whole thing off. */
  constructor(windowMicros: number) {
    this.#windowMs = windowMicros / 1000
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
   * The engine heard from the guest (a call, a message). While awake, that is a hit at once: a
   * window that goes on for hundreds of calls closes only when something stalls (a collection on
   * either thread), so hits counted only at a window's close would make a few stalls minutes apart
   * look like misses in a row, and the main thread would back off in the middle of a busy loop.
   */
  activity(): void {
    this.#active = true
    if (this.#running) this.#backoff.hit()
  }

  /** An answer just went to the guest: stay awake for the window (unless backing off). */
  answered(): void {
    if (this.#windowMs <= 0) return
    if (!this.#running && !this.#backoff.shouldSpin()) return
    this.#answeredAt = performance.now()
    this.#until = this.#answeredAt + this.#windowMs
    this.#active = false
    if (this.#running) return
    this.#running = true
    for (const poller of this.#pollers) poller.awake(true)
    setImmediate(this.#turn)
  }

  readonly #turn = (): void => {
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
    const now = performance.now()
    if (now < this.#until) return true
    if (now >= this.#answeredAt + STRETCH * this.#windowMs) return false
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
      // A window that saw activity already counted it as a hit (see activity).
      if (!this.#active) this.#backoff.miss()
    }
  }
}

/** Consecutive idle windows tolerated before backing off. */
const GRACE = 3
/** Most windows skipped in a row once backing off. */
const MAX_SKIP = 64

/**
 * When the main thread should open a window. Staying awake only pays when the engine calls back
 * within it. It pays a lot on an idle machine, where a sleeping thread takes 40-100 us to wake, and
 * it costs when the machine is busy: a scheduler that puts both threads on one core cannot run the
 * other side while this one spins. So a few misses in a row are tolerated (a stall on either side
 * looks like one), then each further miss doubles how many windows are skipped, up to 64. One hit
 * resets everything.
 */
export class SpinBackoff {
  #misses = 0
  #skip = 0

  /** Whether to stay awake this time. */
  shouldSpin(): boolean {
    if (this.#skip === 0) return true
    this.#skip -= 1
    return false
  }

  /** The other side called back while this one was awake. */
  hit(): void {
    this.#misses = 0
    this.#skip = 0
  }

  /** This side stayed awake for nothing. */
  miss(): void {
    this.#misses += 1
    if (this.#misses >= GRACE) this.#skip = Math.min(2 ** (this.#misses - GRACE + 1), MAX_SKIP)
  }
}
