import type { ToolErrorInfo } from './errors.ts'
import type { JsonValue } from './json-boundary.ts'
import type { ContentBlock, UserMessage } from './messages.ts'
import type { Agent } from './context.ts'

/** A model-assigned (or bridge-assigned) call id. */
export type CallId = string

declare const toolExecutionTokenBrand: unique symbol

/** Opaque call identity that permits correlation without exposing mutable execution state. */
export type ToolExecutionToken = symbol & { readonly [toolExecutionTokenBrand]: true }

/**
 * Caller-supplied description of one tool call. `ctx.tools.execute` adds the registry-owned token
 * to form a pipeline {@link ToolExecution}; callers never choose that token.
 */
export interface ToolExecutionInput {
  readonly callId: CallId
  /** Root model-requested call owning this execution tree; omitted for a root execution. */
  readonly rootCallId?: CallId
  readonly name: string
  /** Losslessly JSON-serializable parsed arguments. */
  readonly arguments: unknown
  /** The agent on whose behalf the call runs (set by the agent loop). */
  readonly agent?: Agent
  /**
   * Opaque token of the enclosing transport execution (Code Mode sub-dispatches). Under
   * `mode: 'code'` only calls WITH a parent may execute a native tool name.
   */
  readonly parent?: ToolExecutionToken
  /** Required caller-owned cancellation for this invocation. */
  readonly signal: AbortSignal
}

/**
 * One pending call inside the pipeline. Arguments crossed the JSON boundary and are deep-frozen;
 * identity, the caller signal and the token are readonly. Frozen before `tools/result` runs.
 */
export interface ToolExecution extends ToolExecutionInput {
  /** Root model-requested call, resolved for every root and nested execution. */
  readonly rootCallId: CallId
  /** Registry-assigned identity, shared with nested calls only as their opaque `parent`. */
  readonly token: ToolExecutionToken
}

/** Around-dispatch view: a `tools/execute` wrapper may replace the signal, never remove it. */
export interface ToolDispatchExecution extends Omit<ToolExecution, 'signal'> {
  signal: AbortSignal
}

/** Runtime context handed to a tool body once the registry accepted the call. */
export interface ToolRunContext extends ToolExecution {
  /** Defer one context until this tool's final result reaches the agent loop (kept in call order). */
  deferContext(context: UserMessage): void
  /** Mark a successful final result as terminal for the current agent turn. */
  concludeTurn(): void
}

/** Canonical failure detail. */
export interface ToolFailure {
  /** Human-readable failure message without an `Error: ` envelope. */
  readonly message: string
  /** Internal error class and code used by policy and durable diagnostics. */
  readonly info?: ToolErrorInfo
}

/** Successful canonical execution, including its model projection. */
export interface ToolExecutionSuccess {
  readonly isError: false
  /** Execution-local canonical value; deliberately omitted from durable events. */
  readonly value: JsonValue
  readonly content: ContentBlock[]
  readonly error?: never
  readonly meta?: JsonValue
  readonly additionalContexts?: UserMessage[]
  /** The agent loop stops after committing this successful result batch. */
  readonly concludesTurn?: true
}

/** Failed canonical execution; failures never carry a value. */
export interface ToolExecutionFailure {
  readonly isError: true
  readonly error: ToolFailure
  readonly value?: never
  readonly content: ContentBlock[]
  readonly meta?: JsonValue
  readonly additionalContexts?: UserMessage[]
  readonly concludesTurn?: never
}

/** The discriminated, execution-local outcome of one tool call. */
export type ToolExecutionResult = ToolExecutionSuccess | ToolExecutionFailure

/** The durable projection of a result: what a session log keeps and a replay presents. */
export interface ToolResult {
  readonly isError: boolean
  readonly content: readonly ContentBlock[]
  readonly error?: ToolFailure
  readonly meta?: JsonValue
}

/** Scheduling mode: `parallel` may overlap with siblings; `exclusive` runs alone as a barrier. */
export type ToolExecutionMode = { readonly kind: 'parallel' } | { readonly kind: 'exclusive' }

/** Pre-dispatch decision. Arguments can never be rewritten. */
export type PreToolDecision =
  | { readonly kind: 'allow' }
  | { readonly kind: 'deny'; readonly reason: string }
  | { readonly kind: 'ask'; readonly reason?: string }

/** Post-dispatch decision: accept (optionally replacing content OR value), or block with feedback. */
export type PostToolDecision =
  | {
      readonly kind: 'accept'
      readonly content?: ContentBlock[]
      readonly value?: never
      readonly additionalContexts?: UserMessage[]
    }
  | {
      readonly kind: 'accept'
      readonly value: JsonValue
      readonly content?: never
      readonly additionalContexts?: UserMessage[]
    }
  | { readonly kind: 'block'; readonly feedback: ContentBlock[]; readonly additionalContexts?: UserMessage[] }

/**
 * A monotonic guard, evaluated after every `tools/pre-execute` listener. A returned reason denies;
 * `undefined` leaves the call as it was. Guards have no allow result, so they only narrow.
 */
export type ToolGuard = (execution: Readonly<ToolExecution>) => string | undefined

/** One settled `run_code` sub-dispatch about to be logged (`tools/code-dispatch-log`). */
export interface CodeDispatchLog {
  /** The outer `run_code` execution. */
  readonly exec: ToolExecution
  /** The calling agent, when the outer call has one. */
  readonly agent?: Agent
  /** Deterministic sub-call id (`<parent>:code:<n>`). */
  readonly subCallId: CallId
  readonly name: string
  readonly isError: boolean
  /** The sub-call's complete model-facing content. */
  readonly content: ContentBlock[]
}
