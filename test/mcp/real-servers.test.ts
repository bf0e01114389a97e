import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importMcpTools } from '../../mcp/index.ts'
import type { McpToolImport } from '../../mcp/index.ts'
import { createContext } from '../../src/context.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import { call } from '../helpers.ts'
import { enginesUnderTest } from '../sandbox/engines.ts'

const bin = (name: string): string => join(import.meta.dirname, '..', '..', 'node_modules', '.bin', name)

/** The published servers over stdio: the file system one on a temp folder, memory on a temp file. */
async function startServers(memoryFile: string, folder: string): Promise<{ fs: Client; memory: Client; close(): Promise<void> }> {
  const env = Object.fromEntries(Object.entries({ ...process.env, MEMORY_FILE_PATH: memoryFile }).filter((entry): entry is [string, string] => entry[1] !== undefined))
  const fs = new Client({ name: 'test', version: '1.0.0' })
  const memory = new Client({ name: 'test', version: '1.0.0' })
  await Promise.all([
    fs.connect(new StdioClientTransport({ command: bin('mcp-server-filesystem'), args: [folder], env, stderr: 'pipe' })),
    memory.connect(new StdioClientTransport({ command: bin('mcp-server-memory'), env, stderr: 'pipe' })),
  ])
  return { fs, memory, close: async () => void (await Promise.all([fs.close(), memory.close()])) }
}

function projectFolder(): string {
  // The file system server answers with real paths (macOS /var → /private/var, for one).
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'toolbox-mcp-fs-')))
  mkdirSync(join(folder, 'src'))
  writeFileSync(join(folder, 'src', 'cart.ts'), 'export const total = 1\n// TODO: discounts\n')
  writeFileSync(join(folder, 'src', 'tax.ts'), 'export const rate = 0.2\n')
  writeFileSync(join(folder, 'src', 'ship.ts'), '// TODO: zones\n')
  writeFileSync(join(folder, 'README.md'), '# shop\n')
  return folder
}

describe('the published MCP servers, imported over stdio', () => {
  let servers: Awaited<ReturnType<typeof startServers>>
  let folder: string
  let memoryFile: string
  const context = createContext()
  let fsImport: McpToolImport
  let memoryImport: McpToolImport

  beforeAll(async () => {
    folder = projectFolder()
    memoryFile = join(folder, '..', `${folder.split('/').at(-1) as string}-memory.jsonl`)
    servers = await startServers(memoryFile, folder)
    fsImport = await importMcpTools(servers.fs, { context, prefix: 'fs' })
    memoryImport = await importMcpTools(servers.memory, { context })
  })
  afterAll(async () => {
    await servers.close()
  })

  it('registers every tool of both servers: 23, none refused', () => {
    expect(fsImport.report.refused).toEqual([])
    expect(memoryImport.report.refused).toEqual([])
    expect(fsImport.report.imported).toHaveLength(14)
    expect(memoryImport.report.imported).toHaveLength(9)
    expect(context.tools.list()).toHaveLength(23)
    expect(memoryImport.report.prefix).toBe('memory')
  })

  it('calls a file system tool natively: its structuredContent is the value', async () => {
    const result = await context.tools.execute(call('fs.read_text_file', { path: join(folder, 'README.md') }))
    expect(result).toMatchObject({ isError: false, value: { content: '# shop\n' } })
  })

  it("turns the server's refusal of a path outside its folder into an error result with its message", async () => {
    const result = await context.tools.execute(call('fs.read_text_file', { path: '/etc/hostname' }))
    expect(result.isError).toBe(true)
    expect(result.error?.message).toMatch(/outside allowed directories/i)
  })

  it('refuses arguments the server schema forbids before the server is called', async () => {
    const result = await context.tools.execute(call('memory.create_entities', { entities: [{ name: 'x' }] }))
    expect(result.error?.info?.code).toBe('INVALID_ARGS')
  })

  it('marks read-only tools concurrency-safe and leaves writers exclusive', () => {
    expect(context.tools.executionMode(call('fs.read_text_file', { path: join(folder, 'README.md') }))).toEqual({ kind: 'parallel' })
    expect(context.tools.executionMode(call('fs.write_file', { path: join(folder, 'x'), content: '' }))).toEqual({ kind: 'exclusive' })
  })
})

const PROGRAM = (folder: string, tag: string) => `
const found = await tools.fs_search_files({ path: ${JSON.stringify(folder)}, pattern: '**/*.ts' })
const paths = found.content.split('\\n').filter((line) => line !== '').sort()
const files = await Promise.all(paths.map((path) => tools.fs_read_text_file({ path })))
const todos = paths.filter((_, index) => files[index].content.includes('TODO'))
await tools.memory_create_entities({
  entities: todos.map((path) => ({ name: ${JSON.stringify(tag)} + ':' + path.split('/').pop(), entityType: 'file-with-todo', observations: ['has a TODO'] })),
})
const graph = await tools.memory_search_nodes({ query: ${JSON.stringify(tag)} })
return { read: paths.length, remembered: graph.entities.map((entity) => entity.name).sort() }
`

describe.each(enginesUnderTest())('Code Mode over the published servers on $name', ({ name, create }) => {
  it('searches and reads files in parallel and writes entities to the memory server', async () => {
    const folder = projectFolder()
    const memoryFile = `${folder}-memory.jsonl`
    const servers = await startServers(memoryFile, folder)
    const engine = await create()
    try {
      const context = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine }) } })
      await importMcpTools(servers.fs, { context, prefix: 'fs' })
      await importMcpTools(servers.memory, { context })
      const agent = context.agent('coder')
      const subCalls: string[] = []
      context.on('tools/result', (exec) => {
        if (exec.parent !== undefined) subCalls.push(exec.name)
      })
      const result = await context.tools.execute(call('run_code', { code: PROGRAM(folder, name) }, { agent }))
      expect(result.isError).toBe(false)
      expect(result.value).toEqual({ result: { read: 3, remembered: [`${name}:cart.ts`, `${name}:ship.ts`] }, logs: [] })
      expect(subCalls.filter((tool) => tool === 'fs.read_text_file')).toHaveLength(3)
      // The memory server wrote what the program asked, to its own file.
      expect(readFileSync(memoryFile, 'utf8')).toContain(`${name}:cart.ts`)
    } finally {
      await servers.close()
      await engine.dispose()
    }
  })
})
