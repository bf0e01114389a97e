/**
 * Picking a sandbox engine by name. Only the engine asked for is loaded: QuickJS inside its worker
 * threads, isolated-vm (a native addon, optional) only when `createIsolatedVmEngine()` runs.
 */
import { createIsolatedVmEngine, createQuickJSEngine } from 'toolbox-codemode/sandbox'
import type { SandboxEngine, SandboxLimits } from 'toolbox-codemode/sandbox'

/** The engines a program can run in. */
export type EngineName = 'quickjs' | 'isolated-vm'

/** `name` checked, for a command-line argument. */
export function engineName(name: string | undefined): EngineName {
  const picked = name ?? 'quickjs'
  if (picked !== 'quickjs' && picked !== 'isolated-vm') throw new Error(`unknown engine "${picked}": use quickjs or isolated-vm`)
  return picked
}

/**
 * A new engine. `limits` are ceilings every run is held to; they also size what the engine keeps
 * warm (QuickJS's WASM memory, isolated-vm's spare isolate), so give the limits the runs will use.
 * Rejects with `IsolatedVmUnavailableError` when isolated-vm cannot load in this process.
 */
export async function createEngine(name: EngineName, limits?: Partial<SandboxLimits>): Promise<SandboxEngine> {
  const options = limits === undefined ? {} : { limits }
  return name === 'isolated-vm' ? createIsolatedVmEngine(options) : createQuickJSEngine(options)
}
