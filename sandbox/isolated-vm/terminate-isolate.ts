import type { Context, Isolate } from './isolated-vm-types.ts'
import type { IsolatedVm } from './load-isolated-vm.ts'

/**
 * Dispose an isolate that may still have guest work queued, without leaving a loop running.
 *
 * `isolate.dispose()` stops guest JavaScript with a V8 interrupt. Measured here (isolated-vm 5.0.4,
 * Node 20): when the isolate is NOT executing at that moment but a task is queued for it (say, the
 * answer to a sub-call, whose microtasks start `while (true) {}`), the interrupt can be lost when a
 * pool thread next enters the isolate; that task then runs forever on an isolated-vm thread, burns a
 * core, starves other isolates, and even keeps `process.exit()` from returning. Disposing while the
 * isolate IS executing is reliable. So: queue a spin task behind whatever is pending, and dispose
 * only once the isolate is provably entered, i.e. the spin reports that it started, or the
 * isolate's CPU time moves (whatever runs first, the thread then cannot leave before the spin).
 *
 * Resolves once the isolate is disposed, with `released`: it settles when the isolate's thread has
 * left it. That is at once for guest JavaScript; V8 also runs native loops that never look for
 * the interrupt (see native-loop-guards.ts), and isolated-vm settles the spin
 * task's promise only when the thread is through with the isolate, so a `released` still pending
 * well after disposal means a thread spinning past its run's end.
 */
export async function terminateIsolate(ivm: IsolatedVm, isolate: Isolate, context: Context): Promise<Termination> {
  if (isolate.isDisposed) return NOTHING_RUNS
  let started: () => void = () => {}
  const spinning = new Promise<void>((resolve) => (started = resolve))
  let cpuAtQueue: bigint
  let released: Promise<void>
  try {
    const signal = new ivm.Reference(() => started())
    // It never returns: disposal settles it, as a rejection, once the thread gets through it.
    released = context.evalClosure('$0.applyIgnored(undefined, []); for (;;) {}', [signal]).then(
      () => {},
      () => {},
    )
    cpuAtQueue = isolate.cpuTime
  } catch {
    // Disposed meanwhile (out of memory): nothing is left to stop.
    return NOTHING_RUNS
  }
  await new Promise<void>((resolve) => {
    const deadline = performance.now() + GIVE_UP_MS
    let timer: ReturnType<typeof setTimeout> | undefined
    const finish = (): void => {
      clearTimeout(timer)
      disposeNow(isolate)
      resolve()
    }
    const poll = (): void => {
      let entered: boolean
      try {
        entered = isolate.cpuTime !== cpuAtQueue
      } catch {
        entered = true
      }
      if (entered || performance.now() > deadline) finish()
      else timer = setTimeout(poll, POLL_MS)
    }
    void spinning.then(finish)
    timer = setTimeout(poll, POLL_MS)
  })
  return { released }
}

/** What {@link terminateIsolate} tells once the isolate is disposed. */
export interface Termination {
  /** Settles (never rejects) when the isolate's thread has left it. */
  readonly released: Promise<void>
}

const NOTHING_RUNS: Termination = Object.freeze({ released: Promise.resolve() })

/** How often to look for the isolate to be entered. */
const POLL_MS = 1
/** An isolate that never gets a thread this long is disposed anyway (the pool is starved). */
const GIVE_UP_MS = 30_000

/** Dispose an isolate that has no guest work queued (never ran a program, or already disposed). */
export function disposeNow(isolate: Isolate): void {
  try {
    if (!isolate.isDisposed) isolate.dispose()
  } catch {
    // Already disposed by isolated-vm itself (memory limit): nothing left to release.
  }
}
