import type { Agent, CodeModeHost } from '../src/context.ts'
import { ToolErrorCode } from '../src/errors.ts'
import type { ToolExecutionInput, ToolExecutionResult, ToolRunContext } from '../src/execution.ts'
import { parseDurableJson, stringifyJson } from '../src/json-boundary.ts'
import type { JsonValue } from '../src/json-boundary.ts'
import type { UserMessage } from '../src/messages.ts'
import { CallScheduler } from '../src/scheduler.ts'
import { codeDispatchEvent, codeDispatchStartEvent } from '../src/session-log.ts'
import type { SessionEvent } from '../src/session-log.ts'
import type { GuestHost, HostCallOutcome, LogEntry, SandboxLimits } from './engine.ts'

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
  readonly #scheduler: CallScheduler
  readonly #abort = new AbortController()
  readonly #signal: AbortSignal
  readonly #pending = new Set<Promise<unknown>>()
  /** Deferred contexts of each sub-call, by call number, so they are ferried in call order. */
  readonly #contexts: UserMessage[][] = []
  readonly #logFailures: unknown[] = []
  #count = 0
  #concludes = false

  readonly #maxArgumentBytes: number

  constructor(host: CodeModeHost, exec: ToolRunContext, limits: SandboxLimits) {
    this.#host = host
    this.#exec = exec
    this.#maxArgumentBytes = limits.maxArgumentBytes
    this.#scheduler = new CallScheduler(host.maxParallelSubCalls)
    this.#signal = AbortSignal.any([exec.signal, this.#abort.signal])
  }

  /** Aborted when the run's caller cancels or the program ended; the engine run uses it too. */
  get signal(): AbortSignal {
    return this.#signal
  }

  /** True when a nested successful call asked to conclude the turn. */
  get concludesTurn(): boolean {
    return this.#concludes
  }

  /** Session writes that failed; a run with a broken durable log must not pass as a success. */
  get logFailures(): readonly unknown[] {
    return this.#logFailures
  }

  log(entry: LogEntry): void {
    this.logs.push(entry)
  }

  call(name: string, argsJson: string): Promise<HostCallOutcome> {
    if (argsJson.length > this.#maxArgumentBytes) {
      return Promise.resolve({
        ok: false,
        message: `the arguments of "${name}" are ${argsJson.length} characters of JSON; the limit is ${this.#maxArgumentBytes} (maxArgumentBytes): pass less data per call`,
        code: ToolErrorCode.INVALID_ARGS,
      })
    }
    this.#count += 1
    const index = this.#count
    const settled = this.#dispatch(index, name, argsJson).catch(
      (error: unknown): HostCallOutcome => ({
        ok: false,
        message: `internal error while calling "${name}": ${error instanceof Error ? error.message : String(error)}`,
        code: ToolErrorCode.TOOL_FAILED,
      }),
    )
    this.#pending.add(settled)
    void settled.finally(() => this.#pending.delete(settled))
    return settled
  }

  /**
   * End the run: abort whatever sub-calls are still in flight or queued and wait until every one
   * has settled and been logged, then hand the nested contexts to the outer call in call order.
   */
  async drain(): Promise<void> {
    this.#abort.abort(new Error('the program finished'))
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending])
    for (const contexts of this.#contexts) for (const context of contexts ?? []) this.#exec.deferContext(context)
  }

  async #dispatch(index: number, name: string, argsJson: string): Promise<HostCallOutcome> {
    const exec = this.#exec
    const subCallId = `${exec.callId}:code:${index}`
    let args: JsonValue
    try {
      args = parseDurableJson(argsJson, 'arguments')
    } catch (error) {
      return { ok: false, message: `invalid arguments for "${name}": ${(error as Error).message}`, code: ToolErrorCode.INVALID_ARGS }
    }
    const agent: Agent | undefined = exec.agent
    const input: ToolExecutionInput = {
      callId: subCallId,
      rootCallId: exec.rootCallId,
      name,
      arguments: args,
      parent: exec.token,
      signal: this.#signal,
      ...(agent === undefined ? {} : { agent }),
    }
    await this.#append(codeDispatchStartEvent(exec.callId, subCallId, name, args))
    const mode = this.#host.executionMode(input)
    const result = await this.#scheduler.run(mode, () => this.#host.execute(input))
    await this.#record(subCallId, name, args, result)
    if (result.additionalContexts !== undefined) this.#contexts[index - 1] = result.additionalContexts
    if (result.isError) {
      return { ok: false, message: result.error.message, code: result.error.info?.code ?? ToolErrorCode.TOOL_FAILED }
    }
    if (result.concludesTurn === true) this.#concludes = true
    return { ok: true, valueJson: stringifyJson(result.value) }
  }

  async #record(subCallId: string, name: string, args: JsonValue, result: ToolExecutionResult): Promise<void> {
    const exec = this.#exec
    const content = await this.#host.codeDispatchLog({
      exec,
      ...(exec.agent === undefined ? {} : { agent: exec.agent }),
      subCallId,
      name,
      isError: result.isError,
      content: result.content,
    })
    await this.#append(codeDispatchEvent(exec.callId, subCallId, name, args, result.isError, content))
  }

  async #append(event: SessionEvent): Promise<void> {
    const session = this.#exec.agent?.session
    if (session === undefined) return
    try {
      await session.append(event)
    } catch (error) {
      this.#logFailures.push(error)
    }
  }
}
