import { describe, expect, it } from 'vitest'
import { MAX_TYPE_DEPTH, schemaToType } from '../../sdk-gen/index.ts'
import { describeNode } from '../../sdk-gen/schema-to-ts.ts'
import { renderDocValue } from '../../sdk-gen/doc-comment.ts'
import type { JsonSchemaNode } from '../../src/schema/types.ts'

describe('schemaToType', () => {
  it('maps scalar types, with integer as number', () => {
    expect(['string', 'number', 'integer', 'boolean', 'null'].map((type) => schemaToType({ type } as JsonSchemaNode))).toEqual([
      'string',
      'number',
      'number',
      'boolean',
      'null',
    ])
  })

  it('writes an untyped node as JsonValue', () => {
    expect(schemaToType({ description: 'anything' })).toBe('JsonValue')
  })

  it('writes a string enum as a union of escaped literals', () => {
    expect(schemaToType({ type: 'string', enum: ['a', 'b"c', 'line\nbreak', 'back\\slash'] })).toBe(
      '"a" | "b\\"c" | "line\\nbreak" | "back\\\\slash"',
    )
  })

  it('writes number, boolean and null enum members as literals', () => {
    expect(schemaToType({ enum: [1, -2.5, true, null] })).toBe('1 | -2.5 | true | null')
  })

  it('writes a const as a single literal', () => {
    expect(schemaToType({ const: 'x' })).toBe('"x"')
    expect(schemaToType({ type: 'boolean', const: false })).toBe('false')
  })

  it('escapes line separators inside string literals', () => {
    expect(schemaToType({ const: 'a\u2028b' })).toBe('"a\\u2028b"')
  })

  it('writes oneOf as a union and parenthesizes a union inside an array', () => {
    const node: JsonSchemaNode = {
      oneOf: [{ type: 'string' }, { type: 'array', items: { oneOf: [{ type: 'number' }, { type: 'null' }] } }],
    }
    expect(schemaToType(node)).toBe('string | (number | null)[]')
  })

  it('writes nested arrays without parentheses when the item binds tightly', () => {
    expect(schemaToType({ type: 'array', items: { type: 'array', items: { type: 'string' } } })).toBe('string[][]')
  })

  it('writes an array without items as an array of JsonValue', () => {
    expect(schemaToType({ type: 'array' })).toBe('JsonValue[]')
  })

  it('writes a closed object without an index signature', () => {
    expect(
      schemaToType({ type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' } }, required: ['a'], additionalProperties: false }),
    ).toBe('{ a: string; b?: number }')
  })

  it('adds an index signature to an open object beside its properties', () => {
    expect(schemaToType({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] })).toBe(
      '{ a: string; [key: string]: JsonValue | undefined }',
    )
    expect(schemaToType({ type: 'object', additionalProperties: true })).toBe('{ [key: string]: JsonValue | undefined }')
  })

  it('writes a closed object without properties as an empty record', () => {
    expect(schemaToType({ type: 'object', additionalProperties: false })).toBe('Record<string, never>')
  })

  it('quotes keys that are not identifiers and escapes them', () => {
    const node = JSON.parse(
      '{"type":"object","additionalProperties":false,"properties":{"a-b":{},"x\\"y\\\\":{},"new\\nline":{},"__proto__":{},"default":{},"*/":{}}}',
    ) as JsonSchemaNode
    expect(schemaToType(node)).toBe(
      [
        '{',
        '  "a-b"?: JsonValue',
        '  "x\\"y\\\\"?: JsonValue',
        '  "new\\nline"?: JsonValue',
        '  __proto__?: JsonValue',
        '  default?: JsonValue',
        '  "*/"?: JsonValue',
        '}',
      ].join('\n'),
    )
  })

  it('writes documented properties one per line with their JSDoc', () => {
    const node: JsonSchemaNode = {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'The path.', default: '.', examples: ['src/a.ts'] },
        offset: { type: 'integer', title: 'Offset', description: 'First line.' },
        mode: { type: 'string', examples: 'fast' },
      },
      required: ['path'],
      additionalProperties: false,
    }
    expect(schemaToType(node)).toBe(
      [
        '{',
        '  /** The path. @default "." @example "src/a.ts" */',
        '  path: string',
        '  /** Offset: First line. Integer. */',
        '  offset?: number',
        '  /** @example "fast" */',
        '  mode?: string',
        '}',
      ].join('\n'),
    )
  })

  it('indents nested objects and closes each at its own level', () => {
    const node: JsonSchemaNode = {
      type: 'object',
      properties: {
        outer: {
          type: 'object',
          description: 'Outer.',
          properties: { inner: { type: 'object', properties: { leaf: { type: 'integer', description: 'Leaf.', default: 3 } }, additionalProperties: false } },
        },
      },
      additionalProperties: false,
    }
    expect(schemaToType(node)).toBe(
      [
        '{',
        '  /** Outer. */',
        '  outer?: {',
        '    inner?: {',
        '      /** Leaf. Integer. @default 3 */',
        '      leaf?: number',
        '    }',
        '    [key: string]: JsonValue | undefined',
        '  }',
        '}',
      ].join('\n'),
    )
  })

  it('writes a union of objects, one of them spread over lines', () => {
    const node: JsonSchemaNode = {
      type: 'object',
      oneOf: [
        { type: 'object', properties: { kind: { const: 'a' } }, required: ['kind'], additionalProperties: false },
        {
          type: 'object',
          properties: { kind: { const: 'b' }, value: { type: 'string', description: 'The value.' } },
          required: ['kind'],
          additionalProperties: false,
        },
      ],
    }
    expect(schemaToType(node)).toBe(['{ kind: "a" } | {', '  kind: "b"', '  /** The value. */', '  value?: string', '}'].join('\n'))
  })

  it('intersects a constrained node with its oneOf branches', () => {
    const node: JsonSchemaNode = {
      type: 'object',
      properties: { id: { type: 'string' } },
      required: ['id'],
      additionalProperties: true,
      oneOf: [
        { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] },
        { type: 'object', properties: { b: { type: 'number' } }, required: ['b'] },
      ],
    }
    expect(schemaToType(node)).toBe(
      '{ id: string; [key: string]: JsonValue | undefined } & ({ a: number; [key: string]: JsonValue | undefined } | { b: number; [key: string]: JsonValue | undefined })',
    )
  })

  it('writes an empty enum as never', () => {
    expect(schemaToType({ enum: [] })).toBe('never')
  })

  it('writes nodes deeper than the depth limit as JsonValue', () => {
    let node: JsonSchemaNode = { type: 'string' }
    for (let i = 0; i < MAX_TYPE_DEPTH + 4; i++) node = { type: 'array', items: node }
    expect(schemaToType(node)).toBe(`JsonValue${'[]'.repeat(MAX_TYPE_DEPTH)}`)
  })

  it('keeps the scalar inside the deepest container level it renders', () => {
    let node: JsonSchemaNode = { type: 'string' }
    for (let i = 0; i < MAX_TYPE_DEPTH; i++) node = { type: 'array', items: node }
    expect(schemaToType(node)).toBe(`string${'[]'.repeat(MAX_TYPE_DEPTH)}`)
  })

  it('renders a chain of oneOf nested 10,000 levels deep without exhausting the stack', () => {
    let node: JsonSchemaNode = { type: 'string' }
    for (let i = 0; i < 10_000; i++) node = { oneOf: [node, { type: 'null' }] }
    expect(schemaToType(node)).toBe('JsonValue | null')
  })

  it('renders a schema nested 10,000 levels deep without exhausting the stack', () => {
    let node: JsonSchemaNode = { type: 'string' }
    for (let i = 0; i < 10_000; i++) node = { type: 'object', properties: { a: node }, required: ['a'], additionalProperties: false }
    expect(schemaToType(node)).toContain('JsonValue')
  })

  it('cuts a long default value in its JSDoc', () => {
    const node: JsonSchemaNode = { type: 'object', properties: { s: { type: 'string', default: 'x'.repeat(300) } }, additionalProperties: false }
    expect(schemaToType(node)).toBe(['{', '  /**', `   * @default "${'x'.repeat(199)}…`, '   */', '  s?: string', '}'].join('\n'))
  })
})

describe('renderDocValue', () => {
  it('cuts a long value on a whole character, never between the halves of a surrogate pair', () => {
    // The JSON text is a quote, 198 letters, then emoji: the 200th code unit is a high surrogate.
    const value = `${'a'.repeat(198)}${'\u{1F600}'.repeat(20)}`
    const rendered = renderDocValue(value)
    expect((rendered as string & { isWellFormed(): boolean }).isWellFormed()).toBe(true)
    expect(rendered).toBe(`"${'a'.repeat(198)}…`)
    expect(renderDocValue('short')).toBe('"short"')
  })
})

describe('schemaToType for the grown subset', () => {
  it('writes type arrays and anyOf as unions, null included', () => {
    expect(schemaToType({ type: ['string', 'null'] })).toBe('string | null')
    expect(schemaToType({ anyOf: [{ type: 'string', minLength: 1 }, { type: 'null' }] })).toBe('string | null')
    expect(schemaToType({ type: ['array', 'null'], items: { type: 'number' } })).toBe('number[] | null')
  })

  it('writes allOf as an intersection, parenthesizing unions inside it', () => {
    const node: JsonSchemaNode = {
      allOf: [
        { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false },
        { anyOf: [{ type: 'object', properties: { b: { type: 'number' } }, required: ['b'], additionalProperties: false }, { type: 'null' }] },
      ],
    }
    expect(schemaToType(node)).toBe('{ a: string } & ({ b: number } | null)')
    const both: JsonSchemaNode = {
      type: 'object',
      allOf: [
        { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
        { type: 'object', properties: { b: { type: 'number' } } },
      ],
    }
    // The outer node only repeats the type: no open `{ [key: string]: ... }` beside the parts.
    expect(schemaToType(both, '', { role: 'input' })).toBe('{ a: string } & { b?: number }')
  })

  it('writes tuples in both spellings, one tuple per length allowed below the full one', () => {
    expect(schemaToType({ type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false, minItems: 2 })).toBe('[string, number]')
    expect(schemaToType({ type: 'array', items: [{ type: 'string' }, { type: 'boolean' }], additionalItems: false, minItems: 1 })).toBe('[string] | [string, boolean]')
    expect(schemaToType({ type: 'array', prefixItems: [{ type: 'string' }], items: { type: 'number' }, minItems: 1 })).toBe('[string, ...number[]]')
    expect(schemaToType({ type: 'array', prefixItems: [{ type: 'string' }] })).toBe('[] | [string, ...JsonValue[]]')
    expect(schemaToType({ type: 'array', items: { type: 'array', prefixItems: [{ type: 'null' }], items: false } })).toBe('([] | [null])[]')
  })

  it('writes an additionalProperties schema as a record, declared properties fitting its signature', () => {
    expect(schemaToType({ type: 'object', additionalProperties: { type: 'number' } })).toBe('{ [key: string]: number }')
    expect(schemaToType({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'number' } })).toBe(
      '{ a?: string; [key: string]: number | string | undefined }',
    )
    expect(schemaToType({ type: 'object', propertyNames: { enum: ['x', 'y'] }, required: ['x', 'y'], additionalProperties: { type: 'boolean' } })).toBe(
      '{ x: boolean; y: boolean; [key: string]: boolean }',
    )
  })

  it('lists only the declared keys of an open object in the input role', () => {
    const node: JsonSchemaNode = { type: 'object', properties: { a: { type: 'object', properties: { b: { type: 'string' } } } } }
    expect(schemaToType(node, '', { role: 'input' })).toBe('{ a?: { b?: string } }')
    expect(schemaToType({ type: 'object' }, '', { role: 'input' })).toBe('{ [key: string]: JsonValue | undefined }')
    expect(schemaToType(node)).toBe('{\n  a?: { b?: string; [key: string]: JsonValue | undefined }\n  [key: string]: JsonValue | undefined\n}')
  })

  it('expands a reference inline without a name for it, and writes recursion as JsonValue', () => {
    const node: JsonSchemaNode = {
      type: 'object',
      properties: { child: { $ref: '#' }, tag: { $ref: '#/$defs/tag' } },
      additionalProperties: false,
      $defs: { tag: { type: 'string', enum: ['a', 'b'] } },
    }
    expect(schemaToType(node)).toBe('{ child?: { child?: JsonValue; tag?: "a" | "b" }; tag?: "a" | "b" }')
  })

  it('writes a named reference by the name it is given', () => {
    const node: JsonSchemaNode = { type: 'array', items: { $ref: '#/$defs/node' }, $defs: { node: { type: 'string' } } }
    expect(schemaToType(node, '', { refName: (ref) => (ref === '#/$defs/node' ? 'Node' : undefined) })).toBe('Node[]')
  })

  it('stays bounded on a chain of definitions that each use the next twice', () => {
    const defs: Record<string, JsonSchemaNode> = {}
    for (let index = 0; index < 40; index += 1) {
      defs[`d${index}`] = { type: 'object', properties: { a: { $ref: `#/$defs/d${index + 1}` }, b: { $ref: `#/$defs/d${index + 1}` } }, additionalProperties: false }
    }
    defs['d40'] = { type: 'string' }
    expect(schemaToType({ $ref: '#/$defs/d0', $defs: defs }).length).toBeLessThan(100_000)
  })
})

describe('describeNode constraints', () => {
  it('writes the constraints as JSDoc tags', () => {
    expect(describeNode({ type: 'string', description: 'Slug', minLength: 1, maxLength: 9, pattern: '^[a-z]+$', format: 'uri' })).toEqual([
      'Slug',
      '@format uri',
      '@pattern ^[a-z]+$',
      '@minLength 1',
      '@maxLength 9',
    ])
    expect(describeNode({ type: 'array', minItems: 1, uniqueItems: true, deprecated: true })).toEqual(['@deprecated', '@minItems 1', '@uniqueItems'])
    expect(describeNode({ type: 'number', exclusiveMinimum: 0, multipleOf: 0.5 })).toEqual(['@exclusiveMinimum 0', '@multipleOf 0.5'])
  })

  it("leaves out zod's safe-integer bounds, which every integer here meets", () => {
    expect(describeNode({ type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 })).toEqual(['Integer.'])
    expect(describeNode({ type: 'integer', minimum: 0, maximum: 9007199254740991 })).toEqual(['Integer.', '@minimum 0'])
  })

  it('describes a nullable union by its one non-null branch', () => {
    expect(describeNode({ anyOf: [{ type: 'string', format: 'email', description: 'Who' }, { type: 'null' }] })).toEqual(['Who', '@format email'])
  })

  it('keeps a pattern with a line break on one line, escaped', () => {
    expect(describeNode({ type: 'string', pattern: 'a\nb' })).toEqual(['@pattern "a\\nb"'])
  })
})
