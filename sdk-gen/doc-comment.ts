/**
 * JSDoc comments in generated declarations. Every piece of text written into a comment comes from a
 * tool author or a remote server, so nothing in it may close the comment or start a new line that
 * escapes the ` * ` layout.
 */

import type { JsonValue } from '../src/json-boundary.ts'

/** Longest rendering of one `@default` / `@example` value before it is cut with `…`. */
export const MAX_DOC_VALUE_CHARS = 200

/** Longest single-line comment (`/** ... *\/`) before the comment is spread over lines. */
const MAX_SINGLE_LINE_CHARS = 100

const LINE_BREAK = /\r\n|[\r\n\u2028\u2029]/
// Control characters other than tab and line breaks would only garble what the model reads.
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g

/** Text made safe for a block comment: `*\/` can never appear, control characters become spaces. */
export function escapeCommentText(text: string): string {
  return text.replace(CONTROL, ' ').replace(/\*\//g, '*\\/')
}

/** Split author text into comment lines, trailing whitespace removed. */
export function commentLines(text: string): string[] {
  return text.split(LINE_BREAK).map((line) => escapeCommentText(line).trimEnd())
}

/** A JSON value as it appears after `@default` or `@example`: compact JSON, cut when long. */
export function renderDocValue(value: JsonValue): string {
  const json = JSON.stringify(value)
  if (json.length <= MAX_DOC_VALUE_CHARS) return escapeCommentText(json)
  // Never between the two halves of a surrogate pair: a lone half is not text an API accepts.
  const last = json.charCodeAt(MAX_DOC_VALUE_CHARS - 1)
  const cut = last >= 0xd800 && last <= 0xdbff ? MAX_DOC_VALUE_CHARS - 1 : MAX_DOC_VALUE_CHARS
  return escapeCommentText(`${json.slice(0, cut)}…`)
}

/**
 * Render a comment from `segments` (each one logical part: a description, a note, a tag) at
 * `indent`. Short single-line content stays on one line (`/** a @default 1 *\/`); anything else
 * puts each segment line on its own ` * ` line. Returns `''` when there is nothing to say.
 */
export function renderDocComment(segments: readonly string[], indent: string): string {
  const lines = segments.flatMap(commentLines)
  while (lines.length > 0 && lines[0] === '') lines.shift()
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
  if (lines.length === 0) return ''
  const single = `/** ${lines.join(' ')} */`
  const oneLineEach = segments.length === lines.length && lines.every((line) => line !== '')
  if (oneLineEach && indent.length + single.length <= MAX_SINGLE_LINE_CHARS) {
    return `${indent}${single}\n`
  }
  const body = lines.map((line) => (line === '' ? `${indent} *` : `${indent} * ${line}`)).join('\n')
  return `${indent}/**\n${body}\n${indent} */\n`
}
