/**
 * The JSON boundary: the one module that copies outside values into plain, frozen JSON and parses
 * or writes outside text. Nothing else calls `JSON.parse` on outside data.
 *
 * CONTRACT:
 * - `snapshotJson(value, label)` copies `value` into fresh plain JSON and deep-freezes it. It throws
 *   `JsonBoundaryError` (code `INVALID_JSON`) with the JSON path of the first offending place for:
 *   undefined, functions, symbols, bigint, NaN, +-Infinity, -0, sparse arrays (holes), cycles,
 *   accessor properties (never running a getter), symbol or non-enumerable own keys, and any
 *   prototype other than Object.prototype, null or Array.prototype. Proxies are rejected too
 *   (`util.types.isProxy`), so no trap ever runs. Shared non-cyclic references are fine (copied).
 *   Iterative: a value nested 100,000 deep gives a clear error or result, never a stack overflow.
 *   `__proto__` as an own data key is an ordinary key in the copy.
 * - `parseJsonText(text, label)` parses outside text with lossless-json's number rules: integers
 *   outside the safe range and decimals a double cannot hold exactly throw `JsonBoundaryError`
 *   naming the path; duplicate keys throw; `__proto__` is an ordinary key. Returns frozen plain JSON.
 * - `stringifyJson(value)` writes durable text; `parseDurableJson(text)` reads it back exactly.
 *
 * Parsing and writing are iterative here rather than delegated to `lossless-json`'s `parse` and
 * `stringify`: both recurse and overflow the stack near 5,000 levels (measured on Node 20), and its
 * `parse` accepts a duplicate key silently when both values are equal. Its number classification
 * (`isSafeNumber`, `compareNumber`) is what decides exactness.
 */
import { types } from 'node:util'
import { compareNumber, isSafeNumber, splitNumber } from 'lossless-json'
import { createBrand } from './brand.ts'
import { ToolError, ToolErrorCode } from './errors.ts'

/** A lossless JSON value. Values that crossed the boundary are deep-frozen. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue }

/**
 * Thrown when a value or a text cannot cross the JSON boundary exactly (code `INVALID_JSON`).
 * `path` is the JSON path of the first offending place (`$`, `$.items[2]["odd key"]`); `reason`
 * says what is wrong there, without the label or the path.
 */
export class JsonBoundaryError extends ToolError {
  readonly path: string
  readonly reason: string

  constructor(label: string, path: string, reason: string) {
    super(ToolErrorCode.INVALID_JSON, `${label} is not lossless JSON at ${path}: ${reason}`)
    this.path = path
    this.reason = reason
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * Formats path segments as a JSON path rooted at `$`: numbers as `[2]`, identifier-like keys as
 * `.name`, every other key as a quoted member (`["odd key"]`, `[""]`).
 */
export function formatJsonPath(segments: readonly (string | number)[]): string {
  let path = '$'
  for (const segment of segments) {
    if (typeof segment === 'number') path += `[${segment}]`
    else if (IDENTIFIER.test(segment)) path += `.${segment}`
    else path += `[${JSON.stringify(segment)}]`
  }
  return path
}

// Every container this module returned (snapshot and parse results): frozen plain JSON that can
// cross again for free. Only roots, each marked just before it is frozen.
const boundaryRoots = createBrand()

/**
 * True when `value` is a JSON primitive (finite number other than -0) or a container this module
 * returned from {@link snapshotJson}, {@link parseJsonText} or {@link parseDurableJson} (plain,
 * lossless, deep-frozen). O(1). A nested part of such a value, or valid JSON built elsewhere,
 * answers `false`: pass it through {@link snapshotJson}, which copies it.
 */
export function isFrozenJson(value: unknown): value is JsonValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0)
    case 'object':
      return value === null || boundaryRoots.has(value)
    default:
      return false
  }
}

/** One container being copied: its source, its copy, its own keys and the next key to visit. */
interface CopyFrame {
  readonly source: object
  readonly copy: JsonValue[] | JsonObject
  /** Own string keys of an object source; `undefined` for an array source. */
  readonly keys: string[] | undefined
  /** Number of entries to visit: the array length or the key count. */
  readonly length: number
  index: number
}

const IN_PROGRESS = Symbol('in progress')

/** Maps a source container to its finished copy, or to IN_PROGRESS while it is an ancestor. */
type Seen = Map<object, JsonValue | typeof IN_PROGRESS>

/** Class name for messages, read without running user code (no getters, no proxies). */
function describeObject(value: object): string {
  const proto: unknown = Object.getPrototypeOf(value)
  if (proto === null || typeof proto !== 'object') return 'object'
  const ctor = Object.getOwnPropertyDescriptor(proto, 'constructor')
  if (ctor !== undefined && 'value' in ctor && typeof ctor.value === 'function') {
    const name = Object.getOwnPropertyDescriptor(ctor.value, 'name')
    if (name !== undefined && typeof name.value === 'string' && name.value !== '') return name.value
  }
  return 'object with a custom prototype'
}

function primitiveProblem(value: unknown): string | undefined {
  switch (typeof value) {
    case 'number':
      if (value !== value) return 'NaN is not JSON'
      if (value === Infinity || value === -Infinity) return `${value} is not JSON`
      return value === 0 && 1 / value < 0 ? '-0 is not JSON (it would read back as 0)' : undefined
    case 'undefined':
      return 'undefined is not JSON'
    case 'function':
      return 'a function is not JSON'
    case 'symbol':
      return 'a symbol is not JSON'
    case 'bigint':
      return 'a bigint is not JSON (convert it to a string or a safe number)'
    default:
      return undefined
  }
}

/** Builds the path from the frames on the stack only now, so the success path never builds one. */
function failAt(stack: readonly CopyFrame[], label: string, reason: string): never {
  const segments: (string | number)[] = []
  for (const frame of stack) segments.push(frame.keys === undefined ? frame.index : (frame.keys[frame.index] as string))
  throw new JsonBoundaryError(label, formatJsonPath(segments), reason)
}

/**
 * Checks a container and pushes its frame, or returns a copy to reuse. Throws for a non-JSON one.
 * `seen` is undefined only for the root, which nothing can have visited yet.
 */
function openContainer(source: object, stack: CopyFrame[], seen: Seen | undefined, label: string): JsonValue | undefined {
  // Checked first: any other reflection on a proxy would run one of its traps.
  if (types.isProxy(source)) return failAt(stack, label, 'a Proxy is not JSON')
  const known = seen?.get(source)
  if (known !== undefined) return known === IN_PROGRESS ? failAt(stack, label, 'a cycle is not JSON') : known
  if (boundaryRoots.has(source)) return source as JsonValue
  const proto: unknown = Object.getPrototypeOf(source)
  if (Array.isArray(source)) {
    if (proto !== Array.prototype) return failAt(stack, label, `an instance of ${describeObject(source)} is not JSON`)
    const keys = Reflect.ownKeys(source)
    // `length` is an own non-enumerable data property, so a dense array has length + 1 keys.
    const length = source.length
    if (keys.length !== length + 1) {
      return failAt(
        stack,
        label,
        keys.length < length + 1
          ? `a sparse array is not JSON (index ${firstHole(source, length)} is a hole)`
          : `an array with extra property ${describeKey(extraArrayKey(keys, length))} is not JSON`,
      )
    }
    stack.push({ source, copy: [], keys: undefined, length, index: 0 })
  } else {
    if (proto !== Object.prototype && proto !== null) {
      return failAt(stack, label, `an instance of ${describeObject(source)} is not JSON`)
    }
    // Two lists rather than Reflect.ownKeys: together about half its cost on a small object.
    const symbols = Object.getOwnPropertySymbols(source)
    if (symbols.length > 0) return failAt(stack, label, `a symbol key (${String(symbols[0])}) is not JSON`)
    const keys = Object.getOwnPropertyNames(source)
    stack.push({ source, copy: {}, keys, length: keys.length, index: 0 })
  }
  seen?.set(source, IN_PROGRESS)
  return undefined
}

/**
 * Copies `value` into fresh plain JSON (objects with Object.prototype, dense arrays) and
 * deep-freezes the copy; `label` names the value in error messages (`arguments of "grep"`).
 * Never runs user code: no getter, no proxy trap, no `toJSON`. A shared (non-cyclic) reference is
 * copied once and that frozen copy is shared in the result; a cycle throws. Any depth works
 * (explicit stack). A value this module returned before comes back as is, without a copy.
 * @throws JsonBoundaryError naming the path of the first value that is not lossless JSON.
 */
export function snapshotJson(value: unknown, label = 'value'): JsonValue {
  if (typeof value !== 'object' || value === null) {
    const problem = primitiveProblem(value)
    if (problem !== undefined) throw new JsonBoundaryError(label, '$', problem)
    return value as JsonValue
  }
  if (boundaryRoots.has(value)) return value as JsonValue

  const stack: CopyFrame[] = []
  // Made when the first nested container opens (the root is then the only one in progress): a
  // flat value can neither repeat a container nor contain itself.
  let seen: Seen | undefined
  openContainer(value, stack, undefined, label)
  const root = (stack[0] as CopyFrame).copy

  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as CopyFrame
    if (frame.index === frame.length) {
      stack.pop()
      if (stack.length === 0) boundaryRoots.mark(frame.copy)
      // Post-order: every child is frozen before its parent, so the whole copy ends deep-frozen.
      Object.freeze(frame.copy)
      seen?.set(frame.source, frame.copy)
      const parent = stack[stack.length - 1]
      if (parent !== undefined) parent.index++
      continue
    }
    const key: string | number = frame.keys === undefined ? frame.index : (frame.keys[frame.index] as string)
    const descriptor = Object.getOwnPropertyDescriptor(frame.source, key)
    // An array hole is the only way to get here with no descriptor: the key count was checked.
    if (descriptor === undefined) return failAt(stack, label, 'a sparse array is not JSON')
    if (!('value' in descriptor)) failAt(stack, label, 'an accessor property is not JSON (its getter is never run)')
    if (descriptor.enumerable !== true) failAt(stack, label, 'a non-enumerable property is not JSON')
    const child: unknown = descriptor.value
    if (typeof child === 'object' && child !== null) {
      seen ??= new Map<object, JsonValue | typeof IN_PROGRESS>().set(value, IN_PROGRESS)
      const reused = openContainer(child, stack, seen, label)
      if (reused === undefined) {
        // The child's copy goes into place now and is filled in (then frozen) by its own frame.
        assign(frame.copy, key, (stack[stack.length - 1] as CopyFrame).copy)
        continue
      }
      assign(frame.copy, key, reused)
    } else {
      const problem = primitiveProblem(child)
      if (problem !== undefined) failAt(stack, label, problem)
      assign(frame.copy, key, child as JsonValue)
    }
    frame.index++
  }
  return root
}

/**
 * Freezes `record`, an object literal the caller has just written, and marks it as crossed when
 * every value already is frozen JSON ({@link isFrozenJson}): then it is exactly the copy
 * {@link snapshotJson} would make of it, and snapshotJson returns it as is. Otherwise `record`
 * comes back untouched, for snapshotJson to copy or refuse later; this never throws.
 *
 * Only the values are checked, because the literal syntax settles the rest: own enumerable data
 * properties with string keys on a fresh, extensible object with Object.prototype (checked, as
 * `{ __proto__: x }` would change it). So pass nothing else: no object that came from outside, and
 * none that anyone else holds.
 */
export function freezeJsonLiteral<T extends object>(record: T): T {
  if (Object.getPrototypeOf(record) !== Object.prototype) return record
  for (const key of Object.keys(record)) {
    if (!isFrozenJson((record as Record<string, unknown>)[key])) return record
  }
  boundaryRoots.mark(record)
  return Object.freeze(record)
}

function assign(target: JsonValue[] | JsonObject, key: string | number, value: JsonValue): void {
  if (typeof key === 'number') (target as JsonValue[])[key] = value
  // Assignment would run Object.prototype's `__proto__` setter instead of creating the key.
  else if (key === '__proto__') {
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
  } else (target as JsonObject)[key] = value
}

function firstHole(array: readonly unknown[], length: number): number {
  for (let index = 0; index < length; index++) if (!Object.hasOwn(array, index)) return index
  return length
}

function extraArrayKey(keys: readonly (string | symbol)[], length: number): string | symbol {
  for (const key of keys) {
    if (typeof key === 'symbol' || key === 'length') {
      if (typeof key === 'symbol') return key
      continue
    }
    const index = Number(key)
    if (!(Number.isInteger(index) && index >= 0 && index < length && String(index) === key)) return key
  }
  return 'length'
}

function describeKey(key: string | symbol): string {
  return typeof key === 'symbol' ? String(key) : JSON.stringify(key)
}

// ---------------------------------------------------------------------------------------------
// Text

type NumberRule = 'outside' | 'durable'

interface ParseFrame {
  readonly container: JsonValue[] | JsonObject
  readonly isArray: boolean
  /** The member key whose value is being parsed (objects only); undefined while a key is read. */
  key: string | undefined
  /** Position of that key's opening quote, for duplicate-key errors. */
  keyAt: number
}

const NUMBER_TOKEN = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y

/**
 * Parses OUTSIDE text (model-supplied arguments, wire payloads) into frozen plain JSON with JS
 * numbers. A number that a double cannot hold exactly (an integer outside the safe range, a
 * decimal with more digits than a double keeps, an overflow or underflow) throws instead of being
 * rounded; so do `-0`, duplicate keys and syntax errors (with the character position). `__proto__`
 * is an ordinary key. Any nesting depth works (no recursion).
 * @throws JsonBoundaryError naming the path (and position) of the first problem.
 */
export function parseJsonText(text: string, label = 'value'): JsonValue {
  return parseText(text, label, 'outside')
}

/**
 * Reads back text written by {@link stringifyJson} (session logs). Same rules as
 * {@link parseJsonText}, except that a number is accepted when the text is exactly the value of the
 * double it denotes, so every finite double written (`1e+300`, `9007199254740992`) reads back as
 * itself, while text that would round still throws.
 * @throws JsonBoundaryError naming the path (and position) of the first problem.
 */
export function parseDurableJson(text: string, label = 'durable JSON'): JsonValue {
  return parseText(text, label, 'durable')
}

function parseText(text: string, label: string, rule: NumberRule): JsonValue {
  return new TextParser(text, label, rule).parse()
}

/**
 * One parse of one text: the position and the open containers. A class, so a parse allocates no
 * closures: the arguments of every sub-call cross here.
 */
class TextParser {
  readonly #text: string
  readonly #label: string
  readonly #rule: NumberRule
  readonly #stack: ParseFrame[] = []
  #at = 0

  constructor(text: string, label: string, rule: NumberRule) {
    this.#text = text
    this.#label = label
    this.#rule = rule
  }

  parse(): JsonValue {
    const text = this.#text
    const stack = this.#stack
    let value: JsonValue
    this.#skipSpace()
    for (;;) {
      // Read one value; containers push a frame and go on to read their first member.
      const code = text.charCodeAt(this.#at)
      if (code === 0x7b /* { */) {
        const object: JsonObject = {}
        this.#at++
        this.#skipSpace()
        if (text.charCodeAt(this.#at) === 0x7d) {
          this.#at++
          value = object
        } else {
          const frame: ParseFrame = { container: object, isArray: false, key: '', keyAt: this.#at }
          stack.push(frame)
          this.#readKey(frame)
          continue
        }
      } else if (code === 0x5b /* [ */) {
        const array: JsonValue[] = []
        this.#at++
        this.#skipSpace()
        if (text.charCodeAt(this.#at) === 0x5d) {
          this.#at++
          value = array
        } else {
          stack.push({ container: array, isArray: true, key: '', keyAt: this.#at })
          continue
        }
      } else if (code === 0x22) value = this.#readString()
      else if (code === 0x2d || (code >= 0x30 && code <= 0x39)) value = this.#readNumber()
      else if (text.startsWith('true', this.#at)) (value = true), (this.#at += 4)
      else if (text.startsWith('false', this.#at)) (value = false), (this.#at += 5)
      else if (text.startsWith('null', this.#at)) (value = null), (this.#at += 4)
      else return this.#fail(`expected a value, found ${this.#found()}`)

      // Store the value, then close every container that ends right after it.
      let readNext = false
      while (!readNext) {
        const frame = stack[stack.length - 1]
        if (typeof value === 'object' && value !== null) {
          if (frame === undefined) boundaryRoots.mark(value)
          Object.freeze(value)
        }
        this.#skipSpace()
        if (frame === undefined) {
          if (this.#at < text.length) return this.#fail(`unexpected ${this.#found()} after the value`)
          return value
        }
        if (frame.isArray) (frame.container as JsonValue[]).push(value)
        else {
          const object = frame.container as JsonObject
          const key = frame.key as string
          if (Object.hasOwn(object, key)) return this.#fail(`duplicate key ${JSON.stringify(key)}`, frame.keyAt)
          assign(object, key, value)
        }
        const next = text.charCodeAt(this.#at)
        if (next === 0x2c /* , */) {
          this.#at++
          this.#skipSpace()
          if (!frame.isArray) this.#readKey(frame)
          readNext = true
        } else if (next === (frame.isArray ? 0x5d : 0x7d)) {
          this.#at++
          stack.pop()
          value = frame.container
        } else {
          return this.#fail(`expected "," or "${frame.isArray ? ']' : '}'}", found ${this.#found()}`)
        }
      }
    }
  }

  #fail(reason: string, position: number = this.#at): never {
    const segments: (string | number)[] = []
    for (const frame of this.#stack) {
      if (frame.isArray) segments.push((frame.container as JsonValue[]).length)
      else if (frame.key !== undefined) segments.push(frame.key)
    }
    throw new JsonBoundaryError(this.#label, formatJsonPath(segments), `${reason} (at position ${position})`)
  }

  #skipSpace(): void {
    const text = this.#text
    let at = this.#at
    let code = text.charCodeAt(at)
    while (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) code = text.charCodeAt(++at)
    this.#at = at
  }

  #found(): string {
    return this.#at >= this.#text.length ? 'end of text' : JSON.stringify(this.#text[this.#at])
  }

  #readString(): string {
    // `at` is on the opening quote.
    const text = this.#text
    const length = text.length
    let start = ++this.#at
    let result = ''
    for (;;) {
      const at = this.#at
      if (at >= length) return this.#fail('unterminated string')
      const code = text.charCodeAt(at)
      if (code === 0x22) {
        result += text.slice(start, at)
        this.#at++
        return result
      }
      if (code < 0x20) return this.#fail('unescaped control character in string')
      if (code !== 0x5c) {
        this.#at++
        continue
      }
      result += text.slice(start, at)
      const escape = text[at + 1]
      switch (escape) {
        case '"': result += '"'; break
        case '\\': result += '\\'; break
        case '/': result += '/'; break
        case 'b': result += '\b'; break
        case 'f': result += '\f'; break
        case 'n': result += '\n'; break
        case 'r': result += '\r'; break
        case 't': result += '\t'; break
        case 'u': {
          const hex = text.slice(at + 2, at + 6)
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) return this.#fail('invalid \\u escape')
          result += String.fromCharCode(Number.parseInt(hex, 16))
          this.#at += 4
          break
        }
        default:
          return this.#fail('invalid escape in string')
      }
      this.#at += 2
      start = this.#at
    }
  }

  #readNumber(): number {
    const start = this.#at
    const integer = this.#readShortInteger()
    if (integer !== undefined) return integer
    NUMBER_TOKEN.lastIndex = start
    const match = NUMBER_TOKEN.exec(this.#text)
    if (match === null) return this.#fail(`unexpected ${this.#found()}`)
    const token = match[0]
    this.#at += token.length
    const value = Number(token)
    // Short plain integers, always exact, were read above: here a token can lose digits.
    if (this.#rule === 'outside') {
      if (!isSafeNumber(token)) return this.#fail(unsafeNumber(token), start)
    } else if (!Number.isFinite(value) || compareNumber(token, String(value)) !== 0) {
      return this.#fail(unsafeNumber(token), start)
    }
    if (value === 0 && token.charCodeAt(0) === 0x2d) return this.#fail('-0 is not JSON (it would read back as 0)', start)
    return value
  }

  /**
   * The common case of {@link #readNumber} without a regular expression or a substring: an
   * integer token (no fraction, no exponent) of at most 15 characters, which a double always holds
   * exactly. Anything else is left to the full grammar (`undefined`, position unchanged).
   */
  #readShortInteger(): number | undefined {
    const text = this.#text
    const start = this.#at
    let at = start
    const negative = text.charCodeAt(at) === 0x2d
    if (negative) at++
    let code = text.charCodeAt(at)
    if (!(code >= 0x30 && code <= 0x39)) return undefined // also past the end, where code is NaN
    let value = code - 0x30
    at++
    // A leading 0 stands alone, as in the grammar: the next character ends the token.
    if (value !== 0) {
      for (code = text.charCodeAt(at); code >= 0x30 && code <= 0x39; code = text.charCodeAt(++at)) value = value * 10 + (code - 0x30)
    }
    code = text.charCodeAt(at)
    if (code === 0x2e /* . */ || code === 0x65 /* e */ || code === 0x45 /* E */ || at - start > 15) return undefined
    this.#at = at
    if (negative && value === 0) return this.#fail('-0 is not JSON (it would read back as 0)', start)
    return negative ? -value : value
  }

  #readKey(frame: ParseFrame): void {
    const text = this.#text
    // A failure before the key is known is placed at the object itself.
    frame.key = undefined
    if (text.charCodeAt(this.#at) !== 0x22) this.#fail(`expected a string key in double quotes, found ${this.#found()}`)
    frame.keyAt = this.#at
    frame.key = this.#readString()
    this.#skipSpace()
    if (text.charCodeAt(this.#at) !== 0x3a) this.#fail(`expected ":", found ${this.#found()}`)
    this.#at++
    this.#skipSpace()
  }
}

function unsafeNumber(token: string): string {
  const value = Number(token)
  const what = !Number.isFinite(value)
    ? 'overflows a double'
    : value === 0
      ? 'underflows a double (it would read back as 0)'
      : isIntegerToken(token) && !Number.isSafeInteger(value)
        ? 'is an integer outside the safe range (+-9007199254740991)'
        : 'has more digits than a double holds'
  // The token is model text of any length: the message shows its start.
  const shown = token.length <= MAX_SHOWN_TOKEN ? token : `${token.slice(0, MAX_SHOWN_TOKEN)}... (${token.length} characters)`
  return `number ${shown} ${what}; send it as a string`
}

/** Longest number token an error message repeats whole. */
const MAX_SHOWN_TOKEN = 40

/**
 * Whether a JSON number token is an integer as written (`1e3` is, `12345678901234567.5` is not):
 * in scientific form every significant digit comes before the decimal point.
 */
function isIntegerToken(token: string): boolean {
  const { digits, exponent } = splitNumber(token)
  return digits.length - 1 <= exponent
}

/**
 * Writes a JSON value as durable single-line text (no spaces), exact for every finite double
 * (shortest round-trip digits). Iterative, so any depth works. The value must be lossless JSON:
 * pass values that crossed {@link snapshotJson}; others are snapshotted first and may throw.
 * @throws JsonBoundaryError when `value` is not lossless JSON.
 */
export function stringifyJson(value: JsonValue): string {
  const checked = isFrozenJson(value) ? value : snapshotJson(value)
  if (typeof checked !== 'object' || checked === null) return typeof checked === 'string' ? JSON.stringify(checked) : String(checked)
  // Work items: a value to write, or a literal string (separators and closers).
  const work: (JsonValue | Literal)[] = [checked]
  let out = ''
  while (work.length > 0) {
    const item = work.pop() as JsonValue | Literal
    if (item instanceof Literal) {
      out += item.text
    } else if (typeof item !== 'object' || item === null) {
      out += typeof item === 'string' ? JSON.stringify(item) : String(item)
    } else if (Array.isArray(item)) {
      out += '['
      work.push(CLOSE_ARRAY)
      for (let index = item.length - 1; index >= 0; index--) {
        work.push(item[index] as JsonValue)
        if (index > 0) work.push(COMMA)
      }
    } else {
      out += '{'
      work.push(CLOSE_OBJECT)
      const keys = Object.keys(item)
      for (let index = keys.length - 1; index >= 0; index--) {
        const key = keys[index] as string
        work.push(item[key] as JsonValue)
        work.push(new Literal(`${index > 0 ? ',' : ''}${JSON.stringify(key)}:`))
      }
    }
  }
  return out
}

class Literal {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
}
const COMMA = new Literal(',')
const CLOSE_ARRAY = new Literal(']')
const CLOSE_OBJECT = new Literal('}')
