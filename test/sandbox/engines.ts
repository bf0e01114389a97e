import { createRequire } from 'node:module'
import type { SandboxEngine, SandboxLimits } from '../../sandbox/engine.ts'
import { createIsolatedVmEngine } from '../../sandbox/isolated-vm/isolated-vm-engine.ts'
import { createQuickJSEngine } from '../../sandbox/quickjs/quickjs-engine.ts'

/** One engine under test. */
export interface EngineUnderTest {
  readonly name: string
  create(limits?: Partial<SandboxLimits>): Promise<SandboxEngine>
}

function isolatedVmLoads(): string | undefined {
  try {
    createRequire(import.meta.url)('isolated-vm')
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

/** True under CI, where an engine that cannot load fails its suites instead of skipping them. */
export function inCI(): boolean {
  const value = process.env.CI
  return value !== undefined && value !== '' && value !== 'false' && value !== '0'
}

/**
 * Every engine the suites run against. isolated-vm is optional at install time, but never
 * optional in CI: there, a missing engine makes its suites fail (the factory throws) instead of
 * skipping. Outside CI it is left out, loudly.
 */
export function enginesUnderTest(): EngineUnderTest[] {
  const engines: EngineUnderTest[] = [{ name: 'quickjs', create: (limits) => Promise.resolve(createQuickJSEngine(limits === undefined ? {} : { limits })) }]
  const missing = isolatedVmLoads()
  if (missing === undefined) {
    engines.push({ name: 'isolated-vm', create: (limits) => createIsolatedVmEngine(limits === undefined ? {} : { limits }) })
  } else if (inCI()) {
    engines.push({
      name: 'isolated-vm',
      create: () => Promise.reject(new Error(`isolated-vm must run in CI but cannot be loaded: ${missing}`)),
    })
  } else {
    console.warn(`[engines] isolated-vm is not available, its suites are SKIPPED outside CI: ${missing}`)
  }
  return engines
}
