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

/** One block of model-facing content. Every block is lossless JSON. */
export type ContentBlock = TextContent | ImageContent

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
