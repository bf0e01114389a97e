/**
 * The tools the program corpus runs against: an in-memory file system and a user directory, with
 * two tools that have side effects (`write_file`, `send_email`) recording every call, so a test
 * can prove that no side effect ran before a program was refused.
 */

import type { JsonSchemaNode, ObjectJsonSchema } from '../../../src/schema/types.ts'
import type { ToolDefinition } from '../../../src/tool.ts'
import { rawTool } from '../../helpers.ts'

const FILES: Readonly<Record<string, string>> = {
  '/data/a.txt': 'hello\nworld',
  '/data/b.txt': 'foo',
  '/data/notes.md': '# Notes\n- one\n- two',
}

interface User {
  id: string
  name: string
  email: string
  age: number
  tags: string[]
  manager?: { id: string; name: string }
}

const USERS: readonly User[] = [
  { id: 'u1', name: 'Ada', email: 'ada@example.com', age: 36, tags: ['admin', 'ops'] },
  { id: 'u2', name: 'Bob', email: 'bob@example.com', age: 25, tags: [], manager: { id: 'u1', name: 'Ada' } },
  { id: 'u3', name: 'Cy', email: 'cy@example.com', age: 41, tags: ['ops'] },
]

const closed = (properties: Record<string, unknown>, required: string[]): ObjectJsonSchema =>
  ({ type: 'object', properties, required, additionalProperties: false }) as ObjectJsonSchema

const userSchema: JsonSchemaNode = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    email: { type: 'string' },
    age: { type: 'integer' },
    tags: { type: 'array', items: { type: 'string' } },
    manager: closed({ id: { type: 'string' }, name: { type: 'string' } }, ['id', 'name']),
  },
  required: ['id', 'name', 'email', 'age', 'tags'],
  additionalProperties: false,
}

/** What the side-effecting tools were called with, in order. */
export interface SideEffects {
  readonly writes: unknown[]
  readonly emails: unknown[]
}

/** The corpus's tools, and the record of their side effects. */
export function corpusTools(): { tools: ToolDefinition[]; effects: SideEffects } {
  const effects: SideEffects = { writes: [], emails: [] }
  const tools = [
    rawTool('read_file', {
      description: 'Read a text file.',
      parameters: closed({ path: { type: 'string' }, encoding: { type: 'string', enum: ['utf8', 'base64'] } }, ['path']),
      outputSchema: closed({ content: { type: 'string' }, size: { type: 'integer' } }, ['content', 'size']),
      isConcurrencySafe: () => true,
      execute: async (args) => {
        const { path } = args as { path: string }
        const content = FILES[path]
        if (content === undefined) throw new Error(`no such file: ${path}`)
        return { content, size: content.length }
      },
    }),
    rawTool('write_file', {
      description: 'Write a text file (creates or replaces it).',
      parameters: closed({ path: { type: 'string' }, content: { type: 'string' } }, ['path', 'content']),
      outputSchema: closed({ ok: { type: 'boolean' }, bytes: { type: 'integer' } }, ['ok', 'bytes']),
      execute: async (args) => {
        effects.writes.push(args)
        return { ok: true, bytes: (args as { content: string }).content.length }
      },
    }),
    rawTool('list_dir', {
      description: 'List a directory.',
      parameters: closed({ path: { type: 'string' } }, ['path']),
      outputSchema: closed(
        {
          entries: {
            type: 'array',
            items: closed({ name: { type: 'string' }, kind: { type: 'string', enum: ['file', 'dir'] }, size: { type: 'integer' } }, ['name', 'kind', 'size']),
          },
        },
        ['entries'],
      ),
      isConcurrencySafe: () => true,
      execute: async (args) => {
        const { path } = args as { path: string }
        const prefix = path.endsWith('/') ? path : `${path}/`
        const entries = Object.entries(FILES)
          .filter(([name]) => name.startsWith(prefix))
          .map(([name, content]) => ({ name: name.slice(prefix.length), kind: 'file', size: content.length }))
        return { entries }
      },
    }),
    rawTool('search_users', {
      description: 'Search users by name (case-insensitive substring); an empty query lists all.',
      parameters: closed({ query: { type: 'string' }, limit: { type: 'integer' } }, ['query']),
      outputSchema: closed({ users: { type: 'array', items: userSchema }, total: { type: 'integer' } }, ['users', 'total']),
      isConcurrencySafe: () => true,
      execute: async (args) => {
        const { query, limit } = args as { query: string; limit?: number }
        const found = USERS.filter((user) => user.name.toLowerCase().includes(query.toLowerCase()))
        return { users: found.slice(0, limit ?? found.length), total: found.length }
      },
    }),
    rawTool('get_user', {
      description: 'One user by id.',
      parameters: closed({ id: { type: 'string' } }, ['id']),
      outputSchema: userSchema,
      isConcurrencySafe: () => true,
      execute: async (args) => {
        const user = USERS.find((candidate) => candidate.id === (args as { id: string }).id)
        if (user === undefined) throw new Error('no such user')
        return user
      },
    }),
    // Open, as MCP schemas often are (no additionalProperties): other keys reach the tool.
    rawTool('log_event', {
      description: 'Record an event; fields beyond `message` are kept as they are.',
      parameters: {
        type: 'object',
        properties: { message: { type: 'string' }, meta: { type: 'object', properties: { level: { type: 'string' } } } },
        required: ['message'],
      } as ObjectJsonSchema,
      outputSchema: closed({ keys: { type: 'array', items: { type: 'string' } } }, ['keys']),
      isConcurrencySafe: () => true,
      execute: async (args) => {
        const { meta } = args as { meta?: Record<string, unknown> }
        return { keys: [...Object.keys(args as object), ...Object.keys(meta ?? {}).map((key) => `meta.${key}`)] }
      },
    }),
    rawTool('send_email', {
      description: 'Send an email.',
      parameters: closed({ to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } }, ['to', 'subject']),
      outputSchema: closed({ messageId: { type: 'string' } }, ['messageId']),
      execute: async (args) => {
        effects.emails.push(args)
        return { messageId: `m${effects.emails.length}` }
      },
    }),
  ]
  return { tools, effects }
}
