import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { compactRuntimeModule } from '../../scripts/compact-guest-runtime.ts'
import { compactScript } from '../../sandbox/compact-script.ts'
import { deferredRuntimeSource, guestRuntimeSource } from '../../sandbox/guest-runtime.ts'

describe('compactScript', () => {
  it('drops comments and spaces, keeping tokens that would otherwise merge apart', () => {
    expect(compactScript('var  x = a - -b + +c; // note\nvar y = a++ + b /* c */ / d')).toBe('var x=a- -b+ +c;\nvar y=a++ +b/d')
    expect(compactScript('if (a >>> 1 >= b) x >>= 2')).toBe('if(a>>>1>=b)x>>=2')
    expect(compactScript('f(a) /* x */ /* y */ .g')).toBe('f(a).g')
  })

  it('keeps every line break, so line numbers and semicolon insertion do not change', () => {
    const source = 'var a = 1\n\n/* two\nlines */\nvar b = a\n++c\nreturn // why\nx'
    const compact = compactScript(source)
    expect(compact).toBe('var a=1\n\n\n\nvar b=a\n++c\nreturn\nx')
    expect(compact.split('\n')).toHaveLength(source.split('\n').length)
  })

  it('returns what it cannot compact safely unchanged', () => {
    for (const source of ['y = 1 .toString()', 'r = `t${1}`', 'var a = "\\u{1F600}" + `x`']) expect(compactScript(source)).toBe(source)
  })

  it('leaves a source alone where a slash may start a regular expression, whose spaces matter', () => {
    for (const source of ['var r = /a  b/', 'f(/ +/)', 'if (x) {} /a b/.test(s)', 'return /x y/', 'a = [/ +/]', 'b = c ? /x y/ : 1']) {
      expect(compactScript(source), source).toBe(source)
    }
    // A slash after an operand is a division, and goes on being compacted.
    expect(compactScript('q = a / b / (c) / d[0] / 2; x /= 2')).toBe('q=a/b/(c)/d[0]/2;x/=2')
  })

  it('leaves a source alone whose compact form would hold an HTML-like comment', () => {
    for (const source of ['x = a < !--b', 'y = a-- > b']) expect(compactScript(source), source).toBe(source)
  })

  it('compacts the prelude', () => {
    const prelude = guestRuntimeSource()
    const deferred = deferredRuntimeSource()
    const literal = JSON.stringify(deferred)
    expect(prelude).toContain(literal)
    // A compile-cost budget for what QuickJS compiles for every run (about 11 KB a millisecond): the
    // prelude but for its deferred part, which it holds as a string literal. It was 15,600 chars
    // before console formatting and error description were deferred (BENCHMARKS.md); compaction
    // takes the whole from about 27 KB of source.
    expect(prelude.length - literal.length).toBeLessThan(13_000)
    for (const source of [prelude, deferred]) expect(source).not.toMatch(/\/\/ |\/\*/)
    expect(prelude.startsWith('(function(){\n')).toBe(true)
    expect(deferred.startsWith('(function(kit){\n')).toBe(true)
  })

  it('stores the prelude compacted for its current source, so that a run never loads TypeScript for it', () => {
    const stored = readFileSync(new URL('../../sandbox/guest-runtime-compact.ts', import.meta.url), 'utf8')
    expect(stored, 'sandbox/guest-runtime-compact.ts is out of date: run `npm run compact-runtime`').toBe(compactRuntimeModule())
  })
})
