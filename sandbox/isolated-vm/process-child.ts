/**
 * The entry of a child process that runs isolated-vm programs for the parent's engine
 * (process-engine.ts): an in-process isolated-vm engine, one run at a time, whose sub-calls and
 * console lines go to the parent over the IPC channel and whose results come back the same way.
 *
 * The process is the boundary the parent can always enforce: it is killed, never asked, when a run
 * must end now (an abort not heard in time, a run past its wall time), and replaced once its engine
 * leaks (an isolate lost to V8's fatal out-of-memory error, or a stopped program still running
 * native code), which only the end of the process releases.
 *
 * Protocol (`serialization: 'advanced'`):
 *   parent → child  { t: 'init', options }                     once, first
 *                   { t: 'run', run, code, tools, limits, tenant }
 *                   { t: 'answer', run, call, outcome, ack }   a sub-call's HostCallOutcome; with
 *                                                              ack, answered by 'took'
 *                   { t: 'abort', run }
 *   child → parent  { t: 'ready' } | { t: 'fatal', message }   after init
 *                   { t: 'call', run, call, name, argsJson }
 *                   { t: 'log', run, level, text }
 *                   { t: 'done', run, result, leaking }         result: EngineRunResult
 *                   { t: 'failed', run, message }              the engine threw (a host fault)
 *                   { t: 'leaking' }                           found between runs: replace me
 *                   { t: 'took', run, chars }                  a large result arrived
 */
import type { EngineRunResult, GuestHost, HostCallOutcome, SandboxEngine, SandboxLimits, ToolBinding } from '../engine.ts'
import { createIsolatedVmEngine, type IsolatedVmEngineOptions } from './isolated-vm-engine.ts'

type ParentMessage =
  | { readonly t: 'init'; readonly options: IsolatedVmEngineOptions }
  | {
      readonly t: 'run'
      readonly run: number
      readonly code: string
      readonly tools: readonly ToolBinding[]
      readonly limits: SandboxLimits
      readonly tenant: number
    }
  | { readonly t: 'answer'; readonly run: number; readonly call: number; readonly outcome: HostCallOutcome; readonly ack: boolean }
  | { readonly t: 'abort'; readonly run: number }

interface ChildRun {
  readonly controller: AbortController
  readonly calls: Map<number, (outcome: HostCallOutcome) => void>
}

/** How often an idle child looks whether a stopped program still runs native code. */
const LEAK_CHECK_MS = 250

const send = (message: unknown): void => {
  // The channel may close at any moment (the parent went): then nothing is left to tell.
  if (process.connected) process.send?.(message)
}

// The parent gone, nothing here is worth finishing, and a runaway isolate thread must not keep
// this process alive: end it at once, whatever runs.
process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'))

let engine: SandboxEngine & { readonly leaking?: boolean }
const runs = new Map<number, ChildRun>()
// The parent numbers tenants; each number stands for one object, as the engine compares objects.
// The most recent TENANTS_KEPT only (the engine keeps isolates for 4): a long-lived child serving
// many agents must not keep an entry for each for ever. A tenant dropped just gets a new object.
const tenants = new Map<number, object>()
const TENANTS_KEPT = 64
let toldLeaking = false

/**
 * CPU this process may use while it serves no run, per LEAK_CHECK_MS, before it counts as leaking:
 * a stopped program whose isolate thread runs on in native code that V8 never interrupts (a
 * stringify or a regexp past the memory limit: seconds of a core) is not always seen by the engine.
 */
const IDLE_CPU_MS = LEAK_CHECK_MS / 2
let idleCpu = process.cpuUsage()
/** Checks in a row this process used more than IDLE_CPU_MS with no run. */
let busyIdle = 0

function tellIfLeaking(): void {
  const cpu = process.cpuUsage(idleCpu)
  idleCpu = process.cpuUsage()
  if (toldLeaking || runs.size > 0) {
    busyIdle = 0
    return
  }
  busyIdle = (cpu.user + cpu.system) / 1000 > IDLE_CPU_MS ? busyIdle + 1 : 0
  if (engine?.leaking !== true && busyIdle < 2) return
  toldLeaking = true
  send({ t: 'leaking' })
}

process.on('message', (raw) => {
  const message = raw as ParentMessage
  switch (message.t) {
    case 'init':
      void init(message.options)
      return
    case 'run':
      void run(message)
      return
    case 'answer':
      // A large result is acknowledged as it arrives: the parent bounds what is still on its way.
      if (message.ack && message.outcome.ok) send({ t: 'took', run: message.run, chars: message.outcome.valueJson.length })
      runs.get(message.run)?.calls.get(message.call)?.(message.outcome)
      runs.get(message.run)?.calls.delete(message.call)
      return
    case 'abort':
      runs.get(message.run)?.controller.abort()
      return
  }
})

async function init(options: IsolatedVmEngineOptions): Promise<void> {
  try {
    engine = await createIsolatedVmEngine({ ...options, isolation: 'in-process' })
  } catch (error) {
    send({ t: 'fatal', message: error instanceof Error ? error.message : String(error) })
    return
  }
  setInterval(tellIfLeaking, LEAK_CHECK_MS).unref()
  send({ t: 'ready' })
}

async function run(message: Extract<ParentMessage, { t: 'run' }>): Promise<void> {
  const id = message.run
  const state: ChildRun = { controller: new AbortController(), calls: new Map() }
  runs.set(id, state)
  let nextCall = 0
  const host: GuestHost = {
    call(name, argsJson) {
      const call = nextCall++
      return new Promise((resolve) => {
        state.calls.set(call, resolve)
        send({ t: 'call', run: id, call, name, argsJson })
      })
    },
    log(entry) {
      send({ t: 'log', run: id, level: entry.level, text: entry.text })
    },
  }
  const tenant = tenants.get(message.tenant) ?? {}
  // Most recent last: the first key is the one seen longest ago.
  tenants.delete(message.tenant)
  tenants.set(message.tenant, tenant)
  if (tenants.size > TENANTS_KEPT) tenants.delete(tenants.keys().next().value as number)
  let result: EngineRunResult
  try {
    result = await engine.run({ code: message.code, tools: message.tools, limits: message.limits, host, signal: state.controller.signal, tenant })
  } catch (error) {
    runs.delete(id)
    send({ t: 'failed', run: id, message: error instanceof Error ? error.message : String(error) })
    return
  }
  runs.delete(id)
  // Said with the result, so the parent replaces this process before giving it another run.
  toldLeaking = engine.leaking === true
  send({ t: 'done', run: id, result, leaking: toldLeaking })
}
