import { DisposedError, ToolDefinitionError } from './errors.ts'
import { ToolEventBus } from './events.ts'
import type { CodeProgress, ToolEventName, ToolEvents } from './events.ts'
import type {
  CodeDispatchLog,
  ToolExecution,
  ToolExecutionInput,
  ToolExecutionMode,
  ToolExecutionResult,
  ToolExecutionToken,
  ToolGuard,
} from './execution.ts'
import { snapshotJson } from './json-boundary.ts'
import { describeThrown, isStrayPromise } from './results.ts'
import type { ContentBlock } from './messages.ts'
import { codeProgressReporter, liveRun, resolveTool, runCodeDispatchLog, runPipeline } from './pipeline.ts'
import type { ApprovalService, LiveTransport, PipelineHost } from './pipeline.ts'
import { RUN_CODE, ToolRegistry } from './registry.ts'
import type { CodeModeTool, ToolPresentationMode, ToolRestriction } from './registry.ts'
import type { ToolSchema } from './schema/types.ts'
import { ScopeNode } from './scope.ts'
import { createMemorySessionLog } from './session-log.ts'
import type { SessionLog } from './session-log.ts'
import type { ToolDefinition } from './tool.ts'

/** An agent joined under a scope: its id, its own context, and its durable session log. */
export interface Agent {
  readonly id: string
  readonly ctx: Context
  readonly session: SessionLog
}

/** The viewing scope for lookups: an agent or a context. */
export type ScopeKey = Agent | Context

/**
 * What a Code Mode transport gets from the deployment: dispatch through the one pipeline, the
 * native view of an agent, scheduling modes, and the contained `tools/code-dispatch-log` waterfall.
 */
export interface CodeModeHost {
  /** Execute a sub-call through the full pipeline (the input carries `parent` and `agent`). */
  execute(input: ToolExecutionInput): Promise<ToolExecutionResult>
  /** The native tools a running `run_code` execution's scope can see: its program's SDK. */
  visibleTools(run: ToolExecution): readonly ToolDefinition[]
  /** The fail-closed scheduling mode of a pending sub-call. */
  executionMode(input: ToolExecutionInput): ToolExecutionMode
  /** Run `tools/code-dispatch-log` for one settled sub-call; a failing listener yields the original content. */
  codeDispatchLog(dispatch: CodeDispatchLog): Promise<ContentBlock[]>
  /** Bound on overlapping parallel-safe sub-calls of one run. */
  readonly maxParallelSubCalls: number
  /**
   * The `tools/code-progress` reporter of a starting run, or undefined when nobody who may see the
   * run listens (see `codeProgressReporter`). Optional for hosts that offer no live progress.
   */
  progress?(run: ToolExecution): ((progress: CodeProgress) => void) | undefined
}

/** Builds the deployment's `run_code` tool from its host. */
export type CodeModeTransport = (host: CodeModeHost) => CodeModeTool

/** The deployment's tool configuration. */
export interface ToolsConfig {
  /** How models see tools unless a scope says otherwise (`presentAs`). Default `'native'`. */
  readonly mode?: ToolPresentationMode
  /** Overlap bound for parallel-safe sub-calls of one `run_code` run. Default 128. */
  readonly maxParallelSubCalls?: number
  /** The Code Mode transport providing `run_code` (see `createRunCode` in the sandbox package). */
  readonly codeMode?: CodeModeTransport
}

/** Options of {@link createContext}. */
export interface ContextOptions {
  readonly tools?: ToolsConfig
  /** Answers `ask` decisions. Without one, every `ask` is denied. */
  readonly approval?: ApprovalService
  /** Receives contained failures of emit listeners (`tools/result`, `tools/change`), of `tools/code-dispatch-log` listeners (the original content is logged) and of a `finalizeContent` that failed on an already-failed call (label `finalizeContent`). Default: a process warning. */
  readonly onListenerError?: (error: unknown, event: string) => void
}

interface Deployment extends PipelineHost {
  /** The root scope: the global view. */
  readonly root: ScopeNode
  readonly agents: WeakMap<Agent, ScopeNode>
  readonly maxParallelSubCalls: number
}

const DEFAULT_MAX_PARALLEL = 128

function defaultListenerErrorReport(error: unknown, event: string): void {
  const { message } = describeThrown(error)
  process.emitWarning(`a "${event}" listener failed: ${message}`, { code: 'TOOL_LISTENER_FAILED' })
}

/**
 * Create the deployment root context: one registry, one event bus, one approval service.
 * Everything registered through a context is undone by its `dispose()`.
 */
export function createContext(options: ContextOptions = {}): Context {
  const tools = options.tools ?? {}
  const mode = tools.mode ?? 'native'
  if (mode !== 'native' && mode !== 'code') {
    throw new ToolDefinitionError(`tools.mode must be 'native' or 'code', got ${JSON.stringify(mode)}`)
  }
  const maxParallelSubCalls = tools.maxParallelSubCalls ?? DEFAULT_MAX_PARALLEL
  if (!Number.isSafeInteger(maxParallelSubCalls) || maxParallelSubCalls < 1) {
    throw new ToolDefinitionError(`tools.maxParallelSubCalls must be a positive integer, got ${String(maxParallelSubCalls)}`)
  }
  if (mode === 'code' && tools.codeMode === undefined) {
    throw new ToolDefinitionError("tools.mode 'code' needs tools.codeMode (a transport such as createRunCode({ engine }))")
  }
  const report = options.onListenerError ?? defaultListenerErrorReport
  const deployment: Deployment = {
    root: new ScopeNode('root', 'root', undefined),
    registry: new ToolRegistry(mode),
    bus: new ToolEventBus(),
    approval: options.approval,
    liveTransports: new Map<ToolExecutionToken, LiveTransport>(),
    agents: new WeakMap(),
    maxParallelSubCalls,
    reportListenerError: (error, event) => {
      try {
        report(error, event)
      } catch {
        // The reporter itself failing must not break the call that observed the failure.
      }
    },
  }
  const root = new Context(deployment, deployment.root)
  if (tools.codeMode !== undefined) {
    const host: CodeModeHost = {
      execute: (input) => root.tools.execute(input),
      visibleTools: (run) => {
        const scope = liveRun(deployment, run.token)?.scope ?? nodeOfAgent(deployment, run.agent) ?? deployment.root
        return deployment.registry.visible(scope).map((entry) => entry.definition)
      },
      executionMode: (input) => root.tools.executionMode(input),
      codeDispatchLog: (dispatch) => runCodeDispatchLog(deployment, nodeOfAgent(deployment, dispatch.agent), dispatch),
      progress: (run) => codeProgressReporter(deployment, nodeOfAgent(deployment, run.agent), run),
      maxParallelSubCalls,
    }
    deployment.registry.setTransport(tools.codeMode(host))
  }
  return root
}

function nodeOfAgent(deployment: Deployment, agent: Agent | undefined): ScopeNode | undefined {
  return agent === undefined ? undefined : deployment.agents.get(agent)
}

/**
 * A scope of the deployment: the root, a named child scope (a preset) or an agent's own scope.
 * `dispose()` undoes everything registered through it and its descendants, in reverse order.
 */
export class Context implements Disposable {
  /** The tool runtime; calls through it act for this context's scope. */
  readonly tools: ToolRuntime
  readonly #deployment: Deployment
  readonly #node: ScopeNode
  readonly #effects: (() => void)[] = []
  /** Set once for an agent's own context. */
  #agent: Agent | undefined
  /** Removes this context from its parent's effects when it is disposed on its own. */
  #detach: (() => void) | undefined
  #disposed = false

  /** @internal Use {@link createContext}, {@link Context.scope} or {@link Context.agent}. */
  constructor(deployment: Deployment, node: ScopeNode) {
    this.#deployment = deployment
    this.#node = node
    this.tools = new ToolRuntime(this, deployment, node)
  }

  /** The scope name (`root` for the deployment root). */
  get name(): string {
    return this.#node.name
  }

  /** True once `dispose()` ran. */
  get disposed(): boolean {
    return this.#disposed
  }

  /** @internal */
  assertAlive(): void {
    if (this.#disposed) throw new DisposedError(`context "${this.#node.path}"`)
  }

  /** @internal Record an effect; returns the exact disposer that undoes it once. */
  track(undo: () => void): () => void {
    this.assertAlive()
    let active = true
    const disposer = (): void => {
      if (!active) return
      active = false
      const index = this.#effects.lastIndexOf(disposer)
      if (index >= 0) this.#effects.splice(index, 1)
      undo()
    }
    this.#effects.push(disposer)
    return disposer
  }

  /** @internal The scope node of this context. */
  get node(): ScopeNode {
    return this.#node
  }

  /** @internal Whether this context is a scope of `deployment`. */
  ownedBy(deployment: object): boolean {
    return this.#deployment === deployment
  }

  /** @internal The agent this context belongs to, if it is an agent's context. */
  get ownAgent(): Agent | undefined {
    return this.#agent
  }

  /**
   * Listen to a tool event. Listeners registered through a child scope or an agent receive only
   * the calls made at or under that scope (an agent's calls, an agentless call made through that
   * scope's context, the sub-calls of a `run_code` acting in it); `tools/change` is never filtered.
   * @returns the exact disposer.
   */
  on<E extends ToolEventName>(event: E, listener: ToolEvents[E]): () => void {
    this.assertAlive()
    return this.track(this.#deployment.bus.on(event, this.#node, listener, this.tools))
  }

  /** A child scope (for example an agent preset). Disposed with this context. */
  scope(name: string): Context {
    this.assertAlive()
    if (typeof name !== 'string' || name.length === 0) throw new ToolDefinitionError('scope(name): name must be a non-empty string')
    const child = new Context(this.#deployment, new ScopeNode('scope', name, this.#node))
    child.#detach = this.track(() => child.dispose())
    return child
  }

  /** An agent joined under this scope, with its own context and session log. Disposed with this context. */
  agent(id: string, options: { session?: SessionLog } = {}): Agent {
    this.assertAlive()
    if (typeof id !== 'string' || id.length === 0) throw new ToolDefinitionError('agent(id): id must be a non-empty string')
    const node = new ScopeNode('agent', id, this.#node)
    const ctx = new Context(this.#deployment, node)
    const agent: Agent = Object.freeze({ id, ctx, session: options.session ?? createMemorySessionLog() })
    ctx.#agent = agent
    this.#deployment.agents.set(agent, node)
    ctx.#detach = this.track(() => ctx.dispose())
    return agent
  }

  /** Undo every registration made through this context and its descendants, newest first. Idempotent. */
  dispose(): void {
    if (this.#disposed) return
    // Undo while still alive so effects can run; then mark disposed.
    while (this.#effects.length > 0) {
      const effect = this.#effects.pop() as () => void
      effect()
    }
    this.#disposed = true
    const detach = this.#detach
    this.#detach = undefined
    detach?.()
  }

  [Symbol.dispose](): void {
    this.dispose()
  }
}

let executeUnparsed: (runtime: ToolRuntime, input: ToolExecutionInput, error: unknown) => Promise<ToolExecutionResult>
let callerAgent: (runtime: ToolRuntime, agent: Agent | undefined) => Agent | undefined

/**
 * @internal For the agent loop ({@link runToolCalls}): the agent calls through `tools` act for
 * (`agent`, else the context's own agent), checked as `execute()` checks it: throws for an agent
 * of another deployment or outside the context's scope. Not exported from the package.
 */
export function agentOfCalls(tools: ToolRuntime, agent: Agent | undefined): Agent | undefined {
  return callerAgent(tools, agent)
}

/**
 * @internal For the agent loop ({@link runToolCalls}): run a call whose argument text could not be
 * parsed through the whole pipeline as `INVALID_ARGS`, so resolution (`UNKNOWN_TOOL` first),
 * `finalizeContent` and `tools/result` see it exactly like any other outcome. Not exported from
 * the package.
 */
export function executeWithUnparsedArguments(
  tools: ToolRuntime,
  input: ToolExecutionInput,
  error: unknown,
): Promise<ToolExecutionResult> {
  return executeUnparsed(tools, input, error)
}

/**
 * `ctx.tools`: the registry and pipeline as one context sees them. Registrations made here belong
 * to this context's scope (global for the root) and are undone by its `dispose()`.
 */
export class ToolRuntime {
  readonly #context: Context
  readonly #deployment: Deployment
  readonly #node: ScopeNode

  /** @internal */
  constructor(context: Context, deployment: Deployment, node: ScopeNode) {
    this.#context = context
    this.#deployment = deployment
    this.#node = node
  }

  /**
   * Register globally (root context) or in this scope. Scoped tools shadow globals; a duplicate
   * within one layer and the reserved `run_code` fail. The output schema is checked here.
   * @returns the exact disposer that unregisters this tool.
   */
  register(definition: ToolDefinition): () => void {
    this.#context.assertAlive()
    const { registry } = this.#deployment
    const entry = registry.register(this.#node, definition)
    return this.#changeTracked(() => registry.unregister(entry))
  }

  /**
   * Restrict the tools this scope inherits (global and ancestors). Empty filters, unknown names,
   * this scope's own names and `run_code` fail. Restrictions intersect.
   * @returns the exact disposer that lifts this restriction.
   */
  restrict(filter: ToolRestriction): () => void {
    this.#context.assertAlive()
    return this.#changeTracked(this.#deployment.registry.restrict(this.#node, filter))
  }

  /**
   * Add a monotonic guard: on the root it applies to every call, on a scope or agent context only
   * to calls at or under it. A returned string denies; nothing can allow a denied call again.
   * @returns the exact disposer.
   */
  guard(guard: ToolGuard): () => void {
    this.#context.assertAlive()
    return this.#context.track(this.#deployment.registry.addGuard(this.#node, guard))
  }

  /**
   * Present this scope's tools in `mode` instead of the deployment default. Scoped only, one per
   * scope; the nearest declaration on an agent's chain wins.
   * @returns the exact disposer that restores what was seen before.
   */
  presentAs(mode: ToolPresentationMode): () => void {
    this.#context.assertAlive()
    return this.#changeTracked(this.#deployment.registry.presentAs(this.#node, mode))
  }

  /**
   * The definition `scope` resolves for `name` (scoped shadows global; restricted-away reads as
   * absent). `run_code` resolves only for a scope presented in Code Mode.
   * @param scope - the viewing agent or context; omitted = the global view.
   */
  get(name: string, scope?: ScopeKey): ToolDefinition | undefined {
    const node = this.#viewOf(scope)
    const { registry } = this.#deployment
    if (name === RUN_CODE) return registry.modeOf(node) === 'code' ? registry.transport : undefined
    return registry.resolve(name, node)?.definition
  }

  /**
   * The native definitions `scope` can see (its Code Mode SDK is generated from these).
   * @param scope - the viewing agent or context; omitted = the global view.
   */
  list(scope?: ScopeKey): ToolDefinition[] {
    return this.#deployment.registry.visible(this.#viewOf(scope)).map((entry) => entry.definition)
  }

  /**
   * The model-facing schemas for `scope`: name, description and parameters only, deep-cloned.
   * Under Code Mode this is exactly one tool, `run_code`, describing the scope's SDK.
   * @param scope - the viewing agent or context; omitted = the global view.
   */
  schemas(scope?: ScopeKey): ToolSchema[] {
    const node = this.#viewOf(scope)
    const { registry } = this.#deployment
    const visible = registry.visible(node)
    if (registry.modeOf(node) === 'code') {
      const transport = registry.transportEntry(node)
      if (transport === undefined) return []
      const tool = transport.definition as CodeModeTool
      return [
        {
          name: RUN_CODE,
          description: tool.describe(visible.map((entry) => entry.definition)),
          parameters: structuredClone(transport.schema.parameters),
        },
      ]
    }
    return visible.map((entry) => ({
      name: entry.schema.name,
      description: entry.schema.description,
      parameters: structuredClone(entry.schema.parameters),
    }))
  }

  /**
   * Classify a pending call. Only an exact `true` from the visible definition's
   * `isConcurrencySafe` is parallel; unknown, hidden, invalid or throwing is exclusive.
   */
  executionMode(input: ToolExecutionInput): ToolExecutionMode {
    this.#context.assertAlive()
    const exclusive: ToolExecutionMode = { kind: 'exclusive' }
    try {
      const { node, agent } = this.#callerOf(input)
      const { name, parent } = input
      const args = snapshotJson(input.arguments, 'arguments')
      // A sub-call is classified in its run_code's scope, where it will run.
      const live = liveRun(this.#deployment, parent)
      const resolved = resolveTool(this.#deployment, live?.scope ?? node, { name, parent, agent } as ToolExecution, live)
      if (!('entry' in resolved)) return exclusive
      const classify = resolved.entry.definition.isConcurrencySafe
      if (classify === undefined) return exclusive
      const answer: unknown = classify.call(resolved.entry.definition, args)
      isStrayPromise(answer)
      return answer === true ? { kind: 'parallel' } : exclusive
    } catch {
      return exclusive
    }
  }

  /**
   * Execute one call through the whole pipeline. Tool and listener failures resolve as frozen
   * error results; the returned result is the same frozen object `tools/result` observers got.
   * Rejects only for a malformed input (missing signal, empty callId, foreign agent).
   */
  async execute(input: ToolExecutionInput): Promise<ToolExecutionResult> {
    this.#context.assertAlive()
    const { node, agent } = this.#callerOf(input)
    return runPipeline(this.#deployment, node, input, agent)
  }

  static {
    executeUnparsed = async (runtime, input, error) => {
      runtime.#context.assertAlive()
      const { node, agent } = runtime.#callerOf(input)
      return runPipeline(runtime.#deployment, node, input, agent, { error })
    }
    callerAgent = (runtime, agent) => {
      runtime.#context.assertAlive()
      return runtime.#actingFor(agent).agent
    }
  }

  /** The caller's scope node and agent: the input's agent if given, else this context's. */
  #callerOf(input: ToolExecutionInput): { node: ScopeNode; agent: Agent | undefined } {
    if (typeof input !== 'object' || input === null) throw new TypeError('execute() takes a ToolExecutionInput object')
    return this.#actingFor(input.agent)
  }

  /** The scope node and agent calls through this context act for: `given`, else this context's agent, checked. */
  #actingFor(given: Agent | undefined): { node: ScopeNode; agent: Agent | undefined } {
    const agent = given ?? this.#context.ownAgent
    if (agent === undefined) return { node: this.#node, agent: undefined }
    const node = this.#deployment.agents.get(agent)
    if (node === undefined) throw new ToolDefinitionError(`agent "${String((agent as Agent).id)}" does not belong to this deployment`)
    if (!this.#node.covers(node)) {
      throw new ToolDefinitionError(`agent "${agent.id}" is not under scope "${this.#node.path}"; call through a context that covers it`)
    }
    if (agent.ctx.disposed) throw new DisposedError(`agent "${agent.id}"`)
    return { node, agent }
  }

  /** The scope a lookup views the tools from: the one given, or the global view (the spec's default). */
  #viewOf(scope: ScopeKey | undefined): ScopeNode {
    this.#context.assertAlive()
    if (scope === undefined) return this.#deployment.root
    if (scope instanceof Context) {
      if (!scope.ownedBy(this.#deployment)) throw new ToolDefinitionError('the scope is a context of another deployment')
      return scope.node
    }
    const node = this.#deployment.agents.get(scope)
    if (node === undefined) throw new ToolDefinitionError('the scope is neither a context nor an agent of this deployment')
    return node
  }

  /**
   * A registry change just made: announce it, and return the context-tracked disposer that undoes
   * it and announces that too (unless `undo` reports it had nothing left to undo).
   */
  #changeTracked(undo: () => boolean | void): () => void {
    this.#changed()
    return this.#context.track(() => {
      if (undo() !== false) this.#changed()
    })
  }

  #changed(): void {
    const { bus } = this.#deployment
    for (const listener of bus.all('tools/change')) {
      try {
        const returned: unknown = listener()
        if (returned instanceof Promise) returned.catch((error: unknown) => this.#deployment.reportListenerError(error, 'tools/change'))
      } catch (error) {
        this.#deployment.reportListenerError(error, 'tools/change')
      }
    }
  }
}
