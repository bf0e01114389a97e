import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import type { Progress } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { createMcpServer, serveMcp } from '../../mcp/index.ts'
import type { McpServing } from '../../mcp/index.ts'
import { createContext } from '../../src/context.ts'
import type { Context } from '../../src/context.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import { servedTools } from './served-tools.ts'
import type { WaitLog } from './served-tools.ts'

const closing: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(closing.splice(0).map((entry) => entry.close()))
})

function codeModeContext(log: WaitLog): Context {
  const context = createContext({ tools: { mode: 'code', codeMode: createRunCode() } })
  for (const tool of servedTools(log)) context.tools.register(tool)
  return context
}

async function inMemoryClient(context: Context): Promise<Client> {
  const server = createMcpServer({ context, name: 'served', version: '9.9.9' })
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await server.connect(serverSide)
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await client.connect(clientSide)
  closing.push(client, server)
  return client
}

async function httpClient(context: Context): Promise<{ client: Client; serving: McpServing }> {
  const serving = await serveMcp({ context, transport: { http: { port: 0 } } })
  closing.push(serving)
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(serving.url as URL))
  closing.unshift(client)
  return { client, serving }
}

const transports = [
  ['in memory', async (context: Context) => inMemoryClient(context)],
  ['Streamable HTTP', async (context: Context) => (await httpClient(context)).client],
] as const

describe.each(transports)('serve in Code Mode over %s', (_label, connect) => {
  it('lists run_code alone, with the SDK in its description and its output schema', async () => {
    const client = await connect(codeModeContext({ aborted: [] }))
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(['run_code'])
    expect(tools[0]?.description).toContain('add(args: {')
    expect(tools[0]?.description).toContain('Add two integers.')
    expect(tools[0]?.outputSchema).toMatchObject({ type: 'object', required: ['result', 'logs'] })
  })

  it('runs a program: structuredContent is its value and content its rendering', async () => {
    const client = await connect(codeModeContext({ aborted: [] }))
    const result = await client.callTool({ name: 'run_code', arguments: { code: 'const r = await tools.add({ a: 2, b: 40 }); console.log("hi"); return r.sum' } })
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toEqual({ result: 42, logs: [{ level: 'log', text: 'hi' }] })
    expect(result.content).toEqual([{ type: 'text', text: 'Console output:\nhi\n\nResult:\n42' }])
  })

  it('returns a failed program as an error result with the message a model reads', async () => {
    const client = await connect(codeModeContext({ aborted: [] }))
    const result = await client.callTool({ name: 'run_code', arguments: { code: 'await tools.boom({})' } })
    expect(result.isError).toBe(true)
    expect(JSON.stringify(result.content)).toContain('boom went the tool')
    expect(result.structuredContent).toBeUndefined()
  })

  it('answers a call of a tool the view does not show with an error naming what exists', async () => {
    const client = await connect(codeModeContext({ aborted: [] }))
    const result = await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } })
    expect(result.isError).toBe(true)
    expect(JSON.stringify(result.content)).toContain('run_code')
  })

  it('sends a progress notification per sub-call start and end when the client sends a progress token', async () => {
    const client = await connect(codeModeContext({ aborted: [] }))
    const seen: Progress[] = []
    const result = await client.callTool(
      { name: 'run_code', arguments: { code: 'await Promise.all([tools.add({ a: 1, b: 1 }), tools.add({ a: 2, b: 2 })]); try { await tools.boom({}) } catch {} return 1' } },
      undefined,
      { onprogress: (progress) => seen.push(progress) },
    )
    expect(result.isError).toBeFalsy()
    expect(seen.map((progress) => progress.progress)).toEqual([1, 2, 3, 4, 5, 6])
    const messages = seen.map((progress) => progress.message)
    expect(messages.filter((message) => message === 'add started')).toHaveLength(2)
    expect(messages.filter((message) => message === 'add done')).toHaveLength(2)
    expect(messages.slice(-2)).toEqual(['boom started', 'boom failed: boom went the tool'])
  })

  it('aborts the running program and its sub-call when the client cancels', async () => {
    const log: WaitLog = { aborted: [] }
    const client = await connect(codeModeContext(log))
    const controller = new AbortController()
    const pending = client.callTool({ name: 'run_code', arguments: { code: 'await tools.wait({ ms: 20000 }); return 1' } }, undefined, {
      signal: controller.signal,
      // The first progress says the sub-call started; cancel once its body is waiting.
      onprogress: () => setTimeout(() => controller.abort(), 100),
    })
    await expect(pending).rejects.toThrow(/abort/i)
    await expect.poll(() => log.aborted).toEqual(['wait'])
  })
})

describe('serve in native mode', () => {
  it('lists one MCP tool per tool, advertising object output schemas and answering with structuredContent', async () => {
    const context = createContext()
    for (const tool of servedTools({ aborted: [] })) context.tools.register(tool)
    const client = await inMemoryClient(context)
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(['add', 'wait', 'boom'])
    expect(tools[0]?.outputSchema).toMatchObject({ type: 'object' })
    expect(tools[1]?.outputSchema).toBeUndefined()
    const result = await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } })
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'sum 3' }], structuredContent: { sum: 3 } })
  })

  it("serves an agent's view: its restrictions hide tools", async () => {
    const context = createContext()
    for (const tool of servedTools({ aborted: [] })) context.tools.register(tool)
    const agent = context.agent('limited')
    agent.ctx.tools.restrict({ deny: ['boom'] })
    const server = createMcpServer({ context, agent })
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    await server.connect(serverSide)
    const client = new Client({ name: 'c', version: '1' })
    await client.connect(clientSide)
    closing.push(client, server)
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['add', 'wait'])
    const denied = await client.callTool({ name: 'boom', arguments: {} })
    expect(denied.isError).toBe(true)
  })

  it('tells a connected client when the tool list changes', async () => {
    const context = createContext()
    const client = await inMemoryClient(context)
    let notified = 0
    client.setNotificationHandler((await import('@modelcontextprotocol/sdk/types.js')).ToolListChangedNotificationSchema, () => {
      notified += 1
    })
    context.tools.register(servedTools({ aborted: [] })[0]!)
    await expect.poll(() => notified).toBe(1)
  })
})

describe('serve over HTTP', () => {
  it('listens on loopback only, on the port it was given (0 picks one)', async () => {
    const { serving } = await httpClient(codeModeContext({ aborted: [] }))
    expect(serving.url?.hostname).toBe('127.0.0.1')
    expect(Number(serving.url?.port)).toBeGreaterThan(0)
    expect(serving.url?.pathname).toBe('/mcp')
  })

  it('refuses a request whose Host is not the loopback address (DNS rebinding)', async () => {
    const { serving } = await httpClient(codeModeContext({ aborted: [] }))
    const { request } = await import('node:http')
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })
      const req = request(serving.url as URL, { method: 'POST', headers: { host: 'attacker.example:80', 'content-type': 'application/json', accept: 'application/json, text/event-stream' } }, (res) => {
        res.resume()
        resolve(res.statusCode)
      })
      req.on('error', reject)
      req.end(body)
    })
    expect(status).toBe(403)
  })

  it('refuses a GET: it is stateless', async () => {
    const { serving } = await httpClient(codeModeContext({ aborted: [] }))
    const response = await fetch(serving.url as URL)
    expect(response.status).toBe(405)
  })
})
