import { ToolDefinitionError } from '../src/errors.ts'
import type { EngineFailure, SandboxLimitName, SandboxLimits } from './engine.ts'

/**
 * Defaults for one run. Generous for real programs, small enough that a hostile one cannot hurt
 * the host: every figure is overridable per `run_code` tool (`createRunCode({ limits })`); an
 * engine's `limits` option can only lower them (ceilings).
 */
export const DEFAULT_LIMITS: SandboxLimits = Object.freeze({
  // Time a sub-call spends waiting for approval counts here: raise it where humans approve.
  wallTimeMs: 60_000,
  cpuTimeMs: 5_000,
  memoryLimitBytes: 64 * 1024 * 1024,
  stackSizeBytes: 256 * 1024,
  maxSourceBytes: 256 * 1024,
  maxSubCalls: 1_000,
  // A Promise.all over a few hundred items is an ordinary program; floods are bounded by maxSubCalls.
  maxSubCallsInFlight: 256,
  maxLogBytes: 64 * 1024,
  maxResultBytes: 1024 * 1024,
  maxArgumentBytes: 256 * 1024,
  maxTotalArgumentBytes: 16 * 1024 * 1024,
})

const LIMIT_NAMES = Object.keys(DEFAULT_LIMITS) as SandboxLimitName[]

/** Merge overrides onto the defaults; every limit must be a positive safe integer. */
export function resolveLimits(overrides: Partial<SandboxLimits> = {}): SandboxLimits {
  const resolved: Record<string, number> = { ...DEFAULT_LIMITS }
  for (const key of Object.keys(overrides)) {
    if (!(LIMIT_NAMES as string[]).includes(key)) {
      throw new ToolDefinitionError(`Unknown sandbox limit "${key}"; known limits: ${LIMIT_NAMES.join(', ')}`)
    }
    const value = (overrides as Record<string, unknown>)[key]
    if (value === undefined) continue
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
      throw new ToolDefinitionError(`Sandbox limit "${key}" must be a positive integer, got ${String(value)}`)
    }
    resolved[key] = value
  }
  return Object.freeze(resolved as unknown as SandboxLimits)
}

/**
 * The limits a run is held to: each of `requested`, lowered to the engine's ceiling for it (an
 * engine's `limits` option).
 */
export function withCeilings(requested: SandboxLimits, ceilings: Readonly<Partial<SandboxLimits>> | undefined): SandboxLimits {
  if (ceilings === undefined) return requested
  let merged: Record<string, number> | undefined
  for (const [key, ceiling] of Object.entries(ceilings)) {
    const current = (requested as unknown as Record<string, number>)[key]
    if (ceiling === undefined || current === undefined || current <= ceiling) continue
    merged ??= { ...requested }
    merged[key] = ceiling
  }
  return merged === undefined ? requested : Object.freeze(merged as unknown as SandboxLimits)
}

/** A human sentence naming a broken limit and its value, for the model and the logs. */
export function describeLimit(limit: SandboxLimitName, limits: SandboxLimits): string {
  const value = limits[limit]
  switch (limit) {
    case 'wallTimeMs':
      return `the program ran longer than the wall-time limit of ${value} ms`
    case 'cpuTimeMs':
      return `the program used more than its CPU-time limit of ${value} ms`
    case 'memoryLimitBytes':
      return `the program ran out of memory (limit ${value} bytes)`
    case 'stackSizeBytes':
      return `the program exceeded its stack limit of ${value} bytes (too much recursion)`
    case 'maxSourceBytes':
      return `the program text is longer than ${value} bytes`
    case 'maxSubCalls':
      return `the program started more than ${value} tool calls`
    case 'maxSubCallsInFlight':
      return `the program had more than ${value} tool calls in flight at once`
    case 'maxLogBytes':
      return `the program wrote more than ${value} characters of console output`
    case 'maxResultBytes':
      return `the program returned a value larger than ${value} characters of JSON`
    case 'maxArgumentBytes':
      return `a tool call's arguments are larger than ${value} characters of JSON`
    case 'maxTotalArgumentBytes':
      return `the program's tool calls carried more than ${value} characters of JSON arguments in all`
  }
}

/**
 * The failure of a run that waited its whole wall time for a free sandbox `holder` (a QuickJS
 * worker, an isolated-vm process) and never started: the wall-time limit, said as what happened.
 */
export function neverStarted(limits: SandboxLimits, holder: 'worker' | 'process'): EngineFailure {
  return {
    kind: 'limit',
    limit: 'wallTimeMs',
    message: `the program never started: it waited its whole wall-time limit of ${limits.wallTimeMs} ms for a free sandbox ${holder}`,
  }
}

/**
 * Counts what a run spends on the limits that are pure bookkeeping (sub-calls, in-flight calls,
 * log volume). Engines call it where the guest acts — inside the worker for QuickJS, on the main
 * thread for isolated-vm — and kill the run on the first breach it reports.
 */
export class RunMeter {
  #subCalls = 0
  #inFlight = 0
  #logBytes = 0
  readonly #limits: SandboxLimits

  constructor(limits: SandboxLimits) {
    this.#limits = limits
  }

  /** Record a started sub-call; returns the broken limit, if any. */
  startCall(): SandboxLimitName | undefined {
    this.#subCalls += 1
    this.#inFlight += 1
    if (this.#subCalls > this.#limits.maxSubCalls) return 'maxSubCalls'
    if (this.#inFlight > this.#limits.maxSubCallsInFlight) return 'maxSubCallsInFlight'
    return undefined
  }

  /** Record a settled sub-call. */
  settleCall(): void {
    this.#inFlight -= 1
  }

  /** Record console output of `length` code units; returns the broken limit, if any. */
  log(length: number): SandboxLimitName | undefined {
    this.#logBytes += length
    return this.#logBytes > this.#limits.maxLogBytes ? 'maxLogBytes' : undefined
  }
}
