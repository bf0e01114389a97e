// Writes test/fixtures/mcp-input-schemas.json: the tool input (and output) schemas that real MCP
// servers send, captured over the real protocol. Re-run after upgrading the servers or the SDK:
//   node scripts/capture-mcp-schemas.mjs
// Sources: @modelcontextprotocol/server-filesystem and server-memory spawned over stdio, and an
// in-memory McpServer whose tools use typical zod 4 schemas (converted by the SDK itself).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'

const root = fileURLToPath(new URL('..', import.meta.url))

async function listTools(transport) {
  const client = new Client({ name: 'capture-mcp-schemas', version: '1.0.0' })
  await client.connect(transport)
  try {
    const { tools } = await client.listTools()
    return tools.map((tool) => ({
      name: tool.name,
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
    }))
  } finally {
    await client.close()
  }
}

function stdio(bin, args) {
  return new StdioClientTransport({ command: join(root, 'node_modules/.bin', bin), args, stderr: 'ignore' })
}

// Schemas a TypeScript author typically writes with zod 4 and the SDK's McpServer.
function zodServer() {
  const server = new McpServer({ name: 'zod-typical', version: '1.0.0' })
  const noop = async () => ({ content: [{ type: 'text', text: 'ok' }] })
  const Node = z.object({ name: z.string(), get children() { return z.array(Node).optional() } })
  server.registerTool('create_issue', {
    description: 'Lengths, regex, ranges, enums, optional, nullable, defaults',
    inputSchema: {
      title: z.string().min(1).max(200),
      slug: z.string().regex(/^[a-z0-9-]+$/),
      priority: z.number().int().min(1).max(5).default(3),
      status: z.enum(['open', 'closed']),
      assignee: z.string().email().nullable(),
      homepage: z.string().url().optional(),
      due: z.string().datetime().optional(),
      id: z.string().uuid().optional(),
      weight: z.number().positive().multipleOf(0.5).optional(),
      labels: z.array(z.string().min(1)).min(1).max(10).optional(),
    },
    outputSchema: { id: z.number().int(), url: z.string().url(), created: z.boolean() },
  }, async () => ({ content: [], structuredContent: { id: 1, url: 'https://example.com/1', created: true } }))
  server.registerTool('configure', {
    description: 'Records, unions, literals, tuples, intersections, discriminated unions, recursion',
    inputSchema: {
      env: z.record(z.string(), z.string()),
      limits: z.record(z.string().regex(/^[A-Z_]+$/), z.number().nonnegative()).optional(),
      target: z.union([z.string(), z.number()]),
      mode: z.literal('fast').or(z.literal('safe')),
      point: z.tuple([z.number(), z.number()]).optional(),
      both: z.intersection(z.object({ a: z.string() }), z.object({ b: z.number() })).optional(),
      shape: z.discriminatedUnion('kind', [
        z.object({ kind: z.literal('circle'), radius: z.number() }),
        z.object({ kind: z.literal('square'), side: z.number() }),
      ]).optional(),
      tree: Node.optional(),
      note: z.string().nullish(),
      flags: z.object({ verbose: z.boolean().default(false) }).strict().optional(),
      count: z.int32().optional(),
      big: z.int().optional(),
    },
  }, noop)
  return server
}

async function zodTools() {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
  const server = zodServer()
  await server.connect(serverTransport)
  try {
    return await listTools(clientTransport)
  } finally {
    await server.close()
  }
}

// z.toJSONSchema as an author would call it directly, for a few schemas the SDK does not build.
function zodDirect() {
  const Category = z.object({ name: z.string(), get subcategories() { return z.array(Category) } })
  return [
    { name: 'z.toJSONSchema recursive', inputSchema: z.toJSONSchema(z.object({ root: Category })) },
    { name: 'z.toJSONSchema io input', inputSchema: z.toJSONSchema(z.object({ page: z.number().int().default(1), q: z.string().trim().min(1) }), { io: 'input' }) },
    { name: 'z.toJSONSchema draft-7', inputSchema: z.toJSONSchema(z.object({ pair: z.tuple([z.string(), z.boolean()]), maybe: z.string().nullable() }), { target: 'draft-7' }) },
  ]
}

const dir = mkdtempSync(join(tmpdir(), 'capture-mcp-schemas-'))
try {
  const fixture = {
    '@modelcontextprotocol/server-filesystem': await listTools(stdio('mcp-server-filesystem', [dir])),
    '@modelcontextprotocol/server-memory': await listTools(stdio('mcp-server-memory', [])),
    'McpServer with zod 4': await zodTools(),
    'z.toJSONSchema': zodDirect(),
  }
  const out = join(root, 'test/fixtures/mcp-input-schemas.json')
  writeFileSync(out, `${JSON.stringify(fixture, null, 2)}\n`)
  console.log(`wrote ${out}`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
