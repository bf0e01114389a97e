import { createBrand } from './brand.ts'
import { ToolError, ToolErrorCode } from './errors.ts'
import type { ToolErrorInfo } from './errors.ts'
import type { ToolExecutionFailure, ToolExecutionResult } from './execution.ts'
import { snapshotJson } from './json-boundary.ts'
import type { JsonValue } from './json-boundary.ts'
import type { ContentBlock, UserMessage } from './messages.ts'

/**
 * Building and materializing results: every result that leaves the pipeline passed through
 * {@link materializeResult}, so it is plain lossless JSON (plus the value) and deep-frozen.
 */

/** A failure result whose content is the message, ready for a model to read. */
export function failureResult(
  code: ToolErrorCode,
  message: string,
  options: { name?: string; content?: ContentBlock[]; additionalContexts?: UserMessage[] } = {},
): ToolExecutionFailure {
  const info: ToolErrorInfo = { code, name: options.name ?? 'ToolError' }
  return {
    isError: true,
    error: { message, info },
    content: options.content ?? [{ type: 'text', text: message }],
    ...(options.additionalContexts === undefined ? {} : { additionalContexts: options.additionalContexts }),
  }
}

/** Turn anything a tool body or listener threw into a failure, never leaking a host stack. */
export function failureFromError(error: unknown, fallbackCode: ToolErrorCode, prefix = ''): ToolExecutionFailure {
  const { name, message } = describeThrown(error)
  return failureResult(toolErrorCode(error) ?? fallbackCode, prefix + message, { name })
}

/**
 * The name and message of anything thrown, never throwing itself: a thrown value may be a
 * null-prototype object (no `toString`), a revoked Proxy, or an `Error` whose `message` is a
 * getter that throws. The message is the error's own, its name when that is empty, or a
 * description of a non-Error value.
 */
export function describeThrown(error: unknown): { readonly name: string; readonly message: string } {
  if (typeof error === 'string') return { name: 'NonError', message: error }
  let isError = false
  try {
    isError = error instanceof Error
  } catch {
    // A revoked Proxy throws from its prototype lookup.
  }
  if (!isError) {
    try {
      return { name: 'NonError', message: `non-Error value thrown: ${String(error)}` }
    } catch {
      return { name: 'NonError', message: 'non-Error value thrown' }
    }
  }
  const name = readString(() => (error as Error).name) || 'Error'
  return { name, message: readString(() => (error as Error).message) || name }
}

/** A string property read that cannot throw: '' for anything else. */
function readString(read: () => unknown): string {
  try {
    const value = read()
    return typeof value === 'string' ? value : ''
  } catch {
    return ''
  }
}

const KNOWN_CODES: ReadonlySet<unknown> = new Set(Object.values(ToolErrorCode))

/** The code of a thrown `ToolError`, if it is one and its code reads as a known code. */
function toolErrorCode(error: unknown): ToolErrorCode | undefined {
  try {
    if (!(error instanceof ToolError)) return undefined
    const code: unknown = error.code
    return KNOWN_CODES.has(code) ? (code as ToolErrorCode) : undefined
  } catch {
    // A revoked Proxy, or a code getter that throws.
    return undefined
  }
}

/**
 * True when a callback that must be synchronous returned a promise. The promise is marked handled
 * first: the caller fails closed on it, and its rejection must not become an unhandled rejection.
 */
export function isStrayPromise(value: unknown): boolean {
  if (!(value instanceof Promise)) return false
  value.catch(() => undefined)
  return true
}

const TEXT_KEYS: readonly string[] = ['type', 'text']
const MEDIA_KEYS: readonly string[] = ['type', 'data', 'mimeType']
const LINK_KEYS: readonly string[] = ['type', 'uri', 'name', 'title', 'description', 'mimeType', 'size']
const LINK_OPTIONAL_STRINGS: readonly string[] = ['title', 'description', 'mimeType']
const RESOURCE_KEYS: readonly string[] = ['type', 'resource']
const RESOURCE_CONTENTS_KEYS: readonly string[] = ['uri', 'mimeType', 'text', 'blob']

/** The first key of `record` outside `keys`, described; the durable log keeps blocks exactly. */
function unexpectedKey(record: Record<string, unknown>, keys: readonly string[], at: string): string | undefined {
  for (const key of Object.keys(record)) {
    if (!keys.includes(key)) return `${at} has an unexpected key ${JSON.stringify(key)}`
  }
  return undefined
}

/** What is wrong with one content block at `at`, if anything. */
function blockProblem(block: unknown, at: string): string | undefined {
  if (typeof block !== 'object' || block === null) return `${at} must be an object`
  const record = block as Record<string, unknown>
  switch (record.type) {
    case 'text':
      if (typeof record.text !== 'string') return `${at}.text must be a string`
      return unexpectedKey(record, TEXT_KEYS, at)
    case 'image':
    case 'audio':
      if (typeof record.data !== 'string' || typeof record.mimeType !== 'string') {
        return `${at} of type "${record.type}" needs string "data" and "mimeType"`
      }
      return unexpectedKey(record, MEDIA_KEYS, at)
    case 'resource_link': {
      if (typeof record.uri !== 'string' || typeof record.name !== 'string') return `${at} of type "resource_link" needs string "uri" and "name"`
      for (const key of LINK_OPTIONAL_STRINGS) {
        if (record[key] !== undefined && typeof record[key] !== 'string') return `${at}.${key} must be a string when given`
      }
      if (record.size !== undefined && typeof record.size !== 'number') return `${at}.size must be a number when given`
      return unexpectedKey(record, LINK_KEYS, at)
    }
    case 'resource': {
      const resource = record.resource
      if (typeof resource !== 'object' || resource === null) return `${at}.resource must be an object { uri, mimeType?, text | blob }`
      const contents = resource as Record<string, unknown>
      if (typeof contents.uri !== 'string') return `${at}.resource.uri must be a string`
      if (contents.mimeType !== undefined && typeof contents.mimeType !== 'string') return `${at}.resource.mimeType must be a string when given`
      if ((typeof contents.text === 'string') === (typeof contents.blob === 'string')) {
        return `${at}.resource needs exactly one of string "text" or string "blob"`
      }
      return unexpectedKey(record, RESOURCE_KEYS, at) ?? unexpectedKey(contents, RESOURCE_CONTENTS_KEYS, `${at}.resource`)
    }
    default:
      return `${at}.type must be "text", "image", "audio", "resource_link" or "resource"`
  }
}

/** Check `value` is a content block array; returns a reason when it is not. */
export function contentProblem(value: unknown): string | undefined {
  if (!Array.isArray(value)) return 'content must be an array of content blocks'
  for (let index = 0; index < value.length; index++) {
    const problem = blockProblem(value[index], `content[${index}]`)
    if (problem !== undefined) return problem
  }
  return undefined
}

function userMessageProblem(value: unknown, at: string): string | undefined {
  if (typeof value !== 'object' || value === null) return `${at} must be a user message`
  const record = value as Record<string, unknown>
  if (record.role !== 'user') return `${at}.role must be "user"`
  const problem = contentProblem(record.content)
  if (problem !== undefined) return `${at}.${problem}`
  if (record.source !== undefined && typeof record.source !== 'string') return `${at}.source must be a string`
  return undefined
}

/**
 * A frozen JSON copy of a context message a tool defers, checked when it is deferred: a bad one
 * fails the tool body at the line that made it, and later edits of the caller's object change nothing.
 * @throws ToolError (`TOOL_FAILED`) naming what is wrong.
 */
export function deferredMessage(value: unknown): UserMessage {
  let copy: JsonValue
  try {
    copy = snapshotJson(value, 'message')
  } catch (error) {
    throw new ToolError(ToolErrorCode.TOOL_FAILED, `deferContext(message): ${describeThrown(error).message}`)
  }
  const problem = userMessageProblem(copy, 'message')
  if (problem !== undefined) throw new ToolError(ToolErrorCode.TOOL_FAILED, `deferContext(message): ${problem}`)
  return copy as unknown as UserMessage
}

/** Results this module produced: already plain, frozen JSON, so materializing again is a no-op. */
const materialized = createBrand()

/**
 * Copy a candidate result into plain frozen JSON. When any durable field (content, error,
 * additional contexts, meta) cannot be materialized, the outcome becomes a JSON-safe failure
 * naming what was wrong; the canonical value was materialized earlier by the pipeline.
 */
export function materializeResult(result: ToolExecutionResult): ToolExecutionResult {
  if (materialized.has(result)) return result
  try {
    const problem = contentProblem(result.content)
    if (problem !== undefined) throw new Error(problem)
    const contexts = result.additionalContexts
    if (contexts !== undefined) {
      if (!Array.isArray(contexts)) throw new Error('additionalContexts must be an array')
      contexts.forEach((message, index) => {
        const issue = userMessageProblem(message, `additionalContexts[${index}]`)
        if (issue !== undefined) throw new Error(issue)
      })
    }
    const out: Record<string, unknown> = { isError: result.isError }
    if (result.isError) {
      const error = result.error as unknown
      if (typeof error !== 'object' || error === null || typeof (error as { message?: unknown }).message !== 'string') {
        throw new Error('error must be { message: string, info? }')
      }
      // Only the durable failure shape: { message, info?: { code, name } }. Anything else a wrapper
      // put there (a host stack, extra info keys) would leak or make the session log refuse it.
      const { message, info } = error as { message: string; info?: unknown }
      const normalized: Record<string, unknown> = { message }
      if (typeof info === 'object' && info !== null) {
        const { code, name } = info as { code?: unknown; name?: unknown }
        if (typeof code === 'string' && typeof name === 'string') normalized.info = { code, name }
      }
      out.error = snapshotJson(normalized, 'error')
    } else {
      out.value = result.value
    }
    out.content = snapshotJson(result.content, 'content')
    if (result.meta !== undefined) out.meta = snapshotJson(result.meta, 'meta')
    if (contexts !== undefined && contexts.length > 0) out.additionalContexts = snapshotJson(contexts, 'additionalContexts')
    if (!result.isError && result.concludesTurn === true) out.concludesTurn = true
    materialized.mark(out)
    return Object.freeze(out) as unknown as ToolExecutionResult
  } catch (error) {
    const fallback = failureResult(
      ToolErrorCode.INVALID_TOOL_OUTPUT,
      `the tool result could not be materialized as JSON: ${describeThrown(error).message}`,
    )
    return Object.freeze({
      ...fallback,
      error: snapshotJson(fallback.error),
      content: snapshotJson(fallback.content),
    }) as unknown as ToolExecutionResult
  }
}

/** The text of a content array, joined; used where a message is needed from feedback blocks. */
export function contentText(content: readonly ContentBlock[]): string {
  return content
    .filter((block): block is Extract<ContentBlock, { type: 'text' }> => block.type === 'text')
    .map((block) => block.text)
    .join('\n')
}
