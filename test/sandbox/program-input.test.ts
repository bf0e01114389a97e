import { describe, expect, it } from 'vitest'
import { closesFence, columnBeforeShift, MAX_COMPLETION_PARSE_CHARS, openingFence, unfenceProgram, withCompletionValue } from '../../sandbox/program-input.ts'

describe('unfenceProgram', () => {
  it('leaves a program without fences as it is', () => {
    expect(unfenceProgram('return 1')).toEqual({ ok: true, code: 'return 1', fenced: false })
  })

  it.each(['ts', 'typescript', 'js', 'javascript', ''])('blanks the fence lines of a program tagged %j, keeping every line number', (tag) => {
    expect(unfenceProgram(`\`\`\`${tag}\nconst a = 1\nreturn a\n\`\`\``)).toEqual({ ok: true, code: '\nconst a = 1\nreturn a\n', fenced: true })
  })

  it('keeps CRLF line breaks and blank lines around the fence', () => {
    expect(unfenceProgram('\r\n```ts\r\nreturn 1\r\n```\r\n')).toEqual({ ok: true, code: '\r\n\r\nreturn 1\r\n\r\n', fenced: true })
  })

  it('takes a program whose closing fence is missing', () => {
    expect(unfenceProgram('```ts\nreturn 1\n')).toEqual({ ok: true, code: '\nreturn 1\n', fenced: true })
  })

  it('accepts tilde fences and longer backtick fences', () => {
    expect(unfenceProgram('~~~js\nreturn 1\n~~~')).toEqual({ ok: true, code: '\nreturn 1\n', fenced: true })
    expect(unfenceProgram('````ts\nreturn 1\n````')).toEqual({ ok: true, code: '\nreturn 1\n', fenced: true })
  })

  it('refuses prose before a fenced program, naming the fix', () => {
    const outcome = unfenceProgram('Here is the code:\n```ts\nreturn 1\n```')
    expect(outcome.ok).toBe(false)
    expect(!outcome.ok && outcome.message).toMatch(/before the fence at line 2.*Send only the program/s)
  })

  it('refuses prose before a code block, naming its opening line', () => {
    const outcome = unfenceProgram('I will sum them.\n\n~~~js\nreturn 1\n~~~\n')
    expect(!outcome.ok && outcome.message).toMatch(/before the fence at line 3/)
  })

  it('keeps fence-like lines inside a fenced program as its own text: only the first and last lines are fences', () => {
    const body = 'const readme = `# Title\n```js\nconsole.log(1)\n```\n`\nreturn readme'
    expect(unfenceProgram(`\`\`\`ts\n${body}\n\`\`\``)).toEqual({ ok: true, code: `\n${body}\n`, fenced: true })
  })

  it('leaves a program whose template literal holds fenced Markdown unchanged', () => {
    const code = 'const readme = `# Title\n```js\nconsole.log(1)\n```\n`\nreturn readme\n'
    expect(unfenceProgram(code)).toEqual({ ok: true, code, fenced: false })
  })

  it('blanks only the opening fence when the last line does not close it', () => {
    expect(unfenceProgram('```ts\nconst s = `\n```\n`\nreturn s')).toEqual({ ok: true, code: '\nconst s = `\n```\n`\nreturn s', fenced: true })
  })

  it('takes a line of bitwise nots for code, not for a tilde fence', () => {
    const code = 'const x = 5.7\n~~~x'
    expect(unfenceProgram(code)).toEqual({ ok: true, code, fenced: false })
  })

  it('leaves backticks inside a program alone', () => {
    const code = 'const s = `a ``` b`\nreturn s'
    expect(unfenceProgram(code)).toEqual({ ok: true, code, fenced: false })
  })
})

describe('fence detection on hostile input', () => {
  // The inputs that made the former regular expression backtrack quadratically, at 256 KB a line.
  const size = 256 * 1024
  it.each([
    ['a tilde run, blanks and a letter', `~~~${' '.repeat(size)}x`],
    ['a backtick run, blanks and a backtick', `\`\`\`${' '.repeat(size)}\``],
    ['a long tilde run and a letter', `${'~'.repeat(size)}x`],
    ['a backtick fence around a hostile line', `\`\`\`\n~~~${' '.repeat(size)}x\n\`\`\``],
    ['a hostile line between other lines', `return 1\n~~~${'\t'.repeat(size)}y\nreturn 2`],
  ])('answers for %s, taking the line as code', (_label, code) => {
    const outcome = unfenceProgram(code)
    expect(outcome.ok).toBe(true)
  })

  it('reads a line with plain character scans, no regular expression, so its work is linear in the line', () => {
    for (const detector of [openingFence, closesFence]) {
      expect(String(detector)).not.toMatch(/RegExp|\.(test|exec|match|matchAll|replace|replaceAll|search|split)\(/)
    }
  })

  it('takes a line of three or more backticks or tildes with an allowed info string as an opening fence', () => {
    expect(openingFence('   ````ts {1,3}')).toEqual({ char: '`', length: 4 })
    expect(openingFence('~~~ TypeScript ')).toEqual({ char: '~', length: 3 })
    expect(openingFence('    ```')).toBeUndefined()
    expect(openingFence('``` a`b')).toBeUndefined()
    expect(openingFence('~~~x')).toBeUndefined()
    expect(closesFence(' ````  ', { char: '`', length: 3 })).toBe(true)
    expect(closesFence('``', { char: '`', length: 3 })).toBe(false)
    expect(closesFence('~~~', { char: '`', length: 3 })).toBe(false)
  })
})

describe('withCompletionValue', () => {
  it('returns a lone expression, recording the shift on its line', async () => {
    expect(await withCompletionValue('1 + 2')).toEqual({ code: 'return(1 + 2)', shift: { line: 1, column: 1, length: 7 } })
  })

  it('puts `return(` after the previous statement when the expression starts on a later line: no column moves', async () => {
    expect(await withCompletionValue('const a = 1\na + 1')).toEqual({ code: 'const a = 1;return(\na + 1)' })
  })

  it('keeps a trailing comment and semicolon after the expression', async () => {
    expect(await withCompletionValue('let a = 1\na; // done\n')).toEqual({ code: 'let a = 1;return(\na); // done\n' })
  })

  it('returns an awaited expression', async () => {
    expect((await withCompletionValue('await tools.x({})')).code).toBe('return(await tools.x({}))')
  })

  it('records the shift when the expression shares a line with the statement before', async () => {
    expect(await withCompletionValue('const a = 1; a')).toEqual({ code: 'const a = 1; return(a)', shift: { line: 1, column: 14, length: 7 } })
  })

  it.each([
    ['a program with a return of its own', 'if (x) return 1\nfoo()'],
    ['a declaration last', 'const x = 1'],
    ['a block last', 'x = 1\n{}'],
    ['a loop last', 'for (;;) { break }'],
    ['an if last', 'if (a) b()'],
    ['a directive', '"use strict"'],
    ['a syntax error', 'const = 1\nfoo()'],
    ['an empty program', ''],
  ])('leaves %s unchanged', async (_label, code) => {
    expect(await withCompletionValue(code)).toEqual({ code })
  })

  it('counts a return inside a nested function as not the program\'s own', async () => {
    expect((await withCompletionValue('const f = () => { return 2 }\nf()')).code).toBe('const f = () => { return 2 };return(\nf())')
  })

  it('leaves a program too long to parse cheaply unchanged', async () => {
    const code = `${'// filler\n'.repeat(MAX_COMPLETION_PARSE_CHARS / 10 + 1)}1`
    expect(await withCompletionValue(code)).toEqual({ code })
  })
})

describe('columnBeforeShift', () => {
  it('maps a column past the inserted text back, and leaves other lines and earlier columns alone', () => {
    const shift = { line: 2, column: 5, length: 7 }
    expect(columnBeforeShift(shift, 2, 19)).toBe(12)
    expect(columnBeforeShift(shift, 2, 3)).toBe(3)
    expect(columnBeforeShift(shift, 1, 19)).toBe(19)
    expect(columnBeforeShift(undefined, 2, 19)).toBe(19)
  })
})
