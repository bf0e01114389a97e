import { describe, expect, it } from 'vitest'
import { ToolArgsError, ToolNotFoundError } from '../../src/errors.ts'
import { validateArgs } from '../../src/schema/validate.ts'
import type { JsonSchemaNode, ObjectJsonSchema } from '../../src/schema/types.ts'
import { nearestSpelling } from '../../src/spelling.ts'

/** The INVALID_ARGS message for `value` in property `x` of an object schema, without its tool prefix. */
function messageFor(property: JsonSchemaNode, value: unknown): string {
  return messageOf({ type: 'object', properties: { x: property } }, { x: value })
}

function messageOf(schema: ObjectJsonSchema, args: unknown): string {
  try {
    validateArgs(schema, args, 'tool')
  } catch (error) {
    if (error instanceof ToolArgsError) return error.message.replace('Invalid arguments for tool "tool": ', '')
    throw error
  }
  throw new Error('the arguments were valid')
}

describe('INVALID_ARGS messages state the path, what is expected and what was given', () => {
  it.each([
    ['enum', { enum: ['utf8', 'base64'] }, 'latin1', '$.x: expected one of "utf8" | "base64", found string "latin1"'],
    ['const', { const: 2 }, 3, '$.x: expected 2, found number 3'],
    ['type', { type: 'integer' }, '3', '$.x: expected integer, found string "3"'],
    ['minimum', { type: 'number', minimum: 1 }, 0, '$.x: expected a number >= 1, found number 0'],
    ['exclusiveMaximum', { type: 'number', exclusiveMaximum: 10 }, 10, '$.x: expected a number < 10, found number 10'],
    ['multipleOf', { type: 'number', multipleOf: 5 }, 7, '$.x: expected a multiple of 5, found number 7'],
    ['minLength', { type: 'string', minLength: 2 }, 'a', '$.x: expected a string of at least 2 characters, found string "a"'],
    ['pattern', { type: 'string', pattern: '^[a-z]+$' }, 'A1', '$.x: expected a string matching /^[a-z]+$/, found string "A1"'],
    ['format', { type: 'string', format: 'uri' }, 'not a uri', '$.x: expected a string in format "uri", found string "not a uri"'],
    ['minItems', { type: 'array', minItems: 1 }, [], '$.x: expected an array of at least 1 item, found array of 0 items'],
    ['items', { type: 'array', items: { type: 'string' } }, ['a', 2], '$.x[1]: expected string, found number 2'],
    ['uniqueItems', { type: 'array', uniqueItems: true }, [1, 1], '$.x: expected an array without duplicate items, found items 0 and 1 are equal'],
    ['oneOf', { oneOf: [{ type: 'string' }, { type: 'number' }] }, true, '$.x: expected exactly one of: string | number, found boolean true, which matches no branch'],
    [
      'anyOf read through its one branch of the right shape',
      { anyOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'null' }] },
      { a: 1 },
      '$.x.a: expected string, found number 1',
    ],
  ] as const)('%s', (_keyword, property, value, message) => {
    expect(messageFor(property as JsonSchemaNode, value)).toBe(message)
  })

  it('names the allowed value a misspelled enum value is closest to', () => {
    expect(messageFor({ enum: ['utf8', 'base64'] }, 'utf-8')).toBe('$.x: expected one of "utf8" | "base64", found string "utf-8" (did you mean "utf8"?)')
    expect(messageFor({ enum: ['read', 'write'] }, 'WRITE')).toBe('$.x: expected one of "read" | "write", found string "WRITE" (did you mean "write"?)')
  })

  it('names the declared key an undeclared key is a misspelling of, in a closed object', () => {
    const schema: ObjectJsonSchema = { type: 'object', properties: { path: { type: 'string' }, mode: { type: 'string' } }, additionalProperties: false }
    expect(messageOf(schema, { path: 'a', mdoe: 'x' })).toBe('$: expected no key "mdoe" (allowed keys: path, mode; did you mean "mode"?), found unexpected key')
    expect(messageOf(schema, { path: 'a', extra: 1 })).toBe('$: expected no key "extra" (allowed keys: path, mode), found unexpected key')
  })

  it('says a missing required key was most likely given misspelled, in an open object too', () => {
    const schema: ObjectJsonSchema = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }
    expect(messageOf(schema, { pth: 'a.txt' })).toBe('$.path: expected string (required key), found missing, but there is a key "pth": did you mean "path"?')
    expect(messageOf(schema, { other: 1 })).toBe('$.path: expected string (required key), found missing')
  })

  it('suggests nothing for one- and two-letter names, which are all a letter apart', () => {
    const schema: ObjectJsonSchema = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['b'], additionalProperties: false }
    expect(messageOf(schema, { a: 1, c: 2 })).toBe('$.b: expected number (required key), found missing; $: expected no key "c" (allowed keys: a, b), found unexpected key')
  })

  it('lists a long enum by its first 20 values and a count', () => {
    const values = Array.from({ length: 1_000 }, (_, i) => `value_${i}`)
    const message = messageFor({ enum: values }, 'nope')
    expect(message).toContain('"value_19" | ... (980 more), found string "nope"')
    expect(message.length).toBeLessThan(400)
  })

  it('never echoes a megabyte: keys, values and paths given by the model are clipped', () => {
    const giant = 'k'.repeat(1_000_000)
    const closed: ObjectJsonSchema = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false }
    const open: ObjectJsonSchema = { type: 'object', properties: {}, additionalProperties: { type: 'string' } }
    expect(messageOf(closed, { [giant]: 1 })).toBe(`$: expected no key "${'k'.repeat(60)}..." (allowed keys: a), found unexpected key`)
    expect(messageOf(open, { [giant]: 1 })).toBe(`$["${'k'.repeat(60)}..."]: expected string, found number 1`)
    expect(messageFor({ enum: ['a'] }, 'v'.repeat(1_000_000))).toBe(`$.x: expected "a", found string "${'v'.repeat(60)}..."`)
    expect(messageFor({ type: 'number' }, { [giant]: 1 })).toBe(`$.x: expected number, found object with keys "${'k'.repeat(60)}..."`)
  })

  it('keeps the structured path exact, so two long keys that share a head stay two paths', () => {
    const open: ObjectJsonSchema = { type: 'object', properties: {}, additionalProperties: { type: 'string' } }
    const first = `${'k'.repeat(70)} first`
    const second = `${'k'.repeat(70)} second`
    const long = `id${'x'.repeat(70)}`
    let issues: readonly { readonly path: string }[] = []
    try {
      validateArgs(open, { [first]: 1, [second]: 2, [long]: 3 }, 'tool')
    } catch (error) {
      if (!(error instanceof ToolArgsError)) throw error
      issues = error.issues
      // The message still clips each key, quoted or dotted.
      expect(error.message).toContain(`$["${'k'.repeat(60)}..."]: expected string, found number 1`)
      expect(error.message).toContain(`$["id${'x'.repeat(58)}..."]: expected string, found number 3`)
    }
    expect(issues.map((issue) => issue.path)).toEqual([`$["${first}"]`, `$["${second}"]`, `$.${long}`])
  })
})

describe('nearestSpelling', () => {
  it('finds the one candidate a word misspells, by case, separators or a few edits', () => {
    expect(nearestSpelling('Path', ['path', 'mode'])).toBe('path')
    expect(nearestSpelling('file-name', ['fileName', 'mode'])).toBe('fileName')
    expect(nearestSpelling('recursve', ['recursive', 'path'])).toBe('recursive')
  })

  it('finds nothing when no candidate is close, or two are equally close', () => {
    expect(nearestSpelling('extra', ['path', 'mode'])).toBeUndefined()
    expect(nearestSpelling('cat', ['bat', 'hat'])).toBeUndefined()
    expect(nearestSpelling('path', ['path', 'paths'])).toBeUndefined()
  })
})

describe('UNKNOWN_TOOL', () => {
  it('names the tool a misspelled name meant, then the tools there are', () => {
    expect(new ToolNotFoundError('readFile', ['list_files', 'read_file']).message).toBe('Unknown tool "readFile". Did you mean "read_file"? Available tools: list_files, read_file')
    expect(new ToolNotFoundError('zzz', ['a']).message).toBe('Unknown tool "zzz". Available tools: a')
    expect(new ToolNotFoundError('x', []).message).toBe('Unknown tool "x". Available tools: none')
  })

  it('lists a large tool set by its first 30 names and a count, and clips a giant name', () => {
    const tools = Array.from({ length: 500 }, (_, i) => `tool_${i}`)
    const message = new ToolNotFoundError('n'.repeat(1_000_000), tools).message
    expect(message).toBe(`Unknown tool "${'n'.repeat(80)}...". Available tools: ${tools.slice(0, 30).join(', ')} (and 470 more)`)
  })
})
