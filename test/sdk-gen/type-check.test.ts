import { describe, expect, it } from 'vitest'
import { generateSdk, typeCheckDeclarations, typeCheckProgram } from '../../sdk-gen/index.ts'
import type { JsonSchemaNode } from '../../src/schema/types.ts'
import { representativeTools } from './fixtures.ts'

const { declarations } = generateSdk(representativeTools)

describe('typeCheckProgram', () => {
  it('accepts a correct program with top-level await, Promise.all, console and return', () => {
    const program = [
      'const [file, other] = await Promise.all([',
      '  tools.read_file({ path: "a.ts", offset: 2 }),',
      '  tools.read_file({ path: "b.ts", encoding: "utf8" }),',
      '])',
      'const removed = await tools.delete_({ "dry-run": true, meta: { tags: ["x"] } })',
      'await tools.my_tool_2({ mode: { kind: "fuzzy", distance: 2 }, values: ["a", 1, null] })',
      'await tools.my_tool({})',
      'console.log(file.lines, removed.map((r) => r.id))',
      'return { text: file.content + other.content, truncated: file.truncated ?? false }',
    ].join('\n')
    expect(typeCheckProgram(declarations, program).diagnostics).toEqual([])
  })

  it('reports a misspelled argument key, even where the root is open at run time', () => {
    const program = 'return await tools.delete_({ "dry-run": true, meta: { tags: [], tgas: [] } })'
    expect(typeCheckProgram(declarations, program).diagnostics).toEqual([
      { line: 1, column: 65, message: expect.stringContaining("'tgas' does not exist in type '{ tags: string[]; }'") },
    ])
  })

  it('reports a wrong argument type at its position in the program', () => {
    const program = 'const a = 1\nconst file = await tools.read_file({ path: 42 })\nreturn file'
    expect(typeCheckProgram(declarations, program).diagnostics).toEqual([
      { line: 2, column: 38, message: "Type 'number' is not assignable to type 'string'." },
    ])
  })

  it('reports a column on the first line as the program has it', () => {
    const { diagnostics } = typeCheckProgram(declarations, 'await tools.read_file({ path: 42 })')
    expect(diagnostics.map(({ line, column }) => ({ line, column }))).toEqual([{ line: 1, column: 25 }])
  })

  it('reports an unknown property of a closed parameters object', () => {
    const { diagnostics } = typeCheckProgram(declarations, 'await tools.read_file({ path: "a", limit: 3 })')
    expect(diagnostics).toHaveLength(1)
    expect(diagnostics[0]?.message).toContain("'limit' does not exist")
  })

  it('reports a value outside an enum', () => {
    const { diagnostics } = typeCheckProgram(declarations, 'await tools.read_file({ path: "a", encoding: "ascii" })')
    expect(diagnostics[0]?.message).toBe(`Type '"ascii"' is not assignable to type '"utf8" | "latin1" | undefined'.`)
  })

  it('reports a tool that does not exist', () => {
    const { diagnostics } = typeCheckProgram(declarations, 'await tools.write_file({})')
    expect(diagnostics[0]?.message).toContain("Property 'write_file' does not exist")
  })

  it('reports a syntax error', () => {
    expect(typeCheckProgram(declarations, 'const x = ;').diagnostics).toEqual([{ line: 1, column: 11, message: 'Expression expected.' }])
  })

  it('accepts TypeScript annotations in the program', () => {
    const program = 'type Row = { id: string }\nconst rows: Row[] = await tools.delete_({ "dry-run": false })\nreturn rows.map((r: Row) => r.id)'
    expect(typeCheckProgram(declarations, program).diagnostics).toEqual([])
  })

  it('lets a result with optional fields pass where any JSON value is expected', () => {
    const program = 'const file = await tools.read_file({ path: "a" })\nconst copy: JsonValue = file\nreturn copy'
    expect(typeCheckProgram(declarations, program).diagnostics).toEqual([])
  })
  it('checks against the declarations it is given, not those of an earlier call', () => {
    const other = generateSdk([{ name: 'ping', description: 'Ping.', parameters: { type: 'object', additionalProperties: false } }])
    expect(typeCheckProgram(other.declarations, 'return await tools.ping({})').diagnostics).toEqual([])
    expect(typeCheckProgram(declarations, 'return await tools.ping({})').diagnostics).toHaveLength(1)
    expect(typeCheckProgram(other.declarations, 'return await tools.ping({})').diagnostics).toEqual([])
  })
})

describe('typeCheckDeclarations', () => {
  it('reports nothing for generated declarations', () => {
    expect(typeCheckDeclarations(declarations).diagnostics).toEqual([])
  })

  it('reports broken declarations', () => {
    expect(typeCheckDeclarations('declare const tools: {').diagnostics).not.toEqual([])
  })
})

describe('type checking against keys every object has, and the language the engines run', () => {
  /** One tool `search({ query, ...keys })`; built from entries: in an object literal TypeScript types a `constructor` key as Object's. */
  function searchSdk(keys: [string, JsonSchemaNode][], additionalProperties: boolean) {
    return generateSdk([
      {
        name: 'search',
        description: 'Search.',
        parameters: {
          type: 'object',
          properties: Object.fromEntries<JsonSchemaNode>([['query', { type: 'string' }], ...keys]),
          required: ['query'],
          additionalProperties,
        },
        output: { type: 'array', items: { type: 'string' } },
      },
    ])
  }
  const sdk = searchSdk([['constructor', { type: 'string' }], ['valueOf', { type: 'number' }], ['toString', { type: 'boolean' }]], false)

  it('writes valid declarations for such keys in an open object, and accepts a call that leaves them out', () => {
    const open = searchSdk([['toString', { type: 'boolean' }]], true)
    expect(typeCheckDeclarations(open.declarations).diagnostics).toEqual([])
    expect(typeCheckProgram(open.declarations, "return await tools.search({ query: 'x' })").diagnostics).toEqual([])
    // Argument objects list only their declared keys: an undeclared one is a type error.
    expect(typeCheckProgram(open.declarations, "return await tools.search({ query: 'x', extra: [1] })").diagnostics).toHaveLength(1)
    expect(typeCheckProgram(open.declarations, "return await tools.search({ query: 'x', toString: 'yes' })").diagnostics).toHaveLength(1)
  })

  it('accepts a call that leaves out optional keys named like Object members, and refuses a wrong type for one', () => {
    expect(typeCheckProgram(sdk.declarations, "return await tools.search({ query: 'x' })").diagnostics).toEqual([])
    expect(typeCheckProgram(sdk.declarations, "return await tools.search({ query: 'x', constructor: 'c', valueOf: 2 })").diagnostics).toEqual([])
    const wrong = typeCheckProgram(sdk.declarations, "return await tools.search({ query: 'x', valueOf: 'two' })").diagnostics
    expect(wrong).toHaveLength(1)
  })

  it('knows the ES2023 library and console.debug, which both engines provide', () => {
    const program = [
      "const found = await tools.search({ query: 'x' })",
      'console.debug(found.findLast((s) => s.length > 1), found.toSorted(), found.findLastIndex((s) => s === "a"))',
      'return found.with(0, "first")',
    ].join('\n')
    expect(typeCheckProgram(sdk.declarations, program).diagnostics).toEqual([])
  })
})
