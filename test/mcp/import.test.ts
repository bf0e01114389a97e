import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { afterEach, describe, expect, it } from 'vitest'
import { importMcpTools, McpImportError } from '../../mcp/index.ts'
import { createContext } from '../../src/context.ts'
import type { Context } from '../../src/context.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import { call, rawTool } from '../helpers.ts'
import { createToyServer } from './toy-server.ts'

const opened: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((entry) => entry.close()))
})

async function connect(server: Server, options: ConstructorParameters<typeof Client>[1] = {}): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await server.connect(serverSide)
  const client = new Client({ name: 'test-client', version: '1.0.0' }, options)
  await client.connect(clientSide)
  opened.push(client, server)
  return client
}

async function imported(prefix?: string, context: Context = createContext()) {
  const toy = createToyServer()
  const client = await connect(toy.server)
  const tools = await importMcpTools(client, { context, ...(prefix === undefined ? {} : { prefix }) })
  return { toy, client, context, tools }
}

describe('importMcpTools: registration and the report', () => {
  it('registers every tool inside the schema subset and refuses the other with every reason', async () => {
    const { context, tools } = await imported('toy')
    expect(tools.report.server).toEqual({ name: 'toy-server', version: '1.2.3' })
    expect(tools.report.imported.map((tool) => tool.name)).toEqual(['toy.echo', 'toy.add', 'toy.media', 'toy.fail', 'toy.slow', 'toy.wipe'])
    expect(tools.report.refused).toHaveLength(1)
    const [refused] = tools.report.refused
    expect(refused?.name).toBe('toy.remote_ref')
    expect(refused?.reasons.some((reason) => reason.startsWith('inputSchema $.properties.x'))).toBe(true)
    expect(refused?.reasons.some((reason) => reason.startsWith('inputSchema $.properties.y'))).toBe(true)
    expect(context.tools.list().map((tool) => tool.name)).toEqual(tools.report.imported.map((tool) => tool.name))
  })

  it('prefixes names with the server name without its mcp and server words by default', async () => {
    const { tools } = await imported()
    expect(tools.report.prefix).toBe('toy')
    expect(tools.report.imported[0]?.name).toBe('toy.echo')
  })

  it('keeps the server names with an empty prefix', async () => {
    const { context } = await imported('')
    expect(context.tools.get('echo')).toBeDefined()
  })

  it('refuses a name the context already has with an error naming it and a prefix to use, registering nothing', async () => {
    const context = createContext()
    context.tools.register(rawTool('toy.echo'))
    const client = await connect(createToyServer().server)
    await expect(importMcpTools(client, { context, prefix: 'toy' })).rejects.toThrow(McpImportError)
    await expect(importMcpTools(client, { context, prefix: 'toy' })).rejects.toThrow(/"toy\.echo" is already registered .* another prefix \(prefix: 'toy2'\)/)
    expect(context.tools.list().map((tool) => tool.name)).toEqual(['toy.echo'])
  })

  it('refuses options it cannot use, naming the fix', async () => {
    const client = await connect(createToyServer().server)
    const context = createContext()
    await expect(importMcpTools(client, {} as never)).rejects.toThrow(/context must be the Context to register the tools in/)
    await expect(importMcpTools(client, { context, prefix: 'a b' })).rejects.toThrow(/prefix "a b" must be letters, digits/)
    await expect(importMcpTools(client, { context, timeoutMs: -1 })).rejects.toThrow(/timeoutMs must be a positive number/)
    await expect(importMcpTools(new Client({ name: 'c', version: '1' }), { context })).rejects.toThrow(/not connected; await client.connect/)
  })

  it('refuses a second live import through the same client', async () => {
    const { client, context } = await imported('a')
    await expect(importMcpTools(client, { context, prefix: 'b' })).rejects.toThrow(/already imported through this client/)
  })

  it('unregisters every tool on dispose, so the server can be imported again', async () => {
    const { client, context, tools } = await imported('toy')
    tools.dispose()
    expect(context.tools.list()).toEqual([])
    const again = await importMcpTools(client, { context, prefix: 'toy' })
    expect(again.report.imported).toHaveLength(6)
  })

  it('lets read-only tools overlap and keeps the others exclusive', async () => {
    const { context } = await imported('toy')
    expect(context.tools.executionMode(call('toy.echo', { text: 'x' }))).toEqual({ kind: 'parallel' })
    expect(context.tools.executionMode(call('toy.fail'))).toEqual({ kind: 'exclusive' })
  })
})

describe('importMcpTools: calls', () => {
  it('gives the structuredContent as the value and the server content blocks as content', async () => {
    const { context } = await imported('toy')
    const result = await context.tools.execute(call('toy.add', { a: 2, b: 3 }))
    expect(result).toMatchObject({ isError: false, value: { sum: 5 }, content: [{ type: 'text', text: '2 + 3 = 5' }] })
  })

  it("keeps a post-execute policy's replacement instead of the server's blocks", async () => {
    const { context } = await imported('toy')
    const stop = context.on('tools/post-execute', async () => ({ kind: 'accept', content: [{ type: 'text', text: 'redacted' }] }))
    expect((await context.tools.execute(call('toy.add', { a: 2, b: 3 }))).content).toEqual([{ type: 'text', text: 'redacted' }])
    stop()
    context.on('tools/post-execute', async () => ({ kind: 'accept', value: { sum: 0 } }))
    const replaced = await context.tools.execute(call('toy.add', { a: 2, b: 3 }))
    expect(replaced).toMatchObject({ value: { sum: 0 }, content: [{ type: 'text', text: '{"sum":0}' }] })
  })

  it('gives the content as the value of a tool without an output schema, annotations dropped', async () => {
    const { context } = await imported('toy')
    const result = await context.tools.execute(call('toy.echo', { text: 'hi' }))
    expect(result).toMatchObject({ isError: false, value: [{ type: 'text', text: 'hi' }], content: [{ type: 'text', text: 'hi' }] })
  })

  it('passes image, audio, resource link and embedded resource blocks through', async () => {
    const { context } = await imported('toy')
    const result = await context.tools.execute(call('toy.media'))
    expect(result.content).toEqual([
      { type: 'text', text: 'all kinds' },
      { type: 'image', data: 'aW1n', mimeType: 'image/png' },
      { type: 'audio', data: 'YXVk', mimeType: 'audio/wav' },
      { type: 'resource_link', uri: 'file:///notes.txt', name: 'notes.txt', mimeType: 'text/plain' },
      { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'inline' } },
    ])
  })

  it("turns the server's isError into an error result carrying its message", async () => {
    const { context } = await imported('toy')
    const result = await context.tools.execute(call('toy.fail'))
    expect(result).toMatchObject({ isError: true, error: { message: 'disk full', info: { code: 'TOOL_FAILED' } } })
  })

  it('validates arguments against the input schema before the server sees them', async () => {
    const { context } = await imported('toy')
    const result = await context.tools.execute(call('toy.add', { a: 'two', b: 3 }))
    expect(result.error?.info?.code).toBe('INVALID_ARGS')
    expect(result.error?.message).toContain('$.a')
  })

  it('cancels the MCP request when the call is aborted, and reports ABORTED', async () => {
    const { context, toy } = await imported('toy')
    const controller = new AbortController()
    const pending = context.tools.execute(call('toy.slow', { ms: 10_000 }, { signal: controller.signal }))
    await new Promise((resolve) => setTimeout(resolve, 50))
    controller.abort()
    const result = await pending
    expect(result.error?.info?.code).toBe('ABORTED')
    await expect.poll(() => toy.cancelled).toEqual(['slow'])
  })

  it('turns a request timeout into a TOOL_TIMEOUT error result', async () => {
    const toy = createToyServer()
    const client = await connect(toy.server)
    const context = createContext()
    await importMcpTools(client, { context, prefix: 'toy', timeoutMs: 50 })
    const result = await context.tools.execute(call('toy.slow', { ms: 5_000 }))
    expect(result).toMatchObject({ isError: true, error: { info: { code: 'TOOL_TIMEOUT' } } })
    expect(result.error?.message).toBe('MCP server "toy-server" did not answer the call of "slow" within 50 ms')
  })

  it('turns a closed connection into an error result naming the server', async () => {
    const { context, client } = await imported('toy')
    await client.close()
    const result = await context.tools.execute(call('toy.echo', { text: 'x' }))
    expect(result.isError).toBe(true)
    expect(result.error?.message).toMatch(/MCP server "toy-server"/)
  })

  it("asks for approval before a destructive tool runs when destructive is 'ask'", async () => {
    const asked: string[] = []
    const context = createContext({
      approval: {
        request: async ({ execution, reason }) => {
          asked.push(`${execution.name}: ${reason ?? ''}`)
          return 'denied'
        },
      },
    })
    const client = await connect(createToyServer().server)
    await importMcpTools(client, { context, prefix: 'toy', destructive: 'ask' })
    const agent = context.agent('a')
    const wiped = await context.tools.execute(call('toy.wipe', {}, { agent }))
    const echoed = await context.tools.execute(call('toy.echo', { text: 'x' }, { agent }))
    expect(wiped.error?.info?.code).toBe('DENIED')
    expect(echoed.isError).toBe(false)
    expect(asked).toEqual(['toy.wipe: "toy.wipe" of MCP server "toy-server" may be destructive'])
  })
})

describe('importMcpTools: tools/list_changed', () => {
  it('re-syncs on the notification: new tools registered, removed ones disposed, tools/change fired', async () => {
    const context = createContext()
    const toy = createToyServer()
    const client = await connect(toy.server)
    const reports: string[][] = []
    const tools = await importMcpTools(client, { context, prefix: 'toy', onResync: (report) => reports.push(report.imported.map((tool) => tool.name)) })
    let changes = 0
    context.on('tools/change', () => void (changes += 1))
    await toy.addTool('fresh')
    await expect.poll(() => context.tools.get('toy.fresh')).toBeDefined()
    await toy.removeTool('echo')
    await expect.poll(() => context.tools.get('toy.echo')).toBeUndefined()
    expect(changes).toBe(2)
    expect(tools.report.imported.map((tool) => tool.name)).not.toContain('toy.echo')
    expect(reports.at(-1)).toContain('toy.fresh')
    const result = await context.tools.execute(call('toy.fresh'))
    expect(result.value).toEqual([{ type: 'text', text: 'fresh' }])
  })
})

describe('importMcpTools: Code Mode over imported tools', () => {
  it('runs a program that calls imported tools in parallel and reads structured values', async () => {
    const context = createContext({ tools: { mode: 'code', codeMode: createRunCode() } })
    const client = await connect(createToyServer().server)
    await importMcpTools(client, { context, prefix: 'toy' })
    const agent = context.agent('coder')
    expect(context.tools.schemas(agent)[0]?.description).toContain('toy_add(args: {')
    const code = `
      const [a, b] = await Promise.all([tools.toy_add({ a: 1, b: 2 }), tools.toy_echo({ text: 'hey' })])
      let failed = ''
      try { await tools.toy_fail({}) } catch (error) { failed = error.message }
      return { sum: a.sum, echoed: b[0].text, failed }`
    const result = await context.tools.execute(call('run_code', { code }, { agent }))
    expect(result.value).toEqual({ result: { sum: 3, echoed: 'hey', failed: 'disk full' }, logs: [] })
  })
})

describe('importMcpTools over stdio', () => {
  it('imports a server started as a process, and a call after the process died is an error result naming it', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'toy-stdio.ts')],
      env: Object.fromEntries(Object.entries({ ...process.env, NODE_OPTIONS: '' }).filter((entry): entry is [string, string] => entry[1] !== undefined)),
      stderr: 'pipe',
    })
    const client = new Client({ name: 'test-client', version: '1.0.0' })
    await client.connect(transport)
    opened.push(client)
    const context = createContext()
    await importMcpTools(client, { context, prefix: 'toy' })
    expect((await context.tools.execute(call('toy.add', { a: 1, b: 1 }))).value).toEqual({ sum: 2 })
    process.kill(transport.pid as number, 'SIGKILL')
    await expect.poll(async () => (await context.tools.execute(call('toy.add', { a: 1, b: 1 }))).isError).toBe(true)
    const result = await context.tools.execute(call('toy.add', { a: 1, b: 1 }))
    expect(result.error?.message).toMatch(/MCP server "toy-server"/)
  })
})

describe('importMcpTools: listing', () => {
  it('reads every page of a paginated tools/list', async () => {
    const { Server } = await import('@modelcontextprotocol/sdk/server/index.js')
    const { ListToolsRequestSchema } = await import('@modelcontextprotocol/sdk/types.js')
    const server = new Server({ name: 'paged-server', version: '1.0.0' }, { capabilities: { tools: {} } })
    const tool = (name: string) => ({ name, description: name, inputSchema: { type: 'object' as const } })
    server.setRequestHandler(ListToolsRequestSchema, (request) =>
      request.params?.cursor === 'page-2' ? { tools: [tool('c')] } : { tools: [tool('a'), tool('b')], nextCursor: 'page-2' },
    )
    const client = await connect(server)
    const imported = await importMcpTools(client, { context: createContext() })
    expect(imported.report.imported.map((entry) => entry.name)).toEqual(['paged.a', 'paged.b', 'paged.c'])
  })

  it('reports a re-sync that cannot list the tools to onError and keeps the tools it had', async () => {
    const { Server } = await import('@modelcontextprotocol/sdk/server/index.js')
    const { ListToolsRequestSchema } = await import('@modelcontextprotocol/sdk/types.js')
    const server = new Server({ name: 'flaky-server', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } })
    let broken = false
    server.setRequestHandler(ListToolsRequestSchema, () => {
      if (broken) throw new Error('listing is down')
      return { tools: [{ name: 'a', description: 'a', inputSchema: { type: 'object' as const } }] }
    })
    const client = await connect(server)
    const context = createContext()
    const errors: string[] = []
    await importMcpTools(client, { context, onError: (error) => errors.push((error as Error).message) })
    broken = true
    await server.sendToolListChanged()
    await expect.poll(() => errors).toHaveLength(1)
    expect(errors[0]).toContain('listing is down')
    expect(context.tools.get('flaky.a')).toBeDefined()
  })
})
