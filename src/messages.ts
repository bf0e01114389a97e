import type { JsonValue } from './json-boundary.ts'

/** Plain text content for a model. */
export interface TextContent {
  readonly type: 'text'
  readonly text: string
}

/** Base64 image content for a model. */
export interface ImageContent {
  readonly type: 'image'
  /** Base64-encoded bytes. */
  readonly data: string
  readonly mimeType: string
}

/** Base64 audio content for a model (MCP's `audio` block). */
export interface AudioContent {
  readonly type: 'audio'
  /** Base64-encoded bytes. */
  readonly data: string
  readonly mimeType: string
}

/** A link to a resource the model may read elsewhere (MCP's `resource_link` block). */
export interface ResourceLinkContent {
  readonly type: 'resource_link'
  readonly uri: string
  readonly name: string
  readonly title?: string
  readonly description?: string
  readonly mimeType?: string
  /** Size in bytes, when known. */
  readonly size?: number
}

/** The contents of a resource: text, or base64 bytes in `blob`. */
export type ResourceContents =
  | { readonly uri: string; readonly mimeType?: string; readonly text: string }
  | { readonly uri: string; readonly mimeType?: string; readonly blob: string }

/** A resource embedded in the result (MCP's `resource` block). */
export interface EmbeddedResourceContent {
  readonly type: 'resource'
  readonly resource: ResourceContents
}

/**
 * One block of model-facing content. Every block is lossless JSON. The shapes are MCP's content
 * blocks (without annotations), so tools imported from or served over MCP pass content 1:1.
 */
export type ContentBlock = TextContent | ImageContent | AudioContent | ResourceLinkContent | EmbeddedResourceContent

/**
 * A user-role message a tool defers until its result reaches the agent loop
 * (`ToolRunContext.deferContext`). `source` names who minted it.
 */
export interface UserMessage {
  readonly role: 'user'
  readonly content: readonly ContentBlock[]
  readonly source?: string
  readonly meta?: JsonValue
}

/** Shorthand for one text block. */
export function text(value: string): TextContent {
  return { type: 'text', text: value }
}
