import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { generateSdk, typeCheckDeclarations } from '../../sdk-gen/index.ts'
import type { SdkToolInput } from '../../sdk-gen/index.ts'
import { ToolDefinitionError } from '../../src/errors.ts'
import type { JsonSchemaNode } from '../../src/schema/types.ts'
import { mcpFixture } from '../fixtures/mcp-schemas.ts'
import { representativeTools } from './fixtures.ts'

const golden = (name: string): string => readFileSync(new URL(`./golden/${name}`, import.meta.url), 'utf8')

const noArgs = { type: 'object', properties: {}, additionalProperties: false } as const

describe('generateSdk', () => {
  it('generates the golden declarations for the representative tools', () => {
    expect(generateSdk(representativeTools).declarations).toBe(golden('representative-sdk.txt'))
  })

  it('lists one binding per tool in the order of the declarations', () => {
    expect(generateSdk(representativeTools).bindings).toEqual([
      { binding: 'delete_', name: 'delete' },
      { binding: 'my_tool_2', name: 'my-tool' },
      { binding: 'my_tool', name: 'my_tool' },
      { binding: 'read_file', name: 'read_file' },
    ])
  })

  it('produces declarations the TypeScript compiler accepts', () => {
    expect(typeCheckDeclarations(generateSdk(representativeTools).declarations).diagnostics).toEqual([])
  })

  it('keeps hostile descriptions inside their comments', () => {
    const { declarations } = generateSdk(representativeTools)
    // The only top-level statements are the two the generator writes.
    const code = declarations.replace(/\/\*[\s\S]*?\*\//g, '').replace(/"(?:[^"\\\n]|\\.)*"/g, '""')
    expect(code).not.toContain('declare const x')
    expect(code).not.toContain('declare const y')
    expect(code.match(/^\S.*$/gm)).toEqual(['type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue | undefined }', 'declare const tools: {', '}'])
  })

  it('sorts tools by name, so registration order does not change the text', () => {
    const reversed = [...representativeTools].reverse()
    expect(generateSdk(reversed)).toEqual(generateSdk(representativeTools))
  })

  it('states the real tool name of a renamed binding', () => {
    const { declarations } = generateSdk([{ name: 'web.search', description: 'Search the web.', parameters: noArgs }])
    expect(declarations).toContain('  /** Search the web. Calls the tool `web.search`. */\n  web_search(args: Record<string, never>): Promise<JsonValue>\n')
  })

  it('escapes a hostile tool name in the JSDoc that states it', () => {
    const { declarations, bindings } = generateSdk([{ name: 'a*/b', description: 'A.', parameters: noArgs }])
    expect(bindings).toEqual([{ binding: 'a__b', name: 'a*/b' }])
    expect(declarations).toContain('  /** A. Calls the tool `a*\\/b`. */\n  a__b(args: Record<string, never>): Promise<JsonValue>\n')
  })

  it('types the result from the output schema', () => {
    const { declarations } = generateSdk([
      { name: 'count', description: 'Count.', parameters: noArgs, output: { type: 'integer', description: 'How many.' } },
    ])
    expect(declarations).toContain('  /** Count. @returns How many. Integer. */\n  count(args: Record<string, never>): Promise<number>\n')
  })

  it('types the result of a tool without an output schema as JsonValue', () => {
    const { declarations } = generateSdk([{ name: 'ping', description: 'Ping.', parameters: noArgs }])
    expect(declarations).toContain('  ping(args: Record<string, never>): Promise<JsonValue>\n')
  })

  it('declares JsonValue exactly once', () => {
    expect(generateSdk(representativeTools).declarations.match(/type JsonValue =/g)).toHaveLength(1)
  })

  it('generates an empty tools object when there are no tools', () => {
    expect(generateSdk([]).declarations).toBe(
      [
        '/** Any JSON value. */',
        'type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue | undefined }',
        '',
        '/**',
        " * The tools this program can call. A call resolves to the tool's result value, or throws an",
        ' * Error whose message says why the call failed.',
        ' */',
        'declare const tools: Record<string, never>',
        '',
      ].join('\n'),
    )
  })

  it('rejects two tools with the same name', () => {
    const tool: SdkToolInput = { name: 'a', description: 'A.', parameters: noArgs }
    expect(() => generateSdk([tool, tool])).toThrow(ToolDefinitionError)
  })

  it('freezes the bindings it returns', () => {
    const { bindings } = generateSdk(representativeTools)
    expect(Object.isFrozen(bindings)).toBe(true)
    expect(bindings.every((binding) => Object.isFrozen(binding))).toBe(true)
  })
})

describe('generateSdk for the grown subset', () => {
  const tree: JsonSchemaNode = {
    type: 'object',
    properties: { root: { $ref: '#/$defs/node' } },
    required: ['root'],
    additionalProperties: false,
    $defs: {
      node: {
        type: 'object',
        description: 'One node.',
        properties: { name: { type: 'string', minLength: 1 }, children: { type: 'array', items: { $ref: '#/$defs/node' } } },
        required: ['name'],
      },
    },
  }

  it('writes each referenced schema once as a named type, recursion by name', () => {
    const { declarations } = generateSdk([
      { name: 'plant', description: 'Plants a tree.', parameters: tree, output: { type: 'object', properties: { next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } }, additionalProperties: false } },
    ])
    expect(declarations).toContain(
      [
        '/** One node. */',
        'type PlantNode = {',
        '  /** @minLength 1 */',
        '  name: string',
        '  children?: PlantNode[]',
        '}',
        '',
        'type PlantResult = { next?: PlantResult | null }',
        '',
      ].join('\n'),
    )
    expect(declarations).toContain('  plant(args: { /* no other keys */ root: PlantNode }): Promise<{ next?: PlantResult | null }>\n')
    expect(typeCheckDeclarations(declarations).diagnostics).toEqual([])
  })

  it('gives two tools that define the same name two distinct types', () => {
    const { declarations } = generateSdk([
      { name: 'a', description: 'A.', parameters: tree },
      { name: 'a_', description: 'A too.', parameters: tree },
    ])
    expect(declarations.match(/^type \w+/gm)).toEqual(['type JsonValue', 'type ANode', 'type ANode2'])
    expect(typeCheckDeclarations(declarations).diagnostics).toEqual([])
  })

  it('renders every schema the published MCP servers and zod 4 send: golden text, clean type check', () => {
    const tools: SdkToolInput[] = Object.entries(mcpFixture).flatMap(([source, captured]) =>
      captured.map((tool) => ({
        name: tool.name.replace(/\W+/g, '_'),
        description: `${tool.name} (${source})`,
        parameters: tool.inputSchema as JsonSchemaNode,
        ...(tool.outputSchema === undefined ? {} : { output: tool.outputSchema as JsonSchemaNode }),
      })),
    )
    const { declarations } = generateSdk(tools)
    expect(declarations).toBe(golden('mcp-sdk.txt'))
    expect(typeCheckDeclarations(declarations).diagnostics).toEqual([])
  })
})
