/**
 * Downstream MCP servers named on the command line (`--mcp "[prefix=]command args"`): split like a
 * shell would, started over stdio, their tools imported into one context. A server that does not
 * start is one line naming the command, what it said last, and the fix.
 */

import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { importMcpTools, McpImportError } from '../mcp/import-tools.ts'
import type { McpImportReport } from '../mcp/import-tools.ts'
import type { Context } from '../src/context.ts'
import { describeThrown } from '../src/results.ts'
import { CliError } from './args.ts'

/** One `--mcp` value, read: an optional prefix, the program and its arguments. */
export interface ServerSpec {
  readonly prefix: string | undefined
  readonly command: string
  readonly args: readonly string[]
  /** The value as given, for messages. */
  readonly text: string
}

/**
 * Split a command line the way a POSIX shell splits words: whitespace separates, single quotes
 * keep everything, double quotes keep all but `\"` and `\\`, a backslash escapes one character.
 * No expansion of any kind.
 */
export function splitCommand(text: string): string[] {
  const words: string[] = []
  let word = ''
  let inWord = false
  let quote: "'" | '"' | undefined
  for (let index = 0; index < text.length; index++) {
    const char = text[index] as string
    if (quote === "'") {
      if (char === "'") quote = undefined
      else word += char
    } else if (quote === '"') {
      if (char === '"') quote = undefined
      else if (char === '\\' && (text[index + 1] === '"' || text[index + 1] === '\\')) word += text[++index]
      else word += char
    } else if (char === "'" || char === '"') {
      quote = char
      inWord = true
    } else if (char === '\\' && index + 1 < text.length) {
      word += text[++index]
      inWord = true
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word)
      word = ''
      inWord = false
    } else {
      word += char
      inWord = true
    }
  }
  if (quote !== undefined) throw new CliError(`--mcp "${text}": a ${quote === '"' ? 'double' : 'single'} quote is not closed`)
  if (inWord) words.push(word)
  return words
}

const PREFIXED = /^([A-Za-z_][A-Za-z0-9_-]*)=(.*)$/s

/** Read one `--mcp` value: `fs=mcp-server-filesystem /tmp` or just the command. */
export function parseServerSpec(text: string): ServerSpec {
  const match = PREFIXED.exec(text.trim())
  const prefix = match?.[1]
  const words = splitCommand(match === null ? text : (match[2] as string))
  const [command, ...args] = words
  if (command === undefined) throw new CliError(`--mcp "${text}" names no command to start`)
  return { prefix, command, args, text }
}

/** Servers started for one command, and their import reports; `close()` stops them all. */
export interface Downstream {
  readonly reports: readonly McpImportReport[]
  close(): Promise<void>
}

const STDERR_TAIL_CHARS = 2_000

/** Connect to one server; its stderr is kept (not shown) to explain a failed start. */
async function connect(spec: ServerSpec): Promise<Client> {
  const transport = new StdioClientTransport({
    command: spec.command,
    args: [...spec.args],
    // The user's own command, started as their shell would: with their whole environment.
    env: Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined)),
    stderr: 'pipe',
  })
  let said = ''
  transport.stderr?.on('data', (chunk: Buffer) => {
    said = (said + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS)
  })
  const client = new Client({ name: 'toolbox-codemode', version: '0.1.0' })
  try {
    await client.connect(transport, { timeout: 30_000 })
  } catch (error) {
    await client.close().catch(() => undefined)
    const lastLine = said.trim().split('\n').at(-1)?.trim()
    const { message } = describeThrown(error)
    const why = /ENOENT/.test(message) ? `"${spec.command}" was not found` : lastLine !== undefined && lastLine !== '' ? `it said: ${lastLine}` : message
    throw new CliError(`MCP server "${spec.text}" did not start (${why}): check the command after --mcp runs on its own`)
  }
  return client
}

/**
 * Start every server and import its tools into `context`. A refused tool is reported through
 * `warn`, one line each; a prefix that collides is a {@link CliError} naming the fix. On any
 * failure the servers already started are stopped.
 */
export async function startServers(specs: readonly string[], context: Context, warn: (line: string) => void): Promise<Downstream> {
  const clients: Client[] = []
  const reports: McpImportReport[] = []
  const close = async (): Promise<void> => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)))
  }
  try {
    const parsed = specs.map(parseServerSpec)
    const connected = await Promise.allSettled(parsed.map(connect))
    for (const outcome of connected) if (outcome.status === 'fulfilled') clients.push(outcome.value)
    const failed = connected.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected')
    if (failed !== undefined) throw failed.reason
    for (const [index, client] of clients.entries()) {
      const spec = parsed[index] as ServerSpec
      let imported
      try {
        imported = await importMcpTools(client, { context, ...(spec.prefix === undefined ? {} : { prefix: spec.prefix }) })
      } catch (error) {
        if (error instanceof McpImportError) {
          throw new CliError(`${describeThrown(error).message.replace(/^importMcpTools: /, '')}: name it with --mcp "<prefix>=${spec.text}"`)
        }
        throw error
      }
      const { report } = imported
      reports.push(report)
      for (const refused of report.refused) warn(`MCP server "${report.server.name}": tool "${refused.mcpName}" was not imported: ${refused.reasons.join('; ')}`)
    }
  } catch (error) {
    await close()
    throw error
  }
  return { reports, close }
}
