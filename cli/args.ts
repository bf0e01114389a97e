/**
 * The command line of `toolbox-codemode`: its commands, their flags (node:util `parseArgs`), their
 * help texts, and the one-line usage errors that name the fix.
 */

import { parseArgs } from 'node:util'

/** The engines a program can run in. */
export type EngineName = 'quickjs' | 'isolated-vm'

/** A usage or setup problem: printed as one line, exit status 2. */
export class CliError extends Error {
  override readonly name = 'CliError'
}

/** `serve`: Code Mode over downstream MCP servers, as an MCP server. */
export interface ServeCommand {
  readonly command: 'serve'
  readonly mcp: readonly string[]
  readonly engine: EngineName
  readonly http: number | undefined
  readonly host: string
}

/** `sdk`: print the declarations a model would see. */
export interface SdkCommand {
  readonly command: 'sdk'
  readonly mcp: readonly string[]
}

/** `run`: run one program against downstream MCP servers. */
export interface RunCommand {
  readonly command: 'run'
  readonly program: string
  readonly mcp: readonly string[]
  readonly engine: EngineName
}

/** `help` for the whole tool or one command. */
export interface HelpCommand {
  readonly command: 'help'
  readonly text: string
}

/** What the command line asked for. */
export type CliCommand = ServeCommand | SdkCommand | RunCommand | HelpCommand

const MCP_FLAG = `  --mcp "<command>"     a downstream MCP server started over stdio; repeat for more. Its tools are
                        named <prefix>.<tool>, the prefix taken from the server's name; choose it
                        with --mcp "fs=<command>"`

/** The help texts, by command. */
export const HELP = {
  main: `toolbox-codemode: Code Mode over any MCP server

Usage:
  toolbox-codemode serve --mcp "<command>" [--mcp ...] [--engine quickjs|isolated-vm] [--http PORT]
  toolbox-codemode sdk --mcp "<command>" [--mcp ...]
  toolbox-codemode run <program.ts> --mcp "<command>" [--mcp ...] [--engine quickjs|isolated-vm]

Commands:
  serve   serve one tool, run_code, whose programs call the tools of the downstream servers
  sdk     print the TypeScript declarations a model sees for those tools
  run     run a program against those tools, with live progress of its calls

Run "toolbox-codemode <command> --help" for a command's flags.
`,
  serve: `Usage: toolbox-codemode serve --mcp "<command>" [--mcp ...] [--engine quickjs|isolated-vm] [--http PORT] [--host HOST]

Serve Code Mode as an MCP server: one tool, run_code, whose programs call the tools of the
downstream MCP servers. Over stdio by default (give this command to any MCP client), or over
stateless Streamable HTTP at http://HOST:PORT/mcp with --http.

${MCP_FLAG}
  --engine <name>       the sandbox programs run in: quickjs (default) or isolated-vm
  --http <port>         serve Streamable HTTP on this port instead of stdio (0 picks a free port)
  --host <host>         the address to listen on with --http (default 127.0.0.1)
  -h, --help            show this help
`,
  sdk: `Usage: toolbox-codemode sdk --mcp "<command>" [--mcp ...]

Print the TypeScript declarations a model sees in run_code's description for the tools of the
downstream MCP servers. Tools whose schemas cannot be enforced are listed on stderr with why.

${MCP_FLAG}
  -h, --help            show this help
`,
  run: `Usage: toolbox-codemode run <program.ts> --mcp "<command>" [--mcp ...] [--engine quickjs|isolated-vm]

Run a program (the body of an async function: top-level await, \`await tools.<name>(args)\`,
\`return\` a JSON value) against the tools of the downstream MCP servers. Its calls are shown as
they run on stderr; its console output goes to stderr and its result, as JSON, to stdout. Exits
with status 1 when the program fails.

${MCP_FLAG}
  --engine <name>       the sandbox the program runs in: quickjs (default) or isolated-vm
  -h, --help            show this help
`,
} as const

type CommandName = 'serve' | 'sdk' | 'run'

function isCommand(name: string | undefined): name is CommandName {
  return name === 'serve' || name === 'sdk' || name === 'run'
}

function engineOf(value: string | undefined): EngineName {
  const engine = value ?? 'quickjs'
  if (engine !== 'quickjs' && engine !== 'isolated-vm') throw new CliError(`unknown engine "${engine}": use --engine quickjs or --engine isolated-vm`)
  return engine
}

function portOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const port = Number(value)
  if (!/^\d+$/.test(value) || port > 65_535) throw new CliError(`--http takes a port number from 0 to 65535, got "${value}"`)
  return port
}

/** Turn parseArgs' message into one line that names the fix. */
function usageError(command: CommandName, error: unknown): CliError {
  const message = error instanceof Error ? error.message.split('\n')[0] ?? '' : String(error)
  const unknown = /Unknown option '([^']+)'/.exec(message)
  if (unknown !== null) return new CliError(`unknown flag ${unknown[1]} for "${command}": see toolbox-codemode ${command} --help`)
  const missing = /Option '(-\S+?)(?: <value>)?' argument missing/.exec(message)
  if (missing !== null) return new CliError(`${missing[1]} needs a value: see toolbox-codemode ${command} --help`)
  return new CliError(`${message.replace(/\.$/, '')}: see toolbox-codemode ${command} --help`)
}

/** Read the command line (`process.argv.slice(2)`). Throws {@link CliError} naming the fix. */
export function parseCommandLine(argv: readonly string[]): CliCommand {
  const [first, ...rest] = argv
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') return { command: 'help', text: HELP.main }
  if (!isCommand(first)) throw new CliError(`unknown command "${first}": use serve, sdk or run (toolbox-codemode --help)`)
  let parsed
  try {
    parsed = parseArgs({
      args: rest,
      options: {
        mcp: { type: 'string', multiple: true },
        engine: { type: 'string' },
        http: { type: 'string' },
        host: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    })
  } catch (error) {
    throw usageError(first, error)
  }
  const { values, positionals } = parsed
  if (values.help === true) return { command: 'help', text: HELP[first] }
  const only = (allowed: readonly string[]): void => {
    for (const flag of ['engine', 'http', 'host'] as const) {
      if (values[flag] !== undefined && !allowed.includes(flag)) {
        throw new CliError(`--${flag} does not apply to "${first}": see toolbox-codemode ${first} --help`)
      }
    }
  }
  const mcp = values.mcp ?? []
  if (mcp.length === 0) throw new CliError(`"${first}" needs at least one --mcp "<command>" that starts an MCP server over stdio`)
  if (mcp.some((command) => command.trim() === '')) throw new CliError('--mcp needs a command, for example --mcp "npx -y @modelcontextprotocol/server-memory"')
  if (first === 'run') {
    only(['engine'])
    if (positionals.length !== 1) {
      throw new CliError(positionals.length === 0 ? '"run" needs the program file: toolbox-codemode run program.ts --mcp "<command>"' : `"run" takes one program file, got ${positionals.length}: ${positionals.join(' ')}`)
    }
    return { command: 'run', program: positionals[0] as string, mcp, engine: engineOf(values.engine) }
  }
  if (positionals.length > 0) throw new CliError(`"${first}" takes no positional arguments, got "${positionals[0] as string}" (quote each --mcp command as one argument)`)
  if (first === 'sdk') {
    only([])
    return { command: 'sdk', mcp }
  }
  only(['engine', 'http', 'host'])
  if (values.host !== undefined && values.http === undefined) throw new CliError('--host applies to --http: add --http <port>, or leave --host out to serve over stdio')
  return { command: 'serve', mcp, engine: engineOf(values.engine), http: portOf(values.http), host: values.host ?? '127.0.0.1' }
}
