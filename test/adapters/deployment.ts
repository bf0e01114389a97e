import { createContext } from '../../src/index.ts'
import type { Agent, Context, ContentBlock, ToolDefinition } from '../../src/index.ts'
import { rawTool } from '../helpers.ts'

/** A 1x1 transparent PNG, base64. */
export const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='

/** Tools covering every mapping an adapter makes. */
export function adapterTools(): ToolDefinition[] {
  return [
    // Closed object, one optional: strict with a nullable optional. Parallel-safe.
    rawTool('read_file', {
      description: 'Read a file.',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' }, offset: { type: 'integer', description: '1-based first line' } },
        required: ['path'],
        additionalProperties: false,
      },
      isConcurrencySafe: () => true,
      output: { schema: {}, render: (args) => [{ type: 'text', text: `contents of ${(args as { path: string }).path}` }] },
      execute: async (args) => args,
    }),
    // A dotted (MCP-style) name, exclusive, closed and strict.
    rawTool('fs.write', {
      description: 'Write a file.',
      parameters: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' } }, required: ['path', 'text'], additionalProperties: false },
      output: { schema: {}, render: () => [{ type: 'text', text: 'written' }] },
      execute: async () => 'ok',
    }),
    // Open object: non-strict. Returns an image, an unsupported image, audio and a resource link.
    rawTool('screenshot', {
      description: 'Take a screenshot.',
      output: {
        schema: {},
        render: (): ContentBlock[] => [
          { type: 'text', text: 'screen 1' },
          { type: 'image', data: PNG, mimeType: 'image/png' },
          { type: 'image', data: 'Qk0=', mimeType: 'image/bmp' },
          { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
          { type: 'resource_link', uri: 'file:///shots/1.png', name: '1.png', mimeType: 'image/png' },
        ],
      },
      execute: async () => 'shot',
    }),
    // Defers a context (with an image) and concludes the turn.
    rawTool('finish', {
      description: 'Finish the task.',
      output: { schema: {}, render: () => [{ type: 'text', text: 'finished' }] },
      execute: async (_args, exec) => {
        exec.deferContext({ role: 'user', content: [{ type: 'text', text: 'The user approved the plan.' }, { type: 'image', data: PNG, mimeType: 'image/png' }] })
        exec.concludeTurn()
        return 'done'
      },
    }),
    // Fails.
    rawTool('fail', {
      description: 'Always fails.',
      execute: async () => {
        throw new Error('disk is full')
      },
    }),
  ]
}

/** A deployment with {@link adapterTools} registered and one agent. */
export function adapterDeployment(): { root: Context; agent: Agent } {
  const root = createContext()
  for (const tool of adapterTools()) root.tools.register(tool)
  return { root, agent: root.agent('agent-1') }
}
