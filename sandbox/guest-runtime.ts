import { COMPACT_RUNTIME } from './guest-runtime-compact.ts'
import type { EngineFailure, SandboxLimitName, SandboxLimits } from './engine.ts'
import { MAX_CANDIDATES, RELATED_WORDS } from '../src/spelling.ts'

/**
 * The guest-side runtime shared by every engine: the JavaScript source of the prelude that gives a
 * program its `tools` and `console`, plus the host-side helpers that wrap a program and map guest
 * errors back to the program's own positions.
 *
 * ## Contract between an engine and the prelude
 *
 * 1. In a fresh context the engine installs two raw globals:
 *    - `__codemode_call(name, argsJson, decode)` → a Promise of the call's outcome: when the answer
 *      comes, its envelope text, `{"ok":true,"value":<json>}` or `{"ok":false,"message":"…","code":"…"}`
 *      (see {@link successEnvelope}, {@link failureEnvelope}), goes to the prelude's `decode`
 *      (passed on every call) as `decode(envelope, resolve, reject)` with the promise's own resolve
 *      and reject: it calls one of them (resolving with the value, which adopts it if a program
 *      made it a thenable) and never throws.
 *      Once the engine is stopping the run (a count limit broken) it may never settle at all.
 *      The engine must check `name` is one of the run's tool names and `argsJson` is a string;
 *      the prelude guarantees it is JSON text, but the engine is the boundary. (The promise is the
 *      one the program awaits: settling it with the decoded value, rather than the prelude awaiting
 *      the envelope, saves QuickJS an async function frame and a promise hop per call.)
 *    - `__codemode_log(level, text, over)` → nothing; `level` is a {@link LogLevel}, `text` a
 *      string; `over` is true (and `text` empty) when the line does not fit in what is left of
 *      `maxLogBytes`: the engine then stops the run for that limit. The engine counts the text it
 *      gets against the limit too: the guest is not trusted to have done it.
 * 2. The engine evaluates {@link guestRuntimeSource} as a script named {@link RUNTIME_FILENAME}. It
 *    captures every intrinsic it uses, deletes both raw globals, defines a frozen `console`, and its
 *    completion value is the frozen runtime object {@link GuestRuntimeApi}, which the engine keeps on
 *    the host side only (it is never stored where the guest can reach it).
 * 3. The engine calls `init(toolsJson, ...initLimits(limits))` (see {@link toolsJson},
 *    {@link initLimits}): this defines the frozen `tools`. Console lines
 *    and call arguments past those limits are refused inside the guest, before they are copied out.
 * 4. The engine evaluates {@link wrapProgram}(code) as a script named {@link PROGRAM_FILENAME}; its
 *    completion value is the program's promise. The engine waits for it to settle (by the engine's
 *    own means, never the guest's `then`).
 * 5. Fulfilled: `finish(value, maxResultBytes)` returns either the JSON text of the value or a
 *    failure marker (see {@link parseFinish}). Rejected: `describeError(reason)` returns JSON text
 *    `{name, message, stack, code}` that {@link guestFailure} maps to an {@link EngineFailure}. Either call
 *    may itself throw (a hostile getter, an exhausted stack or heap): the engine treats that like a
 *    rejection it cannot describe.
 *
 * ## The JSON boundary inside the guest
 *
 * Arguments and results are serialised INSIDE the guest by one strict walker, so no guest object
 * (getter, Proxy, cycle) ever reaches the host: only text does. Accepted: `null`, booleans, finite
 * numbers other than `-0`, strings, arrays without holes, plain objects (prototype `Object.prototype`
 * or `null`), and `Date` (as its ISO string). Rejected with a `TypeError` naming the path (`$.a[2]`):
 * `undefined` array elements, functions, symbols, BigInt, NaN, ±Infinity, `-0`, cycles, holes, any
 * other object kind (Map, Set, class instances, …) and nesting deeper than {@link MAX_JSON_DEPTH}.
 * An object property whose value is `undefined` is OMITTED, as an absent optional field means the
 * same to a tool schema; `tools.x()` with no argument sends `{}`; a top-level `undefined` result
 * becomes `null`. `toJSON` methods are not called (a function-valued property is rejected).
 *
 * The prelude stays correct when the program later replaces globals or pollutes prototypes
 * (`Object.prototype`, `Array.prototype`, `JSON`, `Promise.prototype.then`, `Symbol.iterator`): it
 * uses only captured references, indexed loops over arrays it owns (with a null prototype), no
 * iteration protocol and no spread of guest values. It hands the native `JSON.stringify` strings
 * only (QuickJS's, given an object, fills its work arrays with ordinary sets that an accessor on
 * `Array.prototype` intercepts), and uses no RegExp (`test` looks up `exec`, which is replaceable).
 */

/** Script name under which engines evaluate the prelude; frames from it never reach the model. */
export const RUNTIME_FILENAME = 'codemode-runtime.js'

/** Script name under which engines evaluate the wrapped program; its frames are the program's own. */
export const PROGRAM_FILENAME = 'program.js'

/** Deepest nesting the guest JSON walker accepts (arguments and results). */
export const MAX_JSON_DEPTH = 200

/**
 * Text placed before the program on its FIRST line, so line N of the program is line N of the
 * script; only columns on line 1 shift, by this prefix's length.
 */
export const PROGRAM_PREFIX = '(async () => {"use strict";'

/** Text placed after the program; the newline keeps a trailing `//` comment from eating it. */
export const PROGRAM_SUFFIX = '\n})()'

/** The script an engine evaluates for `code`: its completion value is the program's promise. */
export function wrapProgram(code: string): string {
  return PROGRAM_PREFIX + code + PROGRAM_SUFFIX
}

/** The runtime object the prelude's completion value exposes to the engine (host side only). */
export interface GuestRuntimeApi {
  /** Define the frozen `tools` from {@link toolsJson}. Call once, before the program runs. */
  init(toolsJson: string): void
  /** The program's value as JSON text, or a failure marker; see {@link parseFinish}. */
  finish(value: unknown, maxResultBytes: number): string
  /** JSON text `{name, message, stack}` describing a rejection reason. */
  describeError(reason: unknown): string
  /**
   * Compile the prelude's deferred part (console formatting, error description) now rather than
   * when a run first needs it: an engine calls it when it has time before a run. Runs no program code.
   */
  loadDeferred(): void
}

/**
 * The `init` argument for a run's bindings: JSON `[[binding, name], …]`, or, when the tools carry
 * their summary and declaration (a large tool set), `[[binding, name, summary, declaration], …]`:
 * then `tools.$search` and `tools.$describe` answer from them inside the guest.
 */
export function toolsJson(tools: readonly { readonly binding: string; readonly name: string; readonly summary?: string; readonly declaration?: string }[]): string {
  // A frozen list (the SDK's, reused by every run of a view) is written once: a large set's catalog is megabytes.
  const cached = Object.isFrozen(tools) ? writtenTools.get(tools) : undefined
  if (cached !== undefined) return cached
  const json = JSON.stringify(tools.map((t) => (t.declaration === undefined ? [t.binding, t.name] : [t.binding, t.name, t.summary ?? '', t.declaration])))
  if (Object.isFrozen(tools) && tools.every((t) => Object.isFrozen(t))) writtenTools.set(tools, json)
  return json
}
const writtenTools = new WeakMap<object, string>()

/** The longest `tools.$search` query read, in UTF-16 code units. */
export const MAX_SEARCH_QUERY_CHARS = 200
/** The most matches one `tools.$search` returns. */
export const MAX_SEARCH_RESULTS = 50
/** The most distinct words of a `tools.$search` query compared (each is one scan of every tool's text). */
export const MAX_SEARCH_QUERY_WORDS = 16

/** The limits `init` takes after the tool list, in its order (contract step 3), for every engine. */
export function initLimits(
  limits: SandboxLimits,
): readonly [maxLogBytes: number, maxArgumentBytes: number, maxTotalArgumentBytes: number, stackSizeBytes: number] {
  return [limits.maxLogBytes, limits.maxArgumentBytes, limits.maxTotalArgumentBytes, limits.stackSizeBytes]
}

/** Envelope text for a successful sub-call; `valueJson` is already JSON text. */
export function successEnvelope(valueJson: string): string {
  return '{"ok":true,"value":' + valueJson + '}'
}

/** The `code` of the error a program gets for a tool result it has no room for. */
export const ANSWER_TOO_LARGE = 'ANSWER_TOO_LARGE'

/** The longest answer text, whatever the memory limit: V8 strings end at 2^29 - 24 code units. */
const MAX_ANSWER_CHARS = 1 << 28
const ENVELOPE_CHARS = successEnvelope('').length

/**
 * The envelope of tool `name`'s result `valueJson`, or, when the guest has no room for it, a failure
 * the program can catch (`code` {@link ANSWER_TOO_LARGE}) naming the memory limit. A result needs
 * room for its text and for the value parsed from it, so the answers on their way into the guest
 * (this one and `waiting` code units of earlier ones) may take half the memory limit. A result is
 * refused before it is copied anywhere: the host never holds more for a program than it can take.
 */
export function answerEnvelope(name: string, valueJson: string, memoryLimitBytes: number, waiting = 0): string {
  const refusal = answerRefusal(name, valueJson.length, memoryLimitBytes, waiting)
  return refusal === undefined ? successEnvelope(valueJson) : failureEnvelope(refusal, ANSWER_TOO_LARGE)
}

/** Why a result of `chars` code units of JSON has no room in the guest ({@link answerEnvelope}), or undefined. */
export function answerRefusal(name: string, chars: number, memoryLimitBytes: number, waiting = 0): string | undefined {
  const room = Math.min(Math.floor(memoryLimitBytes / 2), MAX_ANSWER_CHARS) - waiting
  if (chars + ENVELOPE_CHARS <= room) return undefined
  const result = `the result of ${name} (${chars} characters of JSON)`
  const limit = `the program's memory limit of ${memoryLimitBytes} bytes (memoryLimitBytes)`
  return waiting > 0
    ? `${result} does not fit in ${limit} beside ${waiting} characters of earlier results still on their way to the program`
    : `${result} is too large for ${limit}: a result may take half of it, for its text and its value`
}

/** Envelope text for a failed sub-call; the guest throws an `Error` with this message and `.code`. */
export function failureEnvelope(message: string, code: string): string {
  return JSON.stringify({ ok: false, message, code })
}

/** What `finish` reported, decoded on the host. */
export type FinishOutcome =
  | { readonly ok: true; readonly json: string }
  | { readonly ok: false; readonly message: string; readonly path: string; readonly limit?: 'maxResultBytes' }

/**
 * Decode `finish`'s text. JSON text never starts with `!`, so the prelude marks a failure with a
 * leading `!` followed by JSON `{message, path, limit?}`.
 */
export function parseFinish(text: string): FinishOutcome {
  if (!text.startsWith('!')) return { ok: true, json: text }
  const failure = JSON.parse(text.slice(1)) as { message: string; path: string; limit?: string }
  const message = clipText(String(failure.message), MAX_ERROR_TEXT_CHARS)
  const path = clipText(String(failure.path), MAX_ERROR_TEXT_CHARS)
  return failure.limit === 'maxResultBytes' ? { ok: false, message, path, limit: 'maxResultBytes' } : { ok: false, message, path }
}

/** A guest error as `describeError` (or an engine) reports it. */
export interface RawGuestError {
  readonly name: string
  readonly message: string
  readonly stack?: string
  /** The thrown value's own `code` (a failed tool call's error code), or empty. */
  readonly code?: string
}

/**
 * The limit a guest error stands for, if any: stack exhaustion and heap exhaustion, as QuickJS
 * (`InternalError`) and V8 (`RangeError`) word them. Interrupts are the engine's to classify, since
 * only it knows which deadline fired.
 */
export function limitOfGuestError(error: RawGuestError): SandboxLimitName | undefined {
  if (error.name === 'InternalError' && error.message === 'stack overflow') return 'stackSizeBytes'
  if (error.name === 'RangeError' && error.message === 'Maximum call stack size exceeded') return 'stackSizeBytes'
  if (error.name === 'InternalError' && error.message === 'out of memory') return 'memoryLimitBytes'
  return undefined
}

// V8 marks the frames of async functions awaiting (`at async f (file:1:2)`): the program's await.
const FRAME = /^\s*at (?:async )?(?:(.*?) \()?([^\s():/\\]+):(\d+):(\d+)\)?\s*$/

/** Positions in a script produced by {@link wrapProgram}, mapped to the program's own. */
function programPosition(line: number, column: number): { line: number; column: number } {
  return line === 1 ? { line, column: Math.max(1, column - PROGRAM_PREFIX.length) } : { line, column }
}

/** Frames kept in a guest failure's stack; a runaway recursion would otherwise repeat one line. */
export const MAX_STACK_FRAMES = 10

/**
 * Longest guest-written text (an error message, a result failure's path) a failure carries, in
 * UTF-16 code units; names and frame function names get {@link MAX_NAME_CHARS}. A program that
 * throws `new Error("x".repeat(1e7))` must not hand the model (or the session log) megabytes.
 * The prelude clips to the same figures inside the guest, so the text never crosses whole; the
 * host clips again because the guest is not trusted to have done it.
 */
export const MAX_ERROR_TEXT_CHARS = 4_000
export const MAX_NAME_CHARS = 200
/** Stack text the prelude sends for a guest error (frames are cut to {@link MAX_STACK_FRAMES} on the host). */
export const MAX_STACK_TEXT_CHARS = 16_000

/** The note {@link clipText} (and the prelude's `clip`) puts after the `max` code units they keep. */
const CLIPPED_NOTE = /^\.\.\. \(\d{1,16} more characters\)$/

/**
 * `text` cut to `max` code units, saying how much was left out. Text the prelude already cut to the
 * same `max` is left as it is, so its count of what was left out stays right; whatever the guest
 * wrote there, it is never longer than `max` and the note.
 */
export function clipText(text: string, max: number): string {
  if (text.length <= max || CLIPPED_NOTE.test(text.slice(max))) return text
  return `${text.slice(0, max)}... (${text.length - max} more characters)`
}

/**
 * Map a raw guest error to a `guest` failure: keep only frames in {@link PROGRAM_FILENAME} (runtime,
 * native, host and wrapper frames are dropped), rewrite them to program positions, and take
 * line/column from the first of them. `code` is the program (to drop the wrapper's closing line);
 * `position` is a script position for errors without frames (a `SyntaxError` in some engines).
 */
export function guestFailure(
  error: RawGuestError,
  options: { readonly code?: string; readonly position?: { readonly line: number; readonly column: number } } = {},
): Extract<EngineFailure, { kind: 'guest' }> {
  const lastLine = options.code === undefined ? Number.POSITIVE_INFINITY : countLines(options.code)
  const frames: string[] = []
  let kept = 0
  let first: { line: number; column: number } | undefined
  let beyond = false
  for (const raw of (error.stack ?? '').split('\n')) {
    const match = FRAME.exec(raw)
    if (match === null || match[2] !== PROGRAM_FILENAME) continue
    const at = programPosition(Number(match[3]), Number(match[4]))
    if (at.line > lastLine) {
      beyond = true
      continue
    }
    first ??= at
    kept += 1
    if (kept > MAX_STACK_FRAMES) continue
    const fn = match[1] === undefined || match[1] === '' || match[1] === '<anonymous>' || match[1] === '<eval>' ? '' : clipText(match[1], MAX_NAME_CHARS)
    frames.push(fn === '' ? `    at program:${at.line}:${at.column}` : `    at ${fn} (program:${at.line}:${at.column})`)
  }
  if (kept > MAX_STACK_FRAMES) frames.push(`    ... ${kept - MAX_STACK_FRAMES} more frames`)
  if (first === undefined && options.position !== undefined) {
    const at = programPosition(options.position.line, options.position.column)
    first = { line: Math.min(at.line, lastLine), column: at.column }
  }
  // A syntax error found only at the wrapper's closing line (an unclosed brace) belongs to the end.
  if (first === undefined && beyond) first = { line: lastLine, column: 1 }
  const name = error.name === '' ? 'Error' : clipText(error.name, MAX_NAME_CHARS)
  const code = typeof error.code !== 'string' || error.code === '' ? undefined : clipText(error.code, MAX_NAME_CHARS)
  const base = { kind: 'guest' as const, name, message: clipText(error.message, MAX_ERROR_TEXT_CHARS), ...(code === undefined ? {} : { code }) }
  const withPos = first === undefined ? base : { ...base, line: first.line, column: first.column }
  return frames.length === 0 ? withPos : { ...withPos, stack: frames.join('\n') }
}

function countLines(code: string): number {
  let lines = 1
  for (let i = 0; i < code.length; i++) if (code.charCodeAt(i) === 10) lines += 1
  return lines
}

/**
 * The prelude source. Plain ES2020 JavaScript (no template literals, so it can live in this raw
 * string; no regular expression literals, which compact-script.ts does not take). It is an
 * expression script: its completion value is the {@link GuestRuntimeApi}. Returned without its
 * comments and indentation (every line where it was): a QuickJS worker compiles it for every run.
 */
export function guestRuntimeSource(): string {
  compactPrelude ??= compacted(PRELUDE, COMPACT_RUNTIME.prelude).replace(DEFERRED_SLOT, () => JSON.stringify(deferredRuntimeSource()))
  return compactPrelude
}
let compactPrelude: string | undefined

/**
 * The source of the prelude's deferred part, compacted: {@link guestRuntimeSource} holds it as a
 * string literal, which the guest compiles only when it needs it (see `late` in the prelude).
 */
export function deferredRuntimeSource(): string {
  compactDeferred ??= compacted(DEFERRED, COMPACT_RUNTIME.deferred)
  return compactDeferred
}
let compactDeferred: string | undefined

/**
 * The prelude's two parts as written, for scripts/compact-guest-runtime.ts, which compacts them
 * ahead of time (compact-script.ts parses with TypeScript, which a run must not load).
 */
export function runtimeSourceParts(): { readonly prelude: string; readonly deferred: string } {
  return { prelude: PRELUDE, deferred: DEFERRED }
}

/** A fingerprint of a source text (FNV-1a over its UTF-16 code units, and its length). */
export function sourceFingerprint(source: string): string {
  let hash = 0x811c9dc5
  for (let i = 0; i < source.length; i++) hash = Math.imul(hash ^ source.charCodeAt(i), 0x01000193)
  return `${(hash >>> 0).toString(16)}:${source.length}`
}

/**
 * `source` as compacted ahead of time, or as it is when the stored text was made from another
 * version of it (an edit not yet followed by `npm run compact-runtime`: correct, only slower to
 * compile; a test names the command).
 */
function compacted(source: string, stored: { readonly fingerprint: string; readonly text: string }): string {
  return stored.fingerprint === sourceFingerprint(source) ? stored.text : source
}

/** Where the prelude holds the deferred part's source, as a string literal. */
const DEFERRED_SLOT = 'DEFERRED_SOURCE_TEXT'

/**
 * What the deferred part of the prelude (DEFERRED) uses of the prelude's captured intrinsics and
 * helpers: the prelude hands them over in one frozen object, DEFERRED takes each back by name.
 */
const KIT = [
  'JSONstringify', 'ObjectIs', 'ObjectKeys', 'ObjectSetPrototypeOf', 'ObjectFreeze', 'ReflectApply', 'ReflectHas',
  'ArrayIsArray', 'StringCtor', 'SymbolToString', 'DateToISOString', 'StringSlice', 'StringIndexOf',
  'StringStartsWith', 'StringCharCodeAt', 'list', 'join', 'clip', 'tagOf', 'MAX_TEXT', 'MAX_NAME', 'MAX_STACK', 'MAX_CUT',
  'RangeErrorCtor', 'ReflectGetOwnPropertyDescriptor', 'withCode',
  'StringToLowerCase', 'ObjectDefineProperty', 'TypeErrorCtor',
] as const

const PRELUDE = String.raw`(function () {
'use strict';
// QuickJS lets a program redefine the global object's non-configurable properties (undefined,
// NaN, Infinity, tools): the runtime never reads them from the global object.
var undefined = void 0;
var g = globalThis;
var rawCall = g.__codemode_call;
var rawLog = g.__codemode_log;
delete g.__codemode_call;
delete g.__codemode_log;
if (typeof rawCall !== 'function' || typeof rawLog !== 'function') throw new Error('codemode runtime: host functions missing');
// WebAssembly memory is allocated outside the engine's heap limit (isolated-vm does not count it):
// a program could commit gigabytes of host memory. No program needs it.
delete g.WebAssembly;
// QuickJS (0.32's build, without SharedArrayBuffer allocator hooks) lets grow() on a growable
// SharedArrayBuffer extend its length past the memory it allocated: a window onto the WASM heap,
// the interpreter's live objects and what earlier runs left in it. A run has no other thread to
// share memory with: neither engine offers it.
delete g.SharedArrayBuffer;
delete g.Atomics;
// A FinalizationRegistry's callbacks run whenever the collector gets to them, after the program
// that registered them may have ended: in an isolated-vm isolate that runs the tenant's next
// program (measured: they ran while it sat idle, then during the next context's collections).
// A program's code runs during its own run only. WeakRef stays: it calls nothing back.
delete g.FinalizationRegistry;
// The same build builds a typed array over a buffer detached while it is constructed (transfer()
// from a prototype getter read by Reflect.construct) with the old length and a null data pointer:
// a view of the whole WASM memory from address 0. Shrinking a resizable buffer leaves similar
// over-reads. Without transfer and resize no buffer can be detached or shrunk; a program loses
// nothing it needs (slice copies).
var ArrayBufferProto = ArrayBuffer.prototype;
delete ArrayBufferProto.transfer;
delete ArrayBufferProto.transferToFixedLength;
delete ArrayBufferProto.resize;

var JSONparse = JSON.parse;
var PromiseCtor = Promise;
var PromiseReject = Promise.reject;
var JSONstringify = JSON.stringify;
var ObjectKeys = Object.keys;
var ObjectGetPrototypeOf = Object.getPrototypeOf;
var ObjectSetPrototypeOf = Object.setPrototypeOf;
var ObjectFreeze = Object.freeze;
var ObjectDefineProperty = Object.defineProperty;
var ObjectCreate = Object.create;
var ObjectIs = Object.is;
var ObjectProto = Object.prototype;
var ObjectProtoToString = Object.prototype.toString;
var ObjectProtoHasOwn = Object.prototype.hasOwnProperty;
var ArrayIsArray = Array.isArray;
var ArrayProtoJoin = Array.prototype.join;
var ReflectApply = Reflect.apply;
var ReflectHas = Reflect.has;
var ReflectGetOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
var ErrorCtor = Error;
var TypeErrorCtor = TypeError;
var RangeErrorCtor = RangeError;
var ObjectCtor = Object;
var ProxyCtor = Proxy;
var StringCtor = String;
var DateProto = Date.prototype;
var DateToISOString = Date.prototype.toISOString;
var SymbolToString = Symbol.prototype.toString;
var StringSlice = String.prototype.slice;
var StringIndexOf = String.prototype.indexOf;
var StringStartsWith = String.prototype.startsWith;
var StringCharCodeAt = String.prototype.charCodeAt;
var StringToLowerCase = String.prototype.toLowerCase;
var MAX_DEPTH = ${MAX_JSON_DEPTH};
var MAX_TEXT = ${MAX_ERROR_TEXT_CHARS};
var MAX_NAME = ${MAX_NAME_CHARS};
var MAX_STACK = ${MAX_STACK_TEXT_CHARS};

// The same build allocates the result of Array.prototype.toReversed/toSorted/toSpliced/with with
// every slot counted and none written, then reads the elements through program code (getters,
// Proxy traps): a GC started meanwhile follows whatever bytes the program left in freed memory as
// object pointers, a read/write primitive on the whole heap. The elements are read into a private
// dense array first, and the native method runs on that copy, whose fast path runs no program code
// while its result is incomplete (the index and start arguments are converted before it allocates).
var ArrayProto = Array.prototype;
function denseCopy(o) {
  if (o === null || o === undefined) throw new TypeErrorCtor('not an object');
  o = ObjectCtor(o);
  var n = +o.length;
  n = n > 0 ? n - n % 1 : 0;
  if (n > 4294967295) throw new RangeErrorCtor('invalid array length');
  var a = list();
  for (var i = 0; i < n; i++) a[i] = o[i];
  return a;
}
function rebuild(name, length) {
  var native = ArrayProto[name];
  var fn = function () {
    var f = arguments[0];
    if (length === 1 && f !== undefined && typeof f !== 'function') throw new TypeErrorCtor('not a function');
    return ReflectApply(native, denseCopy(this), arguments);
  };
  ObjectDefineProperty(fn, 'name', { __proto__: null, value: name });
  ObjectDefineProperty(fn, 'length', { __proto__: null, value: length });
  ObjectDefineProperty(ArrayProto, name, { __proto__: null, value: fn, writable: true, configurable: true });
}
rebuild('toReversed', 0);
rebuild('toSorted', 1);
rebuild('toSpliced', 2);
rebuild('with', 2);

function hasOwn(o, k) { return ReflectApply(ObjectProtoHasOwn, o, [k]); }
// Guest text bound for the host (error messages, paths, names): never megabytes. A string far
// longer than any text shown is not cut but described: in V8 a long string is often a rope
// (s = s + s) that slicing would first flatten, whole, past the heap limit.
var MAX_CUT = 1 << 24;
function clip(s, max) {
  if (s.length <= max) return s;
  if (s.length > MAX_CUT) return '(a text of ' + s.length + ' characters, not shown)';
  return ReflectApply(StringSlice, s, [0, max]) + '... (' + (s.length - max) + ' more characters)';
}
function list() { var a = []; ObjectSetPrototypeOf(a, null); return a; }
function join(parts, n, sep) { parts.length = n; return ReflectApply(ArrayProtoJoin, parts, [sep]); }
// No RegExp here or in stackText: RegExp.prototype.test looks up exec, which a program can replace.
// Whether s matches /^[A-Za-z_$][A-Za-z0-9_$]*$/.
function isIdentifier(s) {
  var len = s.length;
  if (len === 0) return false;
  for (var i = 0; i < len; i++) {
    var c = ReflectApply(StringCharCodeAt, s, [i]);
    if (!((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36 || (i > 0 && c >= 48 && c <= 57))) return false;
  }
  return true;
}
function keyPath(path, key) {
  if (key.length > MAX_NAME) key = clip(key, MAX_NAME);
  return isIdentifier(key) ? path + '.' + key : path + '[' + JSONstringify(key) + ']';
}
function tagOf(v) {
  try { return ReflectApply(ObjectProtoToString, v, []); } catch (e) { return '[object Object]'; }
}

// Strict JSON writer. Throws {path, what} records (plain objects) that callers turn into errors.
// The path of the value at depth d is keys[0..d) (an array index is a number, a property name a
// string): it is spelled out only when something is rejected.
function Reject(keys, depth, what) {
  var path = '$';
  for (var i = 0; i < depth; i++) path = typeof keys[i] === 'number' ? path + '[' + keys[i] + ']' : keyPath(path, keys[i]);
  this.path = path; this.what = what;
}
ObjectSetPrototypeOf(Reject.prototype, null);

// Writes value as JSON text into parts from index n and returns the next index. items[d] is the
// container being written at depth d (to find cycles), keys[d] the key under which depth d + 1 is
// written (for paths). The native stringify only ever quotes strings: given an object, QuickJS's
// builds its work lists with ordinary array writes, which a program can hook on Array.prototype.
// Quoted keys ("key":) by key: a program sends the same few keys again and again, and quoting one
// costs a native stringify. Bounded; a key the cache cannot take is quoted each time.
var QUOTED = ObjectCreate(null), quotedCount = 0;
function quoteKey(key) {
  var quoted = QUOTED[key];
  if (quoted !== undefined) return quoted;
  quoted = JSONstringify(key) + ':';
  if (quotedCount < 1000 && key.length <= 64) { QUOTED[key] = quoted; quotedCount = quotedCount + 1; }
  return quoted;
}

function write(value, depth, n, parts, items, keys) {
  var t = typeof value;
  if (t === 'string') { parts[n] = JSONstringify(value); return n + 1; }
  if (t === 'number') {
    // value - value is 0 exactly for finite numbers.
    if (value - value !== 0) throw new Reject(keys, depth, value !== value ? 'NaN' : (value > 0 ? 'Infinity' : '-Infinity'));
    if (value === 0 && 1 / value < 0) throw new Reject(keys, depth, '-0');
    parts[n] = '' + value; return n + 1;
  }
  if (value === null) { parts[n] = 'null'; return n + 1; }
  if (t === 'boolean') { parts[n] = value ? 'true' : 'false'; return n + 1; }
  if (t === 'undefined') throw new Reject(keys, depth, 'undefined');
  if (t === 'function') throw new Reject(keys, depth, 'a function');
  if (t === 'symbol') throw new Reject(keys, depth, 'a symbol');
  if (t === 'bigint') throw new Reject(keys, depth, 'a BigInt');
  if (depth >= MAX_DEPTH) throw new Reject(keys, depth, 'nesting deeper than ' + MAX_DEPTH + ' levels');
  for (var s = 0; s < depth; s++) if (items[s] === value) throw new Reject(keys, depth, 'a circular reference');
  items[depth] = value;
  if (ArrayIsArray(value)) {
    var len = value.length;
    parts[n] = '['; n = n + 1;
    for (var i = 0; i < len; i++) {
      keys[depth] = i;
      // The in operator is HasProperty, as Reflect.has, without a call.
      if (!(i in value)) throw new Reject(keys, depth + 1, 'a hole in a sparse array');
      if (i > 0) { parts[n] = ','; n = n + 1; }
      // Strings and non-zero finite numbers are written in place: a call per leaf is a good part
      // of the cost of a flat value. Everything else (and 0, which may be -0) goes through write.
      var item = value[i];
      if (typeof item === 'string') { parts[n] = JSONstringify(item); n = n + 1; }
      else if (typeof item === 'number' && item - item === 0 && item !== 0) { parts[n] = '' + item; n = n + 1; }
      else n = write(item, depth + 1, n, parts, items, keys);
    }
    parts[n] = ']'; return n + 1;
  }
  var proto = ObjectGetPrototypeOf(value);
  if (proto === DateProto) {
    var iso;
    try { iso = ReflectApply(DateToISOString, value, []); } catch (e) { throw new Reject(keys, depth, 'an invalid Date'); }
    parts[n] = JSONstringify(iso); return n + 1;
  }
  if (proto !== ObjectProto && proto !== null) {
    var tag = tagOf(value);
    throw new Reject(keys, depth, tag === '[object Object]' ? 'a class instance (only plain objects are JSON)' : 'a ' + ReflectApply(StringSlice, tag, [8, -1]) + ' (not JSON)');
  }
  var names = ObjectKeys(value);
  var klen = names.length;
  var first = true;
  parts[n] = '{'; n = n + 1;
  for (var k = 0; k < klen; k++) {
    var key = names[k];
    keys[depth] = key;
    var v = value[key];
    // An absent optional field means the same to a tool schema.
    if (v === undefined) continue;
    if (!first) { parts[n] = ','; n = n + 1; }
    first = false;
    parts[n] = quoteKey(key); n = n + 1;
    // As for array elements above.
    if (typeof v === 'string') { parts[n] = JSONstringify(v); n = n + 1; }
    else if (typeof v === 'number' && v - v === 0 && v !== 0) { parts[n] = '' + v; n = n + 1; }
    else n = write(v, depth + 1, n, parts, items, keys);
  }
  parts[n] = '}'; return n + 1;
}

// Returns JSON text or a Reject. The work lists are kept for the next call; a call that starts
// while they are in use (a getter in the argument calling a tool) gets its own.
var spareParts = list(), spareItems = list(), spareKeys = list();
function toJson(value) {
  var parts = spareParts, items = spareItems, keys = spareKeys;
  if (parts === null) { parts = list(); items = list(); keys = list(); } else { spareParts = null; spareItems = null; spareKeys = null; }
  try {
    return join(parts, write(value, 0, 0, parts, items, keys), '');
  } catch (e) {
    if (e instanceof Reject) return e;
    throw e;
  } finally {
    // Hold no guest value or text until the next call.
    parts.length = 0; items.length = 0; keys.length = 0;
    spareParts = parts; spareItems = items; spareKeys = keys;
  }
}

function rejectText(r) { return r.what + ' at ' + clip(r.path, MAX_TEXT); }

// Console formatting and error description (DEFERRED below) are not compiled with the rest: a
// QuickJS worker compiles the prelude for every run, and most runs need neither. They are compiled
// the first time a run needs them, or by loadDeferred when the engine has a moment before the run,
// with the eval captured here (in the global scope, so they get what they use through the kit).
var evalGlobal = g.eval;
var kit = ObjectFreeze({ __proto__: null, ${KIT.map((name) => `${name}: ${name}`).join(', ')} });
var DEFERRED_SOURCE = DEFERRED_SOURCE_TEXT;
var deferred = null;
function late() {
  if (deferred === null) deferred = evalGlobal(DEFERRED_SOURCE)(kit);
  return deferred;
}

// Console characters the run may still write, each line counted with its break, as the host
// counts them (set by init). A line that does not fit never crosses: the host hears only that the
// limit broke, since copying it out could cost gigabytes (a doubled string is a cheap rope here).
var logRoom = 0;
function logger(level) {
  return function () {
    if (logRoom < 0) return;
    var text = late().format(arguments);
    logRoom = logRoom - text.length - 1;
    if (logRoom < 0) rawLog(level, '', true);
    else rawLog(level, text, false);
  };
}
var consoleObject = ObjectCreate(ObjectProto);
consoleObject.log = logger('log');
consoleObject.info = logger('info');
consoleObject.warn = logger('warn');
consoleObject.error = logger('error');
consoleObject.debug = logger('log');
ObjectDefineProperty(g, 'console', { __proto__: null, value: ObjectFreeze(consoleObject), writable: true, configurable: true, enumerable: false });

function withCode(err, code) {
  ObjectDefineProperty(err, 'code', { __proto__: null, value: code, writable: true, configurable: true, enumerable: true });
  return err;
}

// The lines of a stack that are not this runtime's (or the engine glue's) own frames.
function programFrames(stack) {
  var pos = 0, len = stack.length, out = '';
  while (pos < len) {
    var end = ReflectApply(StringIndexOf, stack, ['\n', pos]);
    if (end < 0) end = len;
    var line = ReflectApply(StringSlice, stack, [pos, end]);
    if (ReflectApply(StringIndexOf, line, ['codemode-']) < 0) out = out === '' ? line : out + '\n' + line;
    pos = end + 1;
  }
  return out;
}

// Settles a call's promise from its envelope. A failed call rejects with an Error whose stack
// shows where the program awaited it, so an uncaught one is reported at the program's own line.
// QuickJS records a stack when an error that has none is thrown, which first happens at that
// await: it is made without one, and handed to reject (a throw here would record this frame).
// V8 records the awaiting frames when it is made (async stack traces), after this runtime's own,
// which are dropped.
function decode(envelope, resolve, reject) {
  var e;
  try { e = JSONparse(envelope); } catch (x) { reject(late().unreadable(x, stackLimit)); return; }
  if (e.ok === true) {
    resolve(e.value);
    return;
  }
  var err = withCode(new ErrorCtor(typeof e.message === 'string' ? e.message : 'tool call failed'), typeof e.code === 'string' ? e.code : 'TOOL_FAILED');
  var stack = err.stack;
  if (typeof stack === 'string') {
    if (ReflectApply(StringStartsWith, stack, ['    at '])) delete err.stack;
    else err.stack = programFrames(stack);
  }
  reject(err);
}

// Argument characters one call may send and all calls of the run together (set by init). An
// argument past them is refused here, before it is copied out: the host checks again.
var maxArgumentChars = 0, maxTotalArgumentChars = 0, argumentRoom = 0;
// The program's stack limit, named when an answer is too deep to parse (set by init).
var stackLimit = 0;

function makeTool(binding, name) {
  // Not an async function: it hands back the engine's promise itself (see the contract above).
  // Whatever goes wrong before that (an argument that is not JSON, a getter or Proxy trap in it that
  // throws, an exhausted stack) still rejects the call's promise, as an async function's would,
  // rather than throwing where the program calls.
  var fn = function (args) {
    try {
      var json = '{}';
      if (args !== undefined) {
        json = toJson(args);
        if (typeof json !== 'string') throw withCode(new TypeErrorCtor('tools.' + binding + ': the argument is not JSON: ' + rejectText(json)), 'INVALID_ARGS');
      }
      if (json.length > maxArgumentChars) {
        throw withCode(new ErrorCtor('the arguments of ' + JSONstringify(name) + ' are ' + json.length + ' characters of JSON; the limit is ' + maxArgumentChars + ' (maxArgumentBytes): pass less data per call'), 'INVALID_ARGS');
      }
      if (json.length > argumentRoom) {
        throw withCode(new ErrorCtor('the arguments of ' + JSONstringify(name) + " would take this program's tool calls past " + (maxTotalArgumentChars) + ' characters of JSON arguments in all (maxTotalArgumentBytes): pass less data'), 'INVALID_ARGS');
      }
      argumentRoom = argumentRoom - json.length;
      return rawCall(name, json, decode);
    } catch (error) {
      return ReflectApply(PromiseReject, PromiseCtor, [error]);
    }
  };
  ObjectDefineProperty(fn, 'name', { __proto__: null, value: binding });
  return fn;
}

// Names an ordinary object answers to; other unknown names get a helpful error.
var INHERITED = ObjectCreate(null);
var protoKeys = ['constructor', 'toString', 'toLocaleString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', 'propertyIsEnumerable', 'then', 'toJSON', 'inspect', '__proto__'];
for (var p = 0; p < protoKeys.length; p++) INHERITED[protoKeys[p]] = true;

var initialised = false;
function init(toolsJson, maxLogChars, maxArgumentsChars, maxAllArgumentsChars, stackSizeBytes) {
  if (initialised) throw new ErrorCtor('codemode runtime: init called twice');
  initialised = true;
  stackLimit = stackSizeBytes;
  logRoom = maxLogChars;
  maxArgumentChars = maxArgumentsChars;
  maxTotalArgumentChars = maxAllArgumentsChars;
  argumentRoom = maxAllArgumentsChars;
  var pairs = JSONparse(toolsJson);
  var target = ObjectCreate(ObjectProto);
  var names = list(); var fns = list(); var count = pairs.length;
  for (var i = 0; i < count; i++) {
    var binding = pairs[i][0];
    fns[i] = makeTool(binding, pairs[i][1]);
    ObjectDefineProperty(target, binding, { __proto__: null, value: fns[i], enumerable: true });
    names[i] = binding;
  }
  ObjectFreeze(target);
  // The handler has no prototype, so a trap cannot be planted on Object.prototype.
  var unknown = new ProxyCtor(target, ObjectFreeze({ __proto__: null,
    get: function (t, key) {
      if (typeof key === 'symbol' || hasOwn(t, key) || INHERITED[key] === true) return t[key];
      throw withCode(new TypeErrorCtor(late().unknownTool(key, names, count)), 'UNKNOWN_TOOL');
    },
  }));
  // The tools as own properties, found without a trap; only other names reach the proxy (which
  // answers every name as the tools object did before it had this front).
  var tools = ObjectCreate(unknown);
  for (var j = 0; j < count; j++) ObjectDefineProperty(tools, names[j], { __proto__: null, value: fns[j], enumerable: true });
  // A large tool set's lookups (deferred part): they answer from what init got, never from the host.
  if (count > 0 && pairs[0].length > 2) late().lookups(tools, pairs, count);
  ObjectFreeze(tools);
  ObjectDefineProperty(g, 'tools', { __proto__: null, value: tools, writable: false, configurable: false, enumerable: false });
}

function finish(value, maxResultBytes) {
  var json = value === undefined ? 'null' : toJson(value);
  if (typeof json !== 'string') {
    return '!{"message":' + JSONstringify('the returned value is not JSON: ' + rejectText(json)) + ',"path":' + JSONstringify(clip(json.path, MAX_TEXT)) + '}';
  }
  if (json.length > maxResultBytes) {
    return '!{"message":' + JSONstringify('the returned value is ' + json.length + ' characters of JSON, more than the limit of ' + maxResultBytes) + ',"path":"$","limit":"maxResultBytes"}';
  }
  return json;
}

function describeError(reason) { return late().describeError(reason); }
function loadDeferred() { late(); }

return ObjectFreeze({ init: init, finish: finish, describeError: describeError, loadDeferred: loadDeferred });
})()`



/**
 * The deferred part of the prelude: console formatting and error description, compiled in the
 * guest when first needed (see `late` in PRELUDE). An expression script whose value is a factory
 * of `{ format, describeError, unreadable }`; it runs in the global scope, so every name it uses must be its
 * own or come from the kit: a global it read would be the program's.
 */
/** The related words of src/spelling.ts as a guest object literal without a prototype. */
function relatedWordsSource(): string {
  return `{ __proto__: null, ${Object.entries(RELATED_WORDS).map(([word, related]) => `${JSON.stringify(word)}: ${JSON.stringify(related)}`).join(', ')} }`
}

const DEFERRED = String.raw`(function (kit) {
'use strict';
var undefined = void 0;
var ${KIT.map((name) => `${name} = kit.${name}`).join(', ')};

// Lenient console formatting: never throws, marks what JSON cannot hold.
function show(v, depth, seen) {
  var t = typeof v;
  if (t === 'string') return depth === 0 ? v : JSONstringify(v);
  if (v === null) return 'null';
  if (t === 'undefined') return 'undefined';
  if (t === 'number') return ObjectIs(v, -0) ? '-0' : '' + v;
  if (t === 'boolean') return v ? 'true' : 'false';
  if (t === 'bigint') return '' + v + 'n';
  if (t === 'symbol') return ReflectApply(SymbolToString, v, []);
  if (t === 'function') { var fname = ''; try { fname = typeof v.name === 'string' ? v.name : ''; } catch (e) {} return fname ? '[Function: ' + fname + ']' : '[Function]'; }
  for (var s = 0; s < seen.n; s++) if (seen.items[s] === v) return '[Circular]';
  var tag = tagOf(v);
  if (tag === '[object Error]') {
    try { return StringCtor(v.name) + ': ' + StringCtor(v.message); } catch (e) { return '[Error]'; }
  }
  if (depth > 4) return ArrayIsArray(v) ? '[Array]' : '[Object]';
  seen.items[seen.n] = v; seen.n = seen.n + 1;
  var parts = list(); var n = 0; var out;
  if (ArrayIsArray(v)) {
    var len = v.length;
    var shown = len > 100 ? 100 : len;
    for (var i = 0; i < shown; i++) { parts[n] = ReflectHas(v, i) ? show(v[i], depth + 1, seen) : '<empty>'; n = n + 1; }
    if (len > shown) { parts[n] = '... ' + (len - shown) + ' more'; n = n + 1; }
    out = '[' + join(parts, n, ',') + ']';
  } else if (tag === '[object Date]') {
    try { out = ReflectApply(DateToISOString, v, []); } catch (e) { out = 'Invalid Date'; }
  } else {
    var keys = ObjectKeys(v);
    var klen = keys.length > 100 ? 100 : keys.length;
    for (var k = 0; k < klen; k++) { parts[n] = JSONstringify(keys[k]) + ':' + show(v[keys[k]], depth + 1, seen); n = n + 1; }
    if (keys.length > klen) { parts[n] = '"...":"' + (keys.length - klen) + ' more"'; n = n + 1; }
    out = (tag === '[object Object]' ? '' : ReflectApply(StringSlice, tag, [8, -1]) + ' ') + '{' + join(parts, n, ',') + '}';
  }
  seen.n = seen.n - 1;
  return out;
}

function format(args) {
  var parts = list(); var len = args.length;
  for (var i = 0; i < len; i++) {
    var text;
    try { var seen = { items: list(), n: 0 }; ObjectSetPrototypeOf(seen, null); text = show(args[i], 0, seen); } catch (e) { text = '[unprintable]'; }
    parts[i] = text;
  }
  return join(parts, len, ' ');
}

function text(v, fallback) {
  var s;
  try { s = typeof v === 'string' ? v : (v === undefined ? fallback : StringCtor(v)); } catch (e) { return fallback; }
  return typeof s === 'string' ? s : fallback;
}

// Whether c is white space or a line terminator, as \s has it.
function isSpace(c) {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}
// Whether line matches /^\s*at /.
function isFrameLine(line) {
  var i = 0, len = line.length;
  while (i < len && isSpace(ReflectApply(StringCharCodeAt, line, [i]))) i = i + 1;
  return ReflectApply(StringStartsWith, line, ['at ', i]);
}
// Only the frame lines of a stack, each at most a few hundred characters (a giant function name
// keeps its head and the position at its end), at most MAX_STACK in all. V8 starts a stack with
// "name: message"; that header is skipped whole, so lines of the message never pass for frames.
function stackText(s, name, message) {
  // A stack the program replaced with a giant string is not read (see clip).
  if (s.length > MAX_CUT) return '';
  var pos = 0, len = s.length, out = '';
  if (ReflectApply(StringStartsWith, s, [name]) && ReflectApply(StringStartsWith, s, [': ', name.length]) &&
      ReflectApply(StringStartsWith, s, [message, name.length + 2])) {
    pos = name.length + 2 + message.length;
  } else if (message === '' && ReflectApply(StringStartsWith, s, [name])) {
    pos = name.length;
  }
  while (pos < len && out.length < MAX_STACK) {
    var end = ReflectApply(StringIndexOf, s, ['\n', pos]);
    if (end < 0) end = len;
    var line = end - pos > 2 * MAX_NAME
      ? ReflectApply(StringSlice, s, [pos, pos + MAX_NAME]) + '...' + ReflectApply(StringSlice, s, [end - MAX_NAME, end])
      : ReflectApply(StringSlice, s, [pos, end]);
    if (isFrameLine(line)) out = out + line + '\n';
    pos = end + 1;
  }
  return out;
}

function describeError(reason) {
  var name = 'Error', message = '', stack = '', code = '';
  var isObject = (typeof reason === 'object' && reason !== null) || typeof reason === 'function';
  if (isObject) {
    try { name = text(reason.name, 'Error'); } catch (e) {}
    try { message = text(reason.message, ''); } catch (e) {}
    try { var c = reason.code; if (typeof c === 'string') code = clip(c, MAX_NAME); } catch (e) {}
    try { stack = stackText(text(reason.stack, ''), name, message); } catch (e) {}
    name = clip(name, MAX_NAME);
    message = clip(message, MAX_TEXT);
    if (tagOf(reason) !== '[object Error]' && message === '') {
      var seen = { items: list(), n: 0 }; ObjectSetPrototypeOf(seen, null);
      try { message = clip('Uncaught ' + show(reason, 1, seen), MAX_TEXT); } catch (e) { message = 'Uncaught exception'; }
    }
  } else {
    var seen2 = { items: list(), n: 0 }; ObjectSetPrototypeOf(seen2, null);
    // Clipped before it is quoted: a thrown 16 MB string must not be copied whole again.
    message = clip('Uncaught ' + show(typeof reason === 'string' ? clip(reason, MAX_TEXT) : reason, 1, seen2), MAX_TEXT);
  }
  return '{"name":' + JSONstringify(name) + ',"message":' + JSONstringify(message) + ',"stack":' + JSONstringify(stack) + ',"code":' + JSONstringify(code) + '}';
}

// A sub-call answer the prelude could not parse: QuickJS parses recursively, so a deep enough answer
// exhausts the program's stack; that is the program's error to catch. Anything else (an exhausted
// heap) goes on to the engine, which stops the run for it.
function unreadable(x, stackLimit) {
  var d = x !== null && typeof x === 'object' ? ReflectGetOwnPropertyDescriptor(x, 'message') : undefined;
  if (d === undefined || (d.value !== 'stack overflow' && d.value !== 'Maximum call stack size exceeded')) throw x;
  return withCode(new RangeErrorCtor('the tool result is nested too deeply to be read within the program\'s stack limit of ' + stackLimit + ' bytes (stackSizeBytes)'), 'ANSWER_TOO_DEEP');
}

// tools.$search: the catalog entries ([binding, name, summary, declaration]) that best match the
// words of query, by name first, then summary, then declaration; ties keep catalog (name) order.
var MAX_QUERY = ${MAX_SEARCH_QUERY_CHARS}, MAX_QUERY_WORDS = ${MAX_SEARCH_QUERY_WORDS}, MAX_RESULTS = ${MAX_SEARCH_RESULTS};
var lowered = null;
function lower(catalog, i, field) {
  if (lowered === null) { lowered = list(); lowered.length = catalog.length * 4; }
  var at = i * 4 + field;
  var v = lowered[at];
  if (v === undefined) { v = ReflectApply(StringToLowerCase, catalog[i][field], []); lowered[at] = v; }
  return v;
}
function queryWords(query) {
  var q = ReflectApply(StringToLowerCase, query.length > MAX_QUERY ? ReflectApply(StringSlice, query, [0, MAX_QUERY]) : query, []);
  var words = list(), n = 0, start = -1, len = q.length;
  for (var i = 0; i <= len; i++) {
    var c = i < len ? ReflectApply(StringCharCodeAt, q, [i]) : 32;
    var word = (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 36 || c >= 128;
    if (word && start < 0) start = i;
    else if (!word && start >= 0) {
      // Each distinct word once, at most MAX_QUERY_WORDS: every word is one scan of every tool's text.
      var w = ReflectApply(StringSlice, q, [start, i]), seen = false;
      for (var k = 0; k < n; k++) if (words[k] === w) { seen = true; break; }
      if (!seen) { words[n] = w; n = n + 1; }
      start = -1;
      if (n === MAX_QUERY_WORDS) break;
    }
  }
  words.length = n;
  return words;
}
function contains(text, word) { return ReflectApply(StringIndexOf, text, [word]) >= 0; }
function score(catalog, i, words) {
  var total = 0;
  for (var w = 0; w < words.length; w++) {
    var word = words[w], binding = lower(catalog, i, 0), name = lower(catalog, i, 1);
    if (binding === word || name === word) total = total + 8;
    else if (contains(binding, word) || contains(name, word)) total = total + (ReflectApply(StringStartsWith, name, [word]) ? 6 : 5);
    else if (contains(lower(catalog, i, 2), word)) total = total + 2;
    else if (contains(lower(catalog, i, 3), word)) total = total + 1;
  }
  return total;
}
function newArray(items, n) {
  var out = [];
  for (var i = 0; i < n; i++) ObjectDefineProperty(out, i, { __proto__: null, value: items[i], writable: true, enumerable: true, configurable: true });
  return out;
}
function search(catalog, query, limit) {
  if (typeof query !== 'string') throw withCode(new TypeErrorCtor('tools.$search(query, limit?): query must be a string of words, like tools.$search("read file")'), 'INVALID_ARGS');
  var max = typeof limit === 'number' && limit >= 1 ? (limit > MAX_RESULTS ? MAX_RESULTS : limit - limit % 1) : 10;
  var words = queryWords(query);
  // The best max so far, best first: indexes and scores.
  var best = list(), scores = list(), n = 0;
  for (var i = 0; i < catalog.length; i++) {
    var s = words.length === 0 ? 1 : score(catalog, i, words);
    if (s === 0 || (n === max && s <= scores[n - 1])) continue;
    var at = n < max ? n : n - 1;
    while (at > 0 && scores[at - 1] < s) { best[at] = best[at - 1]; scores[at] = scores[at - 1]; at = at - 1; }
    best[at] = i; scores[at] = s;
    if (n < max) n = n + 1;
  }
  var found = list();
  for (var k = 0; k < n; k++) { var e = catalog[best[k]]; found[k] = { name: e[0], summary: e[2] }; }
  return newArray(found, n);
}
// Defines tools.$search and tools.$describe over the [binding, name, summary, declaration] entries.
function lookups(tools, pairs, count) {
  var catalog = list();
  for (var i = 0; i < count; i++) catalog[i] = pairs[i];
  catalog.length = count;
  var define = function (name, fn) {
    ObjectDefineProperty(fn, 'name', { __proto__: null, value: name });
    ObjectDefineProperty(tools, name, { __proto__: null, value: fn });
  };
  define('$search', function (query, limit) { return search(catalog, query, limit); });
  define('$describe', function (name) { return describeTool(catalog, name); });
}
function describeTool(catalog, name) {
  if (typeof name === 'string') {
    for (var i = 0; i < catalog.length; i++) if (catalog[i][0] === name || catalog[i][1] === name) return catalog[i][3];
  }
  var shown = typeof name === 'string' ? JSONstringify(clip(name, MAX_NAME)) : 'a ' + typeof name;
  var close = typeof name === 'string' ? search(catalog, name, 3) : [];
  var names = list();
  for (var k = 0; k < close.length; k++) names[k] = close[k].name;
  var hint = close.length === 0 ? '' : ' Closest: ' + join(names, close.length, ', ') + '.';
  throw withCode(new TypeErrorCtor('tools.$describe(name): no tool is named ' + shown + '.' + hint + ' Find tools with tools.$search("words").'), 'UNKNOWN_TOOL');
}

// The message for tools.<key> when key is not a tool: the closest tools, then the first tools
// there are. The matcher is closestNames of src/spelling.ts step for step (word split, related
// words, scores, tie-breaks; its table and limit are written in from there), so that a program
// gets the names at run time that the type check gives (test/sandbox/spelling-parity.test.ts).
// Bounded: the first MAX_SUGGESTED names, 64 characters of each.
var MAX_SUGGESTED = ${MAX_CANDIDATES}, MAX_LISTED = 30;
var RELATED = ${relatedWordsSource()};
var LOWER = 'abcdefghijklmnopqrstuvwxyz', DIGITS = '0123456789';
// The words of a name's first 64 characters, lower case, at separators, case changes and digit
// runs, an acronym kept whole: readFile -> read, file; HTTPServer -> http, server (nameWords).
function wordsOf(s) {
  var words = list(), n = 0, word = '', kind = 0, len = s.length > 64 ? 64 : s.length;
  for (var i = 0; i <= len; i++) {
    var c = i < len ? ReflectApply(StringCharCodeAt, s, [i]) : 32;
    if (c >= 97 && c <= 122) {
      if (kind === 3) { words[n] = word; n = n + 1; word = ''; }
      else if (kind === 2 && word.length > 1) { words[n] = ReflectApply(StringSlice, word, [0, word.length - 1]); n = n + 1; word = ReflectApply(StringSlice, word, [word.length - 1]); }
      word = word + LOWER[c - 97]; kind = 1;
    } else if (c >= 65 && c <= 90) {
      if (kind === 1 || kind === 3) { words[n] = word; n = n + 1; word = ''; }
      word = word + LOWER[c - 65]; kind = 2;
    } else if (c >= 48 && c <= 57) {
      if (kind === 1 || kind === 2) { words[n] = word; n = n + 1; word = ''; }
      word = word + DIGITS[c - 48]; kind = 3;
    } else {
      if (word !== '') { words[n] = word; n = n + 1; }
      word = ''; kind = 0;
    }
  }
  words.length = n;
  return words;
}
function squashed(words) { return join(words, words.length, ''); }
// The name's own words, then the related words of each and of the whole name, each once.
function withRelated(own, whole) {
  var words = list(), n = 0;
  for (var i = 0; i < own.length; i++) { words[n] = own[i]; n = n + 1; }
  for (var j = 0; j <= own.length; j++) {
    var rel = RELATED[j < own.length ? own[j] : whole];
    if (rel === undefined) continue;
    for (var r = 0; r < rel.length; r++) {
      var seen = false;
      for (var w = 0; w < n; w++) if (words[w] === rel[r]) { seen = true; break; }
      if (!seen) { words[n] = rel[r]; n = n + 1; }
    }
  }
  words.length = n;
  return words;
}
// Edit distance (a swap of neighbours is one edit), or limit + 1 once it must be more.
function distance(a, b, limit) {
  if (a.length - b.length > limit || b.length - a.length > limit) return limit + 1;
  var before = list(), prev = list(), cur;
  for (var j = 0; j <= b.length; j++) prev[j] = j;
  for (var i = 1; i <= a.length; i++) {
    cur = list(); cur[0] = i;
    var low = i;
    for (var j2 = 1; j2 <= b.length; j2++) {
      var ac = ReflectApply(StringCharCodeAt, a, [i - 1]), bc = ReflectApply(StringCharCodeAt, b, [j2 - 1]);
      var v = prev[j2] + 1;
      if (cur[j2 - 1] + 1 < v) v = cur[j2 - 1] + 1;
      if (prev[j2 - 1] + (ac === bc ? 0 : 1) < v) v = prev[j2 - 1] + (ac === bc ? 0 : 1);
      if (i > 1 && j2 > 1 && ac === ReflectApply(StringCharCodeAt, b, [j2 - 2]) && bc === ReflectApply(StringCharCodeAt, a, [i - 2]) && before[j2 - 2] + 1 < v) v = before[j2 - 2] + 1;
      cur[j2] = v;
      if (v < low) low = v;
    }
    if (low > limit) return limit + 1;
    before = prev; prev = cur;
  }
  return prev[b.length];
}
function sameWord(a, b) {
  if (a === b) return true;
  if (a.length >= 3 && b.length >= 3 && (ReflectApply(StringStartsWith, a, [b]) || ReflectApply(StringStartsWith, b, [a]))) return true;
  return a.length >= 4 && b.length >= 4 && distance(a, b, 1) <= 1;
}
// How close a name is, lower is closer (below 5: the same name spelled another way), or -1:
// the scores of closestNames, fractions included, so that ties break the same way.
function closeness(key, keyWords, name) {
  var theirs = wordsOf(name), other = squashed(theirs);
  if (other === '' || key === '') return -1;
  if (other === key) return 0;
  // A name of one or two letters is a letter away from any other: only its casing can be wrong.
  var limit = key.length < 3 ? 0 : (key.length < 6 ? 1 : (key.length < 9 ? 2 : 3));
  var d = distance(key, other, limit);
  if (d <= limit) return 1 + d;
  if (key.length >= 3 && (ReflectApply(StringIndexOf, other, [key]) >= 0 || (other.length >= 4 && ReflectApply(StringIndexOf, key, [other]) >= 0))) {
    return 5 + (other.length > key.length ? other.length - key.length : key.length - other.length) / 100;
  }
  var shared = 0;
  for (var w = 0; w < keyWords.length; w++) {
    for (var t = 0; t < theirs.length; t++) if (sameWord(keyWords[w], theirs[t])) { shared = shared + 1; break; }
  }
  return shared === 0 ? -1 : 10 - (shared > 5 ? 5 : shared) + theirs.length / 100;
}
function unknownTool(key, names, count) {
  var own = wordsOf(key), k = squashed(own), keyWords = withRelated(own, k);
  var best = list(), scores = list(), n = 0, max = count < MAX_SUGGESTED ? count : MAX_SUGGESTED;
  for (var i = 0; i < max; i++) {
    if (names[i] === key) continue;
    var s = closeness(k, keyWords, names[i]);
    if (s < 0 || (n === 3 && s >= scores[2])) continue;
    var at = n < 3 ? n : 2;
    while (at > 0 && scores[at - 1] > s) { best[at] = best[at - 1]; scores[at] = scores[at - 1]; at = at - 1; }
    best[at] = names[i]; scores[at] = s;
    if (n < 3) n = n + 1;
  }
  // A near spelling says more than names that merely share a word: when there is one, only those.
  if (n > 0 && scores[0] < 5) while (scores[n - 1] >= 5) n = n - 1;
  var hint = '';
  for (var h = 0; h < n; h++) hint = hint + (h === 0 ? 'Did you mean ' : (h === n - 1 ? ' or ' : ', ')) + '\x60tools.' + clip(best[h], MAX_NAME) + '\x60';
  var shown = list(), m = count < MAX_LISTED ? count : MAX_LISTED;
  for (var l = 0; l < m; l++) shown[l] = clip(names[l], MAX_NAME);
  var available = count === 0 ? 'none' : join(shown, m, ', ') + (count > m ? ' (and ' + (count - m) + ' more)' : '');
  return 'tools.' + clip(key, MAX_NAME) + ' is not a tool. ' + (hint === '' ? '' : hint + '? ') + 'Available tools: ' + available;
}

return ObjectFreeze({ format: format, describeError: describeError, unreadable: unreadable, lookups: lookups, unknownTool: unknownTool });
})`
