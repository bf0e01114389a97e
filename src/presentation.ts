/**
 * Tool presentation vocabulary: the provider-neutral render intents a tool returns from
 * `presentCall` / `presentResult`, which a UI bridge dispatches on by `card`. Every view is lossless
 * JSON (so a session-log replay can rebuild it) and carries no result value of its own: a UI
 * without a card's capability falls back to the raw result content.
 *
 * `presentToolCall` / `presentToolResult` are the one place presenters run, for live UIs and for
 * replays alike, so both show the same cards; presenter failures are contained there.
 */
import { snapshotJson } from './json-boundary.ts'
import type { JsonValue } from './json-boundary.ts'
import type { ContentBlock } from './messages.ts'
import { contentProblem } from './results.ts'
import { validateJsonSchemaValue } from './schema/validate.ts'
import type { JsonSchemaNode } from './schema/types.ts'
import type { ToolResult } from './execution.ts'
import type { ToolDefinition } from './tool.ts'

/** What a call does, for picking the icon of a generic card. */
export type ToolCallKind = 'read' | 'edit' | 'delete' | 'move' | 'search' | 'execute' | 'fetch' | 'other'

/** A file a call reads or changes, so an editor can follow along. */
export interface FileLocation {
  readonly path: string
  /** 1-based line, when the call is about one place in the file. */
  readonly line?: number
}

/** One file change: whole texts before and after (`oldText: null` for a new file). */
export interface FileDiff {
  readonly path: string
  readonly oldText: string | null
  readonly newText: string
}

/** One line of a read window with its 1-based line number. */
export interface ReadFileLine {
  readonly number: number
  readonly text: string
}

/** Default pending card: a title, an optional icon kind, the raw input and touched files. */
export interface GenericCallView {
  readonly card: 'generic'
  readonly title: string
  readonly kind?: ToolCallKind
  /** The call's arguments as a UI may show them (the fallback shows the parsed arguments). */
  readonly rawInput?: JsonValue
  readonly content?: readonly ContentBlock[]
  readonly locations?: readonly FileLocation[]
}

/** Pending shell command: shown as a terminal card. */
export interface TerminalCallView {
  readonly card: 'terminal'
  readonly title: string
  readonly description?: string
  /** Working directory the command runs in. */
  readonly cwd?: string
}

/** Pending file creation or change: shown as an inline diff card. */
export interface DiffCallView {
  readonly card: 'diff'
  readonly title: string
  readonly diffs: readonly FileDiff[]
  readonly locations?: readonly FileLocation[]
}

/**
 * How a PENDING call shows in a UI. Search and web tools have no pending card of their own: their
 * structured results exist only after `execute`, so they stay generic until then.
 */
export type ToolCallView = GenericCallView | TerminalCallView | DiffCallView

/** Default completed card; without a `title` the UI keeps the pending title. */
export interface GenericResultView {
  readonly card: 'generic'
  readonly title?: string
  readonly content?: readonly ContentBlock[]
}

/** Captured run output and exit status; a UI without terminals may fence `output` as console. */
export interface TerminalResultView {
  readonly card: 'terminal'
  readonly title?: string
  readonly output?: string
  /** Process exit code; `null` when the process ended by a signal. */
  readonly exitCode?: number | null
  /** Name of the signal that ended the process (`SIGTERM`), if any. */
  readonly signal?: string | null
}

/** Completed file changes: usually applied hunks with context, or whole files without a pre-image. */
export interface DiffResultView {
  readonly card: 'diff'
  readonly title?: string
  readonly diffs: readonly FileDiff[]
}

/** Matches of one file in a grep-like search. */
export interface SearchFileMatches {
  readonly path: string
  readonly matches: readonly { readonly line: number; readonly text: string }[]
}

/**
 * Fields every search card has. `truncated` / `total` say whether the inline results are partial,
 * so a UI never shows a partial result as complete. No result text: UIs without search cards fall
 * back to the raw content.
 */
interface SearchResultBase {
  readonly card: 'search'
  readonly title?: string
  readonly truncated: boolean
  /** Total number of matches (or paths) found, including those not listed inline. */
  readonly total: number
}

/** Completed grep-like search: matches grouped by file. */
export interface SearchMatchesResultView extends SearchResultBase {
  readonly shape: 'matches'
  readonly files: readonly SearchFileMatches[]
}

/** Completed glob-like search: a flat path list. */
export interface SearchPathsResultView extends SearchResultBase {
  readonly shape: 'paths'
  readonly paths: readonly string[]
}

/** Completed discovery search. */
export type SearchResultView = SearchMatchesResultView | SearchPathsResultView

/** Completed file read: a numbered, optionally highlighted code view. */
export interface ReadResultView {
  readonly card: 'read'
  readonly title?: string
  readonly path: string
  /** The window's requested 1-based start line, kept even when `lines` is empty. */
  readonly offset: number
  readonly lines: readonly ReadFileLine[]
  readonly totalLines: number
  /** Language hint derived from the file extension. */
  readonly lang?: string
  /** De-enveloped text for UIs without read cards. */
  readonly content?: string
}

/** One source a web search cites. */
export interface WebSource {
  readonly url: string
  readonly title?: string
  readonly snippet?: string
}

/** Completed web search: structured sources and an optional answer; the body is never repeated. */
export interface WebSearchResultView {
  readonly card: 'web'
  readonly kind: 'search'
  readonly title?: string
  readonly sources: readonly WebSource[]
  readonly answer?: string
  readonly truncated: boolean
}

/** Completed web fetch: what was fetched and how; the body is never repeated. */
export interface WebFetchResultView {
  readonly card: 'web'
  readonly kind: 'fetch'
  readonly title?: string
  readonly url: string
  readonly statusCode: number
  readonly truncated: boolean
}

/** Completed web retrieval. */
export type WebResultView = WebSearchResultView | WebFetchResultView

/**
 * How a COMPLETED call shows in a UI. It replaces the pending view, so a mutating tool returns its
 * diff again even when it repeats the pending one.
 */
export type ToolResultView =
  | GenericResultView
  | TerminalResultView
  | DiffResultView
  | SearchResultView
  | ReadResultView
  | WebResultView

// The shape of every card, as closed raw schemas: a UI dispatching on `card` can trust the rest of
// the view (a search card always says whether it is partial; a web card never carries the body).
// Content blocks are checked by contentProblem, the pipeline's own content check.
type Schema = Record<string, unknown>
const STRING: Schema = { type: 'string' }
const INTEGER: Schema = { type: 'integer' }
const BOOLEAN: Schema = { type: 'boolean' }
const orNull = (schema: Schema): Schema => ({ oneOf: [schema, { type: 'null' }] })
const listOf = (items: Schema): Schema => ({ type: 'array', items })
const closed = (properties: Record<string, Schema>, ...required: string[]): Schema => ({ type: 'object', properties, required, additionalProperties: false })
const card = (name: string, properties: Record<string, Schema>, ...required: string[]): Schema =>
  closed({ card: { const: name }, ...properties }, 'card', ...required)
const CONTENT = listOf({ type: 'object', additionalProperties: true })
const LOCATIONS = listOf(closed({ path: STRING, line: INTEGER }, 'path'))
const DIFFS = listOf(closed({ path: STRING, oldText: orNull(STRING), newText: STRING }, 'path', 'oldText', 'newText'))
const KIND: Schema = { enum: ['read', 'edit', 'delete', 'move', 'search', 'execute', 'fetch', 'other'] }

/** Each card's schema as a frozen JSON root, which the validator checks and compiles once. */
function cardSchemas(schemas: Record<string, Schema>): ReadonlyMap<string, JsonSchemaNode> {
  return new Map(Object.entries(schemas).map(([name, schema]) => [name, snapshotJson(schema) as JsonSchemaNode]))
}

const CALL_CARDS = cardSchemas({
  generic: card('generic', { title: STRING, kind: KIND, rawInput: {}, content: CONTENT, locations: LOCATIONS }, 'title'),
  terminal: card('terminal', { title: STRING, description: STRING, cwd: STRING }, 'title'),
  diff: card('diff', { title: STRING, diffs: DIFFS, locations: LOCATIONS }, 'title', 'diffs'),
})

const SEARCH_BASE = { title: STRING, truncated: BOOLEAN, total: INTEGER }
const RESULT_CARDS = cardSchemas({
  generic: card('generic', { title: STRING, content: CONTENT }),
  terminal: card('terminal', { title: STRING, output: STRING, exitCode: orNull(INTEGER), signal: orNull(STRING) }),
  diff: card('diff', { title: STRING, diffs: DIFFS }, 'diffs'),
  search: {
    oneOf: [
      card('search', { shape: { const: 'matches' }, ...SEARCH_BASE, files: listOf(closed({ path: STRING, matches: listOf(closed({ line: INTEGER, text: STRING }, 'line', 'text')) }, 'path', 'matches')) }, 'shape', 'truncated', 'total', 'files'),
      card('search', { shape: { const: 'paths' }, ...SEARCH_BASE, paths: listOf(STRING) }, 'shape', 'truncated', 'total', 'paths'),
    ],
  },
  read: card(
    'read',
    { title: STRING, path: STRING, offset: INTEGER, lines: listOf(closed({ number: INTEGER, text: STRING }, 'number', 'text')), totalLines: INTEGER, lang: STRING, content: STRING },
    'path',
    'offset',
    'lines',
    'totalLines',
  ),
  web: {
    oneOf: [
      card('web', { kind: { const: 'search' }, title: STRING, sources: listOf(closed({ url: STRING, title: STRING, snippet: STRING }, 'url')), answer: STRING, truncated: BOOLEAN }, 'kind', 'sources', 'truncated'),
      card('web', { kind: { const: 'fetch' }, title: STRING, url: STRING, statusCode: INTEGER, truncated: BOOLEAN }, 'kind', 'url', 'statusCode', 'truncated'),
    ],
  },
})

/**
 * Snapshot of a presenter's view, or undefined when it is not a JSON object with a known card in
 * that card's exact shape (every required field, no field the card does not have, valid content).
 */
function acceptView(view: unknown, cards: ReadonlyMap<string, JsonSchemaNode>): JsonValue | undefined {
  if (typeof view !== 'object' || view === null) return undefined
  const copy = snapshotJson(view, 'presentation view') as { card?: unknown; content?: unknown }
  const schema = typeof copy.card === 'string' ? cards.get(copy.card) : undefined
  if (schema === undefined || validateJsonSchemaValue(schema, copy).length > 0) return undefined
  if (Array.isArray(copy.content) && contentProblem(copy.content) !== undefined) return undefined
  return copy as JsonValue
}

/**
 * The pending card of one call: the tool's `presentCall(args)` when it returns a view, else the
 * generic card (title = tool name, raw input = args). A presenter that throws, returns
 * `undefined`, or returns a view that is not lossless JSON in the exact shape of a known `card` gets the generic
 * card: presenter failures are contained. The returned view is deep-frozen JSON.
 * @param tool - the definition that ran the call, or `undefined` when it is unknown now.
 */
export function presentToolCall(tool: ToolDefinition | undefined, name: string, args: JsonValue): ToolCallView {
  if (tool?.presentCall !== undefined) {
    try {
      const view = acceptView(tool.presentCall(args), CALL_CARDS)
      if (view !== undefined) return view as unknown as ToolCallView
    } catch {
      // Contained: a broken presenter must not break the transcript.
    }
  }
  return snapshotJson({ card: 'generic', title: name, rawInput: args }) as unknown as ToolCallView
}

/**
 * The completed card of one call, from its arguments and the DURABLE result projection only
 * (`isError`, `content`, `error`, `meta`; never the canonical value, even when `result` is a live
 * execution result, so a replay gets the same card): the tool's `presentResult(args, result)` when
 * it returns a view, else a generic card with the raw result content and no title (the UI keeps
 * the pending title). Presenter failures are contained as in {@link presentToolCall}.
 */
export function presentToolResult(tool: ToolDefinition | undefined, args: JsonValue, result: ToolResult): ToolResultView {
  if (tool?.presentResult !== undefined) {
    try {
      // A live caller may hand in a full execution result: pass on only what a replay will have.
      const durable: { -readonly [K in keyof ToolResult]: ToolResult[K] } = { isError: result.isError, content: result.content }
      if (result.error !== undefined) durable.error = result.error
      if (result.meta !== undefined) durable.meta = result.meta
      const view = acceptView(tool.presentResult(args, snapshotJson(durable, 'tool result') as unknown as ToolResult), RESULT_CARDS)
      if (view !== undefined) return view as unknown as ToolResultView
    } catch {
      // Contained, as above.
    }
  }
  return snapshotJson({ card: 'generic', content: result.content } as unknown) as unknown as ToolResultView
}
