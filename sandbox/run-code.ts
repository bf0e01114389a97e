import type { Agent, CodeModeHost, CodeModeTransport, ToolRuntime } from '../src/context.ts'
import { ToolError, ToolErrorCode } from '../src/errors.ts'
import type { ToolRunContext } from '../src/execution.ts'
import { parseDurableJson, snapshotJson } from '../src/json-boundary.ts'
import type { JsonValue } from '../src/json-boundary.ts'
import type { ContentBlock } from '../src/messages.ts'
import type { CodeModeTool } from '../src/registry.ts'
import { RUN_CODE } from '../src/registry.ts'
import type { JsonSchemaNode, ObjectJsonSchema } from '../src/schema/types.ts'
import { validateArgs } from '../src/schema/validate.ts'
import type { ToolDefinition } from '../src/tool.ts'
import {
  DEFAULT_LISTING_CHARS,
  discoverySdk,
  generateSdk,
  renderRunCodeDescription,
  usesDiscovery,
} from '../sdk-gen/index.ts'
import type { GeneratedSdk, LargeToolSetOptions, SdkBinding } from '../sdk-gen/index.ts'
import { RunBridge } from './bridge.ts'
import { notJsonHint, pendingCallsNote, placeText, quoteLine, unknownGlobalHint } from './feedback.ts'
import type { EngineFailure, LogEntry, SandboxEngine, SandboxLimitName, SandboxLimits } from './engine.ts'
import { describeLimit, resolveLimits, withCeilings } from './limits.ts'
import { isPlainJavaScript } from './plain-javascript.ts'
import { isTypeCheckOption, judgeDiagnostics, mentionsTools, resolveTypeCheck, TYPE_CHECK_MODES } from './program-check.ts'
import type { TypeCheckMode } from './program-check.ts'
import { failureBeforeShift, fenceLikeLine, unfenceProgram, withCompletionValue } from './program-input.ts'
import { createQuickJSEngine } from './quickjs/quickjs-engine.ts'
import type { StripTypesResult } from './strip-types.ts'
import { MAX_CHECK_MS, MAX_STRIP_MS, TypeCheckThread } from './type-check-thread.ts'
import type { OffThreadFailure, OffThreadJobOptions } from './type-check-thread.ts'

/** Options of {@link createRunCode}. */
export interface RunCodeOptions {
  /**
   * The engine programs run in (`createQuickJSEngine()` or `createIsolatedVmEngine()`). Default: a
   * QuickJS engine, created on the first run and shared with every other transport given none
   * (one per guest heap size); its idle worker threads do not keep the process alive. Pass one to
   * choose its options or to dispose of it yourself.
   */
  readonly engine?: SandboxEngine
  /** Per-run limits over the defaults (`DEFAULT_LIMITS`). */
  readonly limits?: Partial<SandboxLimits>
  /**
   * How each program is type-checked against the agent's SDK before it runs (off the main thread;
   * the checker starts with the transport, so the first program finds it warm):
   * - `'guard'` (default): refuse, before any tool runs, only what would certainly fail at run
   *   time (an unknown tool or global, missing, mistyped or undeclared arguments of a tool call,
   *   a property a tool's result does not have, calling a non-function); every other diagnostic
   *   lets the program run and comes back in the result's `notes`. A program that never names
   *   `tools` starts at once: its check runs only if it reaches a tool, before that call.
   * - `'enforce'`: refuse a program with any diagnostic.
   * - `'off'`: no check (the TypeScript thread then starts only for programs with types to remove).
   * `true` and `false`, this option's values before there were modes, mean `'enforce'` and `'off'`.
   */
  readonly typeCheck?: TypeCheckMode | boolean
  /**
   * The longest `'guard'` waits for a program's check before it runs the program unchecked
   * (default 1000 ms). A warm check takes milliseconds; the checker is started with the
   * transport, and a program that comes before it has loaded (a second or more) runs unchecked
   * rather than late, its mistakes then found at run time. For a program checked before it starts
   * (one that names `tools`), the wait is not taken from its `wallTimeMs`. One that reaches `tools`
   * without naming them is already running when its first tool call waits for the check: that
   * wait (at most `typeCheckWaitMs`, and never past the run's end) counts in its `wallTimeMs`.
   */
  readonly typeCheckWaitMs?: number
  /**
   * Where the model reads the SDK: `'description'` (default) embeds it in `run_code`'s
   * description; `'system-prompt'` keeps the description short and expects the harness to put
   * {@link codeModeDeclarations} in the system prompt.
   */
  readonly sdkIn?: 'description' | 'system-prompt'
  /**
   * Large tool sets: above `maxTools` tools (default: no count), or when the declarations would be
   * longer than `maxDeclarationChars` (default 10,000), the model is shown one line per tool and the
   * program finds the rest inside the sandbox with `tools.$search(query)` and `tools.$describe(name)`,
   * over the agent's own view only. Those lookups are not tool calls: they never reach the host, the
   * pipeline or the session log, and take no sub-call number.
   */
  readonly largeToolSets?: LargeToolSetOptions
}

/**
 * The value a successful `run_code` returns: the program's result, its console output, and notes
 * for the model about things that did not stop the run but likely deserve a look (present only
 * when there are some).
 */
export interface RunCodeValue {
  readonly result: JsonValue
  readonly logs: readonly LogEntry[]
  readonly notes?: readonly string[]
}

// Frozen JSON: the validator checks and compiles a schema that cannot change once, not per run.
const PARAMETERS = snapshotJson({
  type: 'object',
  properties: {
    code: {
      type: 'string',
      description:
        'The body of an async TypeScript/JavaScript function: use top-level await, call `await tools.<name>(args)`, and `return` a JSON value.',
    },
    description: { type: 'string', description: 'A short label for what this program does, shown to the user.' },
  },
  required: ['code'],
  additionalProperties: false,
}) as unknown as ObjectJsonSchema

const OUTPUT_SCHEMA: JsonSchemaNode = {
  type: 'object',
  properties: {
    result: { description: 'The JSON value the program returned (null when it returned nothing).' },
    logs: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          level: { type: 'string', enum: ['log', 'info', 'warn', 'error'] },
          text: { type: 'string' },
        },
        required: ['level', 'text'],
        additionalProperties: false,
      },
    },
    notes: {
      type: 'array',
      items: { type: 'string' },
      description: 'Things that did not stop the run but likely deserve a look (present only when there are some).',
    },
  },
  required: ['result', 'logs'],
  additionalProperties: false,
}

const SYSTEM_PROMPT_DESCRIPTION =
  'Run a program (the body of an async TypeScript function) that calls `await tools.<name>(args)` and returns a JSON value. ' +
  'The tools and their types are declared in the system prompt.'

function formatLogs(logs: readonly LogEntry[]): string {
  return logs.map((entry) => (entry.level === 'log' ? entry.text : `[${entry.level}] ${entry.text}`)).join('\n')
}

function render(_args: unknown, value: JsonValue): ContentBlock[] {
  const { result, logs, notes } = value as unknown as RunCodeValue
  const parts: string[] = []
  if (logs.length > 0) parts.push(`Console output:\n${formatLogs(logs)}`)
  parts.push(`Result:\n${resultText(result)}`)
  if (notes !== undefined && notes.length > 0) parts.push(`Notes:\n${notes.map((note) => `- ${note}`).join('\n')}`)
  return [{ type: 'text', text: parts.join('\n\n') }]
}

/** Compact results over this many characters are shown compact. */
const PRETTY_MAX_CHARS = 4_096

/**
 * The result as the model reads it: indented while that stays small, compact otherwise. Indenting
 * multiplies the size of deep nesting (measured: 800 K characters of nested arrays, within the
 * result limit, became 160 M indented), and the text goes to the model and the session log.
 */
function resultText(result: JsonValue): string {
  const compact = JSON.stringify(result)
  if (compact.length > PRETTY_MAX_CHARS) return compact
  const pretty = JSON.stringify(result, null, 2)
  return pretty.length <= 3 * compact.length + 256 ? pretty : compact
}

/** `<name> limit: <what it means>.` — how every limit is named to the model. */
function limitSentence(limit: SandboxLimitName, limits: SandboxLimits): string {
  return `${limit} limit: ${describeLimit(limit, limits)}.`
}

/** What a failure's text draws on besides the failure: the program and the surface it had. */
interface FailureContext {
  /** The program as the model wrote it: failure positions are its own, and its line is quoted. */
  readonly code: string
  /** The names the program could call as `tools.<name>` (the agent's own view only). */
  readonly tools: readonly string[]
  /** The `tools.<name>` of each sub-call still running when the program ended, in call order. */
  readonly pending: readonly string[]
}

// The two engines' words for a global that does not exist: QuickJS quotes the name, V8 does not.
const UNKNOWN_GLOBAL = /^'?([A-Za-z_$][A-Za-z0-9_$]*)'? is not defined$/

/**
 * The column of `name` used as a whole identifier on line `line` (not a member `x.name`): the first
 * use at or after `column`, else the last before it (V8 may point past it, at an `=`), else `column`.
 */
function columnOfName(code: string, line: number, column: number | undefined, name: string): number | undefined {
  const text = code.split('\n', line)[line - 1]
  if (text === undefined) return column
  const from = Math.max(0, (column ?? 1) - 1)
  let before: number | undefined
  for (const use of text.matchAll(new RegExp(`(?<![\\w$.])${name.replace(/\$/g, '\\$')}(?![\\w$])`, 'g'))) {
    if (use.index >= from) return use.index + 1
    before = use.index + 1
  }
  return before ?? column
}

/** The fix for a value the guest refused as not JSON, from its message (`...is not JSON: a Map (not JSON) at $.m`). */
function notJsonHintOf(message: string): string | undefined {
  const at = message.indexOf('is not JSON: ')
  return at < 0 ? undefined : notJsonHint(message.slice(at + 'is not JSON: '.length))
}

/** Whether line `line` of `code` assigns to `name` (`name = ...`, not `name == ...` or `x.name = ...`). */
function assignsTo(code: string, line: number, name: string): boolean {
  const text = code.split('\n', line)[line - 1] ?? ''
  return new RegExp(`(?<![\\w$.])${name.replace(/\$/g, '\\$')}\\s*(?:[-+*/%&|^]|\\*\\*|<<|>>>?|\\?\\?|&&|\\|\\|)?=(?![=>])`).test(text)
}

/**
 * The failure text a model reads, like a good compiler's: what went wrong, where in its program
 * (the line quoted, a caret under the column), what would be right (for a global that does not
 * exist: the surface a program has and the closest tools), the calls it left running, and the logs
 * so far.
 */
function describeFailure(failure: EngineFailure, limits: SandboxLimits, logs: readonly LogEntry[], context: FailureContext): string {
  let message: string
  let ended: 'returned' | 'failed' | undefined
  switch (failure.kind) {
    case 'limit':
      message = `The program was stopped by its ${limitSentence(failure.limit, limits)}`
      break
    case 'guest': {
      const unknown = failure.name === 'ReferenceError' ? UNKNOWN_GLOBAL.exec(failure.message) : null
      const { line } = failure
      // V8 places some of these at the start of the statement: the caret goes under the name itself.
      const column = unknown === null || line === undefined ? failure.column : columnOfName(context.code, line, failure.column, unknown[1] as string)
      const where = line === undefined ? '' : ` at ${placeText(line, column)}`
      message = `The program threw ${failure.name}${failure.code === undefined ? '' : ` (${failure.code})`}${where}: ${failure.message}`
      const quoted = line === undefined ? undefined : quoteLine(context.code, line, column)
      if (quoted !== undefined) message += `\n${quoted}`
      if (unknown !== null) {
        const name = unknown[1] as string
        message += `\n${unknownGlobalHint(name, context.tools, { assigned: line !== undefined && assignsTo(context.code, line, name) })}`
      }
      const notJson = failure.code === 'INVALID_ARGS' ? notJsonHintOf(failure.message) : undefined
      if (notJson !== undefined) message += `\n${notJson}`
      if (failure.stack !== undefined && failure.stack !== '') message += `\n${failure.stack}`
      ended = 'failed'
      break
    }
    case 'result': {
      message = `The program's return value cannot be returned: ${failure.message}`
      const notJson = notJsonHintOf(failure.message)
      if (notJson !== undefined) message += `\n${notJson}`
      ended = 'returned'
      break
    }
    case 'aborted':
      message = `The program was cancelled: ${failure.message}`
      break
  }
  // Stopped by a limit or cancelled, the calls it was waiting for were cut off with it: nothing to add.
  if (ended !== undefined && context.pending.length > 0) message += `\n\n${pendingCallsNote(context.pending, ended)}`
  return logs.length > 0 ? `${message}\n\nConsole output before the failure:\n${formatLogs(logs)}` : message
}

/**
 * The QuickJS engines of transports given none, one per guest heap size (a worker's WASM module is
 * sized for it): shared by every such transport in the process, never disposed (idle workers do
 * not keep the process alive).
 */
const defaultEngines = new Map<number, SandboxEngine>()
function defaultEngine(limits: SandboxLimits): SandboxEngine {
  let engine = defaultEngines.get(limits.memoryLimitBytes)
  if (engine === undefined) {
    engine = createQuickJSEngine({ limits: { memoryLimitBytes: limits.memoryLimitBytes } })
    defaultEngines.set(limits.memoryLimitBytes, engine)
  }
  return engine
}

/** {@link defaultEngine} made now if it can be; if not, the first run that needs it says why. */
function startDefaultEngine(limits: SandboxLimits): void {
  try {
    defaultEngine(limits)
  } catch {
    // Nothing is cached: engineForRun tries again and its run reports the failure.
  }
}

/**
 * The process's TypeScript thread (type checks, and the type removal of every program that is not
 * plain JavaScript), started by the first run that needs it: the main thread never loads TypeScript.
 */
let typeScriptThread: TypeCheckThread | undefined
function sharedTypeScriptThread(): TypeCheckThread {
  typeScriptThread ??= new TypeCheckThread()
  return typeScriptThread
}

/** Have the TypeScript thread parse `declarations` ahead of a program, if the thread can start (see {@link warmTypeScriptThread}). */
function prepareTypeScriptThread(declarations: string): void {
  try {
    sharedTypeScriptThread().prepare(declarations)
  } catch {
    // The first run that needs the thread reports why it cannot start.
  }
}

/** {@link sharedTypeScriptThread}, warmed now if it can start; if not, the first run that needs it says why. */
function warmTypeScriptThread(): void {
  try {
    sharedTypeScriptThread().warm()
  } catch {
    // Nothing is kept: the first run that needs the thread tries again and reports the failure.
  }
}

/**
 * Warm the TypeScript thread once `engine`'s first worker is ready (an engine this module started,
 * whose workers are starting now), or at once for any other engine (given by the caller, started
 * earlier).
 */
function warmAfter(engine: SandboxEngine | undefined): void {
  const started = (engine as { readonly firstWorkerReady?: Promise<void> } | undefined)?.firstWorkerReady
  if (started === undefined) warmTypeScriptThread()
  else void started.then(warmTypeScriptThread)
}

/** The TypeScript thread's two jobs, as the messages of a job that did not finish name them. */
const OFF_THREAD_WORK = {
  check: { doing: 'type-checking it', maxMs: MAX_CHECK_MS, most: 'the most one check may take: simplify its types', during: 'while it was type-checked', tool: 'the type checker' },
  strip: {
    doing: 'removing its types',
    maxMs: MAX_STRIP_MS,
    most: 'the most it may take: simplify it (fewer nested parentheses, `<`, `async` and `infer`)',
    during: 'while its types were removed',
    tool: 'the TypeScript parser',
  },
} as const

/** Why a program was not run when a job in the TypeScript thread did not finish. */
function offThreadMessage(work: keyof typeof OFF_THREAD_WORK, reason: OffThreadFailure['reason'], limits: SandboxLimits): string {
  const { doing, maxMs, most, during, tool } = OFF_THREAD_WORK[work]
  switch (reason) {
    case 'timeout':
      return `The program was not run: ${doing} took longer than the ${limitSentence('wallTimeMs', limits)}`
    case 'too-slow':
      return `The program was not run: ${doing} took longer than ${maxMs} ms, ${most}`
    case 'aborted':
      return `The program was cancelled ${during}`
    case 'failed':
      return `The program was not run: ${tool} failed on it`
  }
}

/**
 * The default `typeCheckWaitMs`. A warm check takes milliseconds; this covers a check of a new
 * SDK, not a checker still loading TypeScript (a second or more: it is started with the
 * transport, before the first program, to be ready in time).
 */
const DEFAULT_TYPE_CHECK_WAIT_MS = 1_000

function codeRunFailed(message: string): ToolError {
  return new ToolError(ToolErrorCode.CODE_RUN_FAILED, message)
}

/** SDK input for the native tools a view holds. */
function sdkFor(tools: readonly ToolDefinition[]): GeneratedSdk {
  return generateSdk(
    tools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters, output: tool.output.schema })),
  )
}

/**
 * SDKs generated per view, keyed by the tool names and checked against the exact definitions:
 * views change rarely and generation is the costly part of `describe` and of every run's bindings.
 * Bounded, so a deployment with many distinct views cannot grow it without end.
 */
class SdkCache {
  static readonly MAX_ENTRIES = 64
  readonly #entries = new Map<string, { tools: readonly ToolDefinition[]; sdk: GeneratedSdk }>()
  readonly #large: LargeToolSetOptions | undefined

  /** With `large`, a view too large to declare whole gets its discovery SDK ({@link discoverySdk}). */
  constructor(large?: LargeToolSetOptions) {
    this.#large = large
  }

  get(tools: readonly ToolDefinition[]): GeneratedSdk {
    const key = tools.map((tool) => tool.name).join('\u0000')
    const cached = this.#entries.get(key)
    if (cached !== undefined && cached.tools.every((tool, index) => tool === tools[index])) return cached.sdk
    const whole = sdkFor(tools)
    const sdk = usesDiscovery(whole, this.#large) ? discoverySdk(whole) : whole
    this.#entries.delete(key)
    this.#entries.set(key, { tools, sdk })
    if (this.#entries.size > SdkCache.MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value as string)
    return sdk
  }
}

/**
 * The Code Mode transport: pass it as `createContext({ tools: { mode: 'code', codeMode } })`.
 * Its `run_code` strips types (positions kept), optionally type-checks, runs the program in the
 * engine with the agent's tools bound, routes every SDK call through the full pipeline, and
 * returns `{ result, logs }`. A guest failure or a broken limit is a `CODE_RUN_FAILED` error
 * result naming what happened, with the logs so far.
 */
export function createRunCode(options: RunCodeOptions = {}): CodeModeTransport {
  checkOptions(options)
  const given = options.engine
  if (given !== undefined && (typeof given !== 'object' || given === null || typeof given.run !== 'function')) {
    throw new TypeError('createRunCode({ engine }): engine must be a SandboxEngine (createQuickJSEngine() or createIsolatedVmEngine()), or left out for QuickJS')
  }
  const limits = resolveLimits(options.limits)
  let engine = given
  const engineForRun = (): SandboxEngine => {
    engine ??= defaultEngine(limits)
    return engine
  }
  // The default engine's first worker starts now, not at the first program: loading QuickJS and
  // its prelude (most of a first run) overlaps the caller's own setup and the argument checks.
  // An engine that cannot start (a bundled package) is reported by the first run, as before.
  if (given === undefined) startDefaultEngine(limits)
  const sdkIn = options.sdkIn ?? 'description'
  const typeCheck = resolveTypeCheck(options.typeCheck)
  const typeCheckWaitMs = options.typeCheckWaitMs ?? DEFAULT_TYPE_CHECK_WAIT_MS
  // Warm before the first program: TypeScript and its libraries load in their thread (about a second
  // of a core) once the default engine's first worker is up, so the two do not share the cores a
  // first run needs. A package whose worker file is missing (bundled) says so at the first run that needs the thread.
  if (typeCheck !== 'off') warmAfter(given === undefined ? defaultEngines.get(limits.memoryLimitBytes) : undefined)
  const large = options.largeToolSets ?? {}
  const cache = new SdkCache(large)
  // What codeModeDeclarations needs to write this transport's guide for a view.
  const prompt = (tools: readonly ToolDefinition[]): string => systemPromptText(cache.get(tools), withCeilings(limits, engine?.ceilings), large)

  return (host: CodeModeHost): CodeModeTool => remember(prompt, {
    name: RUN_CODE,
    description: SYSTEM_PROMPT_DESCRIPTION,
    parameters: PARAMETERS,
    output: { schema: OUTPUT_SCHEMA, render },
    presentCall(args) {
      // The model's own label when it gave one; the program itself as the card's content.
      const { code, description } = (typeof args === 'object' && args !== null ? args : {}) as { code?: unknown; description?: unknown }
      return {
        card: 'generic',
        title: typeof description === 'string' && description.trim() !== '' ? description : 'Run code',
        kind: 'execute',
        ...(typeof code === 'string' ? { content: [{ type: 'text', text: code }] } : {}),
      }
    },
    describe(tools) {
      // The budget the model is told is the one its runs are held to: an engine may lower it.
      if (sdkIn === 'system-prompt') return SYSTEM_PROMPT_DESCRIPTION
      const sdk = cache.get(tools)
      // The model is about to write a program against this SDK: its declarations get parsed meanwhile.
      if (typeCheck !== 'off') prepareTypeScriptThread(sdk.declarations)
      return renderRunCodeDescription(sdk, withCeilings(limits, engine?.ceilings), { sdk: isDiscovery(sdk) ? 'discovery' : 'declarations', listingChars: large.listingChars ?? DEFAULT_LISTING_CHARS })
    },
    async execute(args, exec) {
      const runEngine = engineForRun()
      return runProgram(host, runEngine, withCeilings(limits, runEngine.ceilings), cache, { mode: typeCheck, waitMs: typeCheckWaitMs }, args, exec)
    },
  })
}

/** The option names {@link createRunCode} takes. */
const OPTION_NAMES: ReadonlySet<string> = new Set<keyof RunCodeOptions>(['engine', 'limits', 'typeCheck', 'sdkIn', 'largeToolSets', 'typeCheckWaitMs'])

/**
 * Refuse what a caller without types can pass by mistake, naming the fix. The likeliest one is
 * `codeMode: createRunCode` (uncalled): the context then calls it with its host, and a transport
 * would come back where a tool was due, far from the mistake.
 */
function checkOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`createRunCode(options): options must be an object (or left out), got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`)
  }
  if (typeof (options as { visibleTools?: unknown }).visibleTools === 'function' && typeof (options as { execute?: unknown }).execute === 'function') {
    throw new TypeError(
      'createRunCode was given the context\'s Code Mode host: it was passed uncalled. Write `codeMode: createRunCode()` ' +
        '(or `createRunCode({ engine, limits, typeCheck, sdkIn })`), not `codeMode: createRunCode`',
    )
  }
  const unknown = Object.keys(options).filter((key) => !OPTION_NAMES.has(key))
  if (unknown.length > 0) {
    throw new TypeError(`createRunCode(options): unknown option ${unknown.map((key) => `\`${key}\``).join(', ')}; the options are ${[...OPTION_NAMES].map((key) => `\`${key}\``).join(', ')}`)
  }
  const { typeCheck, typeCheckWaitMs } = options as { typeCheck?: unknown; typeCheckWaitMs?: unknown }
  if (typeCheckWaitMs !== undefined && (typeof typeCheckWaitMs !== 'number' || !Number.isFinite(typeCheckWaitMs) || typeCheckWaitMs < 0)) {
    throw new TypeError(`createRunCode({ typeCheckWaitMs }): typeCheckWaitMs must be a finite number of milliseconds, 0 or more; got ${String(typeCheckWaitMs)}`)
  }
  if (typeCheck !== undefined && !isTypeCheckOption(typeCheck)) {
    throw new TypeError(
      `createRunCode({ typeCheck }): typeCheck must be ${TYPE_CHECK_MODES.map((mode) => `'${mode}'`).join(', ')} (or true for 'enforce', false for 'off'), or left out for 'guard'; got ${typeof typeCheck === 'string' ? `'${typeCheck}'` : typeof typeCheck}`,
    )
  }
}

/** Remove the types of a program in the TypeScript thread. */
async function stripOffThread(code: string, limits: SandboxLimits, options: OffThreadJobOptions): Promise<StripTypesResult> {
  const outcome = await sharedTypeScriptThread().strip(code, options)
  if (!outcome.ok) throw stopped(options.signal, outcome.reason === 'aborted', () => offThreadMessage('strip', outcome.reason, limits))
  return outcome.stripped
}

/**
 * What a run that did not finish throws. Stopped because its caller cancelled it (`cancelled`, and
 * the signal did fire): the signal's own reason, so the pipeline reports it as it reports any tool
 * body that stops on its signal, `ABORTED`. Anything else: `CODE_RUN_FAILED` with `describe()`.
 */
function stopped(signal: AbortSignal, cancelled: boolean, describe: () => string): unknown {
  return cancelled && signal.aborted ? signal.reason : codeRunFailed(describe())
}

async function runProgram(
  host: CodeModeHost,
  engine: SandboxEngine,
  limits: SandboxLimits,
  cache: SdkCache,
  { mode: typeCheck, waitMs }: { readonly mode: TypeCheckMode; readonly waitMs: number },
  args: unknown,
  exec: ToolRunContext,
): Promise<RunCodeValue> {
  const started = performance.now()
  // What the model should hear about beside its result (each step of the run may add one).
  const notes: string[] = []
  const { code } = validateArgs(PARAMETERS, args, RUN_CODE) as { code: string }
  if (Buffer.byteLength(code, 'utf8') > limits.maxSourceBytes) {
    throw codeRunFailed(`The program was not run because of its ${limitSentence('maxSourceBytes', limits)}`)
  }
  const owner = exec.agent === undefined ? {} : { owner: exec.agent }
  // What is left of the wall-time limit, the whole run's: what stripping and checking took is gone from it.
  const remainingMs = (): number => Math.max(1, Math.floor(limits.wallTimeMs - (performance.now() - started)))
  // A fenced program loses its fence lines (blanked: every line keeps its number); prose around it is refused.
  const input = unfenceProgram(code)
  if (!input.ok) throw codeRunFailed(input.message)
  const source = input.code
  // Plain JavaScript runs as written. Anything else is parsed by TypeScript in its own thread: loading
  // it costs the main thread half a second and 80 MB, and a few hundred hostile bytes can keep the
  // parser busy for seconds.
  const plain = isPlainJavaScript(source)
  const stripped: StripTypesResult = plain ? { ok: true, code: source } : await stripOffThread(source, limits, { timeoutMs: remainingMs(), signal: exec.signal, ...owner })
  if (!stripped.ok) {
    const quoted = quoteLine(code, stripped.line, stripped.column)
    // Only the first and last lines can be fences: one elsewhere is most likely a second block, or prose after one.
    const fence = fenceLikeLine(source)
    const hint = fence === undefined ? '' : `\nLine ${fence} looks like a Markdown fence: send one program as \`code\`, without fences, explanations or a second code block.`
    throw codeRunFailed(`The program was not run: line ${stripped.line}, column ${stripped.column}: ${stripped.message}${quoted === undefined ? '' : `\n${quoted}`}${hint}`)
  }
  const sdk = cache.get(host.visibleTools(exec))
  // The check, off the main thread and under the run's wall-time limit (a small program can keep
  // the checker busy for seconds): its refusal is the run's failure, its other findings are notes.
  // What 'guard' waited for the checker: not the program's time, so not taken from its wall time.
  let guardWaitMs = 0
  const check = async (mode: 'guard' | 'enforce', when: 'before-run' | 'first-call' = 'before-run'): Promise<void> => {
    // 'guard' waits for an answer at most `typeCheckWaitMs`; a check that gives none (the checker still
    // loading in a fresh process, a program too costly to check) lets the program run unchecked: its
    // mistakes then surface at run time, as without a check. The checker finishes a check it started
    // anyway (within its share), so it stays warm for the next program.
    const waitStarted = performance.now()
    const timeoutMs = mode === 'guard' ? Math.max(1, Math.min(waitMs, remainingMs())) : remainingMs()
    const checked = await sharedTypeScriptThread().check(sdk.declarations, source, { timeoutMs, signal: exec.signal, keepRunning: mode === 'guard', ...owner })
    if (mode === 'guard') guardWaitMs += performance.now() - waitStarted
    if (!checked.ok && mode === 'guard' && !exec.signal.aborted) {
      // Only the program's own types are the model's to fix; a checker still starting is not news to it.
      if (checked.reason === 'too-slow') notes.push(`The program ran without its type check: checking it took longer than ${MAX_CHECK_MS} ms (simpler types would let it be checked).`)
      return
    }
    if (!checked.ok) throw stopped(exec.signal, checked.reason === 'aborted', () => offThreadMessage('check', checked.reason, limits))
    const verdict = judgeDiagnostics(checked.diagnostics, mode, code, sdk.bindings.map((tool) => tool.binding), when)
    if (verdict.refusal !== undefined) throw codeRunFailed(verdict.refusal)
    notes.push(...verdict.notes)
  }
  // Side effects come only from tool calls. A program that names `tools` is checked before it runs;
  // one that does not starts at once (no wait for the checker), and if it reaches a tool anyway
  // (`globalThis['to' + 'ols']`, `eval`) that first call waits for the check, which can still refuse.
  const checkedFirst = typeCheck === 'enforce' || (typeCheck === 'guard' && mentionsTools(source))
  if (checkedFirst) await check(typeCheck as 'guard' | 'enforce')
  let refusal: unknown
  // The bridge makes the first tool call wait for it before that call gets a number or a start event.
  const gate = typeCheck === 'guard' && !checkedFirst ? () => check('guard', 'first-call').catch((error: unknown) => Promise.reject((refusal = error))) : undefined
  // A last expression is the result of a program without a `return` of its own (positions kept, or mapped back).
  const prepared = await withCompletionValue(stripped.code)
  const runLimits = plain && !checkedFirst ? limits : { ...limits, wallTimeMs: Math.min(limits.wallTimeMs, Math.floor(remainingMs() + guardWaitMs)) }

  const bridge = new RunBridge(host, exec, limits, host.progress?.(exec), gate)
  let outcome
  try {
    outcome = await engine.run({
      code: prepared.code,
      tools: runBindings(sdk, code),
      limits: runLimits,
      host: bridge,
      signal: bridge.signal,
      ...(exec.agent === undefined ? {} : { tenant: exec.agent }),
    })
  } finally {
    // Sub-calls still in flight when the program ended are aborted and drained, never leaked.
    await bridge.drain()
  }
  if (bridge.logFailures.length > 0) {
    const first = bridge.logFailures[0]
    throw new ToolError(ToolErrorCode.SESSION_LOG_FAILED, `the session log could not record a sub-call: ${first instanceof Error ? first.message : String(first)}`)
  }
  // What the program left running is told to the model by the binding it called.
  const pending = bridge.pendingAtEnd.length === 0 ? [] : bindingsOf(bridge.pendingAtEnd, sdk)
  // A program that reached a tool without naming `tools` and failed its check: the refusal is the answer.
  if (refusal !== undefined) throw refusal
  if (!outcome.ok) {
    const error = failureBeforeShift(outcome.error, prepared.shift)
    const context: FailureContext = { code, tools: sdk.bindings.map((tool) => tool.binding), pending }
    throw stopped(exec.signal, error.kind === 'aborted', () => describeFailure(error, limits, bridge.logs, context))
  }
  if (pending.length > 0) notes.push(pendingCallsNote(pending, 'returned'))
  if (bridge.concludesTurn) exec.concludeTurn()
  return withNotes({ result: parseDurableJson(outcome.resultJson, 'result'), logs: bridge.logs }, notes)
}

/** The `tools.<binding>` names of registered tool names, as the program called them. */
function bindingsOf(names: readonly string[], sdk: GeneratedSdk): string[] {
  const binding = new Map(sdk.bindings.map((tool) => [tool.name, tool.binding]))
  return names.map((name) => binding.get(name) ?? name)
}

/** The value with its notes, the field left out when there are none. */
function withNotes(value: RunCodeValue, notes: readonly string[]): RunCodeValue {
  return notes.length === 0 ? value : { ...value, notes }
}

/** Whether a cached SDK is a discovery SDK (its bindings carry their declarations). */
function isDiscovery(sdk: GeneratedSdk): boolean {
  return sdk.bindings === sdk.catalog
}

/** A listed set's bindings without their catalog entries, made once per SDK. */
const plainBindings = new WeakMap<GeneratedSdk, readonly SdkBinding[]>()

/**
 * The bindings a run installs. A listed set's catalog (what `tools.$search` and `tools.$describe`
 * answer from, a few hundred characters per tool) goes into the sandbox only for a program that
 * names one of them: copied into every run, it would cost each run of a large set milliseconds.
 */
function runBindings(sdk: GeneratedSdk, code: string): readonly SdkBinding[] {
  if (!isDiscovery(sdk) || code.includes('$search') || code.includes('$describe')) return sdk.bindings
  let plain = plainBindings.get(sdk)
  if (plain === undefined) {
    plain = Object.freeze(sdk.bindings.map(({ binding, name }) => Object.freeze({ binding, name })))
    plainBindings.set(sdk, plain)
  }
  return plain
}

/** The guide and the SDK as a system prompt carries them for `sdk` (see {@link codeModeDeclarations}). */
function systemPromptText(sdk: GeneratedSdk, limits: SandboxLimits, large: LargeToolSetOptions): string {
  return renderRunCodeDescription(sdk, limits, { sdk: isDiscovery(sdk) ? 'discovery' : 'declarations', listingChars: large.listingChars ?? DEFAULT_LISTING_CHARS, audience: 'system-prompt' })
}

/** The system-prompt writer of each `run_code` tool made by {@link createRunCode}. */
const prompts = new WeakMap<object, (tools: readonly ToolDefinition[]) => string>()
function remember(prompt: (tools: readonly ToolDefinition[]) => string, tool: CodeModeTool): CodeModeTool {
  prompts.set(tool, prompt)
  return tool
}

/**
 * What a harness puts in the system prompt for an agent when `run_code` is made with
 * `sdkIn: 'system-prompt'`: the same guide `run_code`'s description carries otherwise (error codes,
 * the limits in force, an example), then the SDK the agent's program can call, or, for a large tool
 * set, its listing and the `tools.$search` / `tools.$describe` lookups. The limits and the large-set
 * options are those of the view's `run_code` transport; a view not in Code Mode gets the defaults.
 * @param agent - whose view (its scope's shadowing and restrictions); `undefined` asks for the
 *   global view. Required, so that leaving it out cannot show a model tools it is denied.
 */
export function codeModeDeclarations(tools: ToolRuntime, agent: Agent | undefined): string {
  const visible = tools.list(agent)
  const runCode = tools.get(RUN_CODE, agent)
  const prompt = runCode === undefined ? undefined : prompts.get(runCode)
  if (prompt !== undefined) return prompt(visible)
  const whole = sdkFor(visible)
  return systemPromptText(usesDiscovery(whole) ? discoverySdk(whole) : whole, resolveLimits(), {})
}
