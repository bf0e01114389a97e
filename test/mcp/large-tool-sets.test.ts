import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importMcpTools } from '../../mcp/index.ts'
import { createContext } from '../../src/context.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import type { RunCodeValue } from '../../sandbox/run-code.ts'

const bin = (name: string): string => join(import.meta.dirname, '..', '..', 'node_modules', '.bin', name)

describe('the 23 tools of the published file-system and memory servers, by default', () => {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'toolbox-mcp-large-')))
  const env = Object.fromEntries(Object.entries({ ...process.env, MEMORY_FILE_PATH: join(folder, 'memory.jsonl') }).filter((entry): entry is [string, string] => entry[1] !== undefined))
  const fs = new Client({ name: 'test', version: '1.0.0' })
  const memory = new Client({ name: 'test', version: '1.0.0' })
  const context = createContext({ tools: { mode: 'code', codeMode: createRunCode() } })

  beforeAll(async () => {
    writeFileSync(join(folder, 'notes.txt'), 'hello\n')
    await Promise.all([
      fs.connect(new StdioClientTransport({ command: bin('mcp-server-filesystem'), args: [folder], env, stderr: 'pipe' })),
      memory.connect(new StdioClientTransport({ command: bin('mcp-server-memory'), env, stderr: 'pipe' })),
    ])
    await importMcpTools(fs, { context, prefix: 'fs' })
    await importMcpTools(memory, { context })
  })
  afterAll(async () => {
    await Promise.all([fs.close(), memory.close()])
  })

  it("lists them in run_code's description in under 6,000 characters instead of declaring them", () => {
    expect(context.tools.list()).toHaveLength(23)
    const description = context.tools.schemas()[0]?.description ?? ''
    expect(description.length).toBeLessThan(6_000)
    expect(description).toContain('Available tools (23;')
    expect(description).toMatch(/\n- fs_read_text_file\(\{ path, tail\?, head\? \}\): /)
    expect(description).not.toContain('fs_read_text_file(args:')
  })

  it('lets a program find, describe and call one of them in a single run', async () => {
    const code = `const [hit] = tools.$search('read text file', 1)
const declaration = tools.$describe('fs.read_text_file')
const read: any = await tools[hit.name]({ path: ${JSON.stringify(join(folder, 'notes.txt'))} })
return { name: hit.name, declared: declaration.includes('fs_read_text_file(args:'), content: read.content }`
    const result = await context.tools.execute({ callId: 'find', name: 'run_code', arguments: { code }, signal: new AbortController().signal })
    if (result.isError) throw new Error(result.error.message)
    expect((result.value as unknown as RunCodeValue).result).toEqual({ name: 'fs_read_text_file', declared: true, content: 'hello\n' })
  })
})
