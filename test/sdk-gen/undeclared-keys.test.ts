import { describe, expect, it } from 'vitest'
import { generateSdk } from '../../sdk-gen/index.ts'
import { CLOSED_OBJECT_MARKER, classifiedDiagnostics } from '../../sdk-gen/type-check-core.js'
import type { JsonSchemaNode } from '../../src/schema/types.ts'

const path = { type: 'string' } as const

/** A tool `put` whose root and nested `options` are open or closed as asked. */
function declarationsFor(root: 'open' | 'closed', nested: 'open' | 'closed'): string {
  const closedness = (which: 'open' | 'closed') => (which === 'closed' ? { additionalProperties: false } : {})
  const parameters: JsonSchemaNode = {
    type: 'object',
    properties: { path, options: { type: 'object', properties: { mode: { type: 'string' } }, ...closedness(nested) } },
    required: ['path'],
    ...closedness(root),
  }
  return generateSdk([{ name: 'put', description: 'Put a file.', parameters, output: { type: 'object', properties: { ok: { type: 'boolean' } }, additionalProperties: false } }])
    .declarations
}

/** The diagnostics of `program` about the key `key`. */
function aboutKey(declarations: string, program: string, key: string) {
  return classifiedDiagnostics(declarations, program).filter((d) => d.message.includes(`'${key}'`))
}

describe('an undeclared argument key', () => {
  it('is marked in the SDK only on argument objects whose schema refuses other keys', () => {
    const declarations = declarationsFor('closed', 'open')
    expect(declarations).toContain(`put(args: { ${CLOSED_OBJECT_MARKER} path: string; options?: { mode?: string } })`)
    // A result is read, not written: no marker there.
    expect(declarations).toContain('Promise<{ ok?: boolean }>')
  })

  it('is a certain failure on a closed root', () => {
    const [diagnostic] = aboutKey(declarationsFor('closed', 'open'), 'await tools.put({ path: "a", mdoe: "x" })', 'mdoe')
    expect(diagnostic?.certain).toBe(true)
  })

  it('is a note on an open root, which passes the key to the tool: likely a typo', () => {
    const [diagnostic] = aboutKey(declarationsFor('open', 'open'), 'await tools.put({ path: "a", mode: "x" })', 'mode')
    expect(diagnostic?.certain).toBe(false)
    expect(diagnostic?.message).toContain('The tool accepts keys it does not declare, so this runs, but the key is likely a typo.')
  })

  it('is a certain failure in a closed nested object under an open root, a note in an open one under a closed root', () => {
    const [closedNested] = aboutKey(declarationsFor('open', 'closed'), 'await tools.put({ path: "a", options: { mode: "x", force: true } })', 'force')
    expect(closedNested?.certain).toBe(true)
    const [openNested] = aboutKey(declarationsFor('closed', 'open'), 'await tools.put({ path: "a", options: { mode: "x", force: true } })', 'force')
    expect(openNested?.certain).toBe(false)
  })

  it('is certain on a closed root when written as a shorthand property', () => {
    const [diagnostic] = aboutKey(declarationsFor('closed', 'open'), 'const mdoe = "x"\nawait tools.put({ path: "a", mdoe })', 'mdoe')
    expect(diagnostic?.certain).toBe(true)
  })
})
