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
 */
export async function runToolCalls(
  tools: ToolRuntime,
  calls: readonly TurnCall[],
  options: RunToolCallsOptions,
): Promise<ToolExecutionResult[]> {
  const scheduler = new CallScheduler(options.maxParallel ?? 8)
  // The agent the calls act for: the one given, else the agent whose context `tools` is. Checked
  // before anything is logged, so a foreign agent leaves no call without a result in a log.
  const agent = agentOfCalls(tools, options.agent)
  // A harness bug, refused before anything runs or is logged.
  const callIds = new Set<string>()
  for (const turnCall of calls) {
    if (turnCall.arguments !== undefined && turnCall.argumentsText !== undefined) {
      throw new TypeError(`runToolCalls: call "${String(turnCall.callId)}" gives both arguments and argumentsText; give one`)
    }
    // Results and log events are matched to calls by id.
    if (callIds.has(turnCall.callId)) throw new TypeError(`runToolCalls: two calls of the turn have the id "${String(turnCall.callId)}"; call ids must be unique`)
    callIds.add(turnCall.callId)
  }
  const session = agent?.session
  const logFailures: unknown[] = []
  const log = async (event: SessionEvent): Promise<void> => {
    if (session === undefined) return
    try {
      // Awaited inside the try: a log that throws synchronously fails like one that rejects.
      await session.append(event)
    } catch (error) {
      logFailures.push(error)
    }
  }

  const runs = calls.map((turnCall) => {
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
      signal: options.signal,
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
  })
  // allSettled, not all: a rejecting call (a malformed input) must not let this settle while
  // sibling calls are still running.
  const settled = await Promise.allSettled(runs)
  const rejected = settled.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected')
  if (rejected !== undefined) throw rejected.reason
  const results = settled.map((outcome) => (outcome as PromiseFulfilledResult<ToolExecutionResult>).value)
  if (logFailures.length > 0) throw new TurnLogError(logFailures[0], results)
  return results
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
