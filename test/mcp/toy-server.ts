/**
 * A small MCP server built on the SDK's own `Server` with hand-written JSON Schemas: tools with and
 * without output schemas, every content block type, an error, a slow tool that notes its
 * cancellation, a destructive tool, one schema outside the enforced subset, and a tool list that
 * can change at run time (`tools/list_changed`).
 */

import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'

/** The toy server and what a test can observe or change on it. */
export interface ToyServer {
  readonly server: Server
  /** Names of calls the server saw cancelled. */
  readonly cancelled: string[]
  /** Add a tool (answering with its name) and notify clients. */
  addTool(name: string): Promise<void>
  /** Remove a tool and notify clients. */
  removeTool(name: string): Promise<void>
}

const OBJECT = (properties: Record<string, unknown>, required: string[] = []): Tool['inputSchema'] =>
  ({ type: 'object', properties, required, additionalProperties: false }) as Tool['inputSchema']

/** The tools a fresh toy server lists. */
export function toyTools(): Tool[] {
  return [
    { name: 'echo', description: 'Echo a text.', inputSchema: OBJECT({ text: { type: 'string' } }, ['text']), annotations: { readOnlyHint: true } },
    {
      name: 'add',
      description: 'Add two numbers.',
      inputSchema: OBJECT({ a: { type: 'number' }, b: { type: 'number' } }, ['a', 'b']),
      outputSchema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'], additionalProperties: false },
      annotations: { readOnlyHint: true },
    },
    { name: 'media', description: 'Every kind of content block.', inputSchema: OBJECT({}), annotations: { readOnlyHint: true } },
    { name: 'fail', description: 'Always reports an error.', inputSchema: OBJECT({}) },
    { name: 'slow', description: 'Answers after ms milliseconds unless cancelled.', inputSchema: OBJECT({ ms: { type: 'number' } }, ['ms']), annotations: { readOnlyHint: true } },
    { name: 'wipe', description: 'Deletes everything.', inputSchema: OBJECT({}), annotations: { destructiveHint: true } },
    {
      name: 'remote_ref',
      description: 'Its schema points outside itself.',
      inputSchema: OBJECT({ x: { $ref: 'https://example.com/x.json' }, y: { type: 'string', not: { const: 'a' } } }),
    },
  ]
}

function wait(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(true), ms)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      resolve(false)
    })
  })
}

/** A new toy server named `name` (default `toy-server`). */
export function createToyServer(name = 'toy-server'): ToyServer {
  const tools = toyTools()
  const cancelled: string[] = []
  const server = new Server({ name, version: '1.2.3' }, { capabilities: { tools: { listChanged: true } } })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>
    switch (request.params.name) {
      case 'echo':
        return { content: [{ type: 'text', text: String(args.text), annotations: { audience: ['user'] } }] }
      case 'add': {
        const sum = Number(args.a) + Number(args.b)
        return { content: [{ type: 'text', text: `${String(args.a)} + ${String(args.b)} = ${sum}` }], structuredContent: { sum } }
      }
      case 'media':
        return {
          content: [
            { type: 'text', text: 'all kinds' },
            { type: 'image', data: 'aW1n', mimeType: 'image/png' },
            { type: 'audio', data: 'YXVk', mimeType: 'audio/wav' },
            { type: 'resource_link', uri: 'file:///notes.txt', name: 'notes.txt', mimeType: 'text/plain' },
            { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'inline' }, _meta: { x: 1 } },
          ],
        }
      case 'fail':
        return { isError: true, content: [{ type: 'text', text: 'disk full' }] }
      case 'slow': {
        const finished = await wait(Number(args.ms), extra.signal)
        if (!finished) cancelled.push('slow')
        return { content: [{ type: 'text', text: 'slept' }] }
      }
      case 'wipe':
        return { content: [{ type: 'text', text: 'wiped' }] }
      default:
        if (tools.some((tool) => tool.name === request.params.name)) return { content: [{ type: 'text', text: request.params.name }] }
        return { isError: true, content: [{ type: 'text', text: `unknown tool ${request.params.name}` }] }
    }
  })
  return {
    server,
    cancelled,
    async addTool(tool) {
      tools.push({ name: tool, description: `The ${tool} tool.`, inputSchema: OBJECT({}) })
      await server.sendToolListChanged()
    },
    async removeTool(tool) {
      const index = tools.findIndex((entry) => entry.name === tool)
      if (index >= 0) tools.splice(index, 1)
      await server.sendToolListChanged()
    },
  }
}
