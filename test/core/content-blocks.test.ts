import { describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { ContentBlock } from '../../src/messages.ts'
import { createMemorySessionLog, toolResultEvent } from '../../src/session-log.ts'
import { call, rawTool } from '../helpers.ts'

const MCP_BLOCKS: ContentBlock[] = [
  { type: 'text', text: 'hello' },
  { type: 'image', data: 'aGk=', mimeType: 'image/png' },
  { type: 'audio', data: 'aGk=', mimeType: 'audio/wav' },
  { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt', mimeType: 'text/plain', size: 2 },
  { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'hi' } },
  { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'aGk=' } },
]

describe('content blocks beyond text and image', () => {
  it('passes audio, resource links and embedded resources through the pipeline and into the session log', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('media', { output: { schema: {}, render: () => MCP_BLOCKS } }))
    const result = await ctx.tools.execute(call('media'))
    expect(result).toMatchObject({ isError: false, content: MCP_BLOCKS })
    const log = createMemorySessionLog()
    await log.append(toolResultEvent('c1', 'media', result))
    expect(log.events).toHaveLength(1)
  })

  it('refuses an embedded resource with both text and blob, naming the rule', async () => {
    const ctx = createContext()
    const bad = [{ type: 'resource', resource: { uri: 'file:///a', text: 'x', blob: 'eA==' } }] as unknown as ContentBlock[]
    ctx.tools.register(rawTool('bad', { output: { schema: {}, render: () => bad } }))
    const result = await ctx.tools.execute(call('bad'))
    expect(result.isError).toBe(true)
    expect(result.error?.message).toContain('content[0].resource needs exactly one of string "text" or string "blob"')
  })

  it('refuses a resource link with an annotation key the durable log would not keep', async () => {
    const ctx = createContext()
    const bad = [{ type: 'resource_link', uri: 'file:///a', name: 'a', annotations: {} }] as unknown as ContentBlock[]
    ctx.tools.register(rawTool('bad', { output: { schema: {}, render: () => bad } }))
    const result = await ctx.tools.execute(call('bad'))
    expect(result.error?.message).toContain('content[0] has an unexpected key "annotations"')
  })
})
