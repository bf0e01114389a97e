/**
 * What the adapters share about content: how a block a provider cannot take in a given place is
 * said in text instead (the documented fallback), and how failures and images are spelled. Every
 * function here is pure and allocation-light: it runs once per block of every result.
 */
import type { ContentBlock, ImageContent, ToolExecutionResult } from '../src/index.ts'

/** Image types OpenAI (Chat Completions and Responses) and Anthropic accept as input images. */
export const PROVIDER_IMAGE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])

/** An image block a provider accepts as an input image. */
export function isProviderImage(block: ContentBlock): block is ImageContent {
  return block.type === 'image' && PROVIDER_IMAGE_TYPES.has(block.mimeType)
}

/** A `data:` URL of a base64 block, as OpenAI's `image_url` fields take it. */
export function dataUrl(block: { readonly data: string; readonly mimeType: string }): string {
  return `data:${block.mimeType};base64,${block.data}`
}

/**
 * The text a provider gets for a block it cannot take where it stands: text as is; a resource
 * link and a text resource as readable text; an image of another type, audio and a binary
 * resource as a note saying what was left out (never the bytes).
 */
export function blockAsText(block: ContentBlock, provider: string): string {
  switch (block.type) {
    case 'text':
      return block.text
    case 'image':
      return `[image omitted: ${provider} does not accept ${block.mimeType} here]`
    case 'audio':
      return `[audio omitted (${block.mimeType}): ${provider} does not accept audio here]`
    case 'resource_link': {
      const details = [block.title, block.mimeType, block.description].filter((part) => part !== undefined && part !== '')
      return `[resource ${block.name}: ${block.uri}${details.length > 0 ? ` (${details.join('; ')})` : ''}]`
    }
    case 'resource': {
      const { resource } = block
      const type = resource.mimeType === undefined ? '' : ` (${resource.mimeType})`
      return 'text' in resource ? `[resource ${resource.uri}${type}]\n${resource.text}` : `[resource ${resource.uri}${type}: binary content omitted]`
    }
  }
}

/**
 * The text that marks a failure where a provider has no error flag (OpenAI): `Error: ` before
 * the first text, so the model can tell a failed call from a result.
 */
export const ERROR_PREFIX = 'Error: '

/** True when any result of the batch concluded the turn (the loop stops after sending them). */
export function concludesTurn(results: readonly ToolExecutionResult[]): boolean {
  for (const result of results) if (!result.isError && result.concludesTurn === true) return true
  return false
}
