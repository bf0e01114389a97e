import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { importMcpTools } from '../../mcp/index.ts'
import type { McpToolImport } from '../../mcp/index.ts'
import { createContext } from '../../src/context.ts'
import { codeModeDeclarations } from '../../sandbox/run-code.ts'
import { call } from '../helpers.ts'

/** What the server's handler received, to show a refused call never reached it. */
const received: unknown[] = []

/** An McpServer with the zod schemas users typically write. */
function typedServer(): McpServer {
  const server = new McpServer({ name: 'crm-server', version: '2.0.0' })
  server.registerTool(
    'create_contact',
    {
      title: 'Create contact',
      description: 'Create a contact.',
      inputSchema: {
        name: z.string().min(2).max(40),
        handle: z.string().regex(/^[a-z]+$/),
        age: z.number().int().min(0).max(150).optional(),
        email: z.string().email().nullable(),
        role: z.enum(['admin', 'member']).default('member'),
        scores: z.record(z.string(), z.number()),
        reach: z.union([z.string(), z.object({ phone: z.string() })]),
        website: z.string().url().optional(),
      },
      outputSchema: { id: z.string(), created: z.boolean(), role: z.enum(['admin', 'member']) },
    },
    async (args) => {
      received.push(args)
      return { content: [{ type: 'text', text: `created ${args.name}` }], structuredContent: { id: 'c-1', created: true, role: args.role } }
    },
  )
  server.registerTool(
    'list_contacts',
    { description: 'List contacts.', inputSchema: { limit: z.number().int().positive().max(100).default(10), cursor: z.string().nullable().optional() }, annotations: { readOnlyHint: true } },
    async () => ({ content: [{ type: 'text', text: 'none' }] }),
  )
  return server
}

const VALID = { name: 'Ada', handle: 'ada', email: null, scores: { q1: 3 }, reach: { phone: '555' } }

describe('an McpServer with typical zod schemas', () => {
  const context = createContext()
  let imported: McpToolImport
  let client: Client
  let server: McpServer

  beforeAll(async () => {
    server = typedServer()
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    await server.connect(serverSide)
    client = new Client({ name: 'test', version: '1.0.0' })
    await client.connect(clientSide)
    imported = await importMcpTools(client, { context })
  })
  afterAll(async () => {
    await client.close()
    await server.close()
  })

  it('imports every tool', () => {
    expect(imported.report.refused).toEqual([])
    expect(imported.report.imported.map((tool) => tool.name)).toEqual(['crm.create_contact', 'crm.list_contacts'])
  })

  it('runs a valid call and gives the structured value', async () => {
    const result = await context.tools.execute(call('crm.create_contact', VALID))
    expect(result).toMatchObject({ isError: false, value: { id: 'c-1', created: true, role: 'member' }, content: [{ type: 'text', text: 'created Ada' }] })
  })

  const violations: Array<[string, Record<string, unknown>, string]> = [
    ['a string below its minimum length', { ...VALID, name: 'A' }, '$.name'],
    ['a string that misses its pattern', { ...VALID, handle: 'Ada!' }, '$.handle'],
    ['a number above its maximum', { ...VALID, age: 200 }, '$.age'],
    ['a number that is not an integer', { ...VALID, age: 3.5 }, '$.age'],
    ['a value outside the enum', { ...VALID, role: 'owner' }, '$.role'],
    ['a malformed email', { ...VALID, email: 'not-an-email' }, '$.email'],
    ['a record value of the wrong type', { ...VALID, scores: { q1: 'high' } }, '$.scores'],
    ['a value matching no branch of a union', { ...VALID, reach: 42 }, '$.reach'],
    ['a missing required field', { ...VALID, handle: undefined }, 'handle'],
  ]
  it.each(violations)('refuses %s before the server sees it', async (_label, args, path) => {
    const before = received.length
    const result = await context.tools.execute(call('crm.create_contact', JSON.parse(JSON.stringify(args))))
    expect(result.error?.info?.code).toBe('INVALID_ARGS')
    expect(result.error?.message).toContain(path)
    expect(received).toHaveLength(before)
  })

  it('accepts null for a nullable field and leaves an optional one out', async () => {
    const result = await context.tools.execute(call('crm.list_contacts', { cursor: null }))
    expect(result.isError).toBe(false)
  })

  it('renders the tools in the SDK a program sees', () => {
    const sdk = codeModeDeclarations(context.tools, undefined)
    expect(sdk).toContain('crm_create_contact(args: {')
    expect(sdk).toContain('role?: "admin" | "member"')
    expect(sdk).toContain('Promise<{ id: string; created: boolean; role: "admin" | "member" }>')
    // Constraints in JSDoc, unions with null, records, and no index signature on the arguments.
    expect(sdk).toContain('/** @minLength 2 @maxLength 40 */\n    name: string')
    expect(sdk).toContain('/** @pattern ^[a-z]+$ */\n    handle: string')
    expect(sdk).toContain('@minimum 0 @maximum 150 */\n    age?: number')
    expect(sdk).toContain('email: string | null')
    expect(sdk).toContain('scores: { [key: string]: number }')
    expect(sdk).toContain('reach: string | { phone: string }')
    expect(sdk).toContain('/** @format uri */\n    website?: string')
    const args = /crm_create_contact\(args: \{([\s\S]*?)\n {2}\}\): Promise/.exec(sdk)?.[1]
    expect(args).toContain('handle: string')
    expect(args).not.toContain('[key: string]: JsonValue')
  })
})
