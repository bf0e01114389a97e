/**
 * Code Mode: the `run_code` transport and the sandbox engines it runs programs in. Listed one by
 * one. Importing this module loads no engine: QuickJS is loaded only inside its worker threads,
 * isolated-vm only when `createIsolatedVmEngine()` is called.
 */

export { codeModeDeclarations, createRunCode } from './run-code.ts'
export type { RunCodeOptions, RunCodeValue } from './run-code.ts'
export { createQuickJSEngine } from './quickjs/quickjs-engine.ts'
export type { QuickJSEngineOptions } from './quickjs/quickjs-engine.ts'
export { createIsolatedVmEngine } from './isolated-vm/index.ts'
export { DEFAULT_MAX_LOST_ISOLATES, DEFAULT_MAX_RUNAWAY_ISOLATES, MAX_MEMORY_LIMIT_BYTES } from './isolated-vm/options.ts'
export type { IsolatedVmEngineOptions } from './isolated-vm/options.ts'
export { IsolatedVmUnavailableError } from './isolated-vm/load-isolated-vm.ts'
export { DEFAULT_LIMITS, describeLimit, resolveLimits } from './limits.ts'
export { stripTypes } from './strip-types.ts'
export type { StripTypesResult } from './strip-types.ts'
export type {
  EngineFailure,
  EngineRunRequest,
  EngineRunResult,
  GuestHost,
  HostCallOutcome,
  LogEntry,
  LogLevel,
  SandboxEngine,
  SandboxLimitName,
  SandboxLimits,
  ToolBinding,
} from './engine.ts'
