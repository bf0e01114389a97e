/**
 * The one engine interface every sandbox adapter implements (QuickJS in worker threads,
 * isolated-vm on its own isolate thread). An engine runs one untrusted program per `run()`.
 *
 * Guest failures are RESULTS (`{ ok: false, error }`), never throws: a hostile program that loops,
 * allocates without end, recurses, floods calls or logs, or returns a cyclic or giant value gets
 * a failure naming what it broke. Only host faults (engine used after dispose, a broken install)
 * throw. After any limit breach, abort or host-side fault the engine throws the isolate / WASM
 * module that ran the program away; nothing of one run is visible to the next.
 */

/** Console levels captured from the guest. */
export type LogLevel = 'log' | 'info' | 'warn' | 'error'

/** One captured console line. */
export interface LogEntry {
  readonly level: LogLevel
  readonly text: string
}

/** Hard limits of one run, all enforced on the host side. */
export interface SandboxLimits {
  /** Wall-clock budget of the whole run, sub-calls included. */
  readonly wallTimeMs: number
  /** CPU time the guest itself may use (a loop after an `await` counts too). */
  readonly cpuTimeMs: number
  /** Guest heap budget. */
  readonly memoryLimitBytes: number
  /** Guest stack budget (QuickJS: capped at 256 KiB, past which recursion overflows the host stack inside WASM). */
  readonly stackSizeBytes: number
  /** UTF-8 bytes of the program text. */
  readonly maxSourceBytes: number
  /** Sub-calls one run may start in total. */
  readonly maxSubCalls: number
  /** Sub-calls started but not yet settled at any moment. */
  readonly maxSubCallsInFlight: number
  /** UTF-16 code units of console output (each line's text plus one for its line break). */
  readonly maxLogBytes: number
  /** Length of the returned value's JSON text. */
  readonly maxResultBytes: number
  /**
   * Length of one sub-call's argument JSON text. A larger call is refused to the program (it gets
   * an `INVALID_ARGS` error it can handle) before it is numbered, dispatched or logged, so a
   * program cannot fill the host's memory or the durable session log through arguments.
   */
  readonly maxArgumentBytes: number
  /**
   * Length of the argument JSON text of all of one run's sub-calls together. A call that would
   * pass it is refused to the program like one over {@link maxArgumentBytes}: the per-call limit
   * alone would let a run of many large calls fill the host's memory and the session log.
   */
  readonly maxTotalArgumentBytes: number
}

/** The name of one limit. */
export type SandboxLimitName = keyof SandboxLimits

/** A tool the guest can call: `tools[binding](args)` dispatches `name`. */
export interface ToolBinding {
  /** A safe JavaScript identifier, unique within one run. */
  readonly binding: string
  /** The registered tool name. */
  readonly name: string
  /**
   * Present when the program discovers its tools in the sandbox (a large tool set): the one-line
   * summary `tools.$search` returns and the declaration `tools.$describe` returns.
   */
  readonly summary?: string
  readonly declaration?: string
}

/** The outcome of one guest SDK call as the guest receives it. */
export type HostCallOutcome =
  | { readonly ok: true; readonly valueJson: string }
  | { readonly ok: false; readonly message: string; readonly code: string }

/** What the engine calls back into, on the host's main thread. */
export interface GuestHost {
  /**
   * One SDK call, in program order. Never rejects. Arguments arrive as JSON text written inside
   * the guest, so no guest object (getter, Proxy, cycle) ever reaches the host.
   */
  call(name: string, argsJson: string): Promise<HostCallOutcome>
  /** One console line, delivered as it is written (so logs survive a later kill). */
  log(entry: LogEntry): void
}

/** One program to run. */
export interface EngineRunRequest {
  /** JavaScript (types already stripped): the body of an async function; top-level await/return. */
  readonly code: string
  readonly tools: readonly ToolBinding[]
  readonly limits: SandboxLimits
  readonly host: GuestHost
  /** Aborting stops the program at once (hard); the run resolves `{ kind: 'aborted' }`. */
  readonly signal: AbortSignal
  /**
   * Whose run this is (`run_code` passes the agent). Runs of different tenants never share a
   * QuickJS heap or an isolated-vm isolate: a memory-safety bug of the engine cannot show one
   * tenant what another left in it. Absent: one anonymous tenant.
   */
  readonly tenant?: object
}

/** Why a run failed. Line and column are the program's own (1-based), never a host location. */
export type EngineFailure =
  | { readonly kind: 'limit'; readonly limit: SandboxLimitName; readonly message: string }
  | {
      readonly kind: 'guest'
      readonly name: string
      readonly message: string
      /** The thrown error's own string `code`, such as a failed tool call's (`TOOL_FAILED`, `DENIED`). */
      readonly code?: string
      readonly line?: number
      readonly column?: number
      /** The guest's own stack frames, program positions only. */
      readonly stack?: string
    }
  /** The returned value cannot cross the JSON boundary; `path` names where (`$.a[2]`). */
  | { readonly kind: 'result'; readonly message: string; readonly path: string }
  | { readonly kind: 'aborted'; readonly message: string }

/** The result of one run. `resultJson` is the returned value as JSON text (`undefined` → `null`). */
export type EngineRunResult =
  | { readonly ok: true; readonly resultJson: string }
  | { readonly ok: false; readonly error: EngineFailure }

/** A sandbox engine. Disposable; using it after `dispose()` throws `DisposedError`. */
export interface SandboxEngine extends AsyncDisposable {
  /** `quickjs` or `isolated-vm`. */
  readonly name: string
  /**
   * The engine's own ceilings (its `limits` option): a run is held to the lower of its requested
   * limit and the ceiling. Absent: no ceilings.
   */
  readonly ceilings?: Readonly<Partial<SandboxLimits>>
  /** Run one program. Resolves with a result for every guest behaviour; throws only on host faults. */
  run(request: EngineRunRequest): Promise<EngineRunResult>
  /** Stop every run, release every worker / isolate. Idempotent. */
  dispose(): Promise<void>
}
