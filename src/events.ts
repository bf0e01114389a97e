import { ToolError, ToolErrorCode } from './errors.ts'
import type {
  CodeDispatchLog,
  PostToolDecision,
  PreToolDecision,
  ToolDispatchExecution,
  ToolExecution,
  ToolExecutionResult,
} from './execution.ts'
import type { JsonValue } from './json-boundary.ts'
import type { ContentBlock } from './messages.ts'
import type { ToolRuntime } from './context.ts'
import type { ScopeNode } from './scope.ts'

/**
 * One step of a running `run_code` program, as live observers see it: a sub-call starting (after
 * its number is taken, before policy runs), a sub-call settled, or one console line as the program
 * wrote it. Not durable: the session log keeps its own `tool/code-dispatch-start` and
 * `tool/code-dispatch` events, unchanged; these exist for a UI or a terminal while the run lasts.
 */
export type CodeProgress =
  | {
      readonly type: 'call-start'
      /** The sub-call's id, `<parent>:code:<n>`, as the session log and `tools/result` know it. */
      readonly subCallId: string
      readonly name: string
      /** The arguments as the program passed them (frozen JSON). */
      readonly arguments: JsonValue
    }
  | {
      readonly type: 'call-end'
      readonly subCallId: string
      readonly name: string
      readonly isError: boolean
      /** The error code and message the program received, when the call failed. */
      readonly error?: { readonly code: string; readonly message: string }
    }
  | { readonly type: 'log'; readonly level: 'log' | 'info' | 'warn' | 'error'; readonly text: string }

/**
 * The tool events and their listener shapes. Waterfalls get a single-use `next` (`tools/execute`
 * wrappers may call it again once it settled, to retry); emits get none.
 * Every listener failure is contained by the caller of the bus (see `pipeline.ts`).
 */
export interface ToolEvents {
  /** The visible tool set changed, possibly for one scope only. Never scope-filtered. */
  'tools/change': (this: ToolRuntime) => void
  /** Allow, deny or ask before dispatch. */
  'tools/pre-execute': (this: ToolRuntime, exec: ToolExecution, next: () => Promise<PreToolDecision>) => PreToolDecision | Promise<PreToolDecision>
  /** Around-dispatch wrapper; may replace only `exec.signal`. */
  'tools/execute': (
    this: ToolRuntime,
    exec: ToolDispatchExecution,
    next: () => Promise<ToolExecutionResult>,
  ) => ToolExecutionResult | Promise<ToolExecutionResult>
  /** Accept, replace, enrich or block a dispatched result. */
  'tools/post-execute': (
    this: ToolRuntime,
    exec: ToolExecution,
    result: Readonly<ToolExecutionResult>,
    next: () => Promise<PostToolDecision>,
  ) => PostToolDecision | Promise<PostToolDecision>
  /** Reshape the durable log copy of one settled `run_code` sub-dispatch. */
  'tools/code-dispatch-log': (
    this: ToolRuntime,
    dispatch: CodeDispatchLog,
    next: () => Promise<ContentBlock[]>,
  ) => ContentBlock[] | Promise<ContentBlock[]>
  /** Observe the frozen final outcome. */
  'tools/result': (this: ToolRuntime, exec: Readonly<ToolExecution>, result: Readonly<ToolExecutionResult>) => void
  /**
   * Follow a running `run_code` program (emit, not durable, failures contained): each sub-call as it
   * starts and settles, each console line as it is written. `run` is the `run_code` execution record.
   * Scope-filtered by the run's agent, like `tools/result`: an agent's listener sees its own runs
   * only. The listeners are those registered when the run started.
   */
  'tools/code-progress': (this: ToolRuntime, run: Readonly<ToolExecution>, progress: CodeProgress) => void
}

/** The name of one tool event. */
export type ToolEventName = keyof ToolEvents

/** Every tool event, for checking names given at run time. */
export const TOOL_EVENT_NAMES: readonly ToolEventName[] = Object.freeze([
  'tools/change',
  'tools/pre-execute',
  'tools/execute',
  'tools/post-execute',
  'tools/code-dispatch-log',
  'tools/result',
  'tools/code-progress',
])

/** A listener as the bus holds it: bound to the `ctx.tools` it was registered through. */
export type BoundListener<E extends ToolEventName> = OmitThisParameter<ToolEvents[E]>

interface Registration<E extends ToolEventName> {
  readonly scope: ScopeNode
  readonly listener: BoundListener<E>
}

/** Thrown when a waterfall listener calls `next()` a second time (or, where retries are allowed, while the first is in flight). */
export class NextCalledTwiceError extends ToolError {
  constructor(event: ToolEventName, retry: boolean) {
    super(
      ToolErrorCode.LISTENER_FAILED,
      retry
        ? `a "${event}" listener called next() again before its previous next() settled; a retry waits for the attempt before it`
        : `a "${event}" listener called next() more than once`,
    )
  }
}

/**
 * The deployment's event bus. Listeners are kept per event in registration order; the first
 * registered listener is the outermost layer of a waterfall. A listener registered through a scope
 * receives only calls whose agent is at or under that scope; root listeners receive every call.
 */
export class ToolEventBus {
  readonly #listeners = new Map<ToolEventName, Registration<ToolEventName>[]>()

  /** Add a listener, called with `self` as its `this`; returns the exact disposer (idempotent). */
  on<E extends ToolEventName>(event: E, scope: ScopeNode, listener: ToolEvents[E], self: ToolRuntime): () => void {
    if (!TOOL_EVENT_NAMES.includes(event)) {
      // A misspelt event would otherwise register a listener that never fires.
      throw new TypeError(`unknown tool event ${JSON.stringify(event)}; known events: ${TOOL_EVENT_NAMES.join(', ')}`)
    }
    if (typeof listener !== 'function') {
      throw new TypeError(`listener for "${event}" must be a function, got ${typeof listener}`)
    }
    // Bound once here, so every call site calls it plainly.
    const registration: Registration<ToolEventName> = { scope, listener: (listener as (...args: unknown[]) => unknown).bind(self) as BoundListener<E> }
    // Copy on write: a dispatch in progress keeps the list it started with.
    this.#listeners.set(event, [...(this.#listeners.get(event) ?? []), registration])
    return () => {
      const current = this.#listeners.get(event)
      if (current === undefined) return
      const next = current.filter((entry) => entry !== registration)
      if (next.length === current.length) return
      this.#listeners.set(event, next)
    }
  }

  /** Listeners of `event` that see a call by an agent at `caller` (undefined: no agent). */
  listeners<E extends ToolEventName>(event: E, caller: ScopeNode | undefined): BoundListener<E>[] {
    const all = this.#listeners.get(event)
    if (all === undefined || all.length === 0) return []
    const selected: BoundListener<E>[] = []
    for (const { scope, listener } of all) {
      if (scope.parent === undefined || (caller !== undefined && scope.covers(caller))) {
        selected.push(listener as BoundListener<E>)
      }
    }
    return selected
  }

  /** Every listener of `event`, whatever its scope (for unfiltered emits like `tools/change`). */
  all<E extends ToolEventName>(event: E): BoundListener<E>[] {
    return (this.#listeners.get(event) ?? []).map((entry) => entry.listener as BoundListener<E>)
  }
}

/** What a waterfall run reports besides its value: the first listener failure, if any. */
export interface WaterfallOutcome<R> {
  readonly value: R | undefined
  /** The first error any listener threw or rejected with (even if an outer listener caught it). */
  readonly failure: unknown
  readonly failed: boolean
}

/**
 * Run `listeners` as a waterfall around `last`. Each listener gets a single-use `next`; a second
 * call throws. With `retry`, a listener may call `next()` again once its previous call settled
 * (an around-dispatch retry runs the rest of the chain anew); overlapping calls still throw.
 * `observe` sees every value a listener returns (used to keep decisions monotonic).
 * Never throws: a failure anywhere is reported in the outcome, and the chain stops there.
 *
 * No promise of the chain is abandoned: a listener may call `next()` without awaiting it and settle
 * first, so the run waits until every listener invocation and `last` it started has settled (their
 * late decisions are observed and their late failures reported) before it returns. A `next()`
 * called after the run finished starts nothing and resolves to a rejection nobody has to handle.
 */
export async function runWaterfall<R>(
  event: ToolEventName,
  listeners: readonly ((next: () => Promise<R>) => R | Promise<R>)[],
  last: () => Promise<R>,
  observe?: (value: R) => void,
  retry = false,
): Promise<WaterfallOutcome<R>> {
  let failure: unknown
  let failed = false
  let finished = false
  const pending = new Set<Promise<unknown>>()
  const fail = (error: unknown): void => {
    if (!failed) {
      failed = true
      failure = error
    }
  }
  const track = (promise: Promise<R>): Promise<R> => {
    pending.add(promise)
    // Also marks the promise handled: a listener that drops what next() gave it causes no
    // unhandled rejection (the failure is recorded through `fail`).
    const settle = (): void => void pending.delete(promise)
    promise.then(settle, settle)
    return promise
  }
  const step = (index: number): Promise<R> => {
    const listener = listeners[index]
    if (listener === undefined) return track(last())
    let used = false
    let inFlight = false
    const next = (): Promise<R> => {
      if (inFlight || (used && !retry)) {
        const error = new NextCalledTwiceError(event, retry)
        fail(error)
        throw error
      }
      used = true
      if (finished) {
        const late = Promise.reject(new ToolError(ToolErrorCode.LISTENER_FAILED, `a "${event}" listener called next() after the chain settled`))
        late.catch(() => undefined)
        return late
      }
      inFlight = true
      const attempt = step(index + 1)
      // Registered before the listener can await `attempt`, so the flag is down when it resumes.
      const settled = (): void => void (inFlight = false)
      attempt.then(settled, settled)
      return attempt
    }
    return track(
      (async () => {
        try {
          const value = await listener(next)
          observe?.(value)
          return value
        } catch (error) {
          fail(error)
          throw error
        }
      })(),
    )
  }
  let value: R | undefined
  try {
    value = await step(0)
  } catch (error) {
    fail(error)
  }
  while (pending.size > 0) await Promise.allSettled([...pending])
  finished = true
  return { value, failure, failed }
}
