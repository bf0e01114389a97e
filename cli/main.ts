#!/usr/bin/env node
/**
 * The `toolbox-codemode` command: `serve`, `sdk` and `run` (see `--help`). Every failure is one
 * line on stderr naming the fix: status 2 for a usage or setup problem, 1 for a failed program.
 *
 * isolated-vm runs its isolates in child processes started with the flags they need, so this
 * process needs no `--no-node-snapshot` whichever engine is asked for.
 */

import { CliError, parseCommandLine } from './args.ts'
import { runCommand } from './commands.ts'

async function main(argv: readonly string[]): Promise<number> {
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
