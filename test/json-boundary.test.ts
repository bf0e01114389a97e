import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import {
  JsonBoundaryError,
  formatJsonPath,
  freezeJsonLiteral,
  isFrozenJson,
  parseDurableJson,
  parseJsonText,
  snapshotJson,
  stringifyJson,
} from '../src/json-boundary.ts'
import type { JsonValue } from '../src/json-boundary.ts'
import { ToolError, ToolErrorCode } from '../src/errors.ts'

/** fast-check may generate -0, which the boundary rejects on purpose. */
function withoutNegativeZero(value: unknown): JsonValue {
  if (Object.is(value, -0)) return 0
  if (Array.isArray(value)) return value.map(withoutNegativeZero)
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, JsonValue> = {}
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(out, key, { value: withoutNegativeZero(item), enumerable: true, writable: true, configurable: true })
    }
    return out
  }
  return value as JsonValue
}
const jsonValue = fc.jsonValue().map(withoutNegativeZero)

function isDeepFrozen(value: unknown): boolean {
  const stack = [value]
  while (stack.length > 0) {
    const item = stack.pop()
    if (typeof item !== 'object' || item === null) continue
    if (!Object.isFrozen(item)) return false
    stack.push(...Object.values(item))
  }
  return true
}

function sharesReference(a: unknown, b: unknown): boolean {
  const stack: [unknown, unknown][] = [[a, b]]
  while (stack.length > 0) {
    const [x, y] = stack.pop() as [unknown, unknown]
    if (typeof x !== 'object' || x === null) continue
    if (x === y) return true
    for (const key of Object.keys(x)) {
      stack.push([(x as Record<string, unknown>)[key], (y as Record<string, unknown>)[key]])
    }
  }
  return false
}

function boundaryError(run: () => unknown): JsonBoundaryError {
  try {
    run()
  } catch (error) {
    if (error instanceof JsonBoundaryError) return error
    throw error
  }
  throw new Error('expected a JsonBoundaryError, nothing was thrown')
}

function nested(depth: number): unknown {
  let value: unknown = 'leaf'
  for (let level = 0; level < depth; level++) value = level % 2 === 0 ? [value] : { k: value }
  return value
}

describe('snapshotJson', () => {
  it('copies any JSON value into a deep-equal, deeply frozen value that shares no container', () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        const copy = snapshotJson(value)
        expect(copy).toStrictEqual(value)
        expect(isDeepFrozen(copy)).toBe(true)
        expect(sharesReference(value, copy)).toBe(false)
      }),
    )
  })

  it('returns JSON primitives as they are', () => {
    for (const value of ['', 'text', 0, 1.5, -3, true, false, null]) expect(snapshotJson(value)).toBe(value)
  })

  it('gives copied objects Object.prototype, including objects with a null prototype', () => {
    const source = Object.assign(Object.create(null) as object, { a: 1 })
    const copy = snapshotJson({ inner: source }) as { inner: object }
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(Object.getPrototypeOf(copy.inner)).toBe(Object.prototype)
    expect(copy.inner).toEqual({ a: 1 })
  })

  it('keeps an own __proto__ data key as an ordinary key without changing the prototype', () => {
    const source = JSON.parse('{"__proto__": {"polluted": true}, "b": 2}') as unknown
    const copy = snapshotJson(source) as Record<string, unknown>
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(Object.hasOwn(copy, '__proto__')).toBe(true)
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toEqual({ polluted: true })
    expect((copy as { polluted?: unknown }).polluted).toBeUndefined()
    expect(Object.keys(copy)).toEqual(['__proto__', 'b'])
  })

  it('accepts shared non-cyclic references and copies them', () => {
    const shared = { x: [1, 2] }
    const copy = snapshotJson({ a: shared, b: [shared, shared] }) as { a: object; b: object[] }
    expect(copy).toEqual({ a: { x: [1, 2] }, b: [{ x: [1, 2] }, { x: [1, 2] }] })
    expect(copy.a).not.toBe(shared)
  })

  it('returns a value it returned before without copying it again', () => {
    const once = snapshotJson({ a: [1, { b: 2 }] })
    expect(snapshotJson(once)).toBe(once)
    const parsed = parseJsonText('{"a":[1]}')
    expect(snapshotJson(parsed)).toBe(parsed)
  })

  it('reuses a returned value nested in a new one', () => {
    const args = snapshotJson({ q: 'x' })
    const event = snapshotJson({ type: 'tool/call', arguments: args }) as { arguments: JsonValue }
    expect(event.arguments).toBe(args)
  })

  it('copies a frozen value built elsewhere instead of trusting it', () => {
    const inner = { a: 1 }
    const outer = Object.freeze({ inner })
    const copy = snapshotJson(outer) as { inner: object }
    expect(copy.inner).not.toBe(inner)
    expect(Object.isFrozen(copy.inner)).toBe(true)
  })

  it('handles a value nested 100,000 deep without overflowing the stack', () => {
    const copy = snapshotJson(nested(100_000))
    expect(isDeepFrozen(copy)).toBe(true)
    let cursor: unknown = copy
    let depth = 0
    while (typeof cursor === 'object' && cursor !== null) {
      cursor = Array.isArray(cursor) ? cursor[0] : (cursor as { k: unknown }).k
      depth++
    }
    expect(depth).toBe(100_000)
    expect(cursor).toBe('leaf')
  })

  it('reports the full path of a bad value 100,000 deep', () => {
    let value: unknown = undefined
    for (let level = 0; level < 100_000; level++) value = [value]
    const error = boundaryError(() => snapshotJson(value))
    expect(error.path).toBe('$' + '[0]'.repeat(100_000))
    expect(error.reason).toBe('undefined is not JSON')
  })

  describe('rejects with the path of the offending place', () => {
    const cases: [string, () => unknown, string, RegExp][] = [
      ['undefined', () => ({ a: undefined }), '$.a', /undefined/],
      ['a function', () => ({ items: [0, 1, { 'odd key': () => 1 }] }), '$.items[2]["odd key"]', /function/],
      ['a symbol', () => [Symbol('s')], '$[0]', /symbol/],
      ['a bigint', () => ({ n: 1n }), '$.n', /bigint/],
      ['NaN', () => ({ n: Number.NaN }), '$.n', /NaN/],
      ['Infinity', () => ({ n: Infinity }), '$.n', /Infinity/],
      ['-Infinity', () => ({ n: -Infinity }), '$.n', /-Infinity/],
      ['-0', () => ({ n: [1, -0] }), '$.n[1]', /-0/],
      ['a sparse array', () => ({ list: [1, , 3] }), '$.list', /sparse.*index 1/],
      ['a trailing hole', () => ({ list: new Array(2) }), '$.list', /sparse/],
      ['an array with an extra property', () => ({ list: Object.assign([1], { extra: true }) }), '$.list', /extra property "extra"/],
      ['a symbol key', () => ({ a: { [Symbol('k')]: 1 } }), '$.a', /symbol key/],
      [
        'a non-enumerable key',
        () => ({ a: Object.defineProperty({}, 'hidden', { value: 1, enumerable: false }) }),
        '$.a.hidden',
        /non-enumerable/,
      ],
      ['a Date', () => ({ when: new Date(0) }), '$.when', /Date/],
      ['a Map', () => ({ m: new Map() }), '$.m', /Map/],
      ['a class instance', () => ({ p: new (class Point {})() }), '$.p', /Point/],
      ['a boxed primitive', () => ({ s: new String('x') }), '$.s', /String/],
      ['a typed array', () => ({ bytes: new Uint8Array(2) }), '$.bytes', /Uint8Array/],
      ['an Array subclass', () => ({ list: new (class MyList extends Array {})() }), '$.list', /MyList/],
      ['an object posing as an array', () => ({ list: Object.create(Array.prototype) as unknown }), '$.list', /Array/],
      ['a custom prototype', () => ({ o: Object.create({ inherited: 1 }) as unknown }), '$.o', /not JSON/],
    ]
    for (const [what, make, path, reason] of cases) {
      it(`rejects ${what} at ${path}`, () => {
        const error = boundaryError(() => snapshotJson(make()))
        expect(error.path).toBe(path)
        expect(error.reason).toMatch(reason)
      })
    }
  })

  it('rejects a bad root value at $', () => {
    expect(boundaryError(() => snapshotJson(undefined)).path).toBe('$')
    expect(boundaryError(() => snapshotJson(new Date())).path).toBe('$')
  })

  it('rejects a cycle at the place that closes it', () => {
    const root: Record<string, unknown> = { a: { b: [1] } }
    ;((root.a as { b: unknown[] }).b).push(root)
    const error = boundaryError(() => snapshotJson(root))
    expect(error.path).toBe('$.a.b[1]')
    expect(error.reason).toMatch(/cycle/)
  })

  it('rejects a value that holds itself as its first nested container', () => {
    const root: Record<string, unknown> = { n: 1 }
    root.self = root
    const error = boundaryError(() => snapshotJson(root))
    expect(error.path).toBe('$.self')
    expect(error.reason).toMatch(/cycle/)
    const list: unknown[] = []
    list.push(list)
    expect(boundaryError(() => snapshotJson(list)).path).toBe('$[0]')
  })

  it('never runs a getter', () => {
    let ran = false
    const value = {
      get secret() {
        ran = true
        return 1
      },
    }
    const error = boundaryError(() => snapshotJson({ outer: value }))
    expect(error.path).toBe('$.outer.secret')
    expect(error.reason).toMatch(/accessor/)
    expect(ran).toBe(false)
  })

  it('never runs a getter on an array index', () => {
    let ran = false
    const list = [1, 2]
    Object.defineProperty(list, 1, { get: () => ((ran = true), 2), enumerable: true })
    expect(boundaryError(() => snapshotJson(list)).path).toBe('$[1]')
    expect(ran).toBe(false)
  })

  it('rejects a Proxy without running any of its traps', () => {
    const trapped: string[] = []
    const handler: ProxyHandler<object> = {}
    for (const trap of [
      'get', 'set', 'has', 'ownKeys', 'getOwnPropertyDescriptor', 'getPrototypeOf', 'defineProperty',
      'deleteProperty', 'isExtensible', 'preventExtensions', 'setPrototypeOf', 'apply', 'construct',
    ] as const) {
      ;(handler as Record<string, unknown>)[trap] = () => {
        trapped.push(trap)
        throw new Error(`trap ${trap} ran`)
      }
    }
    const objectProxy = new Proxy({ a: 1 }, handler)
    const arrayProxy = new Proxy([1], handler)
    expect(boundaryError(() => snapshotJson(objectProxy)).path).toBe('$')
    const nestedError = boundaryError(() => snapshotJson({ list: [0, arrayProxy] }))
    expect(nestedError.path).toBe('$.list[1]')
    expect(nestedError.reason).toMatch(/Proxy/)
    expect(trapped).toEqual([])
  })

  it('throws a ToolError with code INVALID_JSON whose message names the label and the path', () => {
    const error = boundaryError(() => snapshotJson({ a: Number.NaN }, 'arguments of "grep"'))
    expect(error).toBeInstanceOf(ToolError)
    expect(error.code).toBe(ToolErrorCode.INVALID_JSON)
    expect(error.name).toBe('JsonBoundaryError')
    expect(error.message).toBe('arguments of "grep" is not lossless JSON at $.a: NaN is not JSON')
  })
})

describe('isFrozenJson', () => {
  it('is true for JSON primitives and for values that crossed the boundary', () => {
    for (const value of ['x', 1, true, null]) expect(isFrozenJson(value)).toBe(true)
    expect(isFrozenJson(snapshotJson({ a: [1] }))).toBe(true)
    expect(isFrozenJson(parseJsonText('{"a":[1]}'))).toBe(true)
  })

  it('is false for values built elsewhere, even frozen ones, and for non-JSON primitives', () => {
    for (const value of [Object.freeze({}), [], undefined, Number.NaN, -0, Infinity, 1n]) {
      expect(isFrozenJson(value)).toBe(false)
    }
  })
})

describe('isFrozenJson marks', () => {
  it('are invisible to reflection, JSON and cloning', () => {
    const value = snapshotJson({ a: [1] }) as { a: number[] }
    expect(Reflect.ownKeys(value)).toEqual(['a'])
    expect(Reflect.ownKeys(value.a)).toEqual(['0', 'length'])
    expect(JSON.stringify(value)).toBe('{"a":[1]}')
    const clone = structuredClone(value)
    expect(clone).toStrictEqual(value)
    expect(isFrozenJson(clone)).toBe(false)
  })

  it('are not seen through a Proxy, and checking one runs none of its traps', () => {
    const trapped: string[] = []
    const handler = new Proxy({}, { get: (_target, trap) => (trapped.push(String(trap)), undefined) })
    const proxy = new Proxy(snapshotJson({ a: 1 }) as object, handler)
    expect(isFrozenJson(proxy)).toBe(false)
    expect(trapped).toEqual([])
  })
})

describe('freezeJsonLiteral', () => {
  it('freezes a literal of frozen JSON parts in place, exactly as snapshotJson would copy it', () => {
    const args = parseDurableJson('{"q":[1,{"r":2}]}')
    const make = () => ({ type: 'x', n: 1.5, flag: false, none: null, args, ['odd key']: 'v', 7: 'seven' })
    const expected = snapshotJson(make())
    const literal = make()
    const frozen = freezeJsonLiteral(literal)
    expect(frozen).toBe(literal)
    expect(frozen).toStrictEqual(expected)
    expect(Object.keys(frozen)).toEqual(Object.keys(expected as object))
    expect(isDeepFrozen(frozen)).toBe(true)
    expect(isFrozenJson(frozen)).toBe(true)
    expect(snapshotJson(frozen)).toBe(frozen)
    expect(frozen.args).toBe(args)
  })

  describe('leaves a literal untouched, for snapshotJson to copy or refuse, when it holds', () => {
    const cases: [string, () => object][] = [
      ['a container that has not crossed', () => ({ a: { b: 1 } })],
      ['a frozen container built elsewhere', () => ({ a: Object.freeze([1]) })],
      ['a nested part of a crossed value', () => ({ a: (snapshotJson({ inner: [1] }) as { inner: JsonValue }).inner })],
      ['undefined', () => ({ a: undefined })],
      ['NaN', () => ({ a: Number.NaN })],
      ['-0', () => ({ a: -0 })],
      ['a function', () => ({ a: () => 1 })],
      ['a __proto__ member, which sets the prototype', () => ({ __proto__: { a: 1 }, b: 1 })],
    ]
    for (const [what, make] of cases) {
      it(what, () => {
        const literal = make()
        expect(freezeJsonLiteral(literal)).toBe(literal)
        expect(Object.isFrozen(literal)).toBe(false)
        expect(isFrozenJson(literal)).toBe(false)
      })
    }
  })
})

describe('formatJsonPath', () => {
  it('writes indexes in brackets, identifier keys with dots and other keys quoted', () => {
    expect(formatJsonPath([])).toBe('$')
    expect(formatJsonPath(['items', 2, 'odd key', 'name', '', '0', 'a"b'])).toBe(
      '$.items[2]["odd key"].name[""]["0"]["a\\"b"]',
    )
  })
})

describe('parseJsonText', () => {
  it('parses JSON text into deeply frozen plain JSON equal to JSON.parse', () => {
    const text = '{"a": [1, -2.5, "x\\n\\u00e9", true, false, null, {}], "b": {"c": 1e3}}'
    const value = parseJsonText(text)
    expect(value).toStrictEqual(JSON.parse(text))
    expect(isDeepFrozen(value)).toBe(true)
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype)
  })

  it('places a missing or unquoted key at its object, not at the key before it', () => {
    const pathOf = (text: string): string => {
      try {
        parseJsonText(text)
      } catch (error) {
        return (error as JsonBoundaryError).path
      }
      throw new Error(`parsed: ${text}`)
    }
    expect(pathOf('{a:1}')).toBe('$')
    expect(pathOf('{"a":1,}')).toBe('$')
    expect(pathOf('{"x":{"y":[1,{z}]}}')).toBe('$.x.y[1]')
    expect(pathOf('{"a" 1}')).toBe('$.a')
  })

  it('agrees with JSON.parse on any JSON text with exact numbers', () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        let expected: unknown
        try {
          expected = snapshotJson(JSON.parse(text))
        } catch {
          return // -0 in the generated text: covered by its own test
        }
        let actual: JsonValue
        try {
          actual = parseJsonText(text)
        } catch (error) {
          // Only inexact numbers may be refused.
          expect((error as JsonBoundaryError).reason).toMatch(/^number /)
          return
        }
        expect(actual).toStrictEqual(expected)
      }),
    )
  })

  it('reads integers on either side of the short-integer shortcut exactly as the full grammar does', () => {
    const exact = ['0', '7', '-3', '123456789012345', '-12345678901234', '-123456789012345', '1234567890123456', '-9007199254740991', '1.5', '1e2', '12E1', '-0.5']
    for (const token of exact) {
      expect(parseJsonText(`[${token}]`)).toStrictEqual([Number(token)])
      expect(parseDurableJson(`{"n":${token}}`)).toStrictEqual({ n: Number(token) })
    }
    const refused: [string, string][] = [
      ['[-0]', '$[0]: -0 is not JSON (it would read back as 0) (at position 1)'],
      ['[-01]', '$[0]: -0 is not JSON (it would read back as 0) (at position 1)'],
      ['[-0e5]', '$[0]: -0 is not JSON (it would read back as 0) (at position 1)'],
      ['[01]', '$[1]: expected "," or "]", found "1" (at position 2)'],
      ['[1a]', '$[1]: expected "," or "]", found "a" (at position 2)'],
      ['[-]', '$[0]: unexpected "-" (at position 1)'],
      ['[-a]', '$[0]: unexpected "-" (at position 1)'],
      ['-', '$: unexpected "-" (at position 0)'],
      ['[9007199254740993]', '$[0]: number 9007199254740993 is an integer outside the safe range (+-9007199254740991); send it as a string (at position 1)'],
      ['[9007199254740993e0]', '$[0]: number 9007199254740993e0 is an integer outside the safe range (+-9007199254740991); send it as a string (at position 1)'],
      ['[90071992547409930e-1]', '$[0]: number 90071992547409930e-1 is an integer outside the safe range (+-9007199254740991); send it as a string (at position 1)'],
      // Not integers as written, though a double rounds them to one.
      ['[12345678901234567.5]', '$[0]: number 12345678901234567.5 has more digits than a double holds; send it as a string (at position 1)'],
      ['[12345678901234567890e-3]', '$[0]: number 12345678901234567890e-3 has more digits than a double holds; send it as a string (at position 1)'],
    ]
    for (const [text, message] of refused) expect(boundaryError(() => parseJsonText(text)).message).toBe(`value is not lossless JSON at ${message}`)
  })

  it('words the refusal of a huge number token in linear time and shows only its start', () => {
    // A model can send any length: 300 K digits took minutes with a backtracking regular expression.
    const token = `1.${'0'.repeat(300_000)}1`
    const message = boundaryError(() => parseJsonText(`{"n":${token}}`)).message
    expect(message).toContain('has more digits than a double holds')
    expect(message).toContain(`(${token.length} characters)`)
    expect(message.length).toBeLessThan(300)
  })

  it('refuses exactly the token soups JSON.parse refuses, apart from duplicates and -0', () => {
    const token = fc.constantFrom('{', '}', '[', ']', ',', ':', '"a"', '"b"', '1', '-', '0', '.', 'e', '5', 'true', 'nul', 'null', ' ', '"', '\\', 'x', '\n')
    fc.assert(
      fc.property(fc.array(token, { maxLength: 12 }).map((parts) => parts.join('')), (text) => {
        let expected: unknown
        let syntaxOk = true
        try {
          expected = JSON.parse(text)
        } catch {
          syntaxOk = false
        }
        let actual: unknown
        let error: JsonBoundaryError | undefined
        try {
          actual = parseJsonText(text)
        } catch (caught) {
          error = caught as JsonBoundaryError
          expect(error).toBeInstanceOf(JsonBoundaryError)
        }
        if (!syntaxOk) expect(error).toBeDefined()
        else if (error !== undefined) expect(error.reason).toMatch(/duplicate key|-0/)
        else expect(actual).toStrictEqual(expected)
      }),
      { numRuns: 2000 },
    )
  })

  const unsafe: [string, string, RegExp][] = [
    ['{"a":{"b":[0,9007199254740993]}}', '$.a.b[1]', /integer outside the safe range/],
    ['[0.1000000000000000000001]', '$[0]', /more digits than a double holds/],
    ['{"big":1e400}', '$.big', /overflows/],
    ['{"tiny":1e-400}', '$.tiny', /underflows/],
    ['{"x":-1e400}', '$.x', /overflows/],
    ['[9007199254740992.5]', '$[0]', /outside the safe range|more digits/],
    ['123456789012345678901234567890', '$', /outside the safe range/],
  ]
  for (const [text, path, reason] of unsafe) {
    it(`refuses the inexact number in ${text} at ${path} instead of rounding it`, () => {
      const error = boundaryError(() => parseJsonText(text))
      expect(error.path).toBe(path)
      expect(error.reason).toMatch(reason)
    })
  }

  it('accepts numbers a double holds exactly, in any notation', () => {
    expect(parseJsonText('[9007199254740991, -9007199254740991, 0.1, 1.50, 1E+2, 123.456e-7, 5e-324, 0.000]')).toEqual([
      9007199254740991, -9007199254740991, 0.1, 1.5, 100, 0.0000123456, 5e-324, 0,
    ])
  })

  it('refuses -0 in any spelling', () => {
    for (const text of ['-0', '[-0.0]', '{"n":-0e5}']) {
      expect(boundaryError(() => parseJsonText(text)).reason).toMatch(/-0/)
    }
  })

  it('refuses a duplicate key, even when both values are equal, pointing at the second key', () => {
    const error = boundaryError(() => parseJsonText('{"a":{"k":1,"k":1}}'))
    expect(error.path).toBe('$.a.k')
    expect(error.reason).toBe('duplicate key "k" (at position 12)')
  })

  it('reads __proto__ as an ordinary key', () => {
    const value = parseJsonText('{"__proto__":{"polluted":true}}') as Record<string, unknown>
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype)
    expect(Object.hasOwn(value, '__proto__')).toBe(true)
    expect((value as { polluted?: unknown }).polluted).toBeUndefined()
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
  })

  it('reports a syntax error with its path and position', () => {
    const error = boundaryError(() => parseJsonText('{"a": [1, 2 3]}', 'arguments of "x"'))
    expect(error.path).toBe('$.a[2]')
    expect(error.reason).toBe('expected "," or "]", found "3" (at position 12)')
    expect(error.message).toMatch(/^arguments of "x" is not lossless JSON at \$\.a\[2\]/)
  })

  it('refuses empty text, trailing text and unescaped control characters', () => {
    expect(boundaryError(() => parseJsonText('')).reason).toMatch(/expected a value, found end of text/)
    expect(boundaryError(() => parseJsonText('{} {}')).reason).toMatch(/after the value/)
    expect(boundaryError(() => parseJsonText('"a\tb"')).reason).toMatch(/control character/)
  })

  it('parses text nested 100,000 deep without overflowing the stack', () => {
    const depth = 100_000
    const value = parseJsonText('['.repeat(depth) + '7' + ']'.repeat(depth))
    let cursor: unknown = value
    let levels = 0
    while (Array.isArray(cursor)) {
      cursor = cursor[0]
      levels++
    }
    expect(levels).toBe(depth)
    expect(cursor).toBe(7)
  })
})

describe('stringifyJson and parseDurableJson', () => {
  it('round-trip any JSON value exactly', () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        expect(parseDurableJson(stringifyJson(snapshotJson(value)))).toStrictEqual(value)
      }),
    )
  })

  it('round-trip doubles that are not safe integers, which outside text may not carry', () => {
    const value = snapshotJson([1e300, 2 ** 53, -1.7976931348623157e308, 5e-324])
    const text = stringifyJson(value)
    expect(text).toBe('[1e+300,9007199254740992,-1.7976931348623157e+308,5e-324]')
    expect(parseDurableJson(text)).toEqual(value)
    expect(() => parseJsonText(text)).toThrow(JsonBoundaryError)
  })

  it('still refuse durable text that would round', () => {
    expect(boundaryError(() => parseDurableJson('[9007199254740993]')).path).toBe('$[0]')
    expect(boundaryError(() => parseDurableJson('{"a":0.1000000000000000000001}')).path).toBe('$.a')
  })

  it('writes one line without spaces, keeping key order and __proto__ keys', () => {
    const value = parseJsonText('{ "b" : [ 1 , "two\\nlines" ], "__proto__": { }, "a": null }')
    expect(stringifyJson(value)).toBe('{"b":[1,"two\\nlines"],"__proto__":{},"a":null}')
  })

  it('round-trips lone surrogates and escapes', () => {
    const value = snapshotJson({ s: '\ud800 \u0000 " \\ \u2028' })
    expect(parseDurableJson(stringifyJson(value))).toEqual(value)
  })

  it('writes a value nested 100,000 deep', () => {
    const text = stringifyJson(snapshotJson(nested(100_000)))
    expect(text.startsWith('{"k":[{"k":[')).toBe(true)
    expect(text.length).toBe(50_000 * '{"k":[]}'.length + '"leaf"'.length)
    expect(isFrozenJson(parseDurableJson(text))).toBe(true)
  })

  it('refuses to write a value that is not lossless JSON', () => {
    const error = boundaryError(() => stringifyJson({ a: [Number.NaN] } as unknown as JsonValue))
    expect(error.path).toBe('$.a[0]')
  })
})
