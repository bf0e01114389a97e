/**
 * MCP out: one agent's view of the tools put behind an MCP server. The view is what the model of
 * that agent would see (`ctx.tools.schemas(view)`): one MCP tool per tool in native mode, or the
 * single `run_code` with its SDK in the description in Code Mode. Every call is an ordinary
 * `ctx.tools.execute()`; content, `structuredContent` and errors map 1:1, MCP cancellation aborts
 * the call, and a client that sends a progress token hears of each sub-call of a running program.
 */

import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, CancelledNotificationSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { CallToolResult, ServerNotification, Tool } from '@modelcontextprotocol/sdk/types.js'
import type { Agent, Context } from '../src/context.ts'
import { ToolDefinitionError } from '../src/errors.ts'
import type { ToolExecution, ToolExecutionResult } from '../src/execution.ts'
import { describeThrown } from '../src/results.ts'
import { toMcpContent } from './content.ts'

/** Options of {@link createMcpServer}: whose view to serve, and the server's name. */
export interface McpServerOptions {
  /** The context whose tools are served; calls go through its pipeline. */
  readonly context: Context
  /** Serve this agent's view (its scope, restrictions and presentation mode); default: the context's own view. */
  readonly agent?: Agent
  /** The server name reported to clients. Default `toolbox-codemode`. */
  readonly name?: string
  /** The server version reported to clients. Default `0.1.0`. */
  readonly version?: string
  /** Instructions a client may show its model. */
  readonly instructions?: string
}

/** Where {@link serveMcp} listens: stdio, or Streamable HTTP (stateless) on a port. */
export type McpServeTransport = 'stdio' | { readonly http: { readonly port: number; readonly host?: string; readonly path?: string } }

/** Options of {@link serveMcp}. */
export interface ServeMcpOptions extends McpServerOptions {
  readonly transport: McpServeTransport
}

/** A running server. `close()` stops it (and, over HTTP, stops listening). */
export interface McpServing extends AsyncDisposable {
  /** The endpoint, for HTTP (`http://127.0.0.1:PORT/mcp`). */
  readonly url: URL | undefined
  close(): Promise<void>
}

/** One progress reporter per running call whose client sent a progress token. */
type ProgressReporter = (message: string) => void

/**
 * The sub-call observers a server installs on its context while some call wants progress: a
 * pass-through `tools/pre-execute` listener (a sub-call starts) and a `tools/result` listener (it
 * settled). Sub-calls carry their root call's id, which is how they find their reporter.
 */
class ProgressHub {
  readonly #context: Context
  readonly #reporters = new Map<string, ProgressReporter>()
  #remove: (() => void) | undefined

  constructor(context: Context) {
    this.#context = context
  }

  /** Report the sub-calls of the call `callId` until the returned function is called. */
  watch(callId: string, reporter: ProgressReporter): () => void {
    this.#reporters.set(callId, reporter)
    this.#install()
    return () => {
      this.#reporters.delete(callId)
      if (this.#reporters.size === 0 && this.#remove !== undefined) {
        this.#remove()
        this.#remove = undefined
      }
    }
  }

  #reporterOf(exec: Readonly<ToolExecution>): ProgressReporter | undefined {
    return exec.parent === undefined ? undefined : this.#reporters.get(exec.rootCallId)
  }

  #install(): void {
    if (this.#remove !== undefined) return
    const context = this.#context
    const started = context.on('tools/pre-execute', (exec, next) => {
      this.#reporterOf(exec)?.(`${exec.name} started`)
      return next()
    })
    const settled = context.on('tools/result', (exec, result) => {
      const reporter = this.#reporterOf(exec)
      if (reporter === undefined) return
      reporter(result.isError ? `${exec.name} failed: ${result.error.message}` : `${exec.name} done`)
    })
    this.#remove = () => {
      started()
      settled()
    }
  }
}

/** An object-rooted output schema can be MCP's `outputSchema`; anything else is content only. */
function mcpOutputSchema(schema: unknown): Tool['outputSchema'] | undefined {
  if (typeof schema !== 'object' || schema === null || (schema as { type?: unknown }).type !== 'object') return undefined
  return structuredClone(schema) as Tool['outputSchema']
}

/** A pipeline result as MCP's: the same content; the value as `structuredContent` where declared. */
function toCallToolResult(result: ToolExecutionResult, structured: boolean): CallToolResult {
  const content = toMcpContent(result.content) as CallToolResult['content']
  if (result.isError) return { isError: true, content }
  return structured ? { content, structuredContent: structuredClone(result.value) as Record<string, unknown> } : { content }
}

let served = 0

/**
 * An MCP server (the SDK's low-level `Server`) exposing one view of `options.context`'s tools;
 * connect it to any transport. `tools/list` lists what the view's model sees; `tools/call` runs
 * `ctx.tools.execute()` for the view's agent with the request's signal. A tool whose output
 * schema is object-rooted advertises it as `outputSchema` and answers with `structuredContent`.
 */
export function createMcpServer(options: McpServerOptions): Server {
  return buildServer(options, undefined)
}

/**
 * Calls in flight on a stateless HTTP endpoint, by JSON-RPC request id. Each request gets a server
 * of its own, so a client's `notifications/cancelled` (a POST of its own) reaches a server that
 * never saw the call: this map carries it to the one that did.
 */
type InFlight = Map<string | number, AbortController>

function buildServer(options: McpServerOptions, inFlight: InFlight | undefined): Server {
  if (typeof options !== 'object' || options === null || typeof options.context?.tools?.execute !== 'function') {
    throw new ToolDefinitionError('createMcpServer({ context }): context must be the Context whose tools are served')
  }
  const { context, agent } = options
  const view = agent ?? context
  const hub = progressHubs.get(context) ?? new ProgressHub(context)
  progressHubs.set(context, hub)
  const server = new Server(
    { name: options.name ?? 'toolbox-codemode', version: options.version ?? '0.1.0' },
    { capabilities: { tools: { listChanged: true } }, ...(options.instructions === undefined ? {} : { instructions: options.instructions }) },
  )
  const structuredOf = (name: string): boolean => mcpOutputSchema(context.tools.get(name, view)?.output.schema) !== undefined

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: context.tools.schemas(view).map((schema) => {
      const outputSchema = mcpOutputSchema(context.tools.get(schema.name, view)?.output.schema)
      return {
        name: schema.name,
        description: schema.description,
        inputSchema: schema.parameters as Tool['inputSchema'],
        ...(outputSchema === undefined ? {} : { outputSchema }),
      }
    }),
  }))

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    served += 1
    const callId = `mcp-${served}-${randomUUID().slice(0, 8)}`
    const { name } = request.params
    const token = request.params._meta?.progressToken
    let unwatch: (() => void) | undefined
    // Progress sent and not yet written: the result waits for them, since a client drops progress
    // that arrives after the response.
    let sending: Promise<void> = Promise.resolve()
    if (token !== undefined) {
      let progress = 0
      unwatch = hub.watch(callId, (message) => {
        progress += 1
        const notification: ServerNotification = { method: 'notifications/progress', params: { progressToken: token, progress, message } }
        // A client gone mid-run only loses its progress; the call itself goes on to its result.
        const sent = extra.sendNotification(notification).catch(() => undefined)
        sending = Promise.all([sending, sent]).then(() => undefined)
      })
    }
    let signal = extra.signal
    let forget: (() => void) | undefined
    if (inFlight !== undefined) {
      const controller = new AbortController()
      inFlight.set(extra.requestId, controller)
      forget = () => {
        if (inFlight.get(extra.requestId) === controller) inFlight.delete(extra.requestId)
      }
      signal = AbortSignal.any([extra.signal, controller.signal])
    }
    try {
      const result = await context.tools.execute({
        callId,
        name,
        arguments: request.params.arguments ?? {},
        signal,
        ...(agent === undefined ? {} : { agent }),
      })
      unwatch?.()
      await sending
      return toCallToolResult(result, structuredOf(name))
    } finally {
      unwatch?.()
      forget?.()
    }
  })
  if (inFlight !== undefined) {
    server.setNotificationHandler(CancelledNotificationSchema, (notification) => {
      const { requestId, reason } = notification.params
      if (requestId !== undefined) inFlight.get(requestId)?.abort(reason ?? 'cancelled by the MCP client')
    })
  }

  const stopFollowing = context.on('tools/change', () => {
    // Only a connected, stateful transport can carry it; stateless HTTP has no channel for it.
    if (server.transport !== undefined) server.sendToolListChanged().catch(() => undefined)
  })
  const previousOnClose = server.onclose
  server.onclose = () => {
    stopFollowing()
    previousOnClose?.()
  }
  return server
}

/** One progress hub per context, shared by every server of that context. */
const progressHubs = new WeakMap<Context, ProgressHub>()

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1'])

/** Serve the view over stateless Streamable HTTP: a fresh server and transport per request. */
async function serveHttp(options: McpServerOptions, http: { port: number; host?: string; path?: string }): Promise<McpServing> {
  const host = http.host ?? '127.0.0.1'
  const path = http.path ?? '/mcp'
  if (!Number.isInteger(http.port) || http.port < 0 || http.port > 65_535) {
    throw new ToolDefinitionError(`serveMcp: http.port must be an integer from 0 to 65535, got ${String(http.port)}`)
  }
  let allowedHosts: string[] | undefined
  const inFlight: InFlight = new Map()
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (url.pathname !== path) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`Not found: the MCP endpoint is ${path}\n`)
      return
    }
    if (req.method !== 'POST') {
      // Stateless: no session to stream to (GET) or to end (DELETE).
      res.writeHead(405, { allow: 'POST', 'content-type': 'text/plain' }).end('This MCP server is stateless: POST requests only\n')
      return
    }
    const server = buildServer(options, inFlight)
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      ...(allowedHosts === undefined ? {} : { enableDnsRebindingProtection: true, allowedHosts }),
    })
    res.on('close', () => {
      transport.close().catch(() => undefined)
      server.close().catch(() => undefined)
    })
    await server.connect(transport)
    await transport.handleRequest(req, res)
  }
  const listener = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' })
      res.end(`MCP request failed: ${describeThrown(error).message}\n`)
    })
  })
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject)
    listener.listen(http.port, host, () => {
      listener.off('error', reject)
      resolve()
    })
  })
  const { port } = listener.address() as AddressInfo
  // On loopback, a page in a browser must not reach the server through a rebound DNS name.
  if (LOOPBACK.has(host)) allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]
  const url = new URL(`http://${host.includes(':') ? `[${host}]` : host}:${port}${path}`)
  let closing: Promise<void> | undefined
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      listener.close(() => resolve())
      listener.closeAllConnections()
    })
    return closing
  }
  return { url, close, [Symbol.asyncDispose]: close }
}

/**
 * Serve one view of a context's tools as an MCP server, over stdio or stateless Streamable HTTP
 * (`{ http: { port, host? } }`, host `127.0.0.1` unless given; port 0 picks a free one).
 *
 * Over HTTP every POST gets a fresh server, so any instance behind a load balancer can answer it.
 * A client's cancellation is a POST of its own: it aborts the call with that request id running
 * in this process (a client closing the response stream aborts its call too). Request ids are the
 * client's own numbering, so on a shared endpoint one client could cancel another's call with the
 * same id: keep the default loopback host unless the clients trust each other.
 * @example
 * const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode() } })
 * await importMcpTools(client, { context: ctx, prefix: 'fs' })
 * await serveMcp({ context: ctx, transport: 'stdio' })
 */
export async function serveMcp(options: ServeMcpOptions): Promise<McpServing> {
  const transport: unknown = (options as Partial<ServeMcpOptions> | undefined)?.transport
  if (transport === 'stdio') {
    const server = createMcpServer(options)
    await server.connect(new StdioServerTransport())
    const close = (): Promise<void> => server.close()
    return { url: undefined, close, [Symbol.asyncDispose]: close }
  }
  const http = typeof transport === 'object' && transport !== null ? (transport as { http?: unknown }).http : undefined
  if (typeof http === 'object' && http !== null) return serveHttp(options, http as { port: number; host?: string; path?: string })
  throw new ToolDefinitionError(`serveMcp: transport must be 'stdio' or { http: { port } }, got ${JSON.stringify(transport)}`)
}
