import { availableParallelism } from 'node:os'
import type { Context, HeapStatistics, Isolate } from './isolated-vm-types.ts'
import { DisposedError, ToolDefinitionError, ToolError, ToolErrorCode } from '../../src/errors.ts'
import { parseJsonText } from '../../src/json-boundary.ts'
import type {
  EngineFailure,
  EngineRunRequest,
  EngineRunResult,
  GuestHost,
  LogLevel,
  SandboxEngine,
  SandboxLimitName,
  SandboxLimits,
} from '../engine.ts'
import {
  RUNTIME_FILENAME,
  failureEnvelope,
  guestFailure,
  guestRuntimeSource,
  limitOfGuestError,
  parseFinish,
  answerEnvelope,
  successEnvelope,
} from '../guest-runtime.ts'
import type { RawGuestError } from '../guest-runtime.ts'
import { DEFAULT_SPIN_MICROS, KeepAwake, spinMicrosOption } from '../keep-awake.ts'
import { RunMeter, describeLimit, resolveLimits, withCeilings } from '../limits.ts'
import { TenantNumbers } from '../tenants.ts'
import { PROGRAM_SCRIPT_ORIGIN, armArguments, compileBridgeScripts, installBridge, programScript } from './guest-bridge.ts'
import type { Bridge, BridgeScripts } from './guest-bridge.ts'
import { assertIsolatedVmInstalled, loadIsolatedVm } from './load-isolated-vm.ts'
import type { IsolatedVm } from './load-isolated-vm.ts'
import { disposeNow, terminateIsolate } from './terminate-isolate.ts'
import { DEFAULT_MAX_LOST_ISOLATES, DEFAULT_MAX_PROCESSES, DEFAULT_MAX_RUNAWAY_ISOLATES, MAX_MEMORY_LIMIT_BYTES } from './options.ts'
import type { IsolatedVmEngineOptions } from './options.ts'
import { createProcessEngine } from './process-engine.ts'
import { Watchdog } from './watchdog.ts'

export { DEFAULT_MAX_LOST_ISOLATES, DEFAULT_MAX_RUNAWAY_ISOLATES, MAX_MEMORY_LIMIT_BYTES } from './options.ts'
export type { IsolatedVmEngineOptions } from './options.ts'

/**
 * How long after its disposal an isolate's thread may still be inside it before it counts as a
 * runaway. Guest JavaScript stops within microseconds; this leaves room for a busy host.
 */
const RUNAWAY_AFTER_MS = 1_000

/**
 * How long a finished program's isolate has to show it is quiet (its thread through with every
 * task the program queued) before it may be reused; one that is not is terminated instead.
 */
const QUIET_MS = 50
/** CPU a finished program's isolate may use before it counts as still running (see whenQuiet). */
const QUIET_CPU_NS = 5_000_000n
/** Programs one isolate runs, each in a fresh context, before it is replaced. */
const MAX_RUNS_PER_ISOLATE = 100
/**
 * An isolate whose heap is fuller than this, past its program's end, is replaced rather than
 * reused. What a finished context kept is garbage once the context is released, but the collector
 * may take a few runs to get to it (measured: up to three runs' worth), and only a collection
 * tells garbage from a leak.
 */
const MAX_USED_HEAP_TO_REUSE = 0.75
/** Isolates kept for their tenants' next runs, at most; the one kept longest goes first. */
const MAX_RECYCLED = 4
/** A kept isolate is disposed when its tenant has not run for this long. */
const RECYCLED_IDLE_MS = 10_000

const MIB = 1024 * 1024
/** isolated-vm refuses memory limits under 8 MB. */
const MIN_MEMORY_MB = 8

function memoryLimitMb(limits: SandboxLimits): number {
  return Math.max(MIN_MEMORY_MB, Math.ceil(limits.memoryLimitBytes / MIB))
}

const LOG_LEVELS: ReadonlySet<string> = new Set<LogLevel>(['log', 'info', 'warn', 'error'])

/** One run's host-side state; the context's bridge dispatches to it while it is current. */
interface ActiveRun {
  call(name: string, argsJson: string): Promise<string>
  log(level: string, text: string, over: boolean): void
  done(text: string): void
  /** isolated-vm gave up on the isolate (a catastrophic out-of-memory error). */
  lost(): void
  /** The guest found one of its sub-call counts over its limit. */
  breach(limit: 'maxSubCalls' | 'maxSubCallsInFlight'): void
}

/**
 * One isolate. It runs one program at a time, each in a context of its own, and is thrown away
 * after any run that breaks a limit, is aborted or leaves work running (see the engine's #release).
 */
interface IsolateHome {
  readonly isolate: Isolate
  readonly memoryMb: number
  /** isolated-vm reported a catastrophic error: the isolate's thread is parked for good. */
  lost: boolean
  /** Settles when `lost` becomes true (never, for most isolates). */
  readonly parked: Promise<void>
  /** The route of its newest context: the one whose program runs, or will. */
  route: Route | undefined
  /** Programs started in it so far. */
  runs: number
  /** The guest scripts each of its contexts runs, compiled once for it (see compileBridgeScripts). */
  readonly scripts: Promise<BridgeScripts>
}

/** A fresh context with its bridge and prelude ready, in an isolate; used by at most one program. */
interface Sandbox {
  readonly home: IsolateHome
  readonly context: Context
  readonly bridge: Bridge
  readonly route: Route
}

/** Where a context's bridge dispatches; unset before and after its run. */
interface Route {
  current: ActiveRun | undefined
}

const RUN_OVER = failureEnvelope('the program has already finished', 'ABORTED')

/**
 * A fixed program run once in a scratch context of every new isolate, before the isolate is handed
 * out. V8 shares compiled code between contexts of one isolate, so the prelude and bridge functions
 * a real program needs are already compiled: this takes about 0.4 ms off a warm run. Its answer
 * also proves the bridge works, so a broken install fails at creation, not mid-run.
 */
const REHEARSAL = 'console.log("x", { a: [1] })\nconst v = await tools.echo({ a: [1, "x"] })\ntry { null.x } catch (e) {}\nreturn { v, d: new Date(0) }'
const REHEARSAL_TIMEOUT_MS = 5_000
const REHEARSAL_LIMITS = resolveLimits({ maxResultBytes: 1_000, maxSubCalls: 10, maxSubCallsInFlight: 10, maxLogBytes: 1_000, maxArgumentBytes: 1_000, maxTotalArgumentBytes: 1_000 })

async function rehearse(ivm: IsolatedVm, home: IsolateHome): Promise<void> {
  const scripts = await home.scripts
  const context = await home.isolate.createContext()
  let timer: ReturnType<typeof setTimeout> | undefined
  let installed: Bridge | undefined
  try {
    const answer = new Promise<string>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error('the isolated-vm warm-up program did not finish')), REHEARSAL_TIMEOUT_MS)
      installBridge(
        ivm,
        context,
        { call: async (_name, argsJson) => successEnvelope(argsJson), log: () => {}, done: resolve, breach: () => {} },
        scripts,
      )
        .then((bridge) => (installed = bridge).arm.apply(undefined, armArguments([{ binding: 'echo', name: 'echo' }], REHEARSAL_LIMITS), { arguments: { copy: true } }))
        .then(() => context.eval(programScript(REHEARSAL), PROGRAM_SCRIPT_ORIGIN))
        .catch(reject)
    })
    const text = await answer
    if (!text.startsWith('R')) throw new Error(`the isolated-vm warm-up program answered ${text.slice(0, 200)}`)
  } finally {
    clearTimeout(timer)
    installed?.close()
    context.release()
  }
}

/**
 * The longest array or array-like the guarded built-ins accept (see native-loop-guards.ts): at
 * least 2^24, and more than a dense array of 8-byte elements could have in the isolate's heap, so
 * only sparse arrays and array-likes are ever refused, but at most 2^26, well under the 2^27 - 2
 * elements past which V8 aborts the process instead of throwing (a `split` into that many parts). A
 * native loop over 2^24 missing elements measured up to 1.2 s here. The guards also bound the
 * lookups such a loop makes, length times prototype chain depth, to 4 times this (a subclass
 * instance's chain is 4 deep).
 */
const MIN_MAX_ARRAY_LENGTH = 2 ** 24
const MAX_MAX_ARRAY_LENGTH = 2 ** 26
function maxArrayLength(memoryMb: number): number {
  return Math.min(MAX_MAX_ARRAY_LENGTH, Math.max(MIN_MAX_ARRAY_LENGTH, (memoryMb * MIB) / 8))
}

/** A new isolate, rehearsed (see {@link REHEARSAL}), with a context ready for a program. */
async function prepareSandbox(ivm: IsolatedVm, memoryMb: number, onLost: () => void): Promise<Sandbox> {
  // isolated-vm's memory limit is not hard: one big allocation past it (measured: a program that
  // JSON-stringifies two 16 MB strings in a 32 MB isolate) is a V8 fatal out-of-memory error, which
  // aborts the whole host process unless a handler is given. With one, isolated-vm parks the
  // isolate's thread for good instead (the thread and its heap leak) and calls the handler on the
  // host: the run ends as a memory-limit breach and the isolate is disposed like any other. It is
  // counted at once, whenever it comes: in a run, or past a run's end while the isolate proves quiet.
  let park = (): void => {}
  const onCatastrophicError = (): void => {
    if (home.lost) return
    home.lost = true
    park()
    onLost()
    home.route?.current?.lost()
  }
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb, onCatastrophicError })
  const home: IsolateHome = {
    isolate,
    memoryMb,
    lost: false,
    parked: new Promise<void>((resolve) => (park = resolve)),
    route: undefined,
    runs: 0,
    // Awaited at once, by the rehearsal below.
    scripts: compileBridgeScripts(isolate, { source: guestRuntimeSource(), filename: RUNTIME_FILENAME }),
  }
  try {
    await rehearse(ivm, home)
    return await prepareContext(ivm, home)
  } catch (error) {
    disposeNow(home.isolate)
    throw error
  }
}

/** A fresh context in `home`'s isolate, with its bridge, prelude and guards installed. */
async function prepareContext(ivm: IsolatedVm, home: IsolateHome): Promise<Sandbox> {
  const route: Route = { current: undefined }
  const scripts = await home.scripts
  const context = await home.isolate.createContext()
  const bridge = await installBridge(
    ivm,
    context,
    {
      call: (name, argsJson) => route.current?.call(name, argsJson) ?? Promise.resolve(RUN_OVER),
      log: (level, text, over) => route.current?.log(level, text, over),
      done: (text) => route.current?.done(text),
      breach: (limit) => route.current?.breach(limit),
    },
    scripts,
    { maxArrayLength: maxArrayLength(home.memoryMb) },
  )
  home.route = route
  return { home, context, bridge, route }
}

/** A failure for a broken limit, worded by {@link describeLimit}. */
function limitFailure(limit: SandboxLimitName, limits: SandboxLimits): EngineFailure {
  return { kind: 'limit', limit, message: describeLimit(limit, limits) }
}

/** isolated-vm appends the script position to a compile error's message. */
const SYNTAX_POSITION = /\s*\[program\.js:(\d+):(\d+)\]$/

/**
 * The guest failure for a compile error of the program script, or undefined for any other error.
 * Only the name, message and position cross: the host-side copy's stack names host files.
 */
function syntaxFailure(error: unknown, code: string): EngineFailure | undefined {
  if (!(error instanceof Error) || error.name !== 'SyntaxError') return undefined
  const match = SYNTAX_POSITION.exec(error.message)
  if (match === null) return undefined
  return guestFailure(
    { name: error.name, message: error.message.slice(0, match.index) },
    { code, position: { line: Number(match[1]), column: Number(match[2]) } },
  )
}

/** Dispose a sandbox no program ran in: nothing is queued in it that a plain dispose could miss. */
function disposeUnused(sandbox: Sandbox): void {
  disposeNow(sandbox.home.isolate)
}

function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8')
}

/** An isolate kept, with a fresh context, for its tenant's next run (see {@link IsolatedVmEngine}). */
interface Recycled {
  /** The prepared context; undefined when the isolate turned out not reusable and was thrown away. */
  readonly ready: Promise<Sandbox | undefined>
  readonly timer: ReturnType<typeof setTimeout>
}

/** What {@link createIsolatedVmEngine} hands the engine, options checked. */
interface EngineSettings {
  readonly limits: SandboxLimits
  readonly ceilings: Readonly<Partial<SandboxLimits>>
  readonly watchdogIntervalMs: number | undefined
  readonly spinMicros: number
  readonly maxLost: number
  readonly maxRunaway: number
  readonly reuseIsolates: boolean
}

/**
 * The isolated-vm engine: every run gets a fresh context, in an isolate of its own; one new isolate
 * is kept pre-warmed so a run does not pay for creating it, and an isolate whose run ended cleanly
 * is kept, with a fresh context, for its tenant's next run. See {@link createIsolatedVmEngine}.
 */
class IsolatedVmEngine implements SandboxEngine {
  readonly name = 'isolated-vm'
  readonly #ivm: IsolatedVm
  /** Memory size of the next pre-warmed isolate: the size the latest run asked for. */
  #warmMemoryMb: number
  readonly #watchdog: Watchdog
  readonly #keepAwake: KeepAwake
  readonly #running = new Set<() => void>()
  readonly #terminating = new Set<Promise<void>>()
  #warm: Promise<Sandbox> | undefined
  #disposed = false
  /** Isolates lost to an unrecoverable out-of-memory error, each a parked thread and a leaked heap. */
  #lost = 0
  readonly #maxLost: number
  /** Disposed isolates whose thread is still inside them RUNAWAY_AFTER_MS later. */
  #runaway = 0
  readonly #maxRunaway: number
  readonly #reuseIsolates: boolean
  /** Per tenant number, the isolate kept for its next run; oldest first. */
  readonly #recycled = new Map<number, Recycled>()
  readonly #tenants = new TenantNumbers()
  #reusedRuns = 0

  readonly #ceilings: Readonly<Partial<SandboxLimits>>

  constructor(ivm: IsolatedVm, settings: EngineSettings) {
    this.#ceilings = settings.ceilings
    this.#ivm = ivm
    this.#maxLost = settings.maxLost
    this.#maxRunaway = settings.maxRunaway
    this.#reuseIsolates = settings.reuseIsolates
    this.#warmMemoryMb = memoryLimitMb(settings.limits)
    this.#watchdog = new Watchdog(settings.watchdogIntervalMs)
    this.#keepAwake = new KeepAwake(settings.spinMicros, { yieldToContention: true })
  }

  /** @internal Tests only: runs given an isolate kept from their tenant's previous run. */
  get reusedRuns(): number {
    return this.#reusedRuns
  }

  /**
   * @internal Whether this engine lost an isolate to V8's fatal out-of-memory error or has a
   * stopped program still running native code: either leaves a thread (and a heap) behind that
   * only the end of the process releases. A child process serving runs (process-child.ts) asks
   * after each run, and is replaced once it says yes.
   */
  get leaking(): boolean {
    return this.#lost > 0 || this.#runaway > 0
  }

  #newSandbox(memoryMb: number): Promise<Sandbox> {
    return prepareSandbox(this.#ivm, memoryMb, () => {
      this.#lost += 1
    })
  }

  /** Start preparing the next isolate unless one is ready or on its way. */
  refill(): Promise<Sandbox> | undefined {
    if (this.#disposed || this.#warm !== undefined) return this.#warm
    const warm = this.#newSandbox(this.#warmMemoryMb)
    // A failed warm-up is retried by the next run itself, which then reports the fault.
    warm.catch(() => {
      if (this.#warm === warm) this.#warm = undefined
    })
    this.#warm = warm
    return warm
  }

  async #takeSandbox(memoryMb: number): Promise<Sandbox> {
    const warm = this.#warm
    this.#warm = undefined
    const warmFits = memoryMb === this.#warmMemoryMb
    this.#warmMemoryMb = memoryMb
    if (warm !== undefined && !warmFits) {
      // Runs now ask for another size: drop this one so the next warm-up matches them.
      warm.then(disposeUnused, () => {})
    }
    if (warm !== undefined && warmFits) {
      try {
        return await warm
      } catch {
        // Fall through: a fresh attempt reports the host fault if it persists.
      }
    }
    return this.#newSandbox(memoryMb)
  }

  /** The isolate kept for `tenant`'s next run, if there is one of the size asked for. */
  async #takeRecycled(tenant: number, memoryMb: number): Promise<Sandbox | undefined> {
    const kept = this.#recycled.get(tenant)
    if (kept === undefined) return undefined
    this.#recycled.delete(tenant)
    clearTimeout(kept.timer)
    const sandbox = await kept.ready
    if (sandbox === undefined) return undefined
    if (sandbox.home.memoryMb !== memoryMb || sandbox.home.lost) {
      disposeUnused(sandbox)
      return undefined
    }
    return sandbox
  }

  get ceilings(): Readonly<Partial<SandboxLimits>> {
    return this.#ceilings
  }

  async run(asked: EngineRunRequest): Promise<EngineRunResult> {
    if (this.#disposed) throw new DisposedError('isolated-vm engine')
    const limits = withCeilings(asked.limits, this.#ceilings)
    const request = limits === asked.limits ? asked : { ...asked, limits }
    const { signal } = request
    if (signal.aborted) return { ok: false, error: abortedFailure() }
    if (utf8Length(request.code) > limits.maxSourceBytes) {
      return { ok: false, error: limitFailure('maxSourceBytes', limits) }
    }
    if (this.#lost >= this.#maxLost) {
      throw new ToolError(
        ToolErrorCode.CODE_RUN_FAILED,
        `the isolated-vm engine runs no more programs: ${this.#lost} ran V8 out of memory beyond recovery, each leaking a thread and its heap until the process exits (maxLostIsolates ${this.#maxLost}); restart the process, or use the QuickJS engine, whose memory limit is hard`,
      )
    }
    if (this.#runaway >= this.#maxRunaway) {
      throw new ToolError(
        ToolErrorCode.CODE_RUN_FAILED,
        `the isolated-vm engine runs no programs for now: ${this.#runaway} stopped programs are still running native V8 code that ignores the stop, each keeping a CPU core busy until its loop ends (maxRunawayIsolates ${this.#maxRunaway}); runs resume when one ends. Where programs are hostile, use the QuickJS engine, whose worker thread is stopped whatever it runs`,
      )
    }
    const memoryMb = memoryLimitMb(limits)
    const tenant = this.#tenants.of(request.tenant)
    const kept = await this.#takeRecycled(tenant, memoryMb)
    if (kept !== undefined) this.#reusedRuns += 1
    const sandbox = kept ?? (await this.#takeSandbox(memoryMb))
    if (this.#disposed || signal.aborted) {
      disposeUnused(sandbox)
      if (this.#disposed) throw new DisposedError('isolated-vm engine')
      return { ok: false, error: abortedFailure() }
    }
    return this.#runIn(sandbox, request, tenant)
  }

  #runIn(sandbox: Sandbox, request: EngineRunRequest, tenant: number): Promise<EngineRunResult> {
    const { limits, signal, host, code } = request
    const { home, route } = sandbox
    const { isolate } = home
    home.runs += 1
    return new Promise<EngineRunResult>((resolve, reject) => {
      let over = false
      const finish = (result: EngineRunResult): void => {
        if (over) return
        over = true
        // From here on the guest reaches nothing on the host.
        route.current = undefined
        unwatch()
        signal.removeEventListener('abort', onAbort)
        this.#running.delete(onDispose)
        this.#release(sandbox, tenant, endedCleanly(result) ? cpuTimeOf(isolate) : undefined)
        resolve(result)
      }
      const fail = (error: EngineFailure): void => finish({ ok: false, error })
      const onAbort = (): void => fail(abortedFailure())
      const onDispose = (): void => fail({ kind: 'aborted', message: 'the engine was disposed during the run' })
      const unwatch = this.#watchdog.watch({
        cpuTimeNs: () => isolate.cpuTime,
        cpuLimitNs: isolate.cpuTime + BigInt(limits.cpuTimeMs) * 1_000_000n,
        deadline: performance.now() + limits.wallTimeMs,
        breach: (limit) => fail(limitFailure(limit, limits)),
      })
      signal.addEventListener('abort', onAbort, { once: true })
      this.#running.add(onDispose)
      route.current = makeActiveRun(host, request, new RunMeter(limits), limits.memoryLimitBytes, this.#keepAwake, {
        breach: (limit) => fail(limitFailure(limit, limits)),
        done: (text) => finish(decodeSettled(text, request)),
      })
      // Not awaited: isolated-vm runs one isolate's tasks in order, so the program runs after it.
      sandbox.bridge.arm
        .apply(undefined, armArguments(request.tools, limits), { arguments: { copy: true } })
        .catch((cause: unknown) => {
          if (over) return
          // The prelude's init never throws for a host-made tool list: this is a host fault.
          finish({ ok: false, error: abortedFailure() })
          reject(new ToolError(ToolErrorCode.CODE_RUN_FAILED, 'isolated-vm failed to start the program', { cause }))
        })
      sandbox.context.eval(programScript(code), PROGRAM_SCRIPT_ORIGIN).then(
        () => {},
        (error: unknown) => {
          if (over) return
          // isolated-vm disposes an isolate on its own only when the heap runs out.
          if (isolate.isDisposed) return fail(limitFailure('memoryLimitBytes', limits))
          const syntax = syntaxFailure(error, code)
          // Anything else is a rejection nobody handled in the first task; the program's own
          // promise is always handled, so the run goes on and `done` reports it.
          if (syntax !== undefined) fail(syntax)
        },
      )
    })
  }

  /**
   * After a run, off its result's latency path (one turn of the event loop later: queueing work
   * for the isolate waits, on the main thread, for the isolate's thread to finish the task it is
   * in; measured up to 4.7 ms after the program's result came). An isolate whose program ended
   * cleanly is kept for its tenant's next run, with a fresh context, unless reuse is off, the
   * tenant has one kept already, or it turns out not to be quiet (see #recycle). Any other is
   * terminated. `cpuAtEnd`: the isolate's CPU time when a clean run ended; undefined otherwise.
   */
  #release(sandbox: Sandbox, tenant: number, cpuAtEnd: bigint | undefined): void {
    const later = new Promise<void>((resolve) => setImmediate(resolve))
    if (cpuAtEnd === undefined || !this.#reuseIsolates || this.#recycled.has(tenant) || this.#disposed) {
      this.#terminate(sandbox, later)
      return
    }
    const ready = later.then(() => this.#recycle(sandbox, cpuAtEnd))
    const kept: Recycled = {
      ready,
      timer: setTimeout(() => this.#retire(tenant, kept), RECYCLED_IDLE_MS),
    }
    // An idle isolate need not keep the process alive.
    kept.timer.unref()
    this.#recycled.set(tenant, kept)
    if (this.#recycled.size > MAX_RECYCLED) {
      const [oldest] = this.#recycled.keys()
      this.#retire(oldest as number, this.#recycled.get(oldest as number) as Recycled)
    }
  }

  /**
   * A fresh context in `old`'s isolate, or undefined if the isolate is thrown away instead. Nothing
   * of the old context's program may ever run again: its bridge lets no answer in any more, and
   * the isolate must be quiet, its thread through with every task the program had queued (see
   * {@link whenQuiet}): a program that returned while it still spins (a loop in a promise chain, a
   * sub-call's answer already on its way that starts one) is stopped within a few ms of CPU. That
   * isolate is terminated, like one whose heap and array buffers together are over
   * {@link MAX_USED_HEAP_TO_REUSE} of its limit or that has run {@link MAX_RUNS_PER_ISOLATE}
   * programs. The new context shares no object with the old one.
   */
  async #recycle(old: Sandbox, cpuAtEnd: bigint): Promise<Sandbox | undefined> {
    const { home } = old
    old.bridge.close()
    const heap = await whenQuiet(home.isolate, cpuAtEnd)
    const reusable =
      heap !== undefined &&
      !home.lost &&
      !this.#disposed &&
      home.runs < MAX_RUNS_PER_ISOLATE &&
      // Array buffers count against isolated-vm's limit too, and an old context's stay allocated
      // until a collection (measured: a 16 MB buffer then failed to allocate in a 32 MB isolate).
      heap.used_heap_size + heap.externally_allocated_size <= home.memoryMb * MIB * MAX_USED_HEAP_TO_REUSE
    if (!reusable) {
      this.#terminate(old, Promise.resolve())
      return undefined
    }
    old.context.release()
    try {
      return await prepareContext(this.#ivm, home)
    } catch {
      // The isolate is quiet: no guest work is queued that a plain dispose could miss.
      disposeNow(home.isolate)
      return undefined
    } finally {
      // A run that took the pre-warmed isolate leaves it to be replaced, after this preparation.
      void this.refill()
    }
  }

  /** Throw away the isolate kept for `tenant`, if it is still `kept`. */
  #retire(tenant: number, kept: Recycled): void {
    if (this.#recycled.get(tenant) !== kept) return
    this.#recycled.delete(tenant)
    clearTimeout(kept.timer)
    void kept.ready.then((sandbox) => {
      if (sandbox !== undefined) disposeUnused(sandbox)
    })
  }

  /** Terminate the isolate once `after` settles, then prepare the next one. */
  #terminate(sandbox: Sandbox, after: Promise<void>): void {
    const { home } = sandbox
    const done = after
      .then(() => {
        sandbox.bridge.close()
        // Nothing runs in a lost isolate any more, and a task queued behind its parked thread would never run.
        if (home.lost) {
          disposeNow(home.isolate)
          return
        }
        // The next isolate is prepared once this one is disposed: until then it spins on a core (see
        // terminate-isolate.ts), which the preparation would compete for.
        return terminateIsolate(this.#ivm, home.isolate, sandbox.context).then(({ released }) => this.#watchRelease(home, released))
      })
      .finally(() => {
        // Not returned: a failed warm-up is the next run's to report, not this chain's.
        void this.refill()
      })
    this.#terminating.add(done)
    void done.finally(() => this.#terminating.delete(done))
  }

  /**
   * Count a disposed isolate as a runaway while its thread stays inside it past RUNAWAY_AFTER_MS.
   * One lost after disposal (V8 ran out of memory in work the program left) never lets `released`
   * settle: its thread is parked, not spinning, and it counts as lost instead.
   */
  #watchRelease(home: IsolateHome, released: Promise<void>): void {
    let counted = false
    const timer = setTimeout(() => {
      counted = true
      this.#runaway += 1
    }, RUNAWAY_AFTER_MS)
    // A runaway thread keeps the process alive on its own; this timer need not.
    timer.unref()
    void Promise.race([released, home.parked]).then(() => {
      clearTimeout(timer)
      if (counted) this.#runaway -= 1
    })
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return
    this.#disposed = true
    this.#watchdog.dispose()
    for (const stop of [...this.#running]) stop()
    const warm = this.#warm
    this.#warm = undefined
    if (warm !== undefined) {
      try {
        disposeUnused(await warm)
      } catch {
        // A warm-up that failed holds nothing.
      }
    }
    // Each kept isolate is disposed, or, found not quiet, joins those terminating.
    const kept = [...this.#recycled]
    for (const [tenant, slot] of kept) this.#retire(tenant, slot)
    await Promise.all(kept.map(([, slot]) => slot.ready))
    await Promise.all([...this.#terminating])
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose()
  }
}

function positiveCount(name: string, value: number | undefined, fallback: number): number {
  const count = value ?? fallback
  if (!Number.isSafeInteger(count) || count < 1) {
    throw new ToolDefinitionError(`${name} must be a positive integer, got ${String(value)}`)
  }
  return count
}

/**
 * Whether a run ended with nothing of it still owed to the isolate: a value, or the program's own
 * error. A broken limit (stack overflow and out of memory included), an abort or a host fault
 * throws the isolate away.
 */
function endedCleanly(result: EngineRunResult): boolean {
  return result.ok || result.error.kind === 'guest' || result.error.kind === 'result'
}

/** The isolate's CPU time, or undefined once it is disposed (isolated-vm did so: out of memory). */
function cpuTimeOf(isolate: Isolate): bigint | undefined {
  try {
    return isolate.cpuTime
  } catch {
    return undefined
  }
}

/**
 * The isolate's heap statistics once its thread is through with every task queued before (isolated-vm
 * answers `getHeapStatistics` from the isolate's own thread, after them), or undefined if it stays
 * busy: {@link QUIET_MS} have passed, or the isolate has used {@link QUIET_CPU_NS} of CPU since
 * `cpuAtEnd`. A program's end leaves at most a few microtasks behind; more is a program still running
 * after its result was reported, which no watchdog limits any more, so it is given little.
 */
function whenQuiet(isolate: Isolate, cpuAtEnd: bigint): Promise<HeapStatistics | undefined> {
  return new Promise((resolve) => {
    const deadline = performance.now() + QUIET_MS
    const busy = (): boolean => {
      const cpu = cpuTimeOf(isolate)
      return cpu === undefined || cpu - cpuAtEnd > QUIET_CPU_NS
    }
    let timer: ReturnType<typeof setTimeout> | undefined
    const answer = (heap: HeapStatistics | undefined): void => {
      clearTimeout(timer)
      resolve(heap)
    }
    const poll = (): void => {
      if (busy() || performance.now() > deadline) answer(undefined)
      else timer = setTimeout(poll, 1)
    }
    isolate.getHeapStatistics().then(
      (heap) => answer(busy() ? undefined : heap),
      () => answer(undefined),
    )
    timer = setTimeout(poll, 1)
  })
}

function abortedFailure(): EngineFailure {
  return { kind: 'aborted', message: 'the run was aborted' }
}

/** Turn the settle function's tagged text into a run result. */
function decodeSettled(text: string, request: EngineRunRequest): EngineRunResult {
  const { limits, code } = request
  const tag = text.charAt(0)
  const body = text.slice(1)
  if (tag === 'R') {
    const finish = parseFinish(body)
    if (finish.ok) return { ok: true, resultJson: finish.json }
    if (finish.limit === 'maxResultBytes') {
      return { ok: false, error: { kind: 'limit', limit: 'maxResultBytes', message: finish.message } }
    }
    return { ok: false, error: { kind: 'result', message: finish.message, path: finish.path } }
  }
  if (tag === 'E') {
    const raw = readRawError(body)
    const limit = limitOfGuestError(raw)
    if (limit !== undefined) return { ok: false, error: limitFailure(limit, limits) }
    return { ok: false, error: guestFailure(raw, { code }) }
  }
  return {
    ok: false,
    error: { kind: 'guest', name: 'Error', message: 'the program failed with an error that could not be described' },
  }
}

function readRawError(text: string): RawGuestError {
  try {
    const value = parseJsonText(text, 'guest error')
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const name = typeof value.name === 'string' ? value.name : 'Error'
      const message = typeof value.message === 'string' ? value.message : ''
      const raw: { name: string; message: string; stack?: string; code?: string } = { name, message }
      if (typeof value.stack === 'string') raw.stack = value.stack
      if (typeof value.code === 'string') raw.code = value.code
      return raw
    }
  } catch {
    // Fall through to a generic description.
  }
  return { name: 'Error', message: 'the program failed with an error that could not be described' }
}

/**
 * The host functions one run exposes through the bridge. They never throw or reject: a rejection
 * crossing `Reference.apply` would surface as an unhandled rejection in the host, and a host Error
 * would carry host paths into the guest.
 */
function makeActiveRun(
  host: GuestHost,
  request: EngineRunRequest,
  meter: RunMeter,
  memoryLimitBytes: number,
  keepAwake: KeepAwake,
  outcome: { breach(limit: SandboxLimitName): void; done(text: string): void },
): ActiveRun {
  const names = new Set(request.tools.map((tool) => tool.name))
  let over = false
  const fail = (limit: SandboxLimitName): string => {
    over = true
    outcome.breach(limit)
    return RUN_OVER
  }
  return {
    async call(name, argsJson) {
      keepAwake.activity()
      if (over) return RUN_OVER
      if (!names.has(name)) return failureEnvelope(`"${name}" is not a tool of this program`, 'UNKNOWN_TOOL')
      const broken = meter.startCall()
      if (broken !== undefined) return fail(broken)
      try {
        const outcome = await host.call(name, argsJson)
        return outcome.ok ? answerEnvelope(name, outcome.valueJson, memoryLimitBytes) : failureEnvelope(outcome.message, outcome.code)
      } catch {
        return failureEnvelope(`the tool "${name}" failed inside the host`, 'TOOL_FAILED')
      } finally {
        meter.settleCall()
        // The answer crosses once this returns; the program's next call is likely right behind.
        keepAwake.answered()
      }
    },
    log(level, text, overLimit) {
      keepAwake.activity()
      if (over) return
      // Each line counts its line break too, so a flood of empty lines is bounded like any other.
      const broken = overLimit ? 'maxLogBytes' : meter.log(text.length + 1)
      if (broken !== undefined) {
        fail(broken)
        return
      }
      try {
        host.log({ level: LOG_LEVELS.has(level) ? (level as LogLevel) : 'log', text })
      } catch {
        // A failing log sink must not reach the guest.
      }
    },
    done(text) {
      over = true
      outcome.done(text)
    },
    lost() {
      if (!over) fail('memoryLimitBytes')
    },
    breach(limit) {
      if (!over) fail(limit)
    },
  }
}

/**
 * Create the isolated-vm engine. isolated-vm is imported here, on first use, so an application
 * that never picks this engine never loads the native addon; when it is missing, failed to build,
 * or Node 20+ lacks `--no-node-snapshot`, this rejects with `IsolatedVmUnavailableError`.
 *
 * Each run gets a fresh context in an isolate of its own (memory limit `memoryLimitBytes`, rounded
 * up to MB, at least 8 MB, at most {@link MAX_MEMORY_LIMIT_BYTES}, a ceiling over every run). An
 * isolate whose program ended cleanly and quietly runs its tenant's next program, in a new context
 * prepared right after the run (see {@link IsolatedVmEngineOptions.reuseIsolates}); any other is
 * disposed when the run ends (anything the program left running stops within milliseconds, see
 * terminate-isolate.ts). A new isolate is kept pre-warmed for runs that have none kept.
 * Limits are enforced on the host: CPU and wall time by a watchdog that disposes the isolate (this
 * also stops a loop that starts after an `await`), sub-calls and console volume by
 * {@link RunMeter}, source size before compiling, result size inside the guest before copying.
 * `stackSizeBytes` cannot be set per isolate in isolated-vm 5: a program gets the stack of the
 * isolated-vm thread it runs on (the platform's default thread stack, 8 MB on Linux with
 * `ulimit -s 8192`, less 24 KB isolated-vm keeps for native code). Overflowing it, uncaught, is
 * reported as the `stackSizeBytes` limit; a program may also catch its own RangeError.
 */
export async function createIsolatedVmEngine(options: IsolatedVmEngineOptions = {}): Promise<SandboxEngine> {
  const limits = resolveLimits(options.limits)
  const spinMicros = spinMicrosOption(options.spinMicros)
  const memory = options.limits?.memoryLimitBytes
  if (memory !== undefined && memory > MAX_MEMORY_LIMIT_BYTES) {
    throw new ToolDefinitionError(
      `memoryLimitBytes ${memory} is over the ${MAX_MEMORY_LIMIT_BYTES} (256 MiB) the isolated-vm engine allows: past about 384 MiB a program can grow an array to V8's maximum length, which aborts the whole process; use the QuickJS engine for a bigger heap`,
    )
  }
  // Runs asking for more get the most there is, as with any ceiling.
  const ceilings = Object.freeze({ ...options.limits, memoryLimitBytes: memory ?? MAX_MEMORY_LIMIT_BYTES })
  const maxLost = positiveCount('maxLostIsolates', options.maxLostIsolates, DEFAULT_MAX_LOST_ISOLATES)
  const maxRunaway = positiveCount('maxRunawayIsolates', options.maxRunawayIsolates, DEFAULT_MAX_RUNAWAY_ISOLATES)
  const isolation = options.isolation ?? 'process'
  if (isolation !== 'process' && isolation !== 'in-process') {
    throw new ToolDefinitionError(`isolation must be 'process' or 'in-process', got ${String(isolation)}`)
  }
  if (isolation === 'process') {
    const processes = positiveCount('processes', options.processes, Math.min(2, availableParallelism()))
    const maxProcesses = positiveCount('maxProcesses', options.maxProcesses, Math.max(DEFAULT_MAX_PROCESSES, processes))
    if (maxProcesses < processes) throw new ToolDefinitionError('maxProcesses must be an integer no smaller than processes')
    assertIsolatedVmInstalled()
    return createProcessEngine({
      // Each child replaces itself after one leak, so maxLostIsolates and maxRunawayIsolates do not apply.
      childOptions: {
        ...(options.limits === undefined ? {} : { limits: options.limits }),
        ...(options.watchdogIntervalMs === undefined ? {} : { watchdogIntervalMs: options.watchdogIntervalMs }),
        // A child spinning for its isolate's next call competes with that isolate and this process
        // for the cores (measured: 148-224 us per sub-call spinning, 131-137 without): off unless asked.
        spinMicros: options.spinMicros ?? 0,
        reuseIsolates: options.reuseIsolates ?? true,
      },
      ceilings,
      processes,
      maxProcesses,
      maxQueuedRuns: positiveCount('maxQueuedRuns', options.maxQueuedRuns, 1000),
      maxProcessesPerAgent: positiveCount('maxProcessesPerAgent', options.maxProcessesPerAgent, Math.max(1, Math.floor(maxProcesses / 4))),
    })
  }
  // Options are checked before the native addon is loaded: a typo should not cost a load.
  const ivm = await loadIsolatedVm()
  const engine = new IsolatedVmEngine(ivm, {
    limits,
    ceilings,
    watchdogIntervalMs: options.watchdogIntervalMs,
    spinMicros,
    maxLost,
    maxRunaway,
    reuseIsolates: options.reuseIsolates ?? true,
  })
  // Surface a broken install now, as a host fault, rather than in the first run.
  await engine.refill()
  return engine
}
