import { describe, expect, test } from 'vitest'
import { ToolArgsError, ToolErrorCode } from '../../src/errors.ts'
import { SchemaSpecError } from '../../src/schema/dsl.ts'
import { JsonSchemaError } from '../../src/schema/json-schema.ts'
import type { JsonSchemaNode, ObjectJsonSchema } from '../../src/schema/types.ts'
import { validateArgs, validateJsonSchemaValue } from '../../src/schema/validate.ts'
import { mcpFixture } from '../fixtures/mcp-schemas.ts'

const search: ObjectJsonSchema = {
  type: 'object',
  properties: {
    path: { type: 'string' },
    mode: { type: 'string', enum: ['fast', 'slow'] },
    limit: { type: 'integer' },
  },
  required: ['path'],
  additionalProperties: false,
}

function messages(schema: JsonSchemaNode, value: unknown): string[] {
  return validateJsonSchemaValue(schema, value).map((issue) => `${issue.path}: expected ${issue.expected}, found ${issue.found}`)
}

describe('validateJsonSchemaValue', () => {
  test('returns no issues for a valid value', () => {
    expect(validateJsonSchemaValue(search, { path: 'src', mode: 'fast', limit: 3 })).toEqual([])
  })

  test('names the path, the expected type and the value found', () => {
    expect(messages(search, { path: 3 })).toEqual(['$.path: expected string, found number 3'])
  })

  test('lists enum values when a value is outside them', () => {
    expect(messages(search, { path: 'a', mode: 'medium' })).toEqual(['$.mode: expected one of "fast" | "slow", found string "medium"'])
  })

  test('reports an enum mismatch once even when the type is wrong too', () => {
    expect(messages(search, { path: 'a', mode: 1 })).toEqual(['$.mode: expected one of "fast" | "slow", found number 1'])
  })

  test('names an unexpected key and the allowed keys', () => {
    expect(messages(search, { path: 'a', extra: true })).toEqual(['$: expected no key "extra" (allowed keys: path, mode, limit), found unexpected key'])
  })

  test('names a missing required key by its path', () => {
    expect(messages(search, {})).toEqual(['$.path: expected string (required key), found missing'])
  })

  test('reports every issue of a value at once', () => {
    expect(validateJsonSchemaValue(search, { mode: 'x', limit: 1.5, extra: 1 }).map((issue) => issue.path).sort()).toEqual([
      '$',
      '$.limit',
      '$.mode',
      '$.path',
    ])
  })

  test('rejects a non-integer for an integer node', () => {
    expect(messages({ type: 'integer' }, 1.5)).toEqual(['$: expected integer, found number 1.5'])
  })

  test('rejects a wrong const with the constant it wanted', () => {
    expect(messages({ const: 'v1' }, 'v2')).toEqual(['$: expected "v1", found string "v2"'])
  })

  test('formats nested array and odd-key paths', () => {
    const schema: JsonSchemaNode = { type: 'object', properties: { 'a b': { type: 'array', items: { type: 'boolean' } } } }
    expect(messages(schema, { 'a b': [true, 'no'] })).toEqual(['$["a b"][1]: expected boolean, found string "no"'])
  })

  test('says that no oneOf branch matched, without the branches\' own noise', () => {
    const schema: JsonSchemaNode = { oneOf: [{ type: 'string' }, { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }] }
    expect(messages(schema, 3)).toEqual(['$: expected exactly one of: string | object {n}, found number 3, which matches no branch'])
  })

  test('reports the problems inside the one oneOf branch that has the value\'s shape (a nullable field)', () => {
    const range: JsonSchemaNode = {
      oneOf: [
        { type: 'object', properties: { start: { type: 'integer' }, end: { type: 'integer' } }, required: ['start', 'end'], additionalProperties: false },
        { type: 'null' },
      ],
    }
    const tags: JsonSchemaNode = { oneOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] }
    const schema: JsonSchemaNode = { type: 'object', properties: { range, tags } }
    expect(messages(schema, { range: { start: '1', end: 2 }, tags: ['a', 3] })).toEqual([
      '$.range.start: expected integer, found string "1"',
      '$.tags[1]: expected string, found number 3',
    ])
    expect(messages(schema, { range: { start: 1 } })).toEqual(['$.range.end: expected integer (required key), found missing'])
    // A nested nullable inside the shaped branch unfolds too.
    const nested: JsonSchemaNode = { oneOf: [{ type: 'object', properties: { inner: tags } }, { type: 'null' }] }
    expect(messages(nested, { inner: [1] })).toEqual(['$.inner[0]: expected string, found number 1'])
    // When several branches have the value's shape, which one was meant is a guess: the oneOf is reported.
    const twoObjects: JsonSchemaNode = {
      oneOf: [
        { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
        { type: 'object', properties: { b: { type: 'string' } }, required: ['b'] },
      ],
    }
    expect(messages(twoObjects, { c: 1 })).toEqual(['$: expected exactly one of: object {a} | object {b}, found object with keys "c", which matches no branch'])
  })

  test('folds oneOf noise in time linear in the errors, and keeps the message short', () => {
    // 20,000 items that each miss a nullable item schema: quadratic folding took minutes here.
    const parameters: ObjectJsonSchema = {
      type: 'object',
      properties: { list: { type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'null' }] } } },
      additionalProperties: false,
    }
    const error = (() => {
      try {
        validateArgs(parameters, { list: Array.from({ length: 20_000 }, () => 1) }, 'many')
      } catch (caught) {
        return caught as ToolArgsError
      }
      throw new Error('expected INVALID_ARGS')
    })()
    expect(error.issues).toHaveLength(20_000)
    expect(error.issues[0]).toEqual({ path: '$.list[0]', expected: 'exactly one of: string | null', found: 'number 1, which matches no branch' })
    expect(error.message).toContain('and 19950 more of the same kind')
    expect(error.message.length).toBeLessThan(5_000)
  })

  test('says which oneOf branches matched when more than one did', () => {
    const schema: JsonSchemaNode = { oneOf: [{ type: 'number' }, { type: 'integer' }, { type: 'string' }] }
    expect(messages(schema, 2)).toEqual(['$: expected exactly one of: number | integer | string, found number 2, which matches 2 branches (oneOf[0] and oneOf[1])'])
  })

  test('accepts a value matching exactly one oneOf branch', () => {
    expect(validateJsonSchemaValue({ oneOf: [{ type: 'number' }, { type: 'integer' }] }, 2.5)).toEqual([])
  })

  test('accepts any JSON for an annotation-only node', () => {
    expect(validateJsonSchemaValue({ description: 'anything' }, { a: [1, null, 'x'] })).toEqual([])
  })

  test('keeps objects open unless additionalProperties is false', () => {
    expect(validateJsonSchemaValue({ type: 'object', properties: { a: { type: 'string' } } }, { b: 1 })).toEqual([])
  })

  test('does not let inherited members satisfy a required key', () => {
    const schema = JSON.parse('{"type":"object","properties":{"constructor":{"type":"string"},"toString":{}},"required":["constructor","toString"]}') as JsonSchemaNode
    expect(validateJsonSchemaValue(schema, {}).map((issue) => issue.path)).toEqual(['$.constructor', '$.toString'])
  })

  test('treats a __proto__ key in a value as an ordinary, undeclared key', () => {
    const schema: JsonSchemaNode = { type: 'object', properties: { a: {} }, additionalProperties: false }
    expect(messages(schema, JSON.parse('{"__proto__":"x"}'))).toEqual(['$: expected no key "__proto__" (allowed keys: a), found unexpected key'])
  })

  test.each([
    ['a Date', { when: new Date(0) }, '$.when'],
    ['a Map', [new Map()], '$[0]'],
    ['-0', { n: -0 }, '$.n'],
    ['NaN', Number.NaN, '$'],
    ['undefined', { a: undefined }, '$.a'],
    ['a function', () => 1, '$'],
    ['a bigint', { big: 1n }, '$.big'],
  ])('turns %s into one issue at its path', (_name, value, path) => {
    const issues = validateJsonSchemaValue({}, value)
    expect(issues).toEqual([{ path, expected: 'a lossless JSON value', found: expect.stringMatching(/^non-JSON value: /) }])
  })

  test('turns a cycle into one issue instead of throwing', () => {
    const cyclic: Record<string, unknown> = {}
    cyclic['self'] = cyclic
    expect(validateJsonSchemaValue({ type: 'object' }, cyclic)).toHaveLength(1)
  })

  test('never runs a getter of the value', () => {
    let ran = false
    const value = {
      get a() {
        ran = true
        return 1
      },
    }
    expect(validateJsonSchemaValue({ type: 'object' }, value)[0]?.path).toBe('$.a')
    expect(ran).toBe(false)
  })

  test('validates a value nested 100,000 deep without overflowing the stack', () => {
    let value: unknown = 'leaf'
    for (let level = 0; level < 100_000; level += 1) value = [value]
    expect(validateJsonSchemaValue({ type: 'array' }, value)).toEqual([])
    expect(messages({ type: 'array', items: { type: 'array', items: { type: 'string' } } }, value)).toEqual(['$[0][0]: expected string, found array of 1 item'])
  })

  test('throws JsonSchemaError for an unsupported schema rather than validating against it', () => {
    expect(() => validateJsonSchemaValue({ type: 'string', not: { const: 'x' } } as JsonSchemaNode, 'x')).toThrow(JsonSchemaError)
  })

  test('does not edit the value it validates', () => {
    const value = { path: 'a' }
    validateJsonSchemaValue({ type: 'object', properties: { path: { type: 'string', default: 'x' }, other: { default: 1 } } }, value)
    expect(value).toEqual({ path: 'a' })
  })
})

describe('validateArgs', () => {
  test('returns a frozen copy of valid arguments checked against a raw object schema', () => {
    const args = { path: 'src' }
    const valid = validateArgs(search, args, 'grep')
    expect(valid).toEqual(args)
    expect(Object.isFrozen(valid)).toBe(true)
  })

  test('accepts a parameter spec and types the result', () => {
    const valid = validateArgs({ path: { type: 'string', required: true }, limit: { type: 'integer' } }, { path: 'a' })
    const path: string = valid.path
    expect(path).toBe('a')
  })

  test('treats a parameter named "type" as a spec, not as a raw schema', () => {
    expect(validateArgs({ type: { type: 'string', required: true } }, { type: 'x' })).toEqual({ type: 'x' })
  })

  test('throws ToolArgsError naming the tool and every issue', () => {
    expect(() => validateArgs(search, { path: 1, mode: 'medium' }, 'grep')).toThrow(
      'Invalid arguments for tool "grep": $.path: expected string, found number 1; $.mode: expected one of "fast" | "slow", found string "medium"',
    )
  })

  test('throws with code INVALID_ARGS and structured issues', () => {
    try {
      validateArgs({ a: { type: 'null', required: true } }, {}, 't')
      expect.unreachable()
    } catch (error) {
      expect(error).toBeInstanceOf(ToolArgsError)
      expect((error as ToolArgsError).code).toBe(ToolErrorCode.INVALID_ARGS)
      expect((error as ToolArgsError).issues).toEqual([{ path: '$.a', expected: 'null (required key)', found: 'missing' }])
    }
  })

  test('rejects arguments that are not an object', () => {
    expect(() => validateArgs(search, ['src'])).toThrow('$: expected object {path, mode?, limit?}, found array of 1 item')
  })

  test('rejects non-JSON arguments as invalid arguments', () => {
    expect(() => validateArgs(search, { path: new Date(0) })).toThrow(ToolArgsError)
  })

  test('keeps the parameter root open to undeclared keys', () => {
    expect(validateArgs({ a: { type: 'string' } }, { b: 1 })).toEqual({ b: 1 })
  })

  test('throws JsonSchemaError for a raw schema whose root is not an object', () => {
    expect(() => validateArgs({ type: 'array' } as unknown as ObjectJsonSchema, [])).toThrow(JsonSchemaError)
  })

  test('throws SchemaSpecError for a malformed parameter spec', () => {
    expect(() => validateArgs({ a: { type: 'text' } } as never, {})).toThrow(SchemaSpecError)
  })
})

describe('a schema edited between calls', () => {
  test('a raw schema object is read again: a new constraint is enforced, an unsupported keyword refused', () => {
    const schema: { type: 'object'; properties: { name: Record<string, unknown> } } = { type: 'object', properties: { name: { type: 'string' } } }
    expect(validateJsonSchemaValue(schema as JsonSchemaNode, { name: 'x' })).toEqual([])
    schema.properties.name.enum = ['a']
    expect(validateJsonSchemaValue(schema as JsonSchemaNode, { name: 'x' }).map((issue) => issue.path)).toEqual(['$.name'])
    schema.properties.name.not = { const: 'x' }
    expect(() => validateJsonSchemaValue(schema as JsonSchemaNode, { name: 'x' })).toThrow(JsonSchemaError)
  })

  test('a parameter spec is read again by validateArgs', () => {
    const spec: Record<string, { type: 'string' | 'number'; required: true }> = { a: { type: 'string', required: true } }
    expect(validateArgs(spec, { a: 'x' })).toEqual({ a: 'x' })
    spec.a = { type: 'number', required: true }
    expect(() => validateArgs(spec, { a: 'x' })).toThrow(ToolArgsError)
    expect(validateArgs(spec, { a: 1 })).toEqual({ a: 1 })
  })
})

describe('the grown subset is enforced', () => {
  test('string lengths, patterns and known formats, each named in words', () => {
    const schema: JsonSchemaNode = {
      type: 'object',
      properties: {
        title: { type: 'string', minLength: 1, maxLength: 3 },
        slug: { type: 'string', pattern: '^[a-z]+$' },
        email: { type: 'string', format: 'email' },
        when: { type: 'string', format: 'date-time' },
      },
    }
    expect(messages(schema, { title: '', slug: 'A', email: 'nope', when: '2026-12-06T02:00:00Z' })).toEqual([
      '$.title: expected a string of at least 1 character, found string ""',
      '$.slug: expected a string matching /^[a-z]+$/, found string "A"',
      '$.email: expected a string in format "email", found string "nope"',
    ])
    expect(messages(schema, { title: 'abcd', when: 'yesterday' })).toEqual([
      '$.title: expected a string of at most 3 characters, found string "abcd"',
      '$.when: expected a string in format "date-time", found string "yesterday"',
    ])
  })

  test('a pattern matches with the u flag, as the walker compiled it', () => {
    expect(validateJsonSchemaValue({ type: 'string', pattern: '^.$' }, '😀')).toEqual([])
    expect(validateJsonSchemaValue({ type: 'string', pattern: '^\\p{Lu}+$' }, 'ÀB')).toEqual([])
  })

  test('an unknown format is an annotation: never enforced', () => {
    expect(validateJsonSchemaValue({ type: 'string', format: 'json' }, 'not json {')).toEqual([])
    expect(validateJsonSchemaValue({ type: 'integer', format: 'int32' }, 2 ** 40)).toEqual([])
  })

  test('number bounds and multipleOf; zod\'s safe-integer bounds pass every safe integer', () => {
    const schema: JsonSchemaNode = { type: 'number', exclusiveMinimum: 0, maximum: 10, multipleOf: 0.5 }
    expect(messages(schema, 0)).toEqual(['$: expected a number > 0, found number 0'])
    expect(messages(schema, 10.5)).toEqual(['$: expected a number <= 10, found number 10.5'])
    expect(messages(schema, 1.25)).toEqual(['$: expected a multiple of 0.5, found number 1.25'])
    const zodInt: JsonSchemaNode = { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 }
    expect(validateJsonSchemaValue(zodInt, Number.MAX_SAFE_INTEGER)).toEqual([])
    expect(validateJsonSchemaValue(zodInt, Number.MIN_SAFE_INTEGER)).toEqual([])
  })

  test('array lengths, uniqueness and tuples in both spellings', () => {
    expect(messages({ type: 'array', minItems: 1, uniqueItems: true }, [])).toEqual(['$: expected an array of at least 1 item, found array of 0 items'])
    expect(messages({ type: 'array', uniqueItems: true }, [{ a: 1 }, { a: 1 }])).toEqual(['$: expected an array without duplicate items, found items 0 and 1 are equal'])
    for (const tuple of [
      { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false },
      { type: 'array', items: [{ type: 'string' }, { type: 'number' }], additionalItems: false },
    ] as JsonSchemaNode[]) {
      expect(validateJsonSchemaValue(tuple, ['a', 1])).toEqual([])
      expect(messages(tuple, ['a', 'b'])).toEqual(['$[1]: expected number, found string "b"'])
      expect(messages(tuple, ['a', 1, 2])).toEqual(['$: expected an array of at most 2 items, found array of 3 items'])
    }
  })

  test('records: additionalProperties schemas, propertyNames and key counts', () => {
    const schema: JsonSchemaNode = { type: 'object', propertyNames: { type: 'string', pattern: '^[A-Z_]+$' }, additionalProperties: { type: 'number' }, maxProperties: 2 }
    expect(validateJsonSchemaValue(schema, { A: 1, B_C: 2 })).toEqual([])
    expect(messages(schema, { A: 'x', low: 1, C: 3 })).toEqual([
      '$: expected an object with at most 2 keys, found object with keys "A", "low", "C"',
      '$.low: expected a key that is a string matching /^[A-Z_]+$/, found key "low"',
      '$.A: expected number, found string "x"',
    ])
  })

  test('type arrays, anyOf and allOf', () => {
    expect(validateJsonSchemaValue({ type: ['string', 'null'] }, null)).toEqual([])
    expect(messages({ type: ['string', 'null'] }, 1)).toEqual(['$: expected string | null, found number 1'])
    const either: JsonSchemaNode = { anyOf: [{ type: 'string', minLength: 2 }, { type: 'null' }] }
    expect(messages(either, 'a')).toEqual(['$: expected a string of at least 2 characters, found string "a"'])
    expect(messages({ allOf: [{ type: 'object', required: [], properties: { a: { type: 'string' } } }, { type: 'object', properties: { b: { type: 'number' } }, required: ['b'] }] }, { a: 'x' })).toEqual([
      '$.b: expected number (required key), found missing',
    ])
  })

  test('recursive references, to any depth a value reasonably has', () => {
    const tree: JsonSchemaNode = {
      $ref: '#/$defs/node',
      $defs: { node: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } }, required: ['name'] } },
    }
    expect(validateJsonSchemaValue(tree, { name: 'a', children: [{ name: 'b', children: [] }] })).toEqual([])
    expect(messages(tree, { name: 'a', children: [{ name: 'b', children: [{ name: 3 }] }] })).toEqual(['$.children[0].children[0].name: expected string, found number 3'])
  })

  test('a value nested too deeply for its recursive schema is an issue, not a crash', () => {
    const list: JsonSchemaNode = { type: 'object', properties: { next: { $ref: '#' } } }
    let value: Record<string, unknown> = {}
    for (let level = 0; level < 200_000; level += 1) value = { next: value }
    expect(messages(list, value)).toEqual(['$: expected a value nested shallowly enough to be checked, found a value nested too deeply for its recursive schema'])
  })

  test('sibling keywords of a $ref are enforced too', () => {
    const schema: JsonSchemaNode = { type: 'string', $ref: '#/$defs/s', minLength: 3, $defs: { s: { type: 'string', maxLength: 5 } } }
    expect(messages(schema, 'ab')).toEqual(['$: expected a string of at least 3 characters, found string "ab"'])
  })
})

describe('the schemas real MCP servers send', () => {
  const createIssue = mcpFixture['McpServer with zod 4']?.find((tool) => tool.name === 'create_issue')?.inputSchema as unknown as ObjectJsonSchema

  test("enforce zod's constraints on arguments, every issue at once", () => {
    const valid = { title: 'Bug', slug: 'the-bug', status: 'open', assignee: null, homepage: 'https://example.com', priority: 5, weight: 1.5 }
    expect(validateArgs(createIssue, valid, 'create_issue')).toEqual(valid)
    expect(() => validateArgs(createIssue, { ...valid, title: '', slug: 'No', assignee: 'nobody', priority: 6, homepage: 'not a uri', labels: [] }, 'create_issue')).toThrow(
      expect.objectContaining({
        issues: [
          { path: '$.title', expected: 'a string of at least 1 character', found: 'string ""' },
          { path: '$.slug', expected: 'a string matching /^[a-z0-9-]+$/', found: 'string "No"' },
          { path: '$.priority', expected: 'a number <= 5', found: 'number 6' },
          // Nullable through anyOf: read through the string branch, the one with the value's shape.
          { path: '$.assignee', expected: expect.stringMatching(/^a string matching/), found: 'string "nobody"' },
          { path: '$.assignee', expected: 'a string in format "email"', found: 'string "nobody"' },
          { path: '$.homepage', expected: 'a string in format "uri"', found: 'string "not a uri"' },
          { path: '$.labels', expected: 'an array of at least 1 item', found: 'array of 0 items' },
        ],
      }),
    )
  })

  test('accept every safe integer under zod\'s integer bounds', () => {
    const configure = mcpFixture['McpServer with zod 4']?.find((tool) => tool.name === 'configure')?.inputSchema as unknown as ObjectJsonSchema
    const args = { env: {}, target: 1, mode: 'fast', big: Number.MAX_SAFE_INTEGER, count: 2147483647 }
    expect(validateArgs(configure, args)).toEqual(args)
    expect(() => validateArgs(configure, { ...args, count: 2147483648 })).toThrow(/\$\.count: expected a number <= 2147483647/)
  })
})
