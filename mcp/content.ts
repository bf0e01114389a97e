/**
 * MCP content blocks ⇄ the library's content blocks. The library's blocks are MCP's shapes without
 * their annotations, so the mapping keeps every field a model reads and drops only `annotations`,
 * `_meta` and `icons` (the durable log keeps blocks exactly, with no extra keys).
 */

import type { JsonSchemaNode } from '../src/schema/types.ts'
import type { ContentBlock, ResourceContents } from '../src/messages.ts'

/** A string field of an untrusted record, or `undefined`. */
function stringField(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key]
  return typeof value === 'string' ? value : undefined
}

function resourceContents(value: unknown): ResourceContents | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const record = value as Record<string, unknown>
  const uri = stringField(record, 'uri')
  if (uri === undefined) return undefined
  const mimeType = stringField(record, 'mimeType')
  const text = stringField(record, 'text')
  const blob = stringField(record, 'blob')
  const base = mimeType === undefined ? { uri } : { uri, mimeType }
  if (text !== undefined) return { ...base, text }
  if (blob !== undefined) return { ...base, blob }
  return undefined
}

/**
 * One MCP content block as a library block. A block of a type this library does not know, or a
 * malformed one, becomes a text block saying so: a model still learns something was there.
 */
export function fromMcpBlock(block: unknown): ContentBlock {
  const record = (typeof block === 'object' && block !== null ? block : {}) as Record<string, unknown>
  switch (record.type) {
    case 'text': {
      const text = stringField(record, 'text')
      if (text !== undefined) return { type: 'text', text }
      break
    }
    case 'image':
    case 'audio': {
      const data = stringField(record, 'data')
      const mimeType = stringField(record, 'mimeType')
      if (data !== undefined && mimeType !== undefined) return { type: record.type, data, mimeType }
      break
    }
    case 'resource_link': {
      const uri = stringField(record, 'uri')
      const name = stringField(record, 'name')
      if (uri === undefined || name === undefined) break
      const link: { -readonly [K in keyof Extract<ContentBlock, { type: 'resource_link' }>]: Extract<ContentBlock, { type: 'resource_link' }>[K] } = {
        type: 'resource_link',
        uri,
        name,
      }
      for (const key of ['title', 'description', 'mimeType'] as const) {
        const value = stringField(record, key)
        if (value !== undefined) link[key] = value
      }
      if (typeof record.size === 'number' && Number.isFinite(record.size)) link.size = record.size
      return link
    }
    case 'resource': {
      const resource = resourceContents(record.resource)
      if (resource !== undefined) return { type: 'resource', resource }
      break
    }
  }
  const kind = typeof record.type === 'string' ? `"${record.type}"` : 'unknown'
  return { type: 'text', text: `[MCP content block of ${kind} type that could not be read]` }
}

/** A tool result's MCP content as library blocks; a missing or non-array content is empty. */
export function fromMcpContent(content: unknown): ContentBlock[] {
  return Array.isArray(content) ? content.map(fromMcpBlock) : []
}

/** The text a model reads from blocks: the text blocks joined, other blocks named. */
export function contentSummary(blocks: readonly ContentBlock[]): string {
  return blocks
    .map((block) => {
      switch (block.type) {
        case 'text':
          return block.text
        case 'resource_link':
          return `[resource ${block.uri}]`
        case 'resource':
          return 'text' in block.resource ? block.resource.text : `[resource ${block.resource.uri}]`
        default:
          return `[${block.type} ${block.mimeType}]`
      }
    })
    .join('\n')
}

/**
 * Library blocks as MCP blocks: the same shapes, copied so the SDK's transport never holds the
 * pipeline's frozen objects.
 */
export function toMcpContent(blocks: readonly ContentBlock[]): Record<string, unknown>[] {
  return blocks.map((block) => structuredClone(block) as unknown as Record<string, unknown>)
}

/**
 * The output schema of an MCP tool that declares none: its value is its content, an array of
 * content blocks. Kept short on purpose (it is printed once per such tool in the SDK): a program
 * mostly reads `result[0].text`; the other block shapes are named in the description.
 */
export const CONTENT_VALUE_SCHEMA: JsonSchemaNode = {
  type: 'array',
  description:
    'The content blocks the MCP tool returned: { type: "text", text }, { type: "image" | "audio", data, mimeType }, ' +
    '{ type: "resource_link", uri, name }, { type: "resource", resource: { uri, text | blob } }.',
  items: {
    type: 'object',
    properties: { type: { type: 'string', enum: ['text', 'image', 'audio', 'resource_link', 'resource'] }, text: { type: 'string' } },
    required: ['type'],
  },
}
