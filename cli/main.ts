#!/usr/bin/env node
/**
 * The `toolbox-codemode` command: `serve`, `sdk` and `run` (see `--help`). Every failure is one
 * line on stderr naming the fix: status 2 for a usage or setup problem, 1 for a failed program.
 *
 * isolated-vm needs Node 20+ started with `--no-node-snapshot`. The command re-executes itself
 * with the flag, but only when `--engine isolated-vm` is asked for: QuickJS, the default, does not
 * need it, and a second Node process costs a startup and its memory on every invocation.
 */

import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import { hasNoNodeSnapshotFlag } from '../sandbox/isolated-vm/load-isolated-vm.ts'
import { CliError, parseCommandLine, requestedEngine } from './args.ts'
import { runCommand } from './commands.ts'

const REEXEC_MARK = 'TOOLBOX_CODEMODE_REEXEC'

/** Re-run this process with `--no-node-snapshot`; resolves to the child's exit status. */
function reexecWithoutSnapshot(argv: readonly string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', ...process.execArgv, process.argv[1] as string, ...argv], {
      stdio: 'inherit',
      env: { ...process.env, [REEXEC_MARK]: '1' },
    })
    // The child shares the terminal, so it gets Ctrl-C itself; a signal sent to this process only is passed on.
    const forward = (signal: NodeJS.Signals): void => void child.kill(signal)
    process.on('SIGTERM', forward)
    process.on('SIGINT', () => undefined)
    child.on('error', (error) => {
      process.stderr.write(`toolbox-codemode: could not restart Node with --no-node-snapshot: ${error.message}\n`)
      resolve(1)
    })
    // A child killed by a signal exits as a shell reports it: 128 + the signal's number.
    child.on('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128 + (constants.signals[signal] ?? 0))))
  })
}

async function main(argv: readonly string[]): Promise<number> {
  if (requestedEngine(argv) === 'isolated-vm' && !hasNoNodeSnapshotFlag() && process.env[REEXEC_MARK] !== '1') {
    return reexecWithoutSnapshot(argv)
  }
  try {
    return await runCommand(parseCommandLine(argv), { stdout: process.stdout, stderr: process.stderr })
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    process.stderr.write(`toolbox-codemode: ${message.split('\n')[0] ?? message}\n`)
    return error instanceof CliError ? 2 : 1
  }
}

main(process.argv.slice(2)).then(
  (status) => {
    process.exitCode = status
    // Downstream servers and engine threads are closed by now; nothing left should hold the process.
  },
  (error: unknown) => {
    process.stderr.write(`toolbox-codemode: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 1
  },
)
