import { describe, expect, it } from 'vitest'
import { stripsQuickly, stripTypes } from '../../sandbox/strip-types.ts'

function strip(source: string): string {
  const result = stripTypes(source)
  if (!result.ok) throw new Error(`expected success, got ${result.message} at ${result.line}:${result.column}`)
  return result.code
}

/** Line and column (both 1-based) of every identifier-like word, in order. */
function wordPositions(text: string): string[] {
  const positions: string[] = []
  text.split('\n').forEach((line, index) => {
    for (const match of line.matchAll(/[A-Za-z_$][\w$]*/g)) positions.push(`${match[0]}@${index + 1}:${match.index + 1}`)
  })
  return positions
}

describe('stripTypes', () => {
  it('keeps every remaining word at the line and column where it was written', () => {
    const source = [
      'interface Entry { path: string; size: number }',
      'const entries: Entry[] = await tools.list_files({ dir: "." }) as Entry[]',
      'const big = entries.filter((e: Entry): boolean => e.size > 1000)!',
      'function pick<T extends object>(items: T[], n?: number): T[] { return items.slice(0, n) }',
      'return { count: big.length, first: pick<Entry>(big, 3) satisfies Entry[] }',
    ].join('\n')
    const code = strip(source)
    expect(code.split('\n').map((line) => line.length)).toEqual(source.split('\n').map((line) => line.length))
    const kept = new Set(wordPositions(code))
    const expected = ['entries@2:7', 'await@2:26', 'tools@2:32', 'big@3:7', 'filter@3:21', 'pick@4:10', 'items@4:33', 'return@5:1', 'first@5:29']
    for (const position of expected) expect(kept).toContain(position)
    for (const position of kept) expect(wordPositions(source)).toContain(position)
  })

  it('removes interfaces and type aliases', () => {
    expect(strip('interface A { a: string }\ntype B = A[]\nreturn 1')).toBe('                         \n            \nreturn 1')
  })

  it('removes generics from declarations and calls', () => {
    expect(strip('function id<T>(x: T): T { return x }\nreturn id<number>(1)')).toBe(
      'function id   (x   )    { return x }\nreturn id        (1)',
    )
  })

  it('removes as and satisfies assertions', () => {
    expect(strip('const a = (x as number) + 1\nconst b = ({ k: 1 } satisfies object)')).toBe(
      'const a = (x          ) + 1\nconst b = ({ k: 1 }                 )',
    )
  })

  it('removes non-null assertions', () => {
    expect(strip('return map.get(key)!.value')).toBe('return map.get(key) .value')
  })

  it('removes optional markers and parameter types', () => {
    expect(strip('function f(a?: string, b: number = 2) {}')).toBe('function f(a         , b         = 2) {}')
  })

  it('removes type-only imports', () => {
    expect(strip('import type { A } from "a"\nreturn 1')).toMatch(/^[ ;]{26}\nreturn 1$/)
  })

  it('ends each overload signature with a `;`, so the lines around it never run together', () => {
    // Without it `b = 4` and `(g)()` would become `b = 4(g)()`.
    const cases = [
      ['let b = 4', 'function f(): void', '(g)()'],
      ['let b = 4', 'async function f(x: string): Promise<void>;', '(g)()'],
      ['class C {', '  x = 1', '  m(a: string): void', '  [k]() {}', '  constructor(a: number)', '  constructor(a) {}', '}'],
      ['abstract class A {', '  x = 1', '  abstract m(): void', '  [k]() {}', '}'],
      // Declarations blanked with a `;` already keep just that one.
      ['let b = 4', 'declare function g(): void', '(g)()'],
    ]
    for (const lines of cases) {
      const stripped = strip(lines.join('\n')).split('\n')
      expect(stripped.map((line) => line.length)).toEqual(lines.map((line) => line.length))
      const expected = lines.map((line) => (/^\s*(abstract |async |declare )?(function|m\(|constructor\(a:)/.test(line) ? ';' : line.replace(/^abstract /, '').trim()))
      expect(stripped.map((line) => line.trim())).toEqual(expected)
    }
  })

  it('gives the engine no way to read as code what TypeScript read as a string, through an overload', async () => {
    // TypeScript reads line 5 as a regular expression and a string; without the `;` the engine read
    // `4 / x + '/;'` and ran the rest, outside the program's wrapper.
    const source = [
      'let x = 1',
      'let b = 4',
      'function f(): void',
      "/x+'/;' ; return \"escaped\" })(), (async () => { //'",
      "return 'inside'",
    ].join('\n')
    const code = strip(source)
    // What TypeScript sees in the stripped text is what the engine runs: the wrapper stays whole.
    expect(strip(code)).toBe(code)
    await expect(new Function(`return (async () => {${code}\n})()`)()).resolves.toBe('inside')
  })

  it('returns plain JavaScript unchanged', () => {
    const source = 'const r = await tools.search({ q: "x" }) // find it\n/* note */\nreturn r.hits.map((h) => h.id)'
    expect(strip(source)).toBe(source)
  })

  it('accepts top-level await and return', () => {
    expect(strip('const x = await Promise.resolve(1)\nfor await (const y of []) {}\nreturn x')).toBe(
      'const x = await Promise.resolve(1)\nfor await (const y of []) {}\nreturn x',
    )
  })

  it('rejects an enum with its position and a suggested alternative', () => {
    expect(stripTypes('const a = 1\n  enum Color { Red }')).toEqual({
      ok: false,
      message: '`enum` is not supported: use a union of string literals or a const object instead',
      line: 2,
      column: 3,
    })
  })

  it('rejects a namespace that holds values', () => {
    expect(stripTypes('namespace N { export const a = 1 }')).toMatchObject({ ok: false, line: 1, column: 1, message: expect.stringContaining('`namespace`') })
  })

  it('removes a namespace that holds only types', () => {
    const declaration = 'namespace N { export type A = 1 }'
    expect(strip(`${declaration}\nreturn 1`)).toBe(`${' '.repeat(declaration.length)}\nreturn 1`)
  })

  it('rejects parameter properties at the modifier', () => {
    expect(stripTypes('class C {\n  constructor(private a: number) {}\n}')).toMatchObject({
      ok: false,
      line: 2,
      column: 15,
      message: expect.stringContaining('parameter properties'),
    })
  })

  it('rejects angle-bracket assertions and suggests as', () => {
    expect(stripTypes('const x = <number>y')).toMatchObject({ ok: false, line: 1, column: 11, message: expect.stringContaining('`value as T`') })
  })

  it('rejects a value import and says where the tools are', () => {
    expect(stripTypes('import fs from "node:fs"')).toMatchObject({ ok: false, line: 1, column: 1, message: expect.stringContaining('global `tools` object') })
  })

  it('rejects an export and suggests return', () => {
    expect(stripTypes('\nexport const a = 1')).toMatchObject({ ok: false, line: 2, column: 1, message: expect.stringContaining('`return`') })
  })

  it('rejects `<!--` where it is code: a script reads it as a comment, TypeScript as `< !--`', () => {
    // The difference could hide code from the check and close the function the program runs in.
    const escape = "let x = 0\nx<!--y; `\n}) (), globalThis.out = 1, (async () => {\n<!--`\nreturn 'inside'"
    expect(stripTypes(escape)).toMatchObject({ ok: false, line: 2, column: 2, message: expect.stringContaining('`<!--` starts a comment in a script') })
    expect(stripTypes('let y = 2\nreturn 1<!--y')).toMatchObject({ ok: false, line: 2, column: 9 })
  })

  it('rejects `-->` that starts a line (a comment in a script) as the syntax error TypeScript finds there', () => {
    expect(stripTypes('let x = 3, y = 1\nx\n-->y')).toMatchObject({ ok: false, line: 3, message: expect.stringContaining('Syntax error') })
    expect(stripTypes('let x = 3, y = 1\nx /*\n*/ -->y')).toMatchObject({ ok: false, line: 3, message: expect.stringContaining('Syntax error') })
  })

  it('accepts the same characters in strings, templates, regular expressions and comments, and `-->` inside a line', () => {
    const fine = [
      "const html = '<!-- note -->'",
      'const t = `<!--${1}-->`',
      'const r = /<!--|-->/',
      '// <!-- a comment -->',
      '/*\n--> inside a comment\n*/',
      'let i = 3\nwhile (i-->0) {}',
      'let x = 3, y = 1\nreturn x /* c */ -->y',
      "const s = 'a'\nreturn s + `\n-->`",
    ]
    for (const source of fine) expect(stripTypes(source)).toMatchObject({ ok: true, code: source })
  })

  it('refuses a program nested deeper than the parser can follow, without a host error', () => {
    for (const source of ['return ' + '['.repeat(5_000) + ']'.repeat(5_000), 'return ' + '('.repeat(5_000) + '1' + ')'.repeat(5_000), '{'.repeat(5_000) + '}'.repeat(5_000)]) {
      expect(stripTypes(source)).toMatchObject({ ok: false, line: 1, column: 1, message: expect.stringContaining('nests too deeply') })
    }
  })

  it('reports a syntax error at its line and column', () => {
    expect(stripTypes('const a = 1\nlet x = ;')).toEqual({ ok: false, message: 'Syntax error: Expression expected.', line: 2, column: 9 })
  })

  it('reports a syntax error on the first line at the column the program has', () => {
    expect(stripTypes('let x = ;')).toMatchObject({ ok: false, line: 1, column: 9 })
  })

  it('reports a missing closing brace at the end of the program', () => {
    expect(stripTypes('if (x) {\n  f()')).toEqual({ ok: false, message: "Syntax error: '}' expected.", line: 2, column: 6 })
  })

  it('reports a closing brace that would end the program body early', () => {
    expect(stripTypes('f()\n}\ng()')).toEqual({ ok: false, message: "Syntax error: '}' has no matching '{'", line: 2, column: 1 })
  })
})

describe('stripsQuickly', () => {
  it('accepts an ordinary program, typed, with a loop, generics and an async callback', () => {
    const program = `const issues: Array<{ id: number; title: string }> = await tools.list_issues({ repo: 'a/b', state: 'open' })
const results = await Promise.all(issues.filter((i) => i.title.includes('bug')).map(async (issue) => {
  const comments = await tools.list_comments({ issue: issue.id })
  for (let k = 0; k < comments.length; k++) if (comments[k].body.length > 100) console.log(\`long \${k}\`)
  return { id: issue.id, title: issue.title, n: comments.length }
}))
results.sort((a, b) => b.n - a.n)
return results`
    expect(stripsQuickly(program)).toBe(true)
    expect(stripsQuickly('return 1')).toBe(true)
  })

  it('refuses the shapes that make the parser re-parse: chains of `<`, nested `async (`, escaped `async`, nested arrow defaults', () => {
    expect(stripsQuickly('x = ' + Array.from({ length: 8 }, () => 'a').join('<'))).toBe(false)
    expect(stripsQuickly('x = ' + 'async ('.repeat(4) + '1' + ')'.repeat(4))).toBe(false)
    expect(stripsQuickly('x = ' + '\\u0061sync ('.repeat(4) + '1' + ')'.repeat(4))).toBe(false)
    expect(stripsQuickly('x = ' + '(a = '.repeat(33) + 'b' + ')'.repeat(33))).toBe(false)
    // Nested `infer X extends` in tuple types: no `(` or `<` at all, and twice the parse per level.
    expect(stripsQuickly('let x: ' + '[infer A extends '.repeat(4) + '1' + ' ? 1 : 1]'.repeat(4) + ' = 0\nreturn 1')).toBe(false)
  })

  it('refuses a long program whatever it holds, and counts the tokens in strings and comments too', () => {
    expect(stripsQuickly(`return '${'x'.repeat(2_100)}'`)).toBe(false)
    expect(stripsQuickly(`// ${'<'.repeat(4)}\nreturn 1`)).toBe(false)
    expect(stripsQuickly(`return "${'('.repeat(33)}"`)).toBe(false)
  })
})
