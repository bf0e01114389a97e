import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isPlainJavaScript } from '../../sandbox/plain-javascript.ts'
import { stripTypes } from '../../sandbox/strip-types.ts'

describe('isPlainJavaScript', () => {
  it('accepts plain JavaScript, comparisons and arrows included', () => {
    for (const code of [
      'return 1',
      'const r = await tools.add({ a: 1, b: 2 })\nreturn r',
      'for (let i = 0; i < 3; i++) {}\nreturn [1, 2].map((x) => x * 2)',
      'if (a > b) return globalThis.x',
      'return a ? (b) : c => d',
      'type\nA = 1',
    ]) {
      expect(isPlainJavaScript(code), code).toBe(true)
    }
  })

  it('refuses TypeScript, and JavaScript that TypeScript would read otherwise', () => {
    for (const code of [
      'let x: number = 1',
      'return x as number',
      'enum E { A }',
      'interface I {}',
      // Two comparisons to JavaScript, a call with a type argument to TypeScript.
      'return f<T>(x)',
      'x = a < b\ny = c > d',
      // TypeScript reads `global` before a name as a declaration, across the line break too.
      'global\na',
      // A script's HTML-like comments, which TypeScript reads as code.
      'x = 1 <!-- y',
      'x = 1\n--> y',
    ]) {
      expect(isPlainJavaScript(code), code).toBe(false)
    }
  })

  it('refuses a body that closes the function it runs in and opens another', () => {
    expect(isPlainJavaScript('}); globalThis.escaped = 1; (async function () {')).toBe(false)
    expect(isPlainJavaScript('})(); x(); (async () => {')).toBe(false)
  })

  it('refuses what only sloppy mode allows, as the strict wrapper it runs in would', () => {
    expect(isPlainJavaScript('with (a) {}')).toBe(false)
    expect(isPlainJavaScript('return 0777')).toBe(false)
  })

  it('never runs the program it checks', () => {
    const marker = `checked${Math.random().toString(36).slice(2)}`
    expect(isPlainJavaScript(`globalThis.${marker} = 1`)).toBe(true)
    expect(marker in globalThis).toBe(false)
  })

  it('accepts only programs that stripTypes gives back unchanged (or refuses), over token soups of both languages', () => {
    const tokens = [
      'a', 'b', 'f', 'T', '(', ')', '?', ':', '=>', '<', '>', '=', ',', ';', '\n', ' ', '!', 'as', 'type', 'declare', 'abstract',
      'class', '{', '}', '[', ']', '.', 'async', 'return', '1', '+', 'satisfies', 'case', 'switch', 'new', '`', '"', '/', '*',
      '?.', 'let', 'function', 'in', 'keyof', 'readonly', 'public', 'accessor', 'static', 'global', 'globalThis', 'namespace',
      'module', 'infer', 'is', 'this', '...', '&&', '??', '|', 'implements', 'extends', 'await', '-', '--', '<=', '>=', '//c\n', '/*c*/',
    ]
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...tokens), { maxLength: 12 }), fc.constantFrom('', ' '), (parts, separator) => {
        const code = parts.join(separator)
        if (!isPlainJavaScript(code)) return
        const stripped = stripTypes(code)
        // Refused by TypeScript is fine (valid JavaScript runs as JavaScript); changed is not.
        if (stripped.ok) expect(stripped.code).toBe(code)
      }),
      { numRuns: 20_000 },
    )
  })
})
