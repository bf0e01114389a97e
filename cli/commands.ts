/**
 * The three commands: `serve` (Code Mode over the downstream servers, as an MCP server), `sdk`
 * (the declarations a model sees) and `run` (one program, with live progress). Each builds an
 * ordinary context, imports the servers' tools into it, and uses the library's public parts.
 */

import { readFile } from 'node:fs/promises'
import { serveMcp } from '../mcp/serve.ts'
import { createIsolatedVmEngine } from '../sandbox/isolated-vm/isolated-vm-engine.ts'
import { IsolatedVmUnavailableError } from '../sandbox/isolated-vm/load-isolated-vm.ts'
import { createQuickJSEngine } from '../sandbox/quickjs/quickjs-engine.ts'
import { codeModeDeclarations, createRunCode } from '../sandbox/run-code.ts'
import type { RunCodeValue } from '../sandbox/run-code.ts'
import type { SandboxEngine } from '../sandbox/engine.ts'
import { createContext } from '../src/context.ts'
import type { Context } from '../src/context.ts'
import { CliError } from './args.ts'
import type { CliCommand, EngineName, RunCommand, SdkCommand, ServeCommand } from './args.ts'
import { showProgress } from './progress.ts'
import { startServers } from './servers.ts'

/** The streams a command writes to. */
export interface CliStreams {
  readonly stdout: NodeJS.WritableStream
  readonly stderr: NodeJS.WritableStream & { readonly isTTY?: boolean; readonly columns?: number }
}

function warnTo(streams: CliStreams): (line: string) => void {
  return (line) => streams.stderr.write(`toolbox-codemode: ${line}\n`)
}

async function createEngine(name: EngineName): Promise<SandboxEngine> {
  if (name === 'quickjs') return createQuickJSEngine()
  try {
    return await createIsolatedVmEngine()
  } catch (error) {
    if (error instanceof IsolatedVmUnavailableError) {
      throw new CliError('the isolated-vm engine cannot load here (not installed, or its native addon did not build): npm install isolated-vm@5.0.4, or use --engine quickjs')
    }
    throw error
  }
}

/** A Code Mode deployment over `engine`. */
function codeModeContext(engine: SandboxEngine): Context {
  return createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine }) } })
}

/** Resolves on the first of SIGINT, SIGTERM or (for stdio) the end of stdin. */
function untilStopped(watchStdin: boolean): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      resolve()
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
    if (watchStdin) {
      process.stdin.once('end', stop)
      process.stdin.once('close', stop)
    }
  })
}

async function serve(command: ServeCommand, streams: CliStreams): Promise<number> {
  const engine = await createEngine(command.engine)
  const context = codeModeContext(engine)
  try {
    const downstream = await startServers(command.mcp, context, warnTo(streams))
    try {
      const serving = await serveMcp({
        context,
        name: 'toolbox-codemode',
        transport: command.http === undefined ? 'stdio' : { http: { port: command.http, host: command.host } },
      }).catch((error: unknown) => {
        const code = (error as { code?: unknown }).code
        if (code === 'EADDRINUSE') throw new CliError(`port ${String(command.http)} is in use: pick another with --http <port>, or --http 0 for any free one`)
        if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new CliError(`cannot listen on host "${command.host}": use an address of this machine, such as 127.0.0.1`)
        throw error
      })
      const tools = downstream.reports.reduce((sum, report) => sum + report.imported.length, 0)
      const where = serving.url === undefined ? 'stdio' : serving.url.href
      warnTo(streams)(`serving run_code over ${tools} tools of ${downstream.reports.length} MCP server(s) on ${where}`)
      await untilStopped(serving.url === undefined)
      await serving.close()
    } finally {
      await downstream.close()
    }
  } finally {
    context.dispose()
    await engine.dispose()
  }
  return 0
}

async function sdk(command: SdkCommand, streams: CliStreams): Promise<number> {
  const context = createContext()
  const downstream = await startServers(command.mcp, context, warnTo(streams))
  try {
    streams.stdout.write(codeModeDeclarations(context.tools, undefined))
  } finally {
    await downstream.close()
    context.dispose()
  }
  return 0
}

async function readProgram(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'ENOENT') throw new CliError(`cannot read the program "${path}": no such file (give the path of a .ts or .js file)`)
    if (code === 'EISDIR') throw new CliError(`cannot read the program "${path}": it is a directory (give the path of a .ts or .js file)`)
    throw new CliError(`cannot read the program "${path}": ${(error as Error).message}`)
  }
}

async function run(command: RunCommand, streams: CliStreams): Promise<number> {
  // Before any server starts: a wrong path is the cheapest mistake to report.
  const code = await readProgram(command.program)
  const engine = await createEngine(command.engine)
  const context = codeModeContext(engine)
  const controller = new AbortController()
  const interrupt = (): void => controller.abort(new Error('interrupted'))
  try {
    const downstream = await startServers(command.mcp, context, warnTo(streams))
    try {
      const agent = context.agent('cli')
      const callId = 'run'
      const sink = { write: (text: string) => void streams.stderr.write(text), isTTY: streams.stderr.isTTY === true }
      const stopProgress = showProgress(context, callId, sink, (streams.stderr.columns ?? 0) > 0 ? (streams.stderr.columns as number) : 100)
      // The console lines shown live, as run_code's failure text repeats them (so they are not printed twice).
      const shown: string[] = []
      const stopLines = context.on('tools/code-progress', (run, progress) => {
        if (run.callId === callId && progress.type === 'log') shown.push(progress.level === 'log' ? progress.text : `[${progress.level}] ${progress.text}`)
      })
      process.once('SIGINT', interrupt)
      let result
      try {
        result = await context.tools.execute({ callId, name: 'run_code', arguments: { code, description: command.program }, agent, signal: controller.signal })
      } finally {
        process.off('SIGINT', interrupt)
        stopLines()
        stopProgress()
      }
      if (result.isError) {
        streams.stderr.write(`toolbox-codemode: the program failed: ${withoutConsole(result.error.message, shown)}\n`)
        return controller.signal.aborted ? 130 : 1
      }
      // Its console lines were shown on stderr as it wrote them (showProgress); its notes are what the model would read beside the result.
      const { result: value, notes } = result.value as unknown as RunCodeValue
      streams.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
      for (const note of notes ?? []) streams.stderr.write(`toolbox-codemode: note: ${note}\n`)
      return 0
    } finally {
      await downstream.close()
    }
  } finally {
    context.dispose()
    await engine.dispose()
  }
}

/** `message` without the console section run_code appends to a failure, when it holds exactly the lines already shown. */
function withoutConsole(message: string, shown: readonly string[]): string {
  if (shown.length === 0) return message
  const section = `\n\nConsole output before the failure:\n${shown.join('\n')}`
  return message.endsWith(section) ? message.slice(0, -section.length) : message
}

/** Run one parsed command; resolves to the exit status. */
export async function runCommand(command: CliCommand, streams: CliStreams): Promise<number> {
  switch (command.command) {
    case 'help':
      streams.stdout.write(command.text)
      return 0
    case 'serve':
      return serve(command, streams)
    case 'sdk':
      return sdk(command, streams)
    case 'run':
      return run(command, streams)
  }
}
