import { createRequire } from 'node:module'
import { ToolError, ToolErrorCode } from '../../src/errors.ts'
import type { IsolatedVm } from './isolated-vm-types.ts'

/** The isolated-vm module namespace: the part of it this engine uses (isolated-vm-types.ts). */
export type { IsolatedVm } from './isolated-vm-types.ts'

/**
 * Thrown by `createIsolatedVmEngine` when isolated-vm cannot run in this process: the optional
 * dependency is not installed or its native addon did not build, or Node 20+ was started without
 * `--no-node-snapshot` (isolated-vm then crashes the whole process on some isolate creations).
 */
export class IsolatedVmUnavailableError extends ToolError {
  constructor(message: string, options?: ErrorOptions) {
    super(ToolErrorCode.CODE_RUN_FAILED, message, options)
  }
}

const SNAPSHOT_FLAG = '--no-node-snapshot'

/** True when this process runs with `--no-node-snapshot` (on the command line or in NODE_OPTIONS). */
export function hasNoNodeSnapshotFlag(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): boolean {
  if (execArgv.includes(SNAPSHOT_FLAG)) return true
  return (nodeOptions ?? '').split(/\s+/).includes(SNAPSHOT_FLAG)
}

/** Node majors from 20 on share V8's read-only heap between isolates; see isolated-vm issue #420. */
function nodeNeedsSnapshotFlag(version: string = process.versions.node): boolean {
  const major = Number.parseInt(version.split('.')[0] ?? '0', 10)
  return major >= 20
}

/**
 * Load isolated-vm on first use, never at import time, so a user who picks another engine never
 * loads the native addon. Throws {@link IsolatedVmUnavailableError} with the reason and the fix.
 */
export async function loadIsolatedVm(): Promise<IsolatedVm> {
  if (nodeNeedsSnapshotFlag() && !hasNoNodeSnapshotFlag()) {
    throw new IsolatedVmUnavailableError(
      `The isolated-vm engine needs Node ${process.versions.node} to run with ${SNAPSHOT_FLAG} ` +
        `(for example \`node ${SNAPSHOT_FLAG} app.js\`, or execArgv in a test runner); without it ` +
        'isolated-vm can crash the process. Restart with the flag or use the QuickJS engine.',
    )
  }
  let loaded: { default?: unknown }
  try {
    // A specifier in a variable: the optional package's own declarations are not needed to build.
    const specifier: string = 'isolated-vm'
    loaded = (await import(specifier)) as { default?: unknown }
  } catch (cause) {
    throw notInstalled(cause)
  }
  // isolated-vm is CommonJS: its exports arrive as the default export under ESM.
  const ivm = (loaded.default ?? loaded) as IsolatedVm
  if (typeof ivm.Isolate !== 'function' || typeof ivm.Reference !== 'function') {
    throw new IsolatedVmUnavailableError('The installed "isolated-vm" module does not export Isolate and Reference.')
  }
  return ivm
}

function notInstalled(cause: unknown): IsolatedVmUnavailableError {
  return new IsolatedVmUnavailableError(
    'The isolated-vm engine is unavailable: the optional dependency "isolated-vm" (5.0.4 on Node 20) ' +
      'is not installed or its native addon could not be built (it needs a C++ toolchain and ' +
      'node-gyp). Install it with `npm install isolated-vm@5.0.4`, or use the QuickJS engine. ' +
      `Cause: ${cause instanceof Error ? cause.message : String(cause)}`,
    { cause },
  )
}

/**
 * Throws {@link IsolatedVmUnavailableError} unless the isolated-vm package can be found from here,
 * without loading it: the engine that runs isolates in child processes never loads it itself (a
 * child that cannot load it says why when it starts).
 */
export function assertIsolatedVmInstalled(): void {
  try {
    createRequire(import.meta.url).resolve('isolated-vm')
  } catch (cause) {
    throw notInstalled(cause)
  }
}
