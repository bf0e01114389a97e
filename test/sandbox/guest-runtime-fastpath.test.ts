import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { EngineRunResult, SandboxEngine } from '../../sandbox/engine.ts'
import { CONTRACT_TOOLS, fakeHost, run, valueOf } from './contract.ts'
import { enginesUnderTest } from './engines.ts'

/**
 * The prelude's fast paths (sandbox/guest-runtime.ts), on every engine: the JSON walker builds a
 * rejection's path only when it rejects, copies the value and lets the native stringify write it,
 * and `tools` holds its tools as own properties in front of the proxy that answers other names.
 * Each test pins behaviour those shortcuts could change.
 */

function resultFailure(result: EngineRunResult): { message: string; path: string } {
  if (result.ok || result.error.kind !== 'result') expect.fail(`expected a result failure, got ${JSON.stringify(result)}`)
  return result.error
}

/** The message a tool call's argument rejection carries, for `what` at `path`. */
const argumentMessage = (what: string, path: string): string => `tools.echo: the argument is not JSON: ${what} at ${path}`

describe.each(enginesUnderTest())('guest runtime fast paths on $name', (engineUnderTest) => {
  let engine: SandboxEngine
  beforeAll(async () => {
    engine = await engineUnderTest.create()
  })
  afterAll(async () => {
    await engine?.dispose()
  })

  describe('paths in rejections', () => {
    const cases: [string, string, string, string][] = [
      ['NaN under identifier keys', '{ a: { b: { c: NaN } } }', 'NaN', '$.a.b.c'],
      ['an array element under an object', '{ a: [1, 2, () => 3] }', 'a function', '$.a[2]'],
      ['a key that is not an identifier', '{ "key with space": { x: undefined, y: 1n } }', 'a BigInt', '$["key with space"].y'],
      ['an integer-like key', '{ 0: [{ 1: Symbol("s") }] }', 'a symbol', '$["0"][0]["1"]'],
      ['a hole deep in arrays', '[[0], [1, [2, , 4]]]', 'a hole in a sparse array', '$[1][1][1]'],
      ['-0 after omitted undefined keys', '{ u: undefined, list: [{ v: undefined, z: -0 }] }', '-0', '$.list[0].z'],
      ['a cycle below the top', '(() => { const o = { a: [{}] }; o.a[0].back = o.a; return { o } })()', 'a circular reference', '$.o.a[0].back'],
      ['a Map after a Date', '{ when: new Date(0), m: { inner: new Map() } }', 'a Map (not JSON)', '$.m.inner'],
      ['an invalid Date in an array', '{ dates: [new Date(0), new Date(NaN)] }', 'an invalid Date', '$.dates[1]'],
      ['a class instance', '{ k: [new (class K {})()] }', 'a class instance (only plain objects are JSON)', '$.k[0]'],
      ['a $ and _ in keys', '{ $a: { _b9: Infinity } }', 'Infinity', '$.$a._b9'],
      ['a quote in a key', '{ \'say "hi"\': -Infinity }', '-Infinity', '$["say \\"hi\\""]'],
    ]
    it.each(cases)('names %s in an argument and in a result', async (_title, value, what, path) => {
      const code = `const v = ${value}\nlet m\ntry { await tools.echo(v) } catch (e) { m = [e.name, e.message] }\nreturn m`
      expect(valueOf(await run(engine, code))).toEqual(['TypeError', argumentMessage(what, path)])
      const failure = resultFailure(await run(engine, `return ${value}`))
      expect(failure.path).toBe(path)
      expect(failure.message).toContain(`${what} at ${path}`)
    })

    it('clips a long key inside a nested path and names the depth that was too deep', async () => {
      const long = 'k'.repeat(300)
      const code = [
        `const o = { a: { ["${long}"]: [NaN] } }`,
        'let deep = {}; const top = { d: deep }; for (let i = 0; i < 250; i++) { deep.n = {}; deep = deep.n }',
        'const out = []',
        'try { await tools.echo(o) } catch (e) { out.push(e.message) }',
        'try { await tools.echo(top) } catch (e) { out.push(e.message) }',
        'return out',
      ].join('\n')
      const [longKey, tooDeep] = valueOf(await run(engine, code)) as string[]
      expect(longKey).toBe(argumentMessage('NaN', `$.a["${'k'.repeat(200)}... (100 more characters)"][0]`))
      expect(tooDeep).toBe(argumentMessage('nesting deeper than 200 levels', `$.d${'.n'.repeat(199)}`))
    })

    it('builds the path from the keys of the walk that rejected, after a getter ran a nested call', async () => {
      // The getter's own call walks a value of its own (and rejects it) while the outer walk is
      // half done; the outer rejection must still name the outer path.
      const code = [
        'const inner = []',
        'const arg = { a: { get b() { tools.echo({ x: [{ y: NaN }] }).catch((e) => inner.push(e.message)); return [1, { c: 1n }] } } }',
        'let outer',
        'try { await tools.echo(arg) } catch (e) { outer = e.message }',
        'await null',
        'return [outer, inner]',
      ].join('\n')
      expect(valueOf(await run(engine, code))).toEqual([argumentMessage('a BigInt', '$.a.b[1].c'), [argumentMessage('NaN', '$.x[0].y')]])
    })
    it('does not call a replaced RegExp.prototype.exec or String.prototype.slice while naming a path', async () => {
      const code = [
        'const calls = []',
        'const exec = RegExp.prototype.exec',
        'RegExp.prototype.exec = function (s) { calls.push("exec"); return exec.call(this, s) }',
        'String.prototype.slice = function () { calls.push("slice"); return "forged" }',
        'const out = []',
        'try { await tools.echo({ "a b": { c: [1, NaN] } }) } catch (e) { out.push(e.message) }',
        'try { await tools.echo({ m: new Set() }) } catch (e) { out.push(e.message) }',
        'return [out, calls]',
      ].join('\n')
      expect(valueOf(await run(engine, code))).toEqual([
        [argumentMessage('NaN', '$["a b"].c[1]'), argumentMessage('a Set (not JSON)', '$.m')],
        [],
      ])
    })

    it('reports failures the same way when Array.prototype has index accessors or RegExp.prototype.exec is replaced', async () => {
      const pollute = [
        'Object.defineProperty(Array.prototype, "0", { set() { throw new Error("index setter ran") }, get() { throw new Error("index getter ran") }, configurable: true })',
        'RegExp.prototype.exec = () => null',
      ].join('\n')
      const thrown = await run(engine, `${pollute}\nfunction f() { throw new RangeError("x") }\nf()`)
      expect(thrown).toMatchObject({ ok: false, error: { kind: 'guest', name: 'RangeError', message: 'x', line: 3 } })
      expect(thrown.ok ? '' : (thrown.error as { stack?: string }).stack).toContain('program:3:')
      expect(resultFailure(await run(engine, `${pollute}\nreturn { "a b": [NaN] }`))).toEqual({
        kind: 'result',
        message: 'the returned value is not JSON: NaN at $["a b"][0]',
        path: '$["a b"][0]',
      })
      expect(await run(engine, `${pollute}\nreturn "x".repeat(100)`, { limits: { maxResultBytes: 50 } })).toMatchObject({
        ok: false,
        error: { kind: 'limit', limit: 'maxResultBytes' },
      })
    })
  })

  describe('what crosses', () => {
    it('sends the same JSON text as JSON.stringify for plain values, whatever the program pollutes', async () => {
      const host = fakeHost()
      const code = [
        'const v = { s: "q\\"uote\\n\\u2028\\ud800", n: [0, -1.5, 1e21, 5e-324], b: [true, false, null], o: { 2: "two", 1: "one", z: { y: [] } }, e: {}, d: new Date(0), u: undefined }',
        'const expected = JSON.stringify(v)',
        'Object.prototype.toJSON = function () { return "polluted" }',
        'Array.prototype.toJSON = function () { return "polluted" }',
        'Object.defineProperty(Object.prototype, "x", { get() { throw new Error("getter ran") }, configurable: true })',
        'String.prototype.toJSON = () => "polluted"',
        'Object.defineProperty(Array.prototype, "0", { set() { throw new Error("index setter ran") }, configurable: true })',
        'JSON.stringify = () => "replaced"',
        'await tools.echo(v)',
        'return expected',
      ].join('\n')
      const expected = valueOf(await run(engine, code, { host }))
      expect(host.calls.map((c) => c.argsJson)).toEqual([expected])
      expect(JSON.parse(expected as string)).toMatchObject({ o: { 1: 'one', 2: 'two' }, d: '1970-01-01T00:00:00.000Z' })
    })

    it('keeps __proto__ and toJSON keys as plain data', async () => {
      const host = fakeHost()
      const code = [
        'const v = JSON.parse(\'{"__proto__": {"a": 1}, "toJSON": "not a method", "constructor": 2}\')',
        'const r = await tools.echo(v)',
        'return [Object.keys(r), Object.getPrototypeOf(r) === Object.prototype]',
      ].join('\n')
      // The host sees the keys as data; the answer is parsed back by JSON.parse, as any answer.
      expect(valueOf(await run(engine, code, { host }))).toEqual([['__proto__', 'toJSON', 'constructor'], true])
      expect(host.calls[0]?.argsJson).toBe('{"__proto__":{"a":1},"toJSON":"not a method","constructor":2}')
    })

    it('reads each property once, in Object.keys order, and omits undefined properties', async () => {
      const host = fakeHost()
      const code = [
        'const reads = []',
        'const v = { get b() { reads.push("b"); return 1 }, 7: "seven", get a() { reads.push("a"); return undefined }, get c() { reads.push("c"); return [1, { get d() { reads.push("d"); return 2 } }] } }',
        'const r = await tools.echo(v)',
        'return [reads, r]',
      ].join('\n')
      expect(valueOf(await run(engine, code, { host }))).toEqual([['b', 'a', 'c', 'd'], { 7: 'seven', b: 1, c: [1, { d: 2 }] }])
      expect(host.calls[0]?.argsJson).toBe('{"7":"seven","b":1,"c":[1,{"d":2}]}')
    })

    it('returns values, Dates and top-level undefined as before', async () => {
      expect(valueOf(await run(engine, 'return { a: [1, "x", { b: null }], d: new Date(86400000), u: undefined }'))).toEqual({
        a: [1, 'x', { b: null }],
        d: '1970-01-02T00:00:00.000Z',
      })
      expect(valueOf(await run(engine, 'return undefined'))).toBe(null)
      expect(valueOf(await run(engine, 'return "s"'))).toBe('s')
      expect(valueOf(await run(engine, 'return await tools.echo()'))).toEqual({})
    })

    it('serialises many calls in a row, including after rejected ones', async () => {
      const host = fakeHost()
      const code = [
        'const out = []',
        'for (let i = 0; i < 50; i++) {',
        '  try { out.push((await tools.echo(i % 3 === 0 ? { i, bad: [NaN] } : { i, list: [i, { k: String(i) }] })).i) } catch (e) { out.push(e.message) }',
        '}',
        'return out',
      ].join('\n')
      const out = valueOf(await run(engine, code, { host })) as unknown[]
      expect(out).toHaveLength(50)
      out.forEach((entry, i) => expect(entry).toEqual(i % 3 === 0 ? argumentMessage('NaN', '$.bad[0]') : i))
      expect(host.calls.map((c) => c.argsJson)).toEqual(
        Array.from({ length: 50 }, (_, i) => i).filter((i) => i % 3 !== 0).map((i) => JSON.stringify({ i, list: [i, { k: String(i) }] })),
      )
    })
  })

  describe('tools', () => {
    it('answers names as an ordinary object whose own properties are the tools', async () => {
      const code = [
        'const out = {}',
        'out.in = ["echo" in tools, "readFile" in tools, "nope" in tools, "then" in tools, "toString" in tools]',
        'out.own = [tools.hasOwnProperty("echo"), tools.hasOwnProperty("nope"), Object.prototype.hasOwnProperty.call(tools, "toString")]',
        'out.inherited = [tools.then, tools.toJSON, tools.inspect, tools[Symbol.iterator], tools[Symbol.toPrimitive]].map((v) => v === undefined)',
        'out.object = [tools.constructor === Object, tools.toString(), String(tools), `${tools}`, tools.valueOf() === tools, tools instanceof Object, Object.prototype.toString.call(tools)]',
        'out.awaited = (await tools) === tools',
        'out.keys = [Object.keys(tools), Object.getOwnPropertyNames(tools), JSON.stringify(tools), Object.entries(tools).map(([k, f]) => k + ":" + f.name + ":" + typeof f)]',
        'const d = Object.getOwnPropertyDescriptor(tools, "echo")',
        'out.descriptor = [typeof d.value, d.writable, d.enumerable, d.configurable]',
        'out.inherit = Object.create(tools).echo === tools.echo',
        'return out',
      ].join('\n')
      const names = CONTRACT_TOOLS.map((tool) => tool.binding)
      expect(valueOf(await run(engine, code))).toEqual({
        in: [true, true, false, false, true],
        own: [true, false, false],
        inherited: [true, true, true, true, true],
        object: [true, '[object Object]', '[object Object]', '[object Object]', true, true, '[object Object]'],
        awaited: true,
        keys: [names, names, '{}', names.map((n) => `${n}:${n}:function`)],
        descriptor: ['function', false, true, false],
        inherit: true,
      })
    })

    it('answers an unknown name, a polluted Object.prototype name and an unknown name read through the prototype with UNKNOWN_TOOL', async () => {
      const code = [
        'Object.prototype.polluted = 1',
        'const out = []',
        'for (const read of [() => tools.nope, () => tools.polluted, () => tools["x".repeat(300)], () => Object.getPrototypeOf(tools).nope, () => Object.create(tools).nope]) {',
        '  try { read(); out.push("no error") } catch (e) { out.push([e.name, e.code, e.message.slice(0, 60)]) }',
        '}',
        'return out',
      ].join('\n')
      const unknown = (name: string) => ['TypeError', 'UNKNOWN_TOOL', `tools.${name} is not a tool. Available tools: echo, sleep5, fail, never, readFile`.slice(0, 60)]
      expect(valueOf(await run(engine, code))).toEqual([unknown('nope'), unknown('polluted'), unknown('x'.repeat(300)), unknown('nope'), unknown('nope')])
    })

    it('keeps tools frozen, non-writable and its prototype fixed', async () => {
      const code = [
        '"use strict"',
        'const attempt = (f) => { try { f(); return "done" } catch (e) { return e.name } }',
        'const echo = tools.echo',
        'const out = [',
        '  Object.isFrozen(tools), Object.isExtensible(tools),',
        '  attempt(() => { tools.echo = 1 }), attempt(() => { tools.added = 1 }), attempt(() => { delete tools.echo }),',
        '  attempt(() => Object.defineProperty(tools, "x", { value: 1 })), attempt(() => Object.setPrototypeOf(tools, null)),',
        '  attempt(() => { tools.__proto__ = null }), attempt(() => { globalThis.tools = {} }),',
        '  tools.echo === echo, Object.getPrototypeOf(tools) === Object.getPrototypeOf(tools), globalThis.tools === tools,',
        ']',
        'return out',
      ].join('\n')
      expect(valueOf(await run(engine, code))).toEqual([true, false, 'TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError', true, true, true])
    })

    it('gives nothing but the tools through its prototype', async () => {
      const code = [
        'const proto = Object.getPrototypeOf(tools)',
        'const out = []',
        'out.push(Object.getPrototypeOf(proto) === Object.prototype, Object.isFrozen(proto), Object.keys(proto).join(","))',
        'out.push(Object.keys(proto).every((k) => proto[k] === tools[k]), proto.constructor === Object, tools.__proto__ === Object.prototype)',
        'return out',
      ].join('\n')
      expect(valueOf(await run(engine, code))).toEqual([true, true, CONTRACT_TOOLS.map((tool) => tool.binding).join(','), true, true, true])
    })

    it('plants no proxy trap from a polluted Object.prototype', async () => {
      const code = [
        'const calls = []',
        'for (const trap of ["has", "ownKeys", "getOwnPropertyDescriptor", "getPrototypeOf", "set", "defineProperty", "deleteProperty"]) {',
        '  Object.prototype[trap] = function () { calls.push(trap); throw new Error(trap) }',
        '}',
        'const proto = Object.getPrototypeOf(tools)',
        'const out = ["nope" in tools, "echo" in proto, Object.keys(proto).length, Object.keys(tools).length, Object.getPrototypeOf(proto) === Object.prototype]',
        'out.push((await tools.echo({ a: 1 })).a)',
        'return [out, calls]',
      ].join('\n')
      expect(valueOf(await run(engine, code))).toEqual([[false, true, CONTRACT_TOOLS.length, CONTRACT_TOOLS.length, true, 1], []])
    })

    it('calls a tool read as a method, detached, or through call and apply', async () => {
      const host = fakeHost()
      const code = [
        'const { echo } = tools',
        'const out = [await tools.echo({ n: 1 }), await echo({ n: 2 }), await tools.echo.call(null, { n: 3 }), await Reflect.apply(tools.echo, undefined, [{ n: 4 }]), await tools["echo"]({ n: 5 })]',
        'return out.map((r) => r.n)',
      ].join('\n')
      expect(valueOf(await run(engine, code, { host }))).toEqual([1, 2, 3, 4, 5])
      expect(host.calls).toHaveLength(5)
    })
  })
})

describe('toolsJson', () => {
  it('writes a frozen binding list once and a list that may change every time', async () => {
    const { toolsJson } = await import('../../sandbox/guest-runtime.ts')
    const frozen = Object.freeze([Object.freeze({ binding: 'a', name: 'a' })])
    expect(toolsJson(frozen)).toBe('[["a","a"]]')
    expect(toolsJson(frozen)).toBe(toolsJson(frozen))
    const open = [{ binding: 'a', name: 'a' }]
    expect(toolsJson(open)).toBe('[["a","a"]]')
    open.push({ binding: 'b', name: 'b' })
    expect(toolsJson(open)).toBe('[["a","a"],["b","b"]]')
  })
})
