/**
 * MCP in: the tools of a connected MCP server as ordinary tool definitions, registered through a
 * context's normal registry. Each schema goes through the same enforced subset as any other tool
 * (a tool outside it is refused with its reasons, the rest of the server is imported), and each
 * call through the same pipeline; the server's `tools/list_changed` re-syncs the registrations.
 */

import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ErrorCode, ListToolsResultSchema, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import type { Context } from '../src/context.ts'
import { ToolDefinitionError, ToolError, ToolErrorCode } from '../src/errors.ts'
import type { ToolExecution, ToolExecutionResult, ToolRunContext } from '../src/execution.ts'
import { snapshotJson } from '../src/json-boundary.ts'
import type { JsonValue } from '../src/json-boundary.ts'
import type { ContentBlock } from '../src/messages.ts'
import { describeThrown } from '../src/results.ts'
import { assertObjectJsonSchema, assertSupportedJsonSchema, JsonSchemaError } from '../src/schema/json-schema.ts'
import type { JsonSchemaNode, ObjectJsonSchema } from '../src/schema/types.ts'
import type { ToolDefinition } from '../src/tool.ts'
import { CONTENT_VALUE_SCHEMA, contentSummary, fromMcpContent } from './content.ts'

/** Options of {@link importMcpTools}. */
export interface ImportMcpToolsOptions {
  /** Where the tools are registered: the root context (global tools) or a scope or agent context. */
  readonly context: Context
  /**
   * Prepended to every tool name with a dot (`fs` gives `fs.read_file`); `''` keeps the server's
   * names. Default: the server's reported name without `mcp`/`server` words (`memory-server` →
   * `memory`).
   */
  readonly prefix?: string
  /** Per-call request timeout in ms; a call that takes longer is an error result. Default: the SDK's (60 s). */
  readonly timeoutMs?: number
  /**
   * `'ask'` routes every call of a tool the server marks destructive through the approval service
   * (a `tools/pre-execute` decision `ask`). MCP's defaults apply: a tool without annotations may
   * be destructive. Default `'allow'`.
   */
  readonly destructive?: 'allow' | 'ask'
  /** Follow the server's `tools/list_changed` notifications. Default `true`. */
  readonly resync?: boolean
  /** Called with the new report after every re-sync. */
  readonly onResync?: (report: McpImportReport) => void
  /** Receives a re-sync that failed (the server could not be listed). Default: a process warning. */
  readonly onError?: (error: unknown) => void
}

/** One tool that was registered. */
export interface McpImportedTool {
  /** The registered name (`fs.read_file`). */
  readonly name: string
  /** The server's name for it (`read_file`). */
  readonly mcpName: string
  /** Marked read-only by the server: its calls may overlap. */
  readonly readOnly: boolean
  /** Possibly destructive by MCP's annotation defaults. */
  readonly destructive: boolean
}

/** One tool that was not registered, and why. */
export interface McpRefusedTool {
  readonly name: string
  readonly mcpName: string
  /** Every reason, one per line a reader can act on (`inputSchema $.path: pattern is not supported`). */
  readonly reasons: readonly string[]
}

/** What an import registered and refused. */
export interface McpImportReport {
  readonly server: { readonly name: string; readonly version: string }
  readonly prefix: string
  readonly imported: readonly McpImportedTool[]
  readonly refused: readonly McpRefusedTool[]
}

/** A live import: its report, a manual re-sync, and `dispose()` that unregisters every tool. */
export interface McpToolImport extends Disposable {
  /** The latest report (replaced by every re-sync). */
  readonly report: McpImportReport
  /** List the server's tools again and bring the registrations in line. */
  resync(): Promise<McpImportReport>
  /** Unregister every imported tool and stop following the server. Idempotent. Does not close the client. */
  dispose(): void
}

/** Thrown by {@link importMcpTools} for a bad option or a name that is already taken (`INVALID_DEFINITION`). */
export class McpImportError extends ToolDefinitionError {}

interface Registration {
  readonly mcpName: string
  readonly name: string
  /** The server's description of the tool, to notice when it changed. */
  readonly fingerprint: string
  readonly unregister: () => void
  readonly destructive: boolean
}

interface Candidate {
  readonly tool: Tool
  readonly name: string
  readonly fingerprint: string
}

const LIST_CHANGED = 'notifications/tools/list_changed'
const PREFIX_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_:-]*$/

/** The clients with a live import: a second one would fight over the list_changed handler. */
const importedClients = new WeakSet<Client>()

/** A default prefix from the server's reported name: its words without `mcp` and `server`. */
export function defaultPrefix(serverName: string): string {
  const words = serverName
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '' && word !== 'mcp' && word !== 'server')
  return words.length > 0 ? words.join('-') : 'mcp'
}

/**
 * Every page of `tools/list`. Sent as a plain request rather than `client.listTools()`, which also
 * compiles a validator per output schema (most of an import's time): the pipeline checks every
 * value against the same schema already.
 */
async function listAllTools(client: Client, timeoutMs: number | undefined): Promise<Tool[]> {
  const tools: Tool[] = []
  let cursor: string | undefined
  do {
    const params = cursor === undefined ? {} : { cursor }
    const page = await client.request({ method: 'tools/list', params }, ListToolsResultSchema, timeoutMs === undefined ? {} : { timeout: timeoutMs })
    tools.push(...page.tools)
    cursor = page.nextCursor
  } while (cursor !== undefined)
  return tools
}

/** The schema problems of one tool, each as a line naming the schema and the path. */
function schemaReasons(tool: Tool): { reasons: string[]; parameters?: ObjectJsonSchema; output?: JsonSchemaNode } {
  const reasons: string[] = []
  const check = (what: 'inputSchema' | 'outputSchema', schema: unknown, object: boolean): JsonSchemaNode | undefined => {
    try {
      const copy = snapshotJson(schema, what)
      assertSupportedJsonSchema(copy)
      if (object) assertObjectJsonSchema(copy)
      return copy
    } catch (error) {
      if (error instanceof JsonSchemaError) for (const issue of error.issues) reasons.push(`${what} ${issue.path}: ${issue.message}`)
      else reasons.push(`${what}: ${describeThrown(error).message}`)
      return undefined
    }
  }
  const parameters = check('inputSchema', tool.inputSchema, true) as ObjectJsonSchema | undefined
  const output = tool.outputSchema === undefined ? CONTENT_VALUE_SCHEMA : check('outputSchema', tool.outputSchema, false)
  return { reasons, ...(parameters === undefined ? {} : { parameters }), ...(output === undefined ? {} : { output }) }
}

/** MCP's annotation defaults: read-only only when said so; destructive unless read-only or said not. */
function hints(tool: Tool): { readOnly: boolean; destructive: boolean } {
  const readOnly = tool.annotations?.readOnlyHint === true
  return { readOnly, destructive: !readOnly && tool.annotations?.destructiveHint !== false }
}

/** A failed request as the error a model reads: what happened to the call, never a host stack. */
function requestFailure(error: unknown, server: string, mcpName: string, timeoutMs: number | undefined): ToolError {
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout) {
      const after = timeoutMs === undefined ? 'in time' : `within ${timeoutMs} ms`
      return new ToolError(ToolErrorCode.TOOL_TIMEOUT, `MCP server "${server}" did not answer the call of "${mcpName}" ${after}`)
    }
    if (error.code === ErrorCode.ConnectionClosed) {
      return new ToolError(ToolErrorCode.TOOL_FAILED, `the connection to MCP server "${server}" closed before "${mcpName}" answered`)
    }
  }
  const { message } = describeThrown(error)
  if (/not connected/i.test(message)) return new ToolError(ToolErrorCode.TOOL_FAILED, `MCP server "${server}" is not connected (its connection closed)`)
  return new ToolError(ToolErrorCode.TOOL_FAILED, `MCP server "${server}" failed the call of "${mcpName}": ${message}`)
}

function renderJson(_args: unknown, value: JsonValue): ContentBlock[] {
  return [{ type: 'text', text: JSON.stringify(value) }]
}

function renderContent(_args: unknown, value: JsonValue): ContentBlock[] {
  return value as unknown as ContentBlock[]
}

/**
 * The definition of one MCP tool. With an output schema the value is the `structuredContent`, and
 * the server's own content blocks replace the JSON rendering in `finalizeContent` unless a policy
 * changed the value or the content; without one the value is the content itself.
 */
function definitionOf(
  client: Client,
  server: string,
  tool: Tool,
  name: string,
  parameters: ObjectJsonSchema,
  output: JsonSchemaNode,
  timeoutMs: number | undefined,
): ToolDefinition {
  const mcpName = tool.name
  const structured = tool.outputSchema !== undefined
  // The server's blocks of a structured call, by execution token, until finalizeContent takes them;
  // weak, so a body that settles after a wrapper already answered (a timeout) leaves nothing behind.
  const pending = new WeakMap<symbol, { value: string; content: ContentBlock[] }>()
  const execute = async (args: unknown, exec: ToolRunContext): Promise<unknown> => {
    // The pipeline checked `args` against the server's own input schema before any policy ran.
    let result
    try {
      result = await client.callTool({ name: mcpName, arguments: args as Record<string, unknown> }, undefined, {
        signal: exec.signal,
        ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }),
      })
    } catch (error) {
      // The SDK sent notifications/cancelled already; the signal's reason makes this ABORTED.
      if (exec.signal.aborted) throw exec.signal.reason
      throw requestFailure(error, server, mcpName, timeoutMs)
    }
    const content = fromMcpContent(result.content)
    if (result.isError === true) {
      const message = contentSummary(content)
      throw new ToolError(ToolErrorCode.TOOL_FAILED, message === '' ? `MCP tool "${mcpName}" reported an error without a message` : message)
    }
    if (!structured) return content
    const value = result.structuredContent
    if (value === undefined) throw new ToolError(ToolErrorCode.INVALID_TOOL_OUTPUT, `MCP tool "${mcpName}" declares an output schema but returned no structuredContent`)
    pending.set(exec.token, { value: JSON.stringify(value), content })
    return value
  }
  const description = tool.description ?? tool.title ?? ''
  const definition: ToolDefinition = {
    name,
    description,
    parameters,
    output: { schema: output, render: structured ? renderJson : renderContent },
    execute,
    ...(hints(tool).readOnly ? { isConcurrencySafe: () => true } : {}),
    ...(structured
      ? {
          finalizeContent: (exec: Readonly<ToolExecution>, result: Readonly<ToolExecutionResult>): ContentBlock[] | undefined => {
            const served = pending.get(exec.token)
            pending.delete(exec.token)
            if (served === undefined || result.isError || served.content.length === 0) return undefined
            const untouched =
              JSON.stringify(result.value) === served.value &&
              JSON.stringify(result.content) === JSON.stringify(renderJson(exec.arguments, result.value))
            return untouched ? served.content : undefined
          },
        }
      : {}),
  }
  return Object.freeze(definition)
}

/**
 * Import the tools of a connected MCP server (`Client` over stdio, Streamable HTTP or in memory).
 * Each tool becomes an ordinary definition registered through `options.context`: `inputSchema` →
 * parameters, `outputSchema` → output schema (the value is the `structuredContent`; without one
 * the value is the content as JSON), content blocks pass through, `isError` → an error result with
 * the server's message, a closed connection or a timeout → an error result, cancellation → MCP
 * cancellation. `readOnlyHint` makes a tool concurrency-safe.
 *
 * A tool whose schema is outside the enforced subset is refused and listed in the report with
 * every reason; the rest are registered. The import owns the client's `tools/list_changed`
 * handler while it lives (one import per client).
 * @throws McpImportError for bad options, a client with a live import, or registered names that
 *   collide with tools the context already sees (nothing is registered then).
 */
export async function importMcpTools(client: Client, options: ImportMcpToolsOptions): Promise<McpToolImport> {
  if (typeof options !== 'object' || options === null || typeof options.context?.tools?.register !== 'function') {
    throw new McpImportError('importMcpTools(client, { context }): context must be the Context to register the tools in (createContext() or a scope)')
  }
  const { context, timeoutMs } = options
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new McpImportError(`importMcpTools: timeoutMs must be a positive number of milliseconds, got ${String(timeoutMs)}`)
  }
  const destructiveMode = options.destructive ?? 'allow'
  if (destructiveMode !== 'allow' && destructiveMode !== 'ask') {
    throw new McpImportError(`importMcpTools: destructive must be 'allow' or 'ask', got ${JSON.stringify(destructiveMode)}`)
  }
  const version = client.getServerVersion()
  if (version === undefined) throw new McpImportError('importMcpTools: the client is not connected; await client.connect(transport) first')
  const server = { name: version.name, version: version.version }
  const prefix = options.prefix ?? defaultPrefix(server.name)
  if (prefix !== '' && !PREFIX_PATTERN.test(prefix)) {
    throw new McpImportError(`importMcpTools: prefix ${JSON.stringify(prefix)} must be letters, digits, _ : - (or '' for no prefix)`)
  }
  if (importedClients.has(client)) {
    throw new McpImportError(`importMcpTools: MCP server "${server.name}" is already imported through this client; dispose that import first`)
  }
  const nameOf = (mcpName: string): string => (prefix === '' ? mcpName : `${prefix}.${mcpName}`)

  const registrations = new Map<string, Registration>()
  let report: McpImportReport = Object.freeze({ server, prefix, imported: [], refused: [] })
  let disposed = false

  /** Bring the registrations in line with `tools`; `strict` throws on a collision instead of refusing. */
  const apply = (tools: readonly Tool[], strict: boolean): McpImportReport => {
    const refused: McpRefusedTool[] = []
    const candidates: Candidate[] = []
    const seen = new Set<string>()
    for (const tool of tools) {
      const name = nameOf(tool.name)
      if (seen.has(name)) {
        refused.push({ name, mcpName: tool.name, reasons: [`the server lists a second tool named "${tool.name}"`] })
        continue
      }
      seen.add(name)
      candidates.push({ tool, name, fingerprint: JSON.stringify(tool) })
    }
    // Unchanged tools keep their registration; changed and removed ones are unregistered first.
    const kept = new Set<string>()
    for (const candidate of candidates) {
      const current = registrations.get(candidate.tool.name)
      if (current !== undefined && current.fingerprint === candidate.fingerprint) kept.add(candidate.tool.name)
    }
    const collisions = candidates.filter((candidate) => !registrations.has(candidate.tool.name) && context.tools.get(candidate.name, context) !== undefined)
    if (strict && collisions.length > 0) {
      const names = collisions.map((candidate) => `"${candidate.name}"`).join(', ')
      throw new McpImportError(
        `importMcpTools: ${names} ${collisions.length === 1 ? 'is' : 'are'} already registered where MCP server "${server.name}" would be imported; ` +
          `give it another prefix (prefix: '${prefix === '' ? server.name : `${prefix}2`}')`,
      )
    }
    for (const [mcpName, registration] of [...registrations]) {
      if (kept.has(mcpName)) continue
      registration.unregister()
      registrations.delete(mcpName)
    }
    for (const { tool, name, fingerprint } of candidates) {
      if (kept.has(tool.name)) continue
      if (context.tools.get(name, context) !== undefined) {
        refused.push({ name, mcpName: tool.name, reasons: [`the name "${name}" is already registered in this context; import the server with another prefix`] })
        continue
      }
      const { reasons, parameters, output } = schemaReasons(tool)
      if (parameters === undefined || output === undefined) {
        refused.push({ name, mcpName: tool.name, reasons })
        continue
      }
      let unregister: () => void
      try {
        unregister = context.tools.register(definitionOf(client, server.name, tool, name, parameters, output, timeoutMs))
      } catch (error) {
        refused.push({ name, mcpName: tool.name, reasons: [describeThrown(error).message] })
        continue
      }
      registrations.set(tool.name, { mcpName: tool.name, name, fingerprint, unregister, destructive: hints(tool).destructive })
    }
    const imported: McpImportedTool[] = []
    for (const tool of tools) {
      const registration = registrations.get(tool.name)
      if (registration !== undefined && registration.fingerprint === JSON.stringify(tool)) {
        imported.push(Object.freeze({ name: registration.name, mcpName: tool.name, ...hints(tool) }))
      }
    }
    report = Object.freeze({ server, prefix, imported: Object.freeze(imported), refused: Object.freeze(refused.map((entry) => Object.freeze({ ...entry, reasons: Object.freeze([...entry.reasons]) }))) })
    return report
  }

  apply(await listAllTools(client, timeoutMs), true)
  importedClients.add(client)

  const effects: (() => void)[] = []
  if (destructiveMode === 'ask') {
    const asking = (name: string): boolean => {
      for (const registration of registrations.values()) if (registration.name === name) return registration.destructive
      return false
    }
    effects.push(
      context.on('tools/pre-execute', async (exec, next) => {
        const decision = await next()
        if (decision.kind !== 'allow' || !asking(exec.name)) return decision
        return { kind: 'ask', reason: `"${exec.name}" of MCP server "${server.name}" may be destructive` }
      }),
    )
  }

  // Re-syncs run one at a time; a notification during one schedules exactly one more.
  let running: Promise<McpImportReport> | undefined
  let again = false
  const resync = async (): Promise<McpImportReport> => {
    if (disposed) return report
    if (running !== undefined) {
      again = true
      return running
    }
    running = (async () => {
      try {
        do {
          again = false
          const tools = await listAllTools(client, timeoutMs)
          if (!disposed) apply(tools, false)
        } while (again && !disposed)
        return report
      } finally {
        running = undefined
      }
    })()
    return running
  }
  const reportError = (error: unknown): void => {
    if (options.onError !== undefined) {
      options.onError(error)
      return
    }
    process.emitWarning(`re-syncing the tools of MCP server "${server.name}" failed: ${describeThrown(error).message}`, { code: 'MCP_RESYNC_FAILED' })
  }
  if (options.resync !== false && client.getServerCapabilities()?.tools?.listChanged === true) {
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      resync().then(
        (latest) => {
          try {
            options.onResync?.(latest)
          } catch (error) {
            reportError(error)
          }
        },
        reportError,
      )
    })
    effects.push(() => client.removeNotificationHandler(LIST_CHANGED))
  }

  const dispose = (): void => {
    if (disposed) return
    disposed = true
    importedClients.delete(client)
    for (const effect of effects.reverse()) effect()
    for (const registration of registrations.values()) registration.unregister()
    registrations.clear()
  }
  return {
    get report() {
      return report
    },
    resync,
    dispose,
    [Symbol.dispose]: dispose,
  }
}
