import { agentOfCalls, executeWithUnparsedArguments } from './context.ts'
import type { Agent, ToolRuntime } from './context.ts'
import { ToolDefinitionError } from './errors.ts'
import type { ToolExecutionInput, ToolExecutionMode, ToolExecutionResult } from './execution.ts'
import { parseJsonText, snapshotJson } from './json-boundary.ts'
import type { JsonValue } from './json-boundary.ts'
import { describeThrown } from './results.ts'
import { SessionLogError, toolCallEvent, toolResultEvent } from './session-log.ts'
import type { SessionEvent } from './session-log.ts'

interface Pending {
  readonly exclusive: boolean
  readonly start: () => void
}

/**
 * Starts tasks in submission order under two rules: an exclusive task runs alone (it waits for
 * everything before it and holds back everything after it), and parallel tasks overlap up to
 * `maxParallel` in a rolling pool. The agent loop and every `run_code` run use one each.
 */
export class CallScheduler {
  readonly #maxParallel: number
  readonly #queue: Pending[] = []
  #running = 0
  #exclusiveRunning = false

  constructor(maxParallel: number) {
    if (!Number.isSafeInteger(maxParallel) || maxParallel < 1) {
      throw new ToolDefinitionError(`maxParallel must be a positive integer, got ${String(maxParallel)}`)
    }
    this.#maxParallel = maxParallel
  }

  /** Tasks started and not yet settled. */
  get running(): number {
    return this.#running
  }

  /** Tasks submitted and not yet started. */
  get queued(): number {
    return this.#queue.length
  }

  /**
   * Submit `task`; it starts when the rules allow and never before an earlier submission.
   * The returned promise settles as the task does.
   */
  run<T>(mode: ToolExecutionMode, task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const exclusive = mode.kind !== 'parallel'
      this.#queue.push({
        exclusive,
        start: () => {
          this.#running++
          if (exclusive) this.#exclusiveRunning = true
          let promise: Promise<T>
          try {
            // A task that returns a plain value still settles (and frees its slot).
            promise = Promise.resolve(task())
          } catch (error) {
            promise = Promise.reject(error)
          }
          promise.then(resolve, reject).finally(() => {
            this.#running--
            if (exclusive) this.#exclusiveRunning = false
            this.#pump()
          })
        },
      })
      this.#pump()
    })
  }

  #pump(): void {
    while (this.#queue.length > 0 && !this.#exclusiveRunning) {
      const head = this.#queue[0] as Pending
      if (head.exclusive ? this.#running > 0 : this.#running >= this.#maxParallel) return
      this.#queue.shift()
      head.start()
    }
  }
}

/** One call of a model turn, as the agent loop received it. */
export interface TurnCall {
  readonly callId: string
  readonly name: string
  /** Parsed arguments, or give `argumentsText` (the model's raw JSON text) instead; not both. */
  readonly arguments?: unknown
  /**
   * The model's raw argument text, parsed losslessly (unsafe numbers are `INVALID_ARGS`). Text
   * that cannot be parsed is kept in the `tool/call` event as `argumentsText`.
   */
  readonly argumentsText?: string
}

/** Options of {@link runToolCalls}. */
export interface RunToolCallsOptions {
  /**
   * The agent the turn belongs to (default: the agent whose context `tools` is); its session
   * receives `tool/call` and `tool/result`.
   */
  readonly agent?: Agent
  /** One cancellation signal shared by every call of the turn. */
  readonly signal: AbortSignal
  /** Overlap bound of the parallel pool. Default 8. */
  readonly maxParallel?: number
}

/**
 * Run one model turn's calls: exclusive calls are barriers, parallel-safe calls overlap in a
 * rolling pool, results come back in call order. Each call is logged to the agent's session as
 * `tool/call` before it runs and `tool/result` (content, error, meta — never the value) after.
 * Every call settles before this resolves; a session write failure rejects after that with a
 * {@link TurnLogError} carrying the results, since a durable log with a hole must not pass silently.
 * When a framework owns the loop and hands calls over one at a time, use {@link createToolCallRunner}.
 */
export async function runToolCalls(
  tools: ToolRuntime,
  calls: readonly TurnCall[],
  options: RunToolCallsOptions,
): Promise<ToolExecutionResult[]> {
  // JavaScript callers get no compile-time check: name the fix instead of failing on `undefined.signal`.
  assertSignalOption('runToolCalls(tools, calls, options)', options)
  if (!Array.isArray(calls)) throw new TypeError('runToolCalls(tools, calls, options): calls must be an array of { callId, name, arguments | argumentsText }')
  const scheduler = new CallScheduler(options.maxParallel ?? 8)
  // The agent the calls act for: the one given, else the agent whose context `tools` is. Checked
  // before anything is logged, so a foreign agent leaves no call without a result in a log.
  const agent = agentOfCalls(tools, options.agent)
  // A harness bug, refused before anything runs or is logged.
  const callIds = new Set<string>()
  for (const turnCall of calls) {
    assertTurnCall('runToolCalls', turnCall)
    // Results and log events are matched to calls by id.
    if (callIds.has(turnCall.callId)) throw new TypeError(`runToolCalls: two calls of the turn have the id "${String(turnCall.callId)}"; call ids must be unique`)
    callIds.add(turnCall.callId)
  }
  const logFailures: unknown[] = []
  const runs = calls.map((turnCall) => scheduleCall(tools, scheduler, agent, turnCall, options.signal, (error) => logFailures.push(error)))
  // allSettled, not all: a rejecting call (a malformed input) must not let this settle while
  // sibling calls are still running.
  const settled = await Promise.allSettled(runs)
  const rejected = settled.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected')
  if (rejected !== undefined) throw rejected.reason
  const results = settled.map((outcome) => (outcome as PromiseFulfilledResult<ToolExecutionResult>).value)
  if (logFailures.length > 0) throw new TurnLogError(logFailures[0], results)
  return results
}

/** Options of {@link createToolCallRunner}. */
export interface ToolCallRunnerOptions {
  /**
   * The agent the calls act for (default: the agent whose context `tools` is); its session
   * receives `tool/call` and `tool/result`.
   */
  readonly agent?: Agent
  /** Overlap bound of the parallel pool. Default 8. */
  readonly maxParallel?: number
}

/**
 * Runs calls handed over one at a time by a loop the caller does not own (an AI SDK
 * `generateText` loop, any framework that calls each tool's `execute` itself), with the
 * guarantees of {@link runToolCalls}: an exclusive call runs alone (after every call submitted
 * before it, before every call submitted after it), parallel-safe calls overlap up to
 * `maxParallel`, and each call is logged to the agent's session as `tool/call` then `tool/result`.
 * One runner is one scheduler: give every tool of an agent's loop the same runner.
 */
export interface ToolCallRunner {
  /**
   * Submit one call; it starts when the rules allow. Resolves with the frozen result (failures are
   * results). Rejects for a malformed call, for a call id already in flight on this runner, and
   * with a {@link TurnLogError} carrying the result when the session log failed to record it.
   */
  run(call: TurnCall, options: { readonly signal: AbortSignal }): Promise<ToolExecutionResult>
  /** Calls submitted and not yet settled. */
  readonly inFlight: number
}

/**
 * A per-call runner over `tools` for a framework-owned loop (see {@link ToolCallRunner}). The
 * agent is checked here, as {@link runToolCalls} checks it.
 * @throws ToolDefinitionError for an agent of another deployment or outside the context's scope.
 */
export function createToolCallRunner(tools: ToolRuntime, options: ToolCallRunnerOptions = {}): ToolCallRunner {
  if (typeof options !== 'object' || options === null) throw new TypeError('createToolCallRunner(tools, options?): options must be an object { agent?, maxParallel? }')
  const scheduler = new CallScheduler(options.maxParallel ?? 8)
  const agent = agentOfCalls(tools, options.agent)
  const inFlight = new Set<string>()
  return {
    get inFlight() {
      return inFlight.size
    },
    async run(turnCall, callOptions) {
      assertSignalOption('ToolCallRunner.run(call, options)', callOptions)
      assertTurnCall('ToolCallRunner.run', turnCall)
      // Results and log events are matched to calls by id, as within one runToolCalls turn.
      if (inFlight.has(turnCall.callId)) throw new TypeError(`ToolCallRunner.run: a call with the id "${turnCall.callId}" is already running; call ids must be unique`)
      inFlight.add(turnCall.callId)
      let logFailure: { readonly error: unknown } | undefined
      try {
        const result = await scheduleCall(tools, scheduler, agent, turnCall, callOptions.signal, (error) => {
          logFailure ??= { error }
        })
        if (logFailure !== undefined) throw new TurnLogError(logFailure.error, [result])
        return result
      } finally {
        inFlight.delete(turnCall.callId)
      }
    },
  }
}

/** A harness bug in one call, refused before anything runs or is logged. */
function assertTurnCall(where: string, turnCall: TurnCall): void {
  if (typeof turnCall !== 'object' || turnCall === null) throw new TypeError(`${where}: a call must be an object { callId, name, arguments | argumentsText }`)
  if (turnCall.arguments !== undefined && turnCall.argumentsText !== undefined) {
    throw new TypeError(`${where}: call "${turnCall.callId}" gives both arguments and argumentsText; give one`)
  }
}

/** The options object a JavaScript caller may have left out, checked with a message naming the fix. */
function assertSignalOption(where: string, options: unknown): void {
  const signal: unknown = typeof options === 'object' && options !== null ? (options as { signal?: unknown }).signal : undefined
  if (!(signal instanceof AbortSignal)) {
    throw new TypeError(
      `${where}: options.signal must be an AbortSignal that cancels the calls, e.g. { signal: AbortSignal.timeout(60_000) } or { signal: new AbortController().signal }`,
    )
  }
}

/**
 * One call under `scheduler`: parsed (losslessly), classified, logged as `tool/call`, run through
 * the pipeline, logged as `tool/result`. A log write failure goes to `onLogFailure`; the call
 * still runs and settles.
 */
function scheduleCall(
  tools: ToolRuntime,
  scheduler: CallScheduler,
  agent: Agent | undefined,
  turnCall: TurnCall,
  signal: AbortSignal,
  onLogFailure: (error: unknown) => void,
): Promise<ToolExecutionResult> {
  const session = agent?.session
  const log = async (event: SessionEvent): Promise<void> => {
    if (session === undefined) return
    try {
      // Awaited inside the try: a log that throws synchronously fails like one that rejects.
      await session.append(event)
    } catch (error) {
      onLogFailure(error)
    }
  }
  let args: unknown
  let parseFailure: { readonly error: unknown } | undefined
  try {
    args = turnCall.argumentsText === undefined ? turnCall.arguments : parseJsonText(turnCall.argumentsText, 'arguments')
  } catch (error) {
    parseFailure = { error }
  }
  const input: ToolExecutionInput = {
    callId: turnCall.callId,
    name: turnCall.name,
    arguments: args,
    signal,
    ...(agent === undefined ? {} : { agent }),
  }
  const mode: ToolExecutionMode = parseFailure === undefined ? tools.executionMode(input) : { kind: 'exclusive' }
  return scheduler.run(mode, async () => {
    const { callId, name, argumentsText } = turnCall
    await log(
      toolCallEvent(
        parseFailure === undefined ? { callId, name, arguments: durableArguments(args) } : { callId, name, arguments: null, argumentsText: argumentsText as string },
      ),
    )
    // Unparseable text still runs the one pipeline (UNKNOWN_TOOL first, then INVALID_ARGS through
    // finalizeContent and tools/result).
    const result = await (parseFailure === undefined ? tools.execute(input) : executeWithUnparsedArguments(tools, input, parseFailure.error))
    await log(toolResultEvent(turnCall.callId, turnCall.name, result))
    return result
  })
}

/**
 * The session log failed during a turn whose calls all ran and settled: the log has a hole, which
 * must not pass silently, and the results are not lost: they are on {@link results}, in call
 * order. `cause` is the first write failure.
 */
export class TurnLogError extends SessionLogError {
  readonly results: readonly ToolExecutionResult[]

  constructor(cause: unknown, results: readonly ToolExecutionResult[]) {
    super(`the session log failed during the turn (${describeThrown(cause).message}); every call ran, and their results are on this error's results`, { cause })
    this.results = results
  }
}

/** Arguments as the log keeps them: the JSON copy, or null when they are not JSON (the call fails). */
function durableArguments(args: unknown): JsonValue {
  try {
    return snapshotJson(args, 'arguments')
  } catch {
    return null
  }
}
