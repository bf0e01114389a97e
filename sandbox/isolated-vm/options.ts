/**
 * The isolated-vm engine's options and public constants, apart from the engine itself so that
 * importing `toolbox-codemode/sandbox` loads none of the engine's modules (see ./index.ts).
 */
import type { SandboxLimits } from '../engine.ts'
import type { DEFAULT_SPIN_MICROS } from '../keep-awake.ts'

/** Options of `createIsolatedVmEngine`. */
export interface IsolatedVmEngineOptions {
  /**
   * Ceilings for every run, as on the QuickJS engine: a run gets the lower of its own limit and
   * the figure given here. `memoryLimitBytes` also sizes the pre-warmed isolate; a run whose memory
   * limit differs gets a fresh isolate instead.
   */
  readonly limits?: Partial<SandboxLimits>
  /** How often the watchdog samples CPU and wall time, in ms (default 4). */
  readonly watchdogIntervalMs?: number
  /**
   * Microseconds the main thread keeps its event loop turning after answering a sub-call, instead
   * of going to sleep (default {@link DEFAULT_SPIN_MICROS}; see sandbox/keep-awake.ts). The
   * program's next call comes back through isolated-vm's own wake-up of the main thread, which
   * costs 40-100 us more on small VMs when the main thread sleeps. It never blocks the event
   * loop, and backs off when the program keeps taking longer. 0 turns it off (least CPU). With
   * `isolation: 'process'` it applies in each child and defaults to 0: there the spinning thread
   * competes with the isolate and this process for the cores, and made sub-calls slower.
   */
  readonly spinMicros?: number
  /**
   * Isolates this engine may lose to V8's unrecoverable out-of-memory error before it refuses
   * further runs (default {@link DEFAULT_MAX_LOST_ISOLATES}). Each such loss parks a thread and
   * leaks its heap for the life of the process (see prepareSandbox), and a program can cause one
   * at will: without a bound, a model could exhaust the host's threads and memory run by run.
   */
  readonly maxLostIsolates?: number
  /**
   * Stopped programs whose isolate thread may still be running native V8 code before the engine
   * refuses further runs (default {@link DEFAULT_MAX_RUNAWAY_ISOLATES}). Some V8 built-ins loop
   * without ever looking for the interrupt that stops an isolate; the guards installed before each
   * program refuse every such loop known to be long, and this bounds the ones not known yet: each
   * keeps a CPU core busy after its run was reported over its limit, until the loop ends. Runs are
   * accepted again as soon as fewer than this many are left.
   */
  readonly maxRunawayIsolates?: number
  /**
   * Whether an isolate whose program ended cleanly (a value or the program's own error) runs its
   * tenant's next program, in a fresh context (default true). A context shares no object with
   * another, so no value of one run is visible to the next. What carries over is the isolate's:
   * compiled code, the heap's free space, and V8's isolate-wide fast-path flags ("protectors"): a
   * program that touches certain built-in prototypes, even to put back what was there, turns some
   * fast paths off for the isolate for good (measured: array spread 5x slower in later runs) until
   * it is replaced, after at most 100 runs. That stays within the tenant: runs of different tenants
   * (`run_code` passes the agent) never share an isolate. Preparing a context in a used isolate
   * costs about 4 ms on this kind of machine, against about 10 ms for a new isolate, 3 of them on
   * the main thread. `false` gives every run a new isolate.
   */
  readonly reuseIsolates?: boolean
  /**
   * Where isolates run (default `'process'`): in a small pool of child processes, one program at a
   * time in each, so that whatever a program does to V8 ends with a process this one kills and
   * replaces (see process-engine.ts): an isolate lost to V8's fatal out-of-memory error, a native
   * loop that ignores the stop, a stopped run that keeps a core busy. This process never loads
   * isolated-vm and needs no `--no-node-snapshot`. A sub-call crosses the process boundary twice
   * (BENCHMARKS.md has the cost).
   *
   * `'in-process'` runs isolates on threads of this process: a little faster per sub-call and per
   * run, but a lost isolate leaks its thread and heap here until the process exits (after
   * `maxLostIsolates` of them the engine refuses every run, for every agent), a runaway native loop
   * keeps a core busy and this process from exiting, and `process.exit()` with an isolate thread
   * still running can crash. Use it only where programs are trusted.
   */
  readonly isolation?: 'process' | 'in-process'
  /** Child processes kept warm with `isolation: 'process'` (default `min(2, available cores)`). */
  readonly processes?: number
  /**
   * Most child processes at once with `isolation: 'process'` (default 16): each serves one run at a
   * time, waiting on its tools included, so this many runs go at once and the rest wait (their wait
   * counts in their wall time). About 40 MB each, plus the heap its program grows.
   */
  readonly maxProcesses?: number
  /** Runs allowed to wait for a child process before `run()` throws (default 1000). */
  readonly maxQueuedRuns?: number
  /**
   * Child processes one agent (a run's `tenant`) may hold at once with `isolation: 'process'`
   * (default a quarter of `maxProcesses`, at least 1): its further runs wait, so one agent's
   * programs that only await cannot hold every process. Waiting runs are served by the agent
   * holding the fewest processes first. Runs with no tenant are not counted.
   */
  readonly maxProcessesPerAgent?: number
}

/** See {@link IsolatedVmEngineOptions.maxProcesses}. */
export const DEFAULT_MAX_PROCESSES = 16

/** See {@link IsolatedVmEngineOptions.maxLostIsolates}. */
export const DEFAULT_MAX_LOST_ISOLATES = 8
/** See {@link IsolatedVmEngineOptions.maxRunawayIsolates}. */
export const DEFAULT_MAX_RUNAWAY_ISOLATES = 2

/**
 * The largest heap this engine gives a program. isolated-vm's limit lets single allocations past
 * it, and from a 384 MiB limit on (measured) a program could grow an array to V8's maximum length,
 * 2^27 - 2 elements (`'x'.repeat(2 ** 28).replace(/x/g, f)`, a loop of `push`), where V8 does not
 * throw but aborts the whole process. At 256 MiB the same programs end as out of memory.
 */
export const MAX_MEMORY_LIMIT_BYTES = 256 * 1024 * 1024
