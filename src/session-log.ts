/**
 * Durable session events, the logs that keep them, and the replay that turns them back into cards.
 *
 * A log keeps only the durable projection of a call: identity, arguments, `content`, `error`,
 * `meta`, never the canonical value. Every appended event crosses the JSON boundary (snapshot and
 * deep freeze) and is checked against its event shape, so a spread result cannot smuggle a `value`
 * into the log. The JSONL log writes one lossless line per event, in append order, and never leaves
 * a hole: after a failed write every later append fails too.
 */
import { open, readFile } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { ToolError, ToolErrorCode } from './errors.ts'
import type { CallId, ToolFailure, ToolResult } from './execution.ts'
import { JsonBoundaryError, formatJsonPath, freezeJsonLiteral, parseDurableJson, snapshotJson, stringifyJson } from './json-boundary.ts'
import type { JsonValue } from './json-boundary.ts'
import type { ContentBlock } from './messages.ts'
import { presentToolCall, presentToolResult } from './presentation.ts'
import type { ToolCallView, ToolResultView } from './presentation.ts'
import { contentProblem } from './results.ts'
import type { ToolDefinition } from './tool.ts'

/** A model-requested (or nested) call entered the pipeline with these arguments. */
export interface ToolCallEvent {
  readonly type: 'tool/call'
  readonly callId: CallId
  readonly rootCallId: CallId
  readonly name: string
  readonly arguments: JsonValue
  /**
   * The model's argument text, kept when it could not be parsed (`arguments` is then null), so
   * the log shows what the model actually sent.
   */
  readonly argumentsText?: string
  /** The enclosing call, for a nested dispatch. */
  readonly parentCallId?: CallId
}

/** The durable projection of a call's final result: never the canonical value. */
export interface ToolResultEvent {
  readonly type: 'tool/result'
  readonly callId: CallId
  readonly name: string
  readonly isError: boolean
  readonly content: readonly ContentBlock[]
  readonly error?: ToolFailure
  readonly meta?: JsonValue
}

/** A `run_code` program dispatched a sub-call (`callId` is the `run_code` call). */
export interface CodeDispatchStartEvent {
  readonly type: 'tool/code-dispatch-start'
  readonly callId: CallId
  /** `<callId>:code:<n>`. */
  readonly subCallId: CallId
  readonly name: string
  readonly arguments: JsonValue
}

/** A `run_code` sub-call settled; `content` is the (possibly reshaped) durable copy. */
export interface CodeDispatchEvent {
  readonly type: 'tool/code-dispatch'
  readonly callId: CallId
  readonly subCallId: CallId
  readonly name: string
  readonly arguments: JsonValue
  readonly isError: boolean
  readonly content: readonly ContentBlock[]
}

/** One durable session event. */
export type SessionEvent = ToolCallEvent | ToolResultEvent | CodeDispatchStartEvent | CodeDispatchEvent

/** A session log could not be written or read (`SESSION_LOG_FAILED`). `line` is 1-based. */
export class SessionLogError extends ToolError {
  readonly line: number | undefined

  constructor(message: string, options?: ErrorOptions & { line?: number }) {
    super(ToolErrorCode.SESSION_LOG_FAILED, message, options)
    this.line = options?.line
  }
}

/**
 * An append-only log of session events.
 * - `append` checks the event's shape, snapshots and deep-freezes it, and resolves once it is kept
 *   (written, for a file log). Appends land in call order even when issued concurrently. A
 *   malformed event rejects without touching the log; a failed write rejects that append and
 *   every later one (`SessionLogError`), so the log never has a hole.
 * - `events` is a frozen array of the frozen events kept so far (for a file log: the recovered
 *   ones, then every appended event whose write completed).
 * - `close` waits for pending writes, then releases the log; appends after it reject.
 */
export interface SessionLog {
  append(event: SessionEvent): Promise<void>
  readonly events: readonly SessionEvent[]
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** The durable `tool/call` event of one execution. */
export function toolCallEvent(exec: {
  readonly callId: CallId
  readonly rootCallId?: CallId
  readonly name: string
  readonly arguments: unknown
  readonly argumentsText?: string
  readonly parentCallId?: CallId
}): ToolCallEvent {
  const event: { -readonly [K in keyof ToolCallEvent]: ToolCallEvent[K] } = {
    type: 'tool/call',
    callId: exec.callId,
    rootCallId: exec.rootCallId ?? exec.callId,
    name: exec.name,
    arguments: snapshotJson(exec.arguments, `arguments of "${exec.name}"`),
  }
  if (exec.argumentsText !== undefined) event.argumentsText = exec.argumentsText
  if (exec.parentCallId !== undefined) event.parentCallId = exec.parentCallId
  return event
}

/**
 * The durable `tool/result` event of one result: `isError`, `content`, `error` and `meta` only.
 * Accepts a full execution result and drops its canonical value and deferred contexts.
 */
export function toolResultEvent(callId: CallId, name: string, result: ToolResult): ToolResultEvent {
  const event: { -readonly [K in keyof ToolResultEvent]: ToolResultEvent[K] } = {
    type: 'tool/result',
    callId,
    name,
    isError: result.isError,
    content: result.content,
  }
  if (result.error !== undefined) event.error = result.error
  if (result.meta !== undefined) event.meta = result.meta
  return event
}

/**
 * The durable `tool/code-dispatch-start` event of one `run_code` sub-call. Frozen in place when
 * its parts already crossed the JSON boundary, so appending it checks it without copying it.
 */
export function codeDispatchStartEvent(callId: CallId, subCallId: CallId, name: string, args: JsonValue): CodeDispatchStartEvent {
  return freezeJsonLiteral({ type: 'tool/code-dispatch-start', callId, subCallId, name, arguments: args })
}

/**
 * The durable `tool/code-dispatch` event of one settled `run_code` sub-call, with the (possibly
 * reshaped) durable `content`. Frozen in place like {@link codeDispatchStartEvent}.
 */
export function codeDispatchEvent(
  callId: CallId,
  subCallId: CallId,
  name: string,
  args: JsonValue,
  isError: boolean,
  content: readonly ContentBlock[],
): CodeDispatchEvent {
  return freezeJsonLiteral({ type: 'tool/code-dispatch', callId, subCallId, name, arguments: args, isError, content })
}

// ---------------------------------------------------------------------------------------------
// Event shape

type FieldCheck = (value: JsonValue) => boolean
const isString: FieldCheck = (value) => typeof value === 'string'
const isBoolean: FieldCheck = (value) => typeof value === 'boolean'
const isAny: FieldCheck = () => true
// One definition of a content block for results and the log alike.
const isContent: FieldCheck = (value) => contentProblem(value) === undefined
const isFailure: FieldCheck = (value) => {
  if (!isObject(value) || typeof value.message !== 'string') return false
  for (const key of Object.keys(value)) if (key !== 'message' && key !== 'info') return false
  const info = value.info
  return info === undefined || (isObject(info) && typeof info.code === 'string' && typeof info.name === 'string' && Object.keys(info).length === 2)
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Required (true) and optional (false) fields of each event type, with their checks. */
const EVENT_FIELDS: Record<SessionEvent['type'], Record<string, [required: boolean, check: FieldCheck]>> = {
  'tool/call': {
    callId: [true, isString],
    rootCallId: [true, isString],
    name: [true, isString],
    arguments: [true, isAny],
    argumentsText: [false, isString],
    parentCallId: [false, isString],
  },
  'tool/result': {
    callId: [true, isString],
    name: [true, isString],
    isError: [true, isBoolean],
    content: [true, isContent],
    error: [false, isFailure],
    meta: [false, isAny],
  },
  'tool/code-dispatch-start': {
    callId: [true, isString],
    subCallId: [true, isString],
    name: [true, isString],
    arguments: [true, isAny],
  },
  'tool/code-dispatch': {
    callId: [true, isString],
    subCallId: [true, isString],
    name: [true, isString],
    arguments: [true, isAny],
    isError: [true, isBoolean],
    content: [true, isContent],
  },
}

/** {@link EVENT_FIELDS} compiled once into maps: every append looks up its type and each key. */
const EVENT_SHAPES = new Map<string, { readonly checks: ReadonlyMap<string, FieldCheck>; readonly required: readonly string[] }>(
  Object.entries(EVENT_FIELDS).map(([type, fields]) => [
    type,
    {
      checks: new Map(Object.entries(fields).map(([key, [, check]]) => [key, check])),
      required: Object.keys(fields).filter((key) => fields[key]?.[0] === true),
    },
  ]),
)

/** Why `value` is not a session event, or undefined when it is one. */
function eventProblem(value: JsonValue): string | undefined {
  if (!isObject(value)) return 'an event must be an object'
  const type = value.type
  const shape = typeof type === 'string' ? EVENT_SHAPES.get(type) : undefined
  if (shape === undefined) return `unknown event type ${JSON.stringify(type ?? null)}`
  for (const key of Object.keys(value)) {
    if (key === 'type') continue
    const check = shape.checks.get(key)
    // An unknown key is refused: it is how a canonical `value` would leak into the log.
    if (check === undefined) return `${type} event has unexpected field ${formatJsonPath([key])}`
    if (!check(value[key] as JsonValue)) return `${type} event has a malformed ${formatJsonPath([key])}`
  }
  for (const key of shape.required) {
    if (!Object.hasOwn(value, key)) return `${type} event is missing ${formatJsonPath([key])}`
  }
  if (type === 'tool/result' && value.isError === true && value.error === undefined) {
    return 'tool/result event with isError has no error'
  }
  return undefined
}

/** Snapshot of `event`, checked against its event shape. */
function acceptEvent(event: unknown): SessionEvent {
  let copy: JsonValue
  try {
    copy = snapshotJson(event, 'session event')
  } catch (error) {
    throw new SessionLogError(`Refused session event: ${(error as Error).message}`, { cause: error })
  }
  const problem = eventProblem(copy)
  if (problem !== undefined) throw new SessionLogError(`Refused session event: ${problem}`)
  return copy as unknown as SessionEvent
}

// ---------------------------------------------------------------------------------------------
// Logs

/** Bookkeeping both logs share: kept events, a cached frozen view, and the closed state. */
class EventList {
  readonly #events: SessionEvent[]
  #view: readonly SessionEvent[] | undefined

  constructor(initial: readonly SessionEvent[]) {
    this.#events = [...initial]
  }

  push(event: SessionEvent): void {
    this.#events.push(event)
    this.#view = undefined
  }

  get view(): readonly SessionEvent[] {
    this.#view ??= Object.freeze([...this.#events])
    return this.#view
  }
}

/** An in-memory {@link SessionLog}: for tests and for sessions that need no durability. */
export function createMemorySessionLog(): SessionLog {
  const list = new EventList([])
  let closed = false
  const log: SessionLog = {
    append(event) {
      if (closed) return Promise.reject(new SessionLogError('The session log was used after close()'))
      try {
        list.push(acceptEvent(event))
      } catch (error) {
        return Promise.reject(error)
      }
      return Promise.resolve()
    },
    get events() {
      return list.view
    },
    close() {
      closed = true
      return Promise.resolve()
    },
    [Symbol.asyncDispose]() {
      return log.close()
    },
  }
  return log
}

/** The outcome of opening a JSONL session log. */
export interface OpenedSessionLog {
  readonly log: SessionLog
  /** Events read back from the file, in order (also the first entries of `log.events`). */
  readonly recovered: readonly SessionEvent[]
  /**
   * The last line, when an interrupted write left it incomplete (no trailing newline) or
   * unreadable. It was skipped and cut off the file before any new append. `line` is 1-based.
   */
  readonly tornLine?: { readonly line: number; readonly text: string }
}

const NEWLINE = 0x0a

/**
 * Opens (creating if needed) an append-only JSONL session log at `path`: one lossless-JSON line
 * per event. Existing events are read back and checked; a torn LAST line (an interrupted write) is
 * reported as `tornLine`, skipped, and truncated away so the file stays valid JSONL. A bad line
 * anywhere else means the file is corrupt. Writes are queued in append order; `close()` flushes
 * them to disk (`datasync`). One writer per file: concurrent writers are not coordinated.
 * @throws SessionLogError when the file cannot be read or opened, or a line before the last one is
 *   not a session event (the error names the line).
 */
export async function openJsonlSessionLog(path: string): Promise<OpenedSessionLog> {
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new SessionLogError(`Cannot read session log ${path}: ${(error as Error).message}`, { cause: error })
    }
    bytes = Buffer.alloc(0)
  }
  const { recovered, tornLine, validLength } = readLines(bytes, path)

  let handle: FileHandle
  try {
    handle = await open(path, 'a')
    if (validLength < bytes.length) await handle.truncate(validLength)
  } catch (error) {
    throw new SessionLogError(`Cannot open session log ${path}: ${(error as Error).message}`, { cause: error })
  }

  const list = new EventList(recovered)
  let tail: Promise<void> = Promise.resolve()
  let failure: SessionLogError | undefined
  let closing: Promise<void> | undefined

  const write = async (event: SessionEvent, line: Buffer): Promise<void> => {
    if (failure !== undefined) throw failure
    try {
      let offset = 0
      while (offset < line.length) {
        const { bytesWritten } = await handle.write(line, offset, line.length - offset)
        offset += bytesWritten
      }
    } catch (error) {
      failure = new SessionLogError(
        `Session log ${path} failed to write; it refuses every later append so it never has a hole: ${(error as Error).message}`,
        { cause: error },
      )
      throw failure
    }
    list.push(event)
  }

  const log: SessionLog = {
    append(event) {
      if (closing !== undefined) return Promise.reject(new SessionLogError('The session log was used after close()'))
      let accepted: SessionEvent
      let line: Buffer
      try {
        accepted = acceptEvent(event)
        line = Buffer.from(`${stringifyJson(accepted as unknown as JsonValue)}\n`, 'utf8')
      } catch (error) {
        return Promise.reject(error)
      }
      const written = tail.then(() => write(accepted, line))
      // The queue goes on after a failure; `write` turns every later turn into a rejection.
      tail = written.catch(() => undefined)
      return written
    },
    get events() {
      return list.view
    },
    close() {
      closing ??= (async () => {
        await tail
        try {
          if (failure === undefined) await handle.datasync()
        } finally {
          await handle.close()
        }
      })().catch((error: unknown) => {
        throw error instanceof SessionLogError
          ? error
          : new SessionLogError(`Cannot close session log ${path}: ${(error as Error).message}`, { cause: error })
      })
      return closing
    },
    [Symbol.asyncDispose]() {
      return log.close()
    },
  }
  return tornLine === undefined ? { log, recovered } : { log, recovered, tornLine }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** Splits the file into lines and reads each one back; only the last line may be torn. */
function readLines(
  bytes: Buffer,
  path: string,
): { recovered: SessionEvent[]; tornLine?: { line: number; text: string }; validLength: number } {
  const recovered: SessionEvent[] = []
  let start = 0
  let lineNumber = 0
  while (start < bytes.length) {
    lineNumber++
    const end = bytes.indexOf(NEWLINE, start)
    const complete = end !== -1
    const lineBytes = bytes.subarray(start, complete ? end : bytes.length)
    const next = complete ? end + 1 : bytes.length
    const isLast = next >= bytes.length
    const problem = complete ? readEvent(lineBytes) : 'no trailing newline'
    if (typeof problem !== 'string') recovered.push(problem)
    else if (isLast) {
      return { recovered, tornLine: { line: lineNumber, text: lineBytes.toString('utf8') }, validLength: start }
    } else {
      throw new SessionLogError(`Session log ${path} is corrupt at line ${lineNumber}: ${problem}`, { line: lineNumber })
    }
    start = next
  }
  return { recovered, validLength: bytes.length }
}

/** The event on one line, or why there is none. */
function readEvent(lineBytes: Buffer): SessionEvent | string {
  let value: JsonValue
  try {
    value = parseDurableJson(strictUtf8.decode(lineBytes), 'session event')
  } catch (error) {
    if (error instanceof JsonBoundaryError) return error.message
    return 'not valid UTF-8'
  }
  return eventProblem(value) ?? (value as unknown as SessionEvent)
}

// ---------------------------------------------------------------------------------------------
// Replay

/** A `run_code` sub-call attached to its parent card; `isError` is absent while it is pending. */
export interface ReplaySubCall {
  readonly subCallId: CallId
  readonly name: string
  readonly isError?: boolean
}

/** One call as a UI shows it: the pending view, and the completed view once a result exists. */
export interface ReplayCard {
  readonly callId: CallId
  readonly name: string
  readonly parentCallId?: CallId
  readonly call: ToolCallView
  readonly result?: ToolResultView
  readonly isError?: boolean
  /** `run_code` sub-dispatches, in dispatch order. */
  readonly subCalls?: readonly ReplaySubCall[]
}

interface CardState {
  card: { -readonly [K in keyof ReplayCard]: ReplayCard[K] }
  args: JsonValue
  /** False for a card made up for a result whose `tool/call` is not in the log. */
  hasCall: boolean
  subCalls: { -readonly [K in keyof ReplaySubCall]: ReplaySubCall[K] }[]
}

/**
 * Rebuilds the UI cards of a session from its events, one card per `tool/call` in log order,
 * through the same presenters a live UI uses (`presentToolCall` / `presentToolResult`), so the
 * cards equal the live ones. No canonical value exists here: a presenter sees the arguments and
 * the durable result only. `lookup` resolves the definition by name (`undefined` → generic cards);
 * presenter failures are contained. A result without a call gets a generic card; code-dispatch
 * events attach to their `run_code` card as `subCalls`. The cards are deep-frozen.
 */
export function replaySession(
  events: readonly SessionEvent[],
  lookup: (name: string) => ToolDefinition | undefined,
): ReplayCard[] {
  const states = new Map<CallId, CardState>()
  const order: CardState[] = []
  const tools = new Map<string, ToolDefinition | undefined>()
  const toolOf = (name: string): ToolDefinition | undefined => {
    if (!tools.has(name)) {
      let tool: ToolDefinition | undefined
      try {
        tool = lookup(name)
      } catch {
        tool = undefined
      }
      tools.set(name, tool)
    }
    return tools.get(name)
  }
  const stateOf = (callId: CallId, name: string): CardState => {
    let state = states.get(callId)
    if (state === undefined) {
      // No `tool/call` for it (a log that starts mid-session): no arguments to present.
      state = { card: { callId, name, call: { card: 'generic', title: name } }, args: null, hasCall: false, subCalls: [] }
      states.set(callId, state)
      order.push(state)
    }
    return state
  }

  for (const event of events) {
    switch (event.type) {
      case 'tool/call': {
        const state: CardState = {
          card: { callId: event.callId, name: event.name, call: presentToolCall(toolOf(event.name), event.name, event.arguments) },
          args: event.arguments,
          hasCall: true,
          subCalls: [],
        }
        if (event.parentCallId !== undefined) state.card.parentCallId = event.parentCallId
        const previous = states.get(event.callId)
        if (previous !== undefined && previous.card.result === undefined) {
          // The same call again before its result (or after sub-call events that came first): one card.
          state.subCalls = previous.subCalls
          order[order.indexOf(previous)] = state
        } else {
          // A call id used again after its call ended (some providers number ids per turn): a new card.
          order.push(state)
        }
        states.set(event.callId, state)
        break
      }
      case 'tool/result': {
        const state = stateOf(event.callId, event.name)
        const result: ToolResult = {
          isError: event.isError,
          content: event.content,
          ...(event.error !== undefined ? { error: event.error } : {}),
          ...(event.meta !== undefined ? { meta: event.meta } : {}),
        }
        // Without the call's arguments a tool presenter would see made-up input: use the generic card.
        state.card.result = presentToolResult(state.hasCall ? toolOf(event.name) : undefined, state.args, result)
        state.card.isError = event.isError
        break
      }
      case 'tool/code-dispatch-start':
      case 'tool/code-dispatch': {
        const state = stateOf(event.callId, 'run_code')
        let sub = state.subCalls.find((entry) => entry.subCallId === event.subCallId)
        if (sub === undefined) {
          sub = { subCallId: event.subCallId, name: event.name }
          state.subCalls.push(sub)
        }
        if (event.type === 'tool/code-dispatch') sub.isError = event.isError
        break
      }
    }
  }

  return order.map((state) => {
    if (state.subCalls.length > 0) state.card.subCalls = state.subCalls
    return snapshotJson(state.card as unknown, 'replay card') as unknown as ReplayCard
  })
}
