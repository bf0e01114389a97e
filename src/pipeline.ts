import { ToolArgsError, ToolError, ToolErrorCode, ToolNotFoundError, ToolOutputError } from './errors.ts'
import type { SchemaIssue } from './errors.ts'
import type { CodeProgress, ToolEventBus } from './events.ts'
import { runWaterfall } from './events.ts'
import type {
  CallId,
  CodeDispatchLog,
  PostToolDecision,
  PreToolDecision,
  ToolDispatchExecution,
  ToolExecution,
  ToolExecutionFailure,
  ToolExecutionInput,
  ToolExecutionResult,
  ToolExecutionSuccess,
  ToolExecutionToken,
  ToolRunContext,
} from './execution.ts'
import { snapshotJson } from './json-boundary.ts'
import type { JsonValue } from './json-boundary.ts'
import type { ContentBlock, UserMessage } from './messages.ts'
import type { RegisteredTool, ToolRegistry } from './registry.ts'
import { RUN_CODE } from './registry.ts'
import { contentProblem, contentText, deferredMessage, describeThrown, failureFromError, failureResult, isStrayPromise, materializeResult } from './results.ts'
import { validateJsonSchemaValue } from './schema/validate.ts'
import type { ScopeNode } from './scope.ts'
import type { ToolDefinition } from './tool.ts'
import type { Agent } from './context.ts'

/** The answer of an approval service; only `allowed-once` lets an `ask` decision run. */
export type ApprovalAnswer = 'allowed-once' | 'denied' | (string & {})

/** Asks a human (or a policy service) whether one call may run. */
export interface ApprovalService {
  request(request: {
    readonly execution: ToolExecution
    readonly agent: Agent
    readonly reason?: string
    readonly signal: AbortSignal
  }): Promise<ApprovalAnswer>
}

/** What the pipeline needs from its deployment. */
export interface PipelineHost {
  readonly registry: ToolRegistry
  readonly bus: ToolEventBus
  readonly approval: ApprovalService | undefined
  /**
   * Live `run_code` executions, by token: the only valid `parent` values. Each keeps the scope it
   * was called in, which its sub-calls act in whatever context makes them.
   */
  readonly liveTransports: Map<ToolExecutionToken, LiveTransport>
  reportListenerError(error: unknown, event: string): void
}

/** A running `run_code` execution and the scope it acts in. */
export interface LiveTransport {
  readonly exec: ToolExecution
  readonly scope: ScopeNode
}

/** The live `run_code` execution whose token is `token`, if any: its sub-calls act in its scope. */
export function liveRun(host: PipelineHost, token: ToolExecutionToken | undefined): LiveTransport | undefined {
  return token === undefined ? undefined : host.liveTransports.get(token)
}

const DECISION_RANK = { allow: 0, ask: 1, deny: 2 } as const

/** A record type while it is being filled in, before it is frozen. */
type Writable<T> = { -readonly [K in keyof T]: T[K] }

function reasonOf(error: unknown): string {
  return describeThrown(error).message
}

function isAbortSignal(value: unknown): value is AbortSignal {
  return value instanceof AbortSignal
}

/** The caller's input, each field read exactly once (a getter cannot answer twice differently). */
interface CheckedInput {
  readonly callId: CallId
  readonly rootCallId: CallId | undefined
  readonly name: string
  readonly arguments: unknown
  readonly parent: ToolExecutionToken | undefined
  readonly signal: AbortSignal
}

/** Read and check the caller's input; a malformed input is the harness's bug and throws. */
function readInput(input: ToolExecutionInput): CheckedInput {
  if (typeof input !== 'object' || input === null) throw new TypeError('execute() takes a ToolExecutionInput object')
  const { callId, rootCallId, name, arguments: args, parent, signal } = input
  if (typeof callId !== 'string' || callId.length === 0) throw new TypeError('execute(): callId must be a non-empty string')
  if (typeof name !== 'string') throw new TypeError('execute(): name must be a string')
  if (!isAbortSignal(signal)) throw new TypeError('execute(): signal must be an AbortSignal (it is required)')
  if (rootCallId !== undefined && typeof rootCallId !== 'string') throw new TypeError('execute(): rootCallId must be a string')
  if (parent !== undefined && typeof parent !== 'symbol') throw new TypeError('execute(): parent must be an execution token')
  return { callId, rootCallId, name, arguments: args, parent, signal }
}

/** A pre-execute decision, or `undefined` when the value is not one. */
function checkPreDecision(value: unknown): PreToolDecision | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const decision = value as Record<string, unknown>
  if (decision.kind === 'allow') return { kind: 'allow' }
  if (decision.kind === 'deny' && typeof decision.reason === 'string') return { kind: 'deny', reason: decision.reason }
  if (decision.kind === 'ask' && (decision.reason === undefined || typeof decision.reason === 'string')) {
    return decision.reason === undefined ? { kind: 'ask' } : { kind: 'ask', reason: decision.reason }
  }
  return undefined
}

function checkPostDecision(value: unknown): PostToolDecision | string {
  if (typeof value !== 'object' || value === null) return 'a post-execute decision must be an object'
  const decision = value as Record<string, unknown>
  if (decision.kind === 'accept') {
    if (decision.content !== undefined && decision.value !== undefined) return 'accept may replace content or value, not both'
    if (decision.content !== undefined) {
      const problem = contentProblem(decision.content)
      if (problem !== undefined) return problem
    }
  } else if (decision.kind === 'block') {
    const problem = contentProblem(decision.feedback)
    if (problem !== undefined) return `block feedback: ${problem}`
  } else {
    return `unknown post-execute decision kind ${JSON.stringify(decision.kind)}`
  }
  if (decision.additionalContexts !== undefined && !Array.isArray(decision.additionalContexts)) {
    return 'additionalContexts must be an array of user messages'
  }
  // A copy, captured when the decision is made: a listener further out that mutates the object it
  // got from next() in place cannot rewrite a block it already observed into an accept.
  const contexts = decision.additionalContexts === undefined ? {} : { additionalContexts: [...(decision.additionalContexts as UserMessage[])] }
  const copyBlocks = (blocks: unknown): ContentBlock[] => (blocks as ContentBlock[]).map((block) => ({ ...block }))
  if (decision.kind === 'block') return { kind: 'block', feedback: copyBlocks(decision.feedback), ...contexts }
  if (decision.value !== undefined) return { kind: 'accept', value: decision.value as JsonValue, ...contexts }
  if (decision.content !== undefined) return { kind: 'accept', content: copyBlocks(decision.content), ...contexts }
  return { kind: 'accept', ...contexts }
}

function denied(exec: Pick<ToolExecution, 'name'>, reason: string): ToolExecutionFailure {
  return failureResult(ToolErrorCode.DENIED, `Tool call "${exec.name}" was denied: ${reason}`)
}

function abortedBeforeDispatch(exec: ToolExecution): ToolExecutionFailure {
  return failureResult(
    ToolErrorCode.ABORTED_BEFORE_DISPATCH,
    `Tool call "${exec.name}" was cancelled before it started`,
  )
}

/** The cancellation code of a call whose body did or did not start. */
function cancelled(exec: ToolExecution, bodyStarted: boolean): ToolExecutionFailure {
  return bodyStarted ? failureResult(ToolErrorCode.ABORTED, `Tool call "${exec.name}" was cancelled`) : abortedBeforeDispatch(exec)
}

/** Run one of the definition's synchronous projections; a throw or a stray promise is a failure. */
function project(
  name: string,
  what: string,
  callback: string,
  fn: () => unknown,
): { readonly value: unknown } | { readonly failure: ToolExecutionFailure } {
  let value: unknown
  try {
    value = fn()
  } catch (error) {
    return { failure: failureFromError(error, ToolErrorCode.TOOL_FAILED, `Tool "${name}" failed to ${what}: `) }
  }
  if (isStrayPromise(value)) {
    return {
      failure: failureResult(ToolErrorCode.TOOL_FAILED, `Tool "${name}" failed to ${what}: ${callback} returned a promise; it must be synchronous`),
    }
  }
  return { value }
}

/**
 * Derive a success from a canonical value: lossless snapshot, output-schema check, render, and
 * (top-level calls only) the presentation meta. Any failure becomes a structured error result.
 */
export function successFromValue(
  entry: RegisteredTool,
  exec: ToolExecution,
  raw: unknown,
  extras: { additionalContexts?: UserMessage[]; concludesTurn?: boolean } = {},
): ToolExecutionResult {
  const name = exec.name
  let value: JsonValue
  try {
    value = snapshotJson(raw, 'output')
  } catch (error) {
    return failureResult(ToolErrorCode.INVALID_TOOL_OUTPUT, `Tool "${name}" returned a value that is not JSON: ${reasonOf(error)}`, {
      name: 'ToolOutputError',
    })
  }
  const issues = validateJsonSchemaValue(entry.outputSchema, value)
  if (issues.length > 0) return failureFromError(new ToolOutputError(name, issues), ToolErrorCode.INVALID_TOOL_OUTPUT)
  const output = entry.definition.output
  const rendered = project(name, 'render its output', 'render', () => output.render(exec.arguments, value))
  if ('failure' in rendered) return rendered.failure
  const content = rendered.value as ContentBlock[]
  const problem = contentProblem(content)
  if (problem !== undefined) {
    return failureResult(ToolErrorCode.INVALID_TOOL_OUTPUT, `Tool "${name}" rendered invalid content: ${problem}`)
  }
  let meta: JsonValue | undefined
  const presentationMeta = output.presentationMeta
  if (exec.parent === undefined && presentationMeta !== undefined) {
    const projected = project(name, 'compute presentation meta', 'presentationMeta', () => presentationMeta(exec.arguments, value))
    if ('failure' in projected) return projected.failure
    meta = projected.value as JsonValue
  }
  const contexts = extras.additionalContexts
  // Filled in key order rather than with conditional spreads (see executionFields).
  const success: Writable<ToolExecutionSuccess> = { isError: false, value, content }
  if (meta !== undefined) success.meta = meta
  if (contexts !== undefined && contexts.length > 0) success.additionalContexts = contexts
  if (extras.concludesTurn === true) success.concludesTurn = true
  return success
}

/**
 * The execution pipeline for one call: snapshot + token, resolve, arguments checked against the
 * declared parameters (for every tool, raw or `defineTool`), pre-execute, guards, approval,
 * execute wrappers around the body, output check + render, post-execute, cancellation,
 * materialize, `finalizeContent` exactly once, freeze, `tools/result`.
 *
 * Never rejects for tool or listener failures (they become results); rejects only for a malformed
 * input, which is the harness's bug.
 */
export async function runPipeline(
  host: PipelineHost,
  caller: ScopeNode,
  input: ToolExecutionInput,
  agent: Agent | undefined,
  unparsed?: { readonly error: unknown },
): Promise<ToolExecutionResult> {
  const call = readInput(input)
  const token = Symbol(`tool-call:${call.callId}`) as ToolExecutionToken
  let args: JsonValue = null
  let argsError: unknown
  if (unparsed !== undefined) {
    // The caller could not even parse the model's argument text: an INVALID_ARGS outcome that
    // still goes through resolution, finalizeContent and tools/result like any other.
    argsError = unparsed.error ?? new Error('the arguments could not be parsed')
  } else {
    try {
      args = snapshotJson(call.arguments, 'arguments')
    } catch (error) {
      argsError = error
    }
  }
  // A sub-call acts in its run_code's scope and belongs to its root call, whatever its caller says.
  const parent = liveRun(host, call.parent)
  const scope = parent?.scope ?? caller
  const rootCallId = parent?.exec.rootCallId ?? call.rootCallId ?? call.callId
  const exec: ToolExecution = Object.freeze(
    executionFields(call.callId, rootCallId, call.name, args, agent, call.parent, call.signal, token),
  )

  // Resolved even for invalid arguments: the definition's finalizeContent sees that outcome too.
  const resolved = resolveTool(host, scope, exec, parent)
  const entry = 'entry' in resolved ? resolved.entry : undefined
  // Snapshot the callback now: a definition mutated mid-call cannot swap it.
  const finalize = entry?.definition.finalizeContent
  const definition = entry?.definition

  let result: ToolExecutionResult
  let bodyStarted = false
  let argsIssues: readonly SchemaIssue[]
  if (entry === undefined) {
    result = (resolved as { failure: ToolExecutionFailure }).failure
  } else if (argsError !== undefined) {
    result = failureResult(ToolErrorCode.INVALID_ARGS, `Invalid arguments for tool "${exec.name}": ${reasonOf(argsError)}`, {
      name: 'ToolArgsError',
    })
  } else if ((argsIssues = checkArguments(entry, args)).length > 0) {
    // Checked against the declared parameters before any policy runs, for every tool: policies,
    // guards and a person asked for approval only ever see arguments the tool accepts.
    result = failureFromError(new ToolArgsError(exec.name, argsIssues), ToolErrorCode.INVALID_ARGS)
  } else {
    const dispatched = await admitAndDispatch(host, scope, entry, exec)
    result = dispatched.result
    bodyStarted = dispatched.bodyStarted
  }

  if (exec.signal.aborted && !result.isError) result = cancelled(exec, bodyStarted)

  result = materializeResult(result)
  if (finalize !== undefined) result = finalizeResult(host, exec, result, () => finalize.call(definition, exec, result))

  for (const listener of host.bus.listeners('tools/result', scope)) {
    try {
      const returned: unknown = listener(exec, result)
      if (returned instanceof Promise) returned.catch((error: unknown) => host.reportListenerError(error, 'tools/result'))
    } catch (error) {
      host.reportListenerError(error, 'tools/result')
    }
  }
  return result
}

/**
 * The issues of `args` against the tool's declared parameters. The schema passed the subset at
 * registration; should its validator still fail to build, that is one issue, not a rejection.
 */
function checkArguments(entry: RegisteredTool, args: JsonValue): readonly SchemaIssue[] {
  try {
    return validateJsonSchemaValue(entry.schema.parameters, args)
  } catch (error) {
    return [{ path: '$', expected: 'arguments the tool can check', found: `a parameters schema that cannot be compiled (${reasonOf(error)})` }]
  }
}

/**
 * Run the definition's `finalizeContent` (exactly once, by the caller) on the materialized result.
 * A success whose content cannot be finalized (a throw, a promise, invalid content) is not
 * delivered as one. A failure keeps its registry-owned code and content, so a denial stays a
 * denial; that bug is reported to `onListenerError` instead.
 */
function finalizeResult(host: PipelineHost, exec: ToolExecution, result: ToolExecutionResult, finalize: () => unknown): ToolExecutionResult {
  let problem: unknown
  try {
    const replacement = finalize()
    if (replacement === undefined) return result
    if (isStrayPromise(replacement)) throw new TypeError('it returned a promise; it must be synchronous')
    const invalid = contentProblem(replacement)
    if (invalid === undefined) return materializeResult({ ...result, content: replacement } as ToolExecutionResult)
    problem = new ToolError(ToolErrorCode.INVALID_TOOL_OUTPUT, `it returned invalid content: ${invalid}`)
  } catch (error) {
    problem = error
  }
  if (result.isError) {
    host.reportListenerError(problem, 'finalizeContent')
    return result
  }
  return materializeResult(failureFromError(problem, ToolErrorCode.TOOL_FAILED, `finalizeContent of tool "${exec.name}" failed: `))
}

/** A visible tool, or the failure a call to it resolves to. */
export type Resolution = { entry: RegisteredTool } | { failure: ToolExecutionFailure }

/**
 * Apply the visibility rules, including Code Mode's, before any policy runs. `parent` is
 * {@link liveRun} of `exec.parent`, which the caller has looked up already.
 */
export function resolveTool(
  host: PipelineHost,
  caller: ScopeNode,
  exec: Pick<ToolExecution, 'name' | 'parent' | 'agent'>,
  parent: LiveTransport | undefined,
): Resolution {
  const { registry } = host
  const name = exec.name
  if (exec.parent !== undefined) {
    if (parent === undefined) {
      return {
        failure: failureResult(ToolErrorCode.UNKNOWN_TOOL, `Tool call "${name}" names a parent that is not a running ${RUN_CODE} execution`, {
          name: 'ToolNotFoundError',
        }),
      }
    }
    if (parent.exec.agent !== exec.agent) {
      return { failure: denied(exec, `a ${RUN_CODE} sub-call must act for the same agent as its ${RUN_CODE} call`) }
    }
    if (name !== RUN_CODE) {
      const entry = registry.resolve(name, caller)
      if (entry !== undefined) return { entry }
    }
    return { failure: unknownTool(name, registry.visible(caller).map((tool) => tool.schema.name)) }
  }
  if (registry.modeOf(caller) === 'code') {
    const transport = name === RUN_CODE ? registry.transportEntry(caller) : undefined
    if (transport !== undefined) return { entry: transport }
    return {
      failure: failureResult(
        ToolErrorCode.UNKNOWN_TOOL,
        `Unknown tool "${name}". In Code Mode the only tool is "${RUN_CODE}": call tools from a program with \`await tools.<name>(args)\`.`,
        { name: 'ToolNotFoundError' },
      ),
    }
  }
  const entry = name === RUN_CODE ? undefined : registry.resolve(name, caller)
  if (entry !== undefined) return { entry }
  return { failure: unknownTool(name, registry.visible(caller).map((tool) => tool.schema.name)) }
}

function unknownTool(name: string, available: readonly string[]): ToolExecutionFailure {
  return failureFromError(new ToolNotFoundError(name, available), ToolErrorCode.UNKNOWN_TOOL)
}

/** Pre-execute, approval, guards, then the execute waterfall around the body, then post-execute. */
async function admitAndDispatch(
  host: PipelineHost,
  caller: ScopeNode,
  entry: RegisteredTool,
  exec: ToolExecution,
): Promise<{ result: ToolExecutionResult; bodyStarted: boolean }> {
  if (exec.signal.aborted) return { result: abortedBeforeDispatch(exec), bodyStarted: false }

  const admission = await admit(host, caller, exec)
  if (admission !== undefined) return { result: admission, bodyStarted: false }
  if (exec.signal.aborted) return { result: abortedBeforeDispatch(exec), bodyStarted: false }

  const dispatched = await dispatch(host, caller, entry, exec)
  // Materialized (checked and deep-frozen) first: post-execute listeners get a Readonly result in
  // fact, so none can flip a wrapper-made failure into a success without a value in place.
  const { bodyStarted } = dispatched
  const result = await postExecute(host, caller, entry, exec, materializeResult(dispatched.result), bodyStarted)
  return { result, bodyStarted }
}

/** Returns a failure when the call may not run, `undefined` when it may. */
async function admit(host: PipelineHost, caller: ScopeNode, exec: ToolExecution): Promise<ToolExecutionFailure | undefined> {
  const listeners = host.bus.listeners('tools/pre-execute', caller)
  let decision: PreToolDecision = { kind: 'allow' }
  if (listeners.length > 0) {
    let strictest: PreToolDecision = decision
    let malformed = false
    const outcome = await runWaterfall<PreToolDecision>(
      'tools/pre-execute',
      listeners.map((listener) => (next) => listener(exec, next)),
      async () => ({ kind: 'allow' }),
      (value) => {
        const checked = checkPreDecision(value)
        if (checked === undefined) malformed = true
        else if (DECISION_RANK[checked.kind] > DECISION_RANK[strictest.kind]) strictest = checked
      },
    )
    if (outcome.failed) {
      // A gate watching the caller's signal, as it must, fails when the caller cancels: that is a cancellation.
      if (exec.signal.aborted) return abortedBeforeDispatch(exec)
      return failureResult(ToolErrorCode.LISTENER_FAILED, `Tool call "${exec.name}" was denied: a pre-execute policy failed (${reasonOf(outcome.failure)})`)
    }
    if (malformed) {
      return failureResult(ToolErrorCode.LISTENER_FAILED, `Tool call "${exec.name}" was denied: a pre-execute policy returned a malformed decision`)
    }
    // A listener may tighten what next() gave it, never loosen it: the strictest decision wins.
    const final = checkPreDecision(outcome.value) ?? strictest
    decision = DECISION_RANK[strictest.kind] > DECISION_RANK[final.kind] ? strictest : final
  }
  if (decision.kind === 'deny') return denied(exec, decision.reason)
  // Guards run after every pre-execute listener and before any human is asked: a call a guard
  // denies anyway never reaches the approval service.
  for (const guard of host.registry.guardsFor(caller)) {
    let verdict: unknown
    try {
      verdict = guard(exec)
    } catch (error) {
      return denied(exec, `a guard failed (${reasonOf(error)})`)
    }
    if (verdict === undefined) continue
    if (isStrayPromise(verdict)) return denied(exec, 'a guard returned a promise; guards are synchronous')
    if (typeof verdict === 'string') return denied(exec, verdict.length > 0 ? verdict : 'denied by a guard')
    return denied(exec, 'a guard returned something other than a reason string')
  }
  if (decision.kind === 'ask') {
    const answer = await askApproval(host, exec, decision.reason)
    if (answer !== undefined) return answer
  }
  return undefined
}

async function askApproval(host: PipelineHost, exec: ToolExecution, reason: string | undefined): Promise<ToolExecutionFailure | undefined> {
  const agent = exec.agent
  if (agent === undefined) return denied(exec, 'approval is required, and a call without an agent cannot be approved')
  if (host.approval === undefined) return denied(exec, 'approval is required, and no approval service is configured')
  try {
    const answer: unknown = await host.approval.request({
      execution: exec,
      agent,
      ...(reason === undefined ? {} : { reason }),
      signal: exec.signal,
    })
    if (answer === 'allowed-once') return undefined
    return denied(exec, `approval was not granted (${typeof answer === 'string' ? answer : 'no answer'})`)
  } catch (error) {
    if (exec.signal.aborted) return abortedBeforeDispatch(exec)
    return denied(exec, `the approval service failed (${reasonOf(error)})`)
  }
}

/** The definition each live around-dispatch view dispatches to (see {@link dispatchedDefinition}). */
const viewDefinitions = new WeakMap<object, ToolDefinition>()

/**
 * The definition a `tools/execute` view will run, as resolved for the actual caller when the
 * execution started. Policies such as the timeout read the running definition's metadata here
 * instead of re-resolving the name from their own scope, which can see another definition.
 */
export function dispatchedDefinition(exec: ToolDispatchExecution): ToolDefinition | undefined {
  return viewDefinitions.get(exec)
}

/** Make the around-dispatch view: identity fixed, only the signal writable, never removable. */
function dispatchView(exec: ToolExecution): ToolDispatchExecution {
  let signal = exec.signal
  const view = { ...exec } as Record<string, unknown>
  delete view.signal
  for (const key of Object.keys(view)) Object.defineProperty(view, key, { writable: false, configurable: false })
  Object.defineProperty(view, 'signal', {
    enumerable: true,
    get: () => signal,
    set: (next: unknown) => {
      if (!isAbortSignal(next)) throw new TypeError('tools/execute: exec.signal can be replaced by another AbortSignal, never removed')
      signal = next
    },
  })
  return Object.seal(view) as unknown as ToolDispatchExecution
}

async function dispatch(
  host: PipelineHost,
  caller: ScopeNode,
  entry: RegisteredTool,
  exec: ToolExecution,
): Promise<{ result: ToolExecutionResult; bodyStarted: boolean }> {
  const listeners = host.bus.listeners('tools/execute', caller)
  if (listeners.length === 0) {
    const body = runBody(host, caller, entry, exec, exec.signal)
    return { result: await body, bodyStarted: true }
  }
  const view = dispatchView(exec)
  viewDefinitions.set(view, entry.definition)
  // One attempt per next() that reached the body: a retrying wrapper runs it again. Never two at
  // once, whatever the wrappers do (one may answer without waiting for its own next()): each
  // attempt starts when the one before it has settled.
  const attempts: Promise<ToolExecutionResult>[] = []
  let bodyStarted = false
  const attempt = async (): Promise<ToolExecutionResult> => {
    // Re-fuse the caller's signal: a wrapper's replacement can add reasons to stop, never remove one.
    const signal = view.signal === exec.signal ? exec.signal : AbortSignal.any([exec.signal, view.signal])
    if (signal.aborted) return cancelled(exec, bodyStarted)
    bodyStarted = true
    return runBody(host, caller, entry, exec, signal)
  }
  const last = (): Promise<ToolExecutionResult> => {
    const previous = attempts.at(-1)
    const next = previous === undefined ? attempt() : previous.then(attempt)
    attempts.push(next)
    return next
  }
  const outcome = await runWaterfall<ToolExecutionResult>(
    'tools/execute',
    listeners.map((listener) => (next) => listener(view, next)),
    last,
    undefined,
    true,
  )
  // No body's promise is ever abandoned, whatever a wrapper did with it.
  const bodyResults = await Promise.all(attempts)
  if (outcome.failed) {
    if (exec.signal.aborted) return { result: cancelled(exec, bodyStarted), bodyStarted }
    return {
      result: failureResult(ToolErrorCode.LISTENER_FAILED, `Tool call "${exec.name}" failed: a tools/execute wrapper failed (${reasonOf(outcome.failure)})`),
      bodyStarted,
    }
  }
  const value = outcome.value
  if (value !== undefined && bodyResults.includes(value)) return { result: value, bodyStarted }
  return { result: adoptForeignResult(entry, exec, value), bodyStarted }
}

/**
 * A result a wrapper made itself. A failure keeps the wrapper's code and message (a timeout, a
 * circuit breaker); a success is rebuilt from its value like the body's own (output check, render),
 * keeping its deferred contexts, so its content always shows its value and only the body's own run
 * context can conclude the turn.
 */
function adoptForeignResult(entry: RegisteredTool, exec: ToolExecution, value: unknown): ToolExecutionResult {
  const wrapperFailed = (what: string): ToolExecutionFailure =>
    failureResult(ToolErrorCode.LISTENER_FAILED, `Tool call "${exec.name}" failed: a tools/execute wrapper returned ${what}`)
  if (typeof value !== 'object' || value === null || typeof (value as { isError?: unknown }).isError !== 'boolean') {
    return wrapperFailed('something that is not a tool result')
  }
  const result = value as ToolExecutionResult
  if (result.isError) {
    const message = (result.error as { message?: unknown } | undefined)?.message
    return typeof message === 'string' ? result : wrapperFailed('an error result without error.message')
  }
  if (!Object.hasOwn(result, 'value')) return wrapperFailed('a success without a value')
  // Deferred contexts ride along (a metrics wrapper spreading next()'s result keeps them; they are
  // checked when the result is materialized); the turn marker does not.
  const contexts = result.additionalContexts
  return successFromValue(entry, exec, result.value, Array.isArray(contexts) ? { additionalContexts: contexts } : {})
}

/**
 * The fields of an execution record in their fixed order (callId, rootCallId, name, arguments,
 * agent?, parent?, signal, token), for the caller to extend and freeze: the execution itself, and
 * its body's run context. Assigned one by one: a conditional spread, or a spread of the frozen
 * execution, takes V8's slow object-clone path, several times slower, on every call.
 */
function executionFields(
  callId: CallId,
  rootCallId: CallId,
  name: string,
  args: unknown,
  agent: Agent | undefined,
  parent: ToolExecutionToken | undefined,
  signal: AbortSignal,
  token: ToolExecutionToken,
): Writable<ToolExecution> {
  const fields = { callId, rootCallId, name, arguments: args } as Writable<ToolExecution>
  if (agent !== undefined) fields.agent = agent
  if (parent !== undefined) fields.parent = parent
  fields.signal = signal
  fields.token = token
  return fields
}

/** {@link executionFields} of `exec`, with `signal` in place of its own. */
function fieldsOf(exec: ToolExecution, signal: AbortSignal): Writable<ToolExecution> {
  return executionFields(exec.callId, exec.rootCallId, exec.name, exec.arguments, exec.agent, exec.parent, signal, exec.token)
}

/** Run the body with its run context; never rejects. */
async function runBody(
  host: PipelineHost,
  scope: ScopeNode,
  entry: RegisteredTool,
  exec: ToolExecution,
  signal: AbortSignal,
): Promise<ToolExecutionResult> {
  const contexts: UserMessage[] = []
  let concludes = false
  let open = true
  const deferContext = (context: UserMessage): void => {
    if (!open) throw new ToolError(ToolErrorCode.TOOL_FAILED, 'deferContext() was called after the tool body settled')
    contexts.push(deferredMessage(context))
  }
  const concludeTurn = (): void => {
    if (!open) throw new ToolError(ToolErrorCode.TOOL_FAILED, 'concludeTurn() was called after the tool body settled')
    concludes = true
  }
  const fields = fieldsOf(exec, signal) as Writable<ToolRunContext>
  fields.deferContext = deferContext
  fields.concludeTurn = concludeTurn
  const runContext: ToolRunContext = Object.freeze(fields)
  const isTransport = entry.schema.name === RUN_CODE && exec.parent === undefined
  if (isTransport) host.liveTransports.set(exec.token, { exec, scope })
  let raw: unknown
  try {
    raw = await entry.definition.execute(exec.arguments, runContext)
  } catch (error) {
    // A body that stops because its signal fired, as it should, reports the cancellation: not a failure.
    const stopped = signal.aborted && (error === signal.reason || (error instanceof Error && error.name === 'AbortError'))
    return materializeResult({
      ...(stopped ? cancelled(exec, true) : failureFromError(error, ToolErrorCode.TOOL_FAILED)),
      ...(contexts.length === 0 ? {} : { additionalContexts: contexts }),
    })
  } finally {
    open = false
    if (isTransport) host.liveTransports.delete(exec.token)
  }
  // Frozen now, so a wrapper cannot edit the body's result in place.
  return materializeResult(successFromValue(entry, exec, raw, { additionalContexts: contexts, concludesTurn: concludes }))
}

async function postExecute(
  host: PipelineHost,
  caller: ScopeNode,
  entry: RegisteredTool,
  exec: ToolExecution,
  result: ToolExecutionResult,
  bodyStarted: boolean,
): Promise<ToolExecutionResult> {
  const listeners = host.bus.listeners('tools/post-execute', caller)
  if (listeners.length === 0) return result
  let block: PostToolDecision | undefined
  let malformed: string | undefined
  const outcome = await runWaterfall<PostToolDecision>(
    'tools/post-execute',
    listeners.map((listener) => (next) => listener(exec, result, next)),
    async () => ({ kind: 'accept' }),
    (value) => {
      const checked = checkPostDecision(value)
      if (typeof checked === 'string') malformed ??= checked
      else if (checked.kind === 'block') block ??= checked
    },
  )
  if (outcome.failed) {
    if (exec.signal.aborted) return cancelled(exec, bodyStarted)
    return failureResult(ToolErrorCode.LISTENER_FAILED, `Tool call "${exec.name}" failed: a post-execute policy failed (${reasonOf(outcome.failure)})`)
  }
  if (malformed !== undefined) {
    return failureResult(ToolErrorCode.LISTENER_FAILED, `Tool call "${exec.name}" failed: a post-execute policy returned a malformed decision (${malformed})`)
  }
  const returned = checkPostDecision(outcome.value) as PostToolDecision
  // A block seen anywhere in the chain stands: an outer listener cannot accept it back.
  const decision = block ?? returned
  const contexts = [...(result.additionalContexts ?? []), ...(decision.additionalContexts ?? [])]
  const withContexts = contexts.length === 0 ? {} : { additionalContexts: contexts }
  if (decision.kind === 'block') {
    const message = contentText(decision.feedback) || `Tool call "${exec.name}" was blocked by a post-execute policy`
    return failureResult(ToolErrorCode.DENIED, message, { content: decision.feedback, ...withContexts })
  }
  if (decision.value !== undefined) {
    if (result.isError) {
      return failureResult(ToolErrorCode.LISTENER_FAILED, `Tool call "${exec.name}" failed: a post-execute policy tried to give a failed call a value`)
    }
    const replaced = successFromValue(entry, exec, decision.value, {
      additionalContexts: contexts,
      concludesTurn: result.concludesTurn === true,
    })
    return replaced
  }
  if (decision.content !== undefined) {
    return { ...result, content: decision.content, ...withContexts } as ToolExecutionResult
  }
  return contexts.length === (result.additionalContexts?.length ?? 0) ? result : ({ ...result, ...withContexts } as ToolExecutionResult)
}

/**
 * The live-progress reporter of one `run_code` run (`tools/code-progress`), or undefined when no
 * listener sees the run's scope: then a run makes nothing per sub-call or console line. Listeners
 * are those registered now; each gets the run's execution record (never its live run context, whose
 * deferContext and concludeTurn reach the model) and a frozen step; their failures are contained.
 */
export function codeProgressReporter(host: PipelineHost, caller: ScopeNode | undefined, run: ToolExecution): ((progress: CodeProgress) => void) | undefined {
  const live = liveRun(host, run.token)
  const listeners = host.bus.listeners('tools/code-progress', live?.scope ?? caller)
  if (listeners.length === 0) return undefined
  const exec: ToolExecution = live?.exec ?? Object.freeze(fieldsOf(run, run.signal))
  return (progress) => {
    // Frozen through: a listener cannot change what the next one reads (arguments are frozen already).
    const step = Object.freeze(progress.type === 'call-end' && progress.error !== undefined ? { ...progress, error: Object.freeze({ ...progress.error }) } : progress)
    for (const listener of listeners) {
      try {
        const returned = listener(exec, step) as unknown
        if (returned instanceof Promise) returned.catch((error: unknown) => host.reportListenerError(error, 'tools/code-progress'))
      } catch (error) {
        host.reportListenerError(error, 'tools/code-progress')
      }
    }
  }
}

/**
 * Run `tools/code-dispatch-log` for one settled sub-call, for the listeners of its run_code's
 * scope (`caller` if that run is not live). Only the durable copy changes; a failing listener or
 * a malformed replacement falls back to the original content.
 */
export async function runCodeDispatchLog(host: PipelineHost, caller: ScopeNode | undefined, dispatch: CodeDispatchLog): Promise<ContentBlock[]> {
  const live = liveRun(host, dispatch.exec.token)
  const original = dispatch.content
  // Every sub-call passes here: with no listener, nothing more is made.
  const listeners = host.bus.listeners('tools/code-dispatch-log', live?.scope ?? caller)
  if (listeners.length === 0) return original
  // Listeners get the run_code's execution record (never its live run context, whose deferContext
  // and concludeTurn would reach the model) in a frozen dispatch: none can swap what a later
  // listener, or the fallback, reads.
  const fields = { exec: live?.exec ?? Object.freeze(fieldsOf(dispatch.exec, dispatch.exec.signal)) } as Writable<CodeDispatchLog>
  if (dispatch.agent !== undefined) fields.agent = dispatch.agent
  fields.subCallId = dispatch.subCallId
  fields.name = dispatch.name
  fields.isError = dispatch.isError
  fields.content = original
  const frozen: CodeDispatchLog = Object.freeze(fields)
  const outcome = await runWaterfall<ContentBlock[]>(
    'tools/code-dispatch-log',
    listeners.map((listener) => (next) => listener(frozen, next)),
    async () => original,
  )
  if (outcome.failed) {
    host.reportListenerError(outcome.failure, 'tools/code-dispatch-log')
    return original
  }
  if (contentProblem(outcome.value) !== undefined) {
    host.reportListenerError(new Error('a tools/code-dispatch-log listener returned invalid content'), 'tools/code-dispatch-log')
    return original
  }
  return outcome.value as ContentBlock[]
}
