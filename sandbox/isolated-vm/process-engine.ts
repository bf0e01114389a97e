/**
 * isolated-vm in killable child processes: the default way `createIsolatedVmEngine` runs programs.
 *
 * Each child (process-child.ts) holds an in-process isolated-vm engine and runs one program at a
 * time; this side owns the processes. Whatever a program does to V8 inside a child (an isolate lost
 * to the fatal out-of-memory error, a native loop that ignores the stop, a regexp compile or an ICU
 * allocation without end), the process ends with it: it is killed when a run must end now (an abort
 * not heard within ABORT_GRACE_MS, a run past its wall time plus WALL_GRACE_MS) and replaced once it
 * says its engine leaks. Nothing of that reaches this process: no engine-wide lock-out, no leaked
 * thread or heap here, and a clean `process.exit()` or `dispose()` at any moment.
 *
 * The pool starts `processes` children, prefers an idle child that last ran for the same tenant (its
 * isolate is kept for that tenant's next run), starts more when every child is busy (up to
 * `maxProcesses`), retires the extra ones after RETIRE_AFTER_MS idle, and queues runs past that.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { DisposedError, ToolError, ToolErrorCode } from '../../src/errors.ts'
import type { EngineFailure, EngineRunRequest, EngineRunResult, HostCallOutcome, LogLevel, SandboxEngine, SandboxLimits } from '../engine.ts'
import { atCap, heldByOwner, nextFairWaiter } from '../fair-share.ts'
import { describeLimit, neverStarted, withCeilings } from '../limits.ts'
import { packageFile } from '../package-files.ts'
import { TenantNumbers } from '../tenants.ts'
import { ANSWER_TOO_LARGE, answerRefusal } from '../guest-runtime.ts'
import { IsolatedVmUnavailableError } from './load-isolated-vm.ts'

/** What {@link createProcessEngine} is given by `createIsolatedVmEngine`, options checked. */
export interface ProcessEngineSettings {
  /** The in-process engine's options each child creates its engine with (plain data). */
  readonly childOptions: Readonly<Record<string, unknown>>
  readonly ceilings: Readonly<Partial<SandboxLimits>>
  /** Children kept warm. */
  readonly processes: number
  /** Most children at once. */
  readonly maxProcesses: number
  /** Runs allowed to wait for a child before `run()` throws. */
  readonly maxQueuedRuns: number
  /** Children one agent (a run's `tenant`) may hold at once; its further runs wait. */
  readonly maxProcessesPerAgent: number
}

/** After an abort, how long a child gets to end the run itself before it is killed. */
const ABORT_GRACE_MS = 1_000
/** Past the wall deadline, how long a child gets to report before it is killed. */
const WALL_GRACE_MS = 1_000
/** An extra child idle this long is retired. */
const RETIRE_AFTER_MS = 10_000
/** How long a child may take to load isolated-vm and prepare its first isolate. */
const START_TIMEOUT_MS = 30_000
/** Children in a row that die before they are ready before waiting runs are failed. */
const MAX_START_FAILURES = 3
/** After that, how long no child is started (runs fail at once with the reason). */
const START_BACKOFF_MS = 5_000
/** A tool result at least this long is acknowledged by the child when it arrives (see #sendAnswer). */
const ACKED_ANSWER_CHARS = 64 * 1024

const LOG_LEVELS: ReadonlySet<string> = new Set<LogLevel>(['log', 'info', 'warn', 'error'])

type ChildMessage =
  | { readonly t: 'ready' }
  | { readonly t: 'fatal'; readonly message: string }
  | { readonly t: 'call'; readonly run: number; readonly call: number; readonly name: string; readonly argsJson: string }
  | { readonly t: 'log'; readonly run: number; readonly level: string; readonly text: string }
  | { readonly t: 'done'; readonly run: number; readonly result: EngineRunResult; readonly leaking: boolean }
  | { readonly t: 'failed'; readonly run: number; readonly message: string }
  | { readonly t: 'leaking' }
  | { readonly t: 'took'; readonly run: number; readonly chars: number }

/** One run a child is serving, as this side tracks it. */
interface ChildRun {
  readonly id: number
  readonly request: EngineRunRequest
  /** The limits the run is held to, as asked (the child gets its wall time less the queue time). */
  readonly limits: SandboxLimits
  /** Ends the run with `result` unless it ended already; true if this call ended it. */
  finish(result: EngineRunResult): boolean
  /** Code units of large tool results sent to the child and not yet acknowledged. */
  answersInTransit: number
  /** The child's result, delivered a turn later (see 'done'); an exit meanwhile delivers it. */
  done?: EngineRunResult
}

class Child {
  state: 'starting' | 'idle' | 'busy' | 'dead' = 'starting'
  /** Whether it ever said it was ready (one that dies before is a failed start). */
  everReady = false
  /** Whose run it serves (agent number), for the per-agent cap; undefined when idle or anonymous. */
  owner: number | undefined
  /** The tenant whose run this child last served (its isolate may be kept for it). */
  tenant: number | undefined
  run: ChildRun | undefined
  /** Said by the child: its engine leaks; it serves no further run. */
  leaking = false
  retire: NodeJS.Timeout | undefined
  readonly exited: Promise<void>

  constructor(readonly process: ChildProcess) {
    this.exited = new Promise((resolve) => process.once('exit', () => resolve()))
  }

  /** Send `message`; false if it could not be sent (the child is going, or the message cannot be copied). */
  send(message: unknown): boolean {
    try {
      if (!this.process.connected) return false
      this.process.send(message as object)
      return true
    } catch {
      return false
    }
  }

  kill(): void {
    this.state = 'dead'
    clearTimeout(this.retire)
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL')
  }

  /** A busy child keeps this process alive (its run is pending); an idle one does not. */
  ref(on: boolean): void {
    const channel = this.process.channel as { ref?(): void; unref?(): void } | undefined
    if (on) {
      this.process.ref()
      channel?.ref?.()
    } else {
      this.process.unref()
      channel?.unref?.()
    }
  }
}

interface Waiter {
  readonly tenant: number
  /** The agent whose run it is, for fairness and the per-agent cap (undefined: anonymous, uncapped). */
  readonly owner: number | undefined
  readonly resolve: (child: Child | undefined) => void
  readonly reject: (error: unknown) => void
}

/** Create the engine; resolves once the first child is ready (a broken install throws here). */
export async function createProcessEngine(settings: ProcessEngineSettings): Promise<SandboxEngine> {
  const engine = new ProcessEngine(settings)
  try {
    await engine.started
  } catch (error) {
    await engine.dispose()
    throw error
  }
  return engine
}

class ProcessEngine implements SandboxEngine {
  readonly name = 'isolated-vm'
  readonly #settings: ProcessEngineSettings
  readonly #children = new Set<Child>()
  readonly #waiters: Waiter[] = []
  readonly #tenants = new TenantNumbers()
  #nextRun = 0
  #disposed = false
  /** Resolves when the first child is ready; rejects with the reason none can start. */
  readonly started: Promise<void>
  #startFailure: Error | undefined
  /** Children in a row that died before they were ready. */
  #startFailures = 0
  /** No child is started before this time (`performance.now()`), after MAX_START_FAILURES. */
  #startAgainAt = 0

  constructor(settings: ProcessEngineSettings) {
    this.#settings = settings
    const first = this.#spawn()
    this.started = new Promise((resolve, reject) => {
      first.process.once('message', (message: ChildMessage) => {
        if (message.t === 'ready') resolve()
      })
      void first.exited.then(() => reject(this.#startFailure ?? new IsolatedVmUnavailableError('The isolated-vm engine could not start its child process.')))
    })
    // A failed start is reported by `createProcessEngine`; nobody else waits on it.
    this.started.catch(() => {})
    for (let i = 1; i < settings.processes; i++) this.#spawn()
  }

  get ceilings(): Readonly<Partial<SandboxLimits>> {
    return this.#settings.ceilings
  }

  /** @internal Tests only: the process ids of the children alive now. */
  get pids(): number[] {
    return [...this.#children].flatMap((child) => (child.state === 'dead' || child.process.pid === undefined ? [] : [child.process.pid]))
  }

  async run(request: EngineRunRequest): Promise<EngineRunResult> {
    if (this.#disposed) throw new DisposedError('isolated-vm engine')
    const limits = withCeilings(request.limits, this.#settings.ceilings)
    if (Buffer.byteLength(request.code, 'utf8') > limits.maxSourceBytes) return limitResult('maxSourceBytes', limits)
    if (request.signal.aborted) return abortedResult()
    const tenant = this.#tenants.of(request.tenant)
    const owner = request.tenant === undefined ? undefined : tenant
    if (performance.now() < this.#startAgainAt && this.#startFailure !== undefined && this.#idleFor(tenant, owner, false) === undefined) {
      throw this.#startFailure
    }
    const queued = performance.now()
    const child = this.#idleFor(tenant, owner) ?? (await this.#wait(tenant, owner, request.signal, limits.wallTimeMs))
    if (this.#disposed) return disposedResult()
    if (child === undefined) return request.signal.aborted ? abortedResult() : failure(neverStarted(limits, 'process'))
    // An abort between the hand-over and the run's own listener would go unheard.
    if (request.signal.aborted) {
      this.#release(child)
      return abortedResult()
    }
    child.owner = owner
    return this.#runOn(child, request, limits, tenant, performance.now() - queued)
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return
    this.#disposed = true
    // Runs still waiting for a process end as aborted, like the runs under way.
    for (const waiter of this.#waiters.splice(0)) waiter.resolve(undefined)
    const exits: Promise<void>[] = []
    for (const child of [...this.#children]) {
      child.run?.finish(disposedResult())
      // Held until its exit is seen: dispose() resolves once every process is gone.
      child.ref(true)
      child.kill()
      exits.push(child.exited)
    }
    this.#children.clear()
    await Promise.all(exits)
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose()
  }

  #runOn(child: Child, request: EngineRunRequest, limits: SandboxLimits, tenant: number, queuedMs: number): Promise<EngineRunResult> {
    const { signal } = request
    const id = this.#nextRun++
    return new Promise<EngineRunResult>((resolve) => {
      let over = false
      let abortTimer: NodeJS.Timeout | undefined
      const finish = (result: EngineRunResult): boolean => {
        if (over) return false
        over = true
        clearTimeout(wallTimer)
        clearTimeout(abortTimer)
        signal.removeEventListener('abort', onAbort)
        child.run = undefined
        resolve(result)
        return true
      }
      // The process is the guarantee: a child that does not end the run in time is killed.
      const killFor = (result: EngineRunResult): void => {
        // A result the child already sent wins over the timer that fired in the meantime.
        if (finish(child.run?.done ?? result)) this.#discard(child)
      }
      const remaining = Math.max(1, Math.floor(limits.wallTimeMs - queuedMs))
      const wallTimer = setTimeout(() => killFor(limitResult('wallTimeMs', limits)), remaining + WALL_GRACE_MS)
      const onAbort = (): void => {
        child.send({ t: 'abort', run: id })
        abortTimer = setTimeout(() => killFor(abortedResult()), ABORT_GRACE_MS)
      }
      signal.addEventListener('abort', onAbort, { once: true })
      child.run = { id, request, limits, finish, answersInTransit: 0 }
      child.tenant = tenant
      child.send({ t: 'run', run: id, code: request.code, tools: request.tools, limits: { ...limits, wallTimeMs: remaining }, tenant })
    })
  }

  #onMessage(child: Child, message: ChildMessage): void {
    const run = child.run
    switch (message.t) {
      case 'ready':
        this.#startFailures = 0
        child.everReady = true
        if (child.state === 'starting') this.#release(child)
        return
      case 'fatal':
        this.#startFailure = new IsolatedVmUnavailableError(message.message)
        child.kill()
        return
      case 'leaking':
        child.leaking = true
        if (child.state === 'idle') this.#discard(child)
        return
      case 'call': {
        if (run === undefined || run.id !== message.run) return
        answer(child, run, message.call, message.name, message.argsJson)
        return
      }
      case 'took':
        if (run !== undefined && run.id === message.run) run.answersInTransit -= message.chars
        return
      case 'log':
        if (run === undefined || run.id !== message.run) return
        try {
          run.request.host.log({ level: LOG_LEVELS.has(message.level) ? (message.level as LogLevel) : 'log', text: message.text })
        } catch {
          // A failing log sink is the host's problem, not the program's.
        }
        return
      case 'done': {
        if (run === undefined || run.id !== message.run) return
        child.leaking ||= message.leaking
        run.done = relimit(message.result, run.limits)
        // A turn of its own, as if it came alone: sub-calls the same read delivered just before it
        // get under way (and so get their abort) before the run ends.
        setImmediate(() => {
          if (child.run !== run) return
          run.finish(run.done as EngineRunResult)
          if (child.leaking) this.#discard(child)
          else this.#release(child)
        })
        return
      }
      case 'failed': {
        if (run === undefined || run.id !== message.run) return
        run.finish({ ok: false, error: { kind: 'guest', name: 'InternalError', message: 'the sandbox failed while running the program' } })
        this.#discard(child)
        return
      }
    }
  }

  #spawn(): Child {
    // From the sources (tests, tsx) the child is TypeScript too, and needs the same loader.
    const fromSource = import.meta.url.endsWith('.ts')
    const entry = packageFile(
      new URL(fromSource ? './process-child.ts' : './process-child.js', import.meta.url),
      'isolated-vm child process entry (dist/sandbox/isolated-vm/process-child.js)',
    )
    const spawned = fork(entry, [], {
      execArgv: fromSource ? ['--no-node-snapshot', '--import', 'tsx'] : ['--no-node-snapshot'],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    })
    const child = new Child(spawned)
    this.#children.add(child)
    // Starting (bounded by START_TIMEOUT_MS) keeps this process alive: the engine's creation or a run may wait for it.
    child.ref(true)
    spawned.on('message', (message: ChildMessage) => this.#onMessage(child, message))
    spawned.on('error', () => {
      // 'exit' follows.
    })
    spawned.once('exit', () => this.#onExit(child))
    const startTimer = setTimeout(() => {
      if (child.state === 'starting') child.kill()
    }, START_TIMEOUT_MS)
    startTimer.unref()
    child.send({ t: 'init', options: this.#settings.childOptions })
    return child
  }

  #onExit(child: Child): void {
    child.state = 'dead'
    clearTimeout(child.retire)
    this.#children.delete(child)
    // A result the child sent just before it went is still its run's result.
    child.run?.finish(child.run.done ?? { ok: false, error: { kind: 'guest', name: 'InternalError', message: 'the sandbox process stopped unexpectedly' } })
    if (this.#disposed) return
    this.#startFailures = child.everReady ? 0 : this.#startFailures + 1
    if (this.#startFailures >= MAX_START_FAILURES) {
      // It cannot start at all: say so to every waiting run, and start no child for a while.
      this.#startFailures = 0
      this.#startFailure ??= new IsolatedVmUnavailableError('The isolated-vm engine could not start its child process.')
      this.#startAgainAt = performance.now() + START_BACKOFF_MS
      for (const waiter of this.#waiters.splice(0)) waiter.reject(this.#startFailure)
      return
    }
    this.#fill()
  }

  /** The child is free: serve a waiting run, or go idle (and retire later if extra). */
  #release(child: Child): void {
    if (child.state === 'dead') return
    child.state = 'idle'
    child.run = undefined
    child.owner = undefined
    const index = this.#nextWaiter()
    const waiter = index === undefined ? undefined : this.#waiters.splice(index, 1)[0]
    if (waiter !== undefined) {
      child.state = 'busy'
      child.owner = waiter.owner
      child.ref(true)
      waiter.resolve(child)
      return
    }
    child.ref(false)
    if (this.#children.size > this.#settings.processes) {
      clearTimeout(child.retire)
      child.retire = setTimeout(() => {
        if (child.state === 'idle' && this.#children.size > this.#settings.processes) child.kill()
      }, RETIRE_AFTER_MS)
      child.retire.unref()
    }
  }

  /** Kill the child now and start another in its place. */
  #discard(child: Child): void {
    child.kill()
    this.#children.delete(child)
    this.#fill()
  }

  /**
   * Which waiting run a free child serves: among the runs whose agent is under its cap, the oldest
   * of the agent holding the fewest children, so one agent's many runs cannot keep another's
   * waiting. (The child's kept isolate is no reason to serve its last tenant out of turn.)
   */
  #nextWaiter(): number | undefined {
    return nextFairWaiter(this.#waiters, this.#held(), this.#settings.maxProcessesPerAgent)
  }

  /** Children held now, by agent. */
  #held(): Map<number, number> {
    return heldByOwner(this.#children)
  }

  /** Keep the warm number of children, and one starting for each waiting run, up to the ceiling. */
  #fill(): void {
    if (this.#disposed || performance.now() < this.#startAgainAt) return
    let starting = 0
    for (const child of this.#children) if (child.state === 'starting') starting += 1
    while (this.#children.size < this.#settings.processes) {
      this.#spawn()
      starting += 1
    }
    while (starting < this.#waiters.length && this.#children.size < this.#settings.maxProcesses) {
      this.#spawn()
      starting += 1
    }
  }

  /**
   * An idle child now (taken unless `take` is false), one that last ran for `tenant` if there is
   * one; none while runs wait or while `owner` holds its cap.
   */
  #idleFor(tenant: number, owner: number | undefined, take = true): Child | undefined {
    if (this.#waiters.length > 0) return undefined
    if (atCap(this.#children, owner, this.#settings.maxProcessesPerAgent)) return undefined
    let chosen: Child | undefined
    for (const child of this.#children) {
      if (child.state !== 'idle') continue
      if (child.tenant === tenant) {
        chosen = child
        break
      }
      chosen ??= child
    }
    if (chosen === undefined || !take) return chosen
    clearTimeout(chosen.retire)
    chosen.state = 'busy'
    chosen.ref(true)
    return chosen
  }

  /** Wait for a child; undefined once `signal` aborts or the run's wall time passed waiting. */
  #wait(tenant: number, owner: number | undefined, signal: AbortSignal, wallTimeMs: number): Promise<Child | undefined> {
    if (this.#waiters.length >= this.#settings.maxQueuedRuns) {
      return Promise.reject(
        new ToolError(ToolErrorCode.CODE_RUN_FAILED, `isolated-vm engine: more than ${this.#settings.maxQueuedRuns} runs are waiting for a process`),
      )
    }
    return new Promise((resolve, reject) => {
      const giveUp = (): void => {
        const index = this.#waiters.indexOf(waiter)
        if (index >= 0) this.#waiters.splice(index, 1)
        settle(undefined)
      }
      const timer = setTimeout(giveUp, wallTimeMs)
      const settle = (child: Child | undefined): void => {
        clearTimeout(timer)
        signal.removeEventListener('abort', giveUp)
        resolve(child)
      }
      const waiter: Waiter = {
        tenant,
        owner,
        resolve: settle,
        reject: (error) => {
          clearTimeout(timer)
          signal.removeEventListener('abort', giveUp)
          reject(error)
        },
      }
      signal.addEventListener('abort', giveUp, { once: true })
      this.#waiters.push(waiter)
      this.#fill()
      // A child may be idle while the runs before this one wait on their agents' caps.
      for (const child of this.#children) if (child.state === 'idle' && this.#waiters.length > 0) this.#release(child)
    })
  }
}

/**
 * One sub-call through the host; its outcome goes back to the child, whatever the host does. Only
 * strings cross (a fresh outcome object, so nothing else the host put in it is copied). A result the
 * guest could not hold beside the large ones still on their way to it is refused here, before it is
 * copied into a message (answerEnvelope's rule: half the memory limit); the child acknowledges
 * large results as they arrive.
 */
function answer(child: Child, run: ChildRun, call: number, name: string, argsJson: string): void {
  const failure = (message: string, code: string): HostCallOutcome => ({ ok: false, message: String(message), code: String(code) })
  const failed = (): void => reply(failure(`the tool "${name}" failed inside the host`, 'TOOL_FAILED'))
  const reply = (outcome: HostCallOutcome): void => {
    if (child.run !== run) return
    let fresh: HostCallOutcome = outcome.ok ? { ok: true, valueJson: String(outcome.valueJson) } : failure(outcome.message, outcome.code)
    let chars = 0
    if (fresh.ok) {
      const refused = refuseLarge(name, fresh.valueJson, run)
      if (refused !== undefined) fresh = refused
      else if (fresh.valueJson.length >= ACKED_ANSWER_CHARS) chars = fresh.valueJson.length
    }
    run.answersInTransit += chars
    if (!child.send({ t: 'answer', run: run.id, call, outcome: fresh, ack: chars > 0 })) {
      // Not sent while the child lives: the program still gets an answer, never a silent wait.
      run.answersInTransit -= chars
      child.send({ t: 'answer', run: run.id, call, outcome: failure(`the result of "${name}" could not be sent to the program`, 'TOOL_FAILED') })
    }
  }
  let pending: Promise<HostCallOutcome>
  try {
    pending = run.request.host.call(name, argsJson)
  } catch {
    return failed()
  }
  void Promise.resolve(pending).then(reply, failed).catch(() => {})
}

/** The failure for a result the guest has no room for, or undefined when it fits (see answerEnvelope). */
function refuseLarge(name: string, valueJson: string, run: ChildRun): HostCallOutcome | undefined {
  const refusal = answerRefusal(name, valueJson.length, run.limits.memoryLimitBytes, run.answersInTransit)
  return refusal === undefined ? undefined : { ok: false, message: refusal, code: ANSWER_TOO_LARGE }
}

/** A limit failure described with the limits the run asked for (the child saw its wall time less the queue). */
function relimit(result: EngineRunResult, limits: SandboxLimits): EngineRunResult {
  if (result.ok || result.error.kind !== 'limit') return result
  return limitResult(result.error.limit, limits)
}

function failure(error: EngineFailure): EngineRunResult {
  return { ok: false, error }
}

function limitResult(limit: keyof SandboxLimits, limits: SandboxLimits): EngineRunResult {
  return failure({ kind: 'limit', limit, message: describeLimit(limit, limits) })
}

function disposedResult(): EngineRunResult {
  return failure({ kind: 'aborted', message: 'the engine was disposed during the run' })
}

function abortedResult(): EngineRunResult {
  return failure({ kind: 'aborted', message: 'the run was aborted' })
}
