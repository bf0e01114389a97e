import { nearestSpelling } from './spelling.ts'

/**
 * One error base for every host-facing failure, with a string `code` from a single map.
 *
 * Host-facing errors are thrown (bad registrations, bad schemas, use after dispose). Model-facing
 * failures are never thrown out of `execute()`: the pipeline turns them into `isError` results whose
 * `error.info.code` is one of these codes.
 */
export const ToolErrorCode = {
  /** Arguments do not match the tool's parameters, or are not lossless JSON. */
  INVALID_ARGS: 'INVALID_ARGS',
  /** A tool body or a post-execute replacement produced a value its `output.schema` rejects. */
  INVALID_TOOL_OUTPUT: 'INVALID_TOOL_OUTPUT',
  /** The name is not registered, or not visible to the calling agent. */
  UNKNOWN_TOOL: 'UNKNOWN_TOOL',
  /** A schema uses a keyword or shape outside the enforced subset. */
  UNSUPPORTED_SCHEMA: 'UNSUPPORTED_SCHEMA',
  /** A value cannot cross the JSON boundary exactly (cycle, NaN, getter, ...). */
  INVALID_JSON: 'INVALID_JSON',
  /** A tool definition, restriction or option is malformed. */
  INVALID_DEFINITION: 'INVALID_DEFINITION',
  /** A `tools/pre-execute` decision or a guard denied the call. */
  DENIED: 'DENIED',
  /** The tool body threw or rejected. */
  TOOL_FAILED: 'TOOL_FAILED',
  /** A waterfall listener threw, rejected, misused `next` or returned a malformed decision. */
  LISTENER_FAILED: 'LISTENER_FAILED',
  /** The timeout policy aborted the body after `timeoutMs`. */
  TOOL_TIMEOUT: 'TOOL_TIMEOUT',
  /** Caller cancellation arrived after the body started. */
  ABORTED: 'ABORTED',
  /**
   * Cancelled before the body started; the body never ran. The caller's signal aborted (a gate,
   * approval service or wrapper that failed because it saw that abort reports this too), or a
   * `tools/execute` wrapper handed the body a signal of its own that was already aborted.
   */
  ABORTED_BEFORE_DISPATCH: 'ABORTED_BEFORE_DISPATCH',
  /** A `run_code` program failed: guest error, broken limit, or engine fault. */
  CODE_RUN_FAILED: 'CODE_RUN_FAILED',
  /** A context, engine or pool was used after `dispose()`. */
  DISPOSED: 'DISPOSED',
  /** A durable session log could not be written or read. */
  SESSION_LOG_FAILED: 'SESSION_LOG_FAILED',
} as const

/** One of the codes in {@link ToolErrorCode}. */
export type ToolErrorCode = (typeof ToolErrorCode)[keyof typeof ToolErrorCode]

/** Structured failure identity carried by `ToolFailure.info`: the error class and its code. */
export interface ToolErrorInfo {
  readonly code: ToolErrorCode
  /** The error class name (`ToolArgsError`, `Error`, ...), for durable diagnostics. */
  readonly name: string
}

/** Base class of every error this library throws; `code` names the failure for programs. */
export class ToolError extends Error {
  readonly code: ToolErrorCode

  constructor(code: ToolErrorCode, message: string, options?: ErrorOptions) {
    super(message, options)
    this.code = code
    this.name = new.target.name
  }
}

/** True when `value` is one of this library's errors. */
export function isToolError(value: unknown): value is ToolError {
  return value instanceof ToolError
}

/** Thrown when a resource is used after `dispose()`. */
export class DisposedError extends ToolError {
  constructor(what: string) {
    super(ToolErrorCode.DISPOSED, `${what} was used after dispose()`)
  }
}

/** Tool names an `UNKNOWN_TOOL` message lists at most, then how many more there are. */
const MAX_LISTED_TOOLS = 30

/** Characters of an unknown name the message echoes at most: a model's name can be any length. */
const MAX_ECHOED_NAME_CHARS = 80

/**
 * A tool name that is not registered or not visible to the caller (`UNKNOWN_TOOL`). The message
 * names the tool the name most likely misspells, then the first 30 of the tools the caller can
 * see (only those: `available` is the caller's own view).
 */
export class ToolNotFoundError extends ToolError {
  readonly toolName: string

  constructor(toolName: string, available: readonly string[]) {
    const shown = toolName.length > MAX_ECHOED_NAME_CHARS ? `${toolName.slice(0, MAX_ECHOED_NAME_CHARS)}...` : toolName
    const nearest = nearestSpelling(toolName, available)
    const listed = available.length === 0 ? 'none' : `${available.slice(0, MAX_LISTED_TOOLS).join(', ')}${available.length > MAX_LISTED_TOOLS ? ` (and ${available.length - MAX_LISTED_TOOLS} more)` : ''}`
    super(ToolErrorCode.UNKNOWN_TOOL, `Unknown tool ${JSON.stringify(shown)}.${nearest === undefined ? '' : ` Did you mean ${JSON.stringify(nearest)}?`} Available tools: ${listed}`)
    this.toolName = toolName
  }
}

/** Thrown when a tool definition, restriction or option is malformed. */
export class ToolDefinitionError extends ToolError {
  constructor(message: string) {
    super(ToolErrorCode.INVALID_DEFINITION, message)
  }
}

/** One problem found in a value against a schema: where, what was expected, what was found. */
export interface SchemaIssue {
  /** JSON path of the offending value, `$` for the root (`$.items[2].name`). */
  readonly path: string
  /** The expected shape, in words a model can act on (`string`, `one of "a" | "b"`, ...). */
  readonly expected: string
  /** A short description of what was found (`number 3`, `missing`, `unexpected key "x"`). */
  readonly found: string
}

/** Issues a message spells out; all of them stay on the error's `issues`. */
const MAX_DESCRIBED_ISSUES = 50

/** Characters of one key of a path a message shows at most: a model's key can be a megabyte. */
const MAX_PATH_KEY_CHARS = 60

/** A `$` path's quoted and dotted keys, each clipped to {@link MAX_PATH_KEY_CHARS} for a message. */
function shownPath(path: string): string {
  if (path.length <= MAX_PATH_KEY_CHARS) return path
  return path.replace(/\.([A-Za-z_$][A-Za-z0-9_$]*)|\[("(?:[^"\\]|\\.)*")\]/g, (whole, name: string | undefined, quoted: string | undefined) => {
    // A clipped name is no identifier any more: quoted, as appendKey writes such a key.
    if (name !== undefined) return name.length <= MAX_PATH_KEY_CHARS ? whole : `[${JSON.stringify(`${name.slice(0, MAX_PATH_KEY_CHARS)}...`)}]`
    const key = JSON.parse(quoted as string) as string
    return key.length <= MAX_PATH_KEY_CHARS ? whole : `[${JSON.stringify(`${key.slice(0, MAX_PATH_KEY_CHARS)}...`)}]`
  })
}

function describeIssues(issues: readonly SchemaIssue[]): string {
  const shown = issues.slice(0, MAX_DESCRIBED_ISSUES).map((issue) => `${shownPath(issue.path)}: expected ${issue.expected}, found ${issue.found}`)
  if (issues.length > MAX_DESCRIBED_ISSUES) shown.push(`and ${issues.length - MAX_DESCRIBED_ISSUES} more of the same kind`)
  return shown.join('; ')
}

/**
 * Arguments do not match a tool's parameters (`INVALID_ARGS`). The message spells out the first 50
 * issues (a model's array of thousands of bad items must not become a megabyte of text); `issues`
 * holds every one.
 */
export class ToolArgsError extends ToolError {
  readonly issues: readonly SchemaIssue[]

  constructor(toolName: string, issues: readonly SchemaIssue[]) {
    super(ToolErrorCode.INVALID_ARGS, `Invalid arguments for tool "${toolName}": ${describeIssues(issues)}`)
    this.issues = Object.freeze([...issues])
  }
}

/** A produced value does not match the tool's `output.schema` (`INVALID_TOOL_OUTPUT`). */
export class ToolOutputError extends ToolError {
  readonly issues: readonly SchemaIssue[]

  constructor(toolName: string, issues: readonly SchemaIssue[]) {
    super(ToolErrorCode.INVALID_TOOL_OUTPUT, `Invalid output of tool "${toolName}": ${describeIssues(issues)}`)
    this.issues = Object.freeze([...issues])
  }
}
