import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  DISCOVERY_MEMBERS,
  discoverySdk,
  generateSdk,
  MAX_SUMMARY_CHARS,
  renderRunCodeDescription,
  renderRunCodeGuide,
  renderToolListing,
  summarize,
  usesDiscovery,
} from '../../sdk-gen/index.ts'
import type { SdkToolInput } from '../../sdk-gen/index.ts'
import { representativeTools } from './fixtures.ts'

describe('renderRunCodeDescription', () => {
  it('renders the golden description: the guide, then the declarations in a ts block', () => {
    const sdk = generateSdk(representativeTools.filter((tool) => tool.name === 'my_tool'))
    expect(renderRunCodeDescription(sdk)).toBe(readFileSync(new URL('./golden/run-code-description.txt', import.meta.url), 'utf8'))
  })

  it('fences the declarations with more backticks than any run inside them', () => {
    const sdk = generateSdk([
      { name: 'x', description: 'Example:\n```\nx()\n```', parameters: { type: 'object', additionalProperties: false } },
    ])
    const description = renderRunCodeDescription(sdk)
    expect(description).toContain('\n````ts\n/** Any JSON value. */')
    expect(description.endsWith('}\n````\n')).toBe(true)
  })

  it('states the call budget it is given, in the guide before the declarations', () => {
    const sdk = generateSdk(representativeTools.filter((tool) => tool.name === 'my_tool'))
    const description = renderRunCodeDescription(sdk, { maxSubCalls: 40, maxSubCallsInFlight: 8 })
    const guideEnd = description.indexOf('\n\nAvailable tools:')
    expect(description.indexOf('at most 40 tool calls, at most 8 of them started and not yet finished at once')).toBeGreaterThan(0)
    expect(description.indexOf('at most 40 tool calls')).toBeLessThan(guideEnd)
    expect(description.slice(guideEnd)).toBe(renderRunCodeDescription(sdk).slice(renderRunCodeDescription(sdk).indexOf('\n\nAvailable tools:')))
  })
})

describe('the run_code guide', () => {
  const sdk = generateSdk(representativeTools.filter((tool) => tool.name === 'my_tool'))
  const limits = { cpuTimeMs: 2_000, wallTimeMs: 30_000, maxResultBytes: 512 * 1024, maxLogBytes: 1_500, maxSubCalls: 40, maxSubCallsInFlight: 8 }

  it('names the error codes a program can branch on', () => {
    const guide = renderRunCodeGuide()
    for (const code of ['INVALID_ARGS', 'UNKNOWN_TOOL', 'DENIED', 'TOOL_TIMEOUT', 'TOOL_FAILED', 'INVALID_TOOL_OUTPUT', 'ANSWER_TOO_LARGE']) {
      expect(guide).toContain(`\`${code}\``)
    }
  })

  it('states the limits it is given, in their units', () => {
    const description = renderRunCodeDescription(sdk, limits)
    expect(description).toContain('A run may take 2 s of CPU, 30 s in all (waiting for tools included), a result of 512K characters of JSON, 1,500 characters of console output')
  })

  it('carries one example program that branches on an error code', () => {
    const guide = renderRunCodeGuide()
    const example = /Example \(placeholder tool names\):\n```ts\n([\s\S]*?)```/.exec(guide)?.[1] ?? ''
    expect(example).toContain("e.code === 'DENIED'")
    expect(example.split('\n').length).toBeLessThanOrEqual(9)
  })

  it('heads the description: the guide first, then the declarations', () => {
    const description = renderRunCodeDescription(sdk, limits)
    expect(description.startsWith(renderRunCodeGuide(limits))).toBe(true)
    expect(description.indexOf('Example (placeholder tool names)')).toBeLessThan(description.indexOf('Available tools:'))
  })
})

describe('large tool sets', () => {
  const many = Array.from({ length: 300 }, (_, index) => ({
    name: `tool_${String(index).padStart(3, '0')}`,
    description: `Does thing number ${index} with care. And more words that the summary leaves out.`,
    parameters: { type: 'object', properties: { id: { type: 'string' }, depth: { type: 'integer' } }, required: ['id'], additionalProperties: false },
  })) satisfies SdkToolInput[]

  it('keeps each tool on its own: summary, argument keys and its declaration', () => {
    const sdk = generateSdk(representativeTools)
    const readFile = sdk.catalog.find((entry) => entry.name === 'read_file')
    expect(readFile).toMatchObject({ binding: 'read_file', summary: 'Read a text file.', args: '{ path, offset?, encoding? }' })
    expect(readFile?.declaration).toContain('read_file(args: {')
    expect(readFile?.declaration.startsWith('/**')).toBe(true)
    // Every named type a tool's declaration mentions travels with it.
    const tree: SdkToolInput = {
      name: 'walk',
      description: 'Walk a tree.',
      parameters: { type: 'object', properties: { root: { $ref: '#/$defs/node' } }, required: ['root'], additionalProperties: false, $defs: { node: { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#/$defs/node' } } }, additionalProperties: false } } },
    }
    const withTree = generateSdk([...representativeTools, tree])
    const walk = withTree.catalog.find((entry) => entry.name === 'walk')
    expect(walk?.declaration).toMatch(/^type WalkNode = /m)
    const aliases = [...withTree.declarations.matchAll(/^type (\w+) =/gm)].map((match) => match[1]!).filter((name) => name !== 'JsonValue')
    expect(aliases.length).toBeGreaterThan(0)
    for (const entry of withTree.catalog) {
      for (const name of aliases) if (new RegExp(`\\b${name}\\b`).test(entry.declaration)) expect(entry.declaration).toContain(`type ${name} =`)
    }
  })

  it('summarizes a description by its first sentence, on one line, clipped', () => {
    expect(summarize('Read a file.\nIt may be large.')).toBe('Read a file.')
    expect(summarize('Uses e.g.x notation until. Then stops')).toBe('Uses e.g.x notation until.')
    expect(summarize('x'.repeat(500))).toHaveLength(MAX_SUMMARY_CHARS)
  })

  it('marks a tool whose description deprecates it in a later sentence', () => {
    const sdk = generateSdk([{ name: 'old', description: 'Read a file. DEPRECATED: use read_text_file.', parameters: { type: 'object', additionalProperties: false } }])
    expect(sdk.catalog[0]?.summary).toBe('(deprecated) Read a file.')
  })

  it('switches to discovery above the declaration budget or the tool count, not below', () => {
    const small = generateSdk(many.slice(0, 3))
    expect(usesDiscovery(small)).toBe(false)
    expect(usesDiscovery(small, { maxTools: 2 })).toBe(true)
    expect(usesDiscovery(generateSdk(many))).toBe(true)
    expect(usesDiscovery(generateSdk(many), { maxDeclarationChars: Number.POSITIVE_INFINITY })).toBe(false)
  })

  it('lists tools within its character budget, then names, then a count of the rest', () => {
    const sdk = generateSdk(many)
    const listing = renderToolListing(sdk.catalog, 4_000)
    expect(listing.length).toBeLessThanOrEqual(4_000)
    expect(listing).toContain('- tool_000({ id, depth? }): Does thing number 0 with care.')
    expect(listing).toMatch(/\nAlso: tool_\d{3}, [^\n]*, and \d+ more\.\n$/)
  })

  it('declares the lookups for the type check beside every tool, and hands the catalog to the sandbox', () => {
    const sdk = discoverySdk(generateSdk(many.slice(0, 2)))
    expect(sdk.declarations).toContain(`declare const tools: {\n${DISCOVERY_MEMBERS}  /**`)
    expect(sdk.declarations).toContain('tool_001(args: {')
    expect(sdk.bindings[0]).toMatchObject({ binding: 'tool_000', name: 'tool_000', summary: 'Does thing number 0 with care.' })
    expect(discoverySdk(generateSdk([])).declarations.endsWith(`declare const tools: {\n${DISCOVERY_MEMBERS}}\n`)).toBe(true)
  })

  it('describes 300 tools in under 8,000 characters with discovery', () => {
    const sdk = discoverySdk(generateSdk(many))
    const description = renderRunCodeDescription(sdk, { maxSubCalls: 1_000, maxSubCallsInFlight: 256, cpuTimeMs: 5_000, wallTimeMs: 60_000, maxResultBytes: 1 << 20, maxLogBytes: 1 << 16 }, { sdk: 'discovery' })
    expect(description.length).toBeLessThan(8_000)
    expect(description).toContain('tools.$search(query)')
    expect(description).not.toContain('tool_000(args:')
  })
})
