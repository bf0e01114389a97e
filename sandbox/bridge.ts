import type { Agent, CodeModeHost } from '../src/context.ts'
import { ToolErrorCode } from '../src/errors.ts'
import type { ToolExecutionInput, ToolExecutionToken, ToolRunContext } from '../src/execution.ts'
import type { CodeProgress } from '../src/events.ts'
import { parseDurableJson, snapshotJson, stringifyJson } from '../src/json-boundary.ts'
import type { JsonValue } from '../src/json-boundary.ts'
import type { ContentBlock, UserMessage } from '../src/messages.ts'
import { describeThrown } from '../src/results.ts'
import { CallScheduler } from '../src/scheduler.ts'
import { codeDispatchEvent, codeDispatchStartEvent } from '../src/session-log.ts'
import type { SessionEvent, SessionLog } from '../src/session-log.ts'
import type { GuestHost, HostCallOutcome, LogEntry, SandboxLimits } from './engine.ts'

/**
 * Sub-calls numbered so far per run_code execution. A tools/execute wrapper may run the body of one
 * execution again (a retry): its sub-calls go on from the last number, so ids never repeat.
 */
const callCounts = new WeakMap<ToolExecutionToken, { count: number }>()

/**
 * The guest ↔ host bridge of one `run_code` run. Each SDK call becomes an ordinary
 * `execute()` through the full pipeline, carrying `parent: <run_code token>`, the run's agent and
 * signal, and the id `<parent>:code:<n>` (n from 1 in program call order). Starts are scheduled by
 * `executionMode`: parallel-safe calls overlap up to `maxParallelSubCalls`, exclusive ones run
 * alone. Every settled call goes through `tools/code-dispatch-log` and into the agent's session.
 */
export class RunBridge implements GuestHost {
  readonly logs: LogEntry[] = []
  readonly #host: CodeModeHost
  readonly #exec: ToolRunContext
  // Per-run constants, read once: the run context and its agent are frozen.
  readonly #callId: string
  readonly #agent: Agent | undefined
  readonly #session: SessionLog | undefined
  readonly #scheduler: CallScheduler
  /** Aborted when the caller cancels (forwarded from its signal) or the program ended. */
  readonly #abort = new AbortController()
  readonly #forwardAbort = (): void => this.#abort.abort(this.#exec.signal.reason)
  /** Whether any sub-call started: then its tool may still hold the signal when the program ends. */
  #started = false
  /** Sub-calls started and not yet settled and logged. */
  #inFlight = 0
  /** The tool of each sub-call the program has not had its answer to yet, by call number. */
  readonly #unanswered = new Map<number, string>()
  /** The tools of the sub-calls still unanswered when the program ended (set by drain()). */
  #pendingAtEnd: readonly string[] = []
  /** Settles when `#inFlight` next drops to 0; made only while `drain()` waits. */
  #idle: Promise<void> | undefined
  #wakeIdle: (() => void) | undefined
  /** Deferred contexts of each sub-call, by call number, so they are ferried in call order. */
  readonly #contexts: UserMessage[][] = []
  readonly #logFailures: unknown[] = []
  /** Sub-calls numbered so far, shared by every attempt of one run_code execution (see callCounts). */
  readonly #calls: { count: number }
  #concludes = false

  readonly #maxArgumentBytes: number
  readonly #maxTotalArgumentBytes: number
  /** Argument characters of the calls accepted so far. */
  #argumentBytes = 0
  /** Live progress (`tools/code-progress`), when someone listens: each start, settle and console line. */
  readonly #progress: ((progress: CodeProgress) => void) | undefined

  /**
   * What the first sub-call waits for before anything about it happens (see the constructor);
   * cleared once it has passed, kept (rejected) once it has refused.
   */
  #gate: (() => Promise<void>) | undefined
  #gatePassed: Promise<void> | undefined
  /** The tools of the calls waiting for the gate: unanswered, but numbered and logged only once it passes. */
  readonly #gateWaiting: string[] = []

  /**
   * `progress` reports this run's steps live; leave it out when nobody listens. `gate` (the
   * program's type check, for a program that reached `tools` without naming them) runs on the
   * first sub-call, which waits for it before it gets a number or a start event: a refusal
   * consumes no id and writes nothing, and that call and every later one get a `CODE_RUN_FAILED`
   * error (the run reports the refusal itself).
   */
  constructor(host: CodeModeHost, exec: ToolRunContext, limits: SandboxLimits, progress?: (progress: CodeProgress) => void, gate?: () => Promise<void>) {
    this.#gate = gate
    this.#progress = progress
    this.#host = host
    this.#exec = exec
    this.#callId = exec.callId
    this.#agent = exec.agent
    this.#session = exec.agent?.session
    this.#maxArgumentBytes = limits.maxArgumentBytes
    this.#maxTotalArgumentBytes = limits.maxTotalArgumentBytes
    this.#scheduler = new CallScheduler(host.maxParallelSubCalls)
    let calls = callCounts.get(exec.token)
    if (calls === undefined) callCounts.set(exec.token, (calls = { count: 0 }))
    this.#calls = calls
    // Not AbortSignal.any, whose bookkeeping cost more than the rest of a `return 1` run's bridge.
    if (exec.signal.aborted) this.#forwardAbort()
    else exec.signal.addEventListener('abort', this.#forwardAbort, { once: true })
  }

  /** Aborted when the run's caller cancels or the program ended; the engine run uses it too. */
  get signal(): AbortSignal {
    return this.#abort.signal
  }

  /** True when a nested successful call asked to conclude the turn. */
  get concludesTurn(): boolean {
    return this.#concludes
  }

  /**
   * The tool of each sub-call that was still running when the program ended (returned, threw or
   * was stopped), in call order: drain() cancelled them. Empty until drain() runs. A program that
   * returns with calls still running most likely forgot an `await`; the model is told so.
   */
  get pendingAtEnd(): readonly string[] {
    return this.#pendingAtEnd
  }

  /** Session writes that failed; a run with a broken durable log must not pass as a success. */
  get logFailures(): readonly unknown[] {
    return this.#logFailures
  }

  log(entry: LogEntry): void {
    this.logs.push(entry)
    this.#progress?.({ type: 'log', level: entry.level, text: entry.text })
  }

  call(name: string, argsJson: string): Promise<HostCallOutcome> {
    if (this.#gate !== undefined) return this.#afterGate(this.#gate, name, argsJson)
    if (argsJson.length > this.#maxArgumentBytes) {
      return Promise.resolve({
        ok: false,
        message: `the arguments of "${name}" are ${argsJson.length} characters of JSON; the limit is ${this.#maxArgumentBytes} (maxArgumentBytes): pass less data per call`,
        code: ToolErrorCode.INVALID_ARGS,
      })
    }
    if (this.#argumentBytes + argsJson.length > this.#maxTotalArgumentBytes) {
      return Promise.resolve({
        ok: false,
        message: `the arguments of "${name}" would take this program's tool calls past ${this.#maxTotalArgumentBytes} characters of JSON arguments in all (maxTotalArgumentBytes): pass less data`,
        code: ToolErrorCode.INVALID_ARGS,
      })
    }
    this.#argumentBytes += argsJson.length
    this.#started = true
    const index = ++this.#calls.count
    return this.#settle(index, name, argsJson)
  }

  /**
   * A call made before the gate has passed: it waits for the gate (or the end of the run), then is
   * made as any call. Calls that waited together resume in the order they were made, so their
   * numbers stay in program order.
   */
  async #afterGate(gate: () => Promise<void>, name: string, argsJson: string): Promise<HostCallOutcome> {
    this.#gatePassed ??= gate()
    this.#gateWaiting.push(name)
    let refused = false
    try {
      await untilAborted(this.#gatePassed, this.#abort.signal)
    } catch {
      refused = true
    } finally {
      this.#gateWaiting.splice(this.#gateWaiting.indexOf(name), 1)
    }
    // Cancelled, or the program ended (drain()) while this call waited: it never starts.
    if (this.#abort.signal.aborted) return { ok: false, message: `"${name}" was not called: the run was over before its type check answered`, code: ToolErrorCode.ABORTED_BEFORE_DISPATCH }
    if (refused) return { ok: false, message: `"${name}" was not called: the program failed its type check (the run's result names the mistakes)`, code: ToolErrorCode.CODE_RUN_FAILED }
    this.#gate = undefined
    return this.call(name, argsJson)
  }

  /**
   * End the run: abort whatever sub-calls are still in flight or queued and wait until every one
   * has settled and been logged, then hand the nested contexts to the outer call in call order.
   */
  async drain(): Promise<void> {
    this.#exec.signal.removeEventListener('abort', this.#forwardAbort)
    if (this.#unanswered.size > 0 || this.#gateWaiting.length > 0) this.#pendingAtEnd = [...this.#gateWaiting, ...this.#unanswered.values()]
    // Only sub-calls' tools (and calls waiting for the gate) were handed the signal besides the engine, whose run is over.
    if (this.#started || this.#gateWaiting.length > 0) this.#abort.abort(new Error('the program finished'))
    while (this.#inFlight > 0) {
      this.#idle ??= new Promise<void>((resolve) => {
        this.#wakeIdle = resolve
      })
      await this.#idle
    }
    for (const contexts of this.#contexts) for (const context of contexts ?? []) this.#exec.deferContext(context)
  }

  /**
   * One sub-call, counted in flight until it has settled and been logged. Never rejects. One async
   * function rather than a wrapper around another: this runs for every call a program makes.
   */
  async #settle(index: number, name: string, argsJson: string): Promise<HostCallOutcome> {
    this.#inFlight++
    this.#unanswered.set(index, name)
    let recording = false
    try {
      const exec = this.#exec
      const callId = this.#callId
      const subCallId = `${callId}:code:${index}`
      let args: JsonValue
      try {
        args = parseDurableJson(argsJson, 'arguments')
      } catch (error) {
        return { ok: false, message: `invalid arguments for "${name}": ${(error as Error).message}`, code: ToolErrorCode.INVALID_ARGS }
      }
      const agent = this.#agent
      // Two literals rather than a conditional spread, which takes V8's slow object-clone path.
      const input: ToolExecutionInput =
        agent === undefined
          ? { callId: subCallId, rootCallId: exec.rootCallId, name, arguments: args, parent: exec.token, signal: this.#abort.signal }
          : { callId: subCallId, rootCallId: exec.rootCallId, name, arguments: args, parent: exec.token, signal: this.#abort.signal, agent }
      // Submitted to the scheduler now, in program order (nothing above awaits), whenever the start
      // events are written: a session whose appends settle out of order cannot reorder the starts
      // or slip a call past an exclusive one. Each call still runs only once its own start is written.
      const written = this.#session === undefined ? undefined : this.#append(this.#session, codeDispatchStartEvent(callId, subCallId, name, args))
      const mode = this.#host.executionMode(input)
      const progress = this.#progress
      // Reported when the scheduler lets the call start; observers get their own frozen copy of the arguments.
      const execute =
        progress === undefined
          ? () => this.#host.execute(input)
          : () => {
              progress({ type: 'call-start', subCallId, name, arguments: snapshotJson(args) })
              return this.#host.execute(input)
            }
      const result = await this.#scheduler.run(mode, written === undefined ? execute : () => written.then(execute))
      if (result.additionalContexts !== undefined) this.#contexts[index - 1] = result.additionalContexts
      const outcome: HostCallOutcome = result.isError
        ? { ok: false, message: result.error.message, code: result.error.info?.code ?? ToolErrorCode.TOOL_FAILED }
        : { ok: true, valueJson: stringifyJson(result.value) }
      if (!result.isError && result.concludesTurn === true) this.#concludes = true
      if (progress !== undefined) {
        progress(outcome.ok ? { type: 'call-end', subCallId, name, isError: false } : { type: 'call-end', subCallId, name, isError: true, error: { code: outcome.code, message: outcome.message } })
      }
      // The program gets its answer now; the durable copy is made after it (the spec's "the program
      // already received the complete value"), so a slow log sink never holds the program up. The
      // call stays in flight until it is logged: drain() waits for that.
      recording = true
      void this.#record(subCallId, name, args, result.isError, result.content)
      return outcome
    } catch (error) {
      return {
        ok: false,
        message: `internal error while calling "${name}": ${describeThrown(error).message}`,
        code: ToolErrorCode.TOOL_FAILED,
      }
    } finally {
      // The program gets its answer as this returns; what the call still does is its logging.
      this.#unanswered.delete(index)
      if (!recording) this.#settled()
    }
  }

  /** `tools/code-dispatch-log`, then the `tool/code-dispatch` event, of one settled sub-call. Never rejects. */
  async #record(subCallId: string, name: string, args: JsonValue, isError: boolean, settled: ContentBlock[]): Promise<void> {
    try {
      const exec = this.#exec
      const agent = this.#agent
      const content = await this.#host.codeDispatchLog(
        agent === undefined ? { exec, subCallId, name, isError, content: settled } : { exec, agent, subCallId, name, isError, content: settled },
      )
      if (this.#session !== undefined) await this.#append(this.#session, codeDispatchEvent(this.#callId, subCallId, name, args, isError, content))
    } catch (error) {
      // The waterfall and the append contain their own failures; this is a bug of ours, kept with them.
      this.#logFailures.push(error)
    } finally {
      this.#settled()
    }
  }

  /** One sub-call fully done: wake drain() when it was the last. */
  #settled(): void {
    if (--this.#inFlight === 0 && this.#wakeIdle !== undefined) {
      const wake = this.#wakeIdle
      this.#idle = undefined
      this.#wakeIdle = undefined
      wake()
    }
  }

  /** Append one event; a failed write is kept in `logFailures`, never thrown. */
  async #append(session: SessionLog, event: SessionEvent): Promise<void> {
    try {
      await session.append(event)
    } catch (error) {
      this.#logFailures.push(error)
    }
  }
}

/** `promise`, or a rejection as soon as `signal` aborts (its listener removed either way). */
function untilAborted(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      () => {
        signal.removeEventListener('abort', onAbort)
        resolve()
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}
