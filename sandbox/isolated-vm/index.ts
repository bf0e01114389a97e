/**
 * `createIsolatedVmEngine` as the package exports it: the engine's modules (and through them the
 * process pool, the guards and the bridge) load on the first call, not when the sandbox is
 * imported, which a program on QuickJS never needs.
 */
import type { SandboxEngine } from '../engine.ts'
import type { IsolatedVmEngineOptions } from './options.ts'

/**
 * Create an isolated-vm engine (see {@link IsolatedVmEngineOptions}): by default isolates run in a
 * small pool of child processes the engine kills and replaces when a program breaks one. Resolves
 * once the engine can run programs; rejects with `IsolatedVmUnavailableError` (naming the fix) when
 * isolated-vm is not installed or cannot load, and with `ToolDefinitionError` for bad options.
 */
export async function createIsolatedVmEngine(options: IsolatedVmEngineOptions = {}): Promise<SandboxEngine> {
  const engine = await import('./isolated-vm-engine.ts')
  return engine.createIsolatedVmEngine(options)
}
