/**
 * `run_code`'s description size, which a model pays for on every turn: 10, 100 and 500 typical tools
 * declared whole and listed for discovery (`tools.$search` / `tools.$describe`), and the real case,
 * the 23 tools of the published file-system and memory MCP servers spawned over stdio. Each size is
 * printed beside the whole declarations of the same tools, measured in the same run.
 */
import { mkdtempSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { importMcpTools } from '../mcp/index.ts'
import { createContext } from '../src/context.ts'
import type { ToolDefinition } from '../src/tool.ts'
import { createQuickJSEngine, createRunCode } from '../sandbox/index.ts'

/** The size goal for 500 tools listed for discovery. */
const GOAL_500_CHARS = 8_000

/** A tool like those MCP servers list: a sentence or two, three arguments, one documented. */
function typicalTool(index: number): ToolDefinition {
  return {
    name: `service_${index}_${['search', 'get', 'update', 'list'][index % 4] as string}`,
    description: `Operates on records of service ${index}. Returns the matching records with their ids, titles and timestamps; fails when the service is down.`,
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'Words to match against the record titles.' },
        limit: { type: 'integer', minimum: 1, maximum: 100 },
        includeArchived: { type: 'boolean' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    output: { schema: {}, render: () => [{ type: 'text', text: 'ok' }] },
    execute: async () => null,
  }
}

/** `run_code`'s description for `tools`, declared whole (`maxDeclarationChars: Infinity`) or listed (`maxTools: 0`). */
function descriptionOf(tools: readonly ToolDefinition[], listed: boolean): string {
  const context = createContext({
    tools: { mode: 'code', codeMode: createRunCode({ largeToolSets: listed ? { maxTools: 0 } : { maxDeclarationChars: Number.POSITIVE_INFINITY } }) },
  })
  for (const tool of tools) context.tools.register(tool)
  const description = context.tools.schemas()[0]?.description ?? ''
  context.dispose()
  return description
}

/** The tools of the two published MCP servers the tests use, imported over stdio. */
async function mcpServerTools(): Promise<{ tools: ToolDefinition[]; close(): Promise<void> }> {
  const bin = (name: string): string => join(import.meta.dirname, '..', 'node_modules', '.bin', name)
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'toolbox-bench-description-')))
  const env = Object.fromEntries(
    Object.entries({ ...process.env, MEMORY_FILE_PATH: join(folder, 'memory.jsonl') }).filter((entry): entry is [string, string] => entry[1] !== undefined),
  )
  const fs = new Client({ name: 'bench', version: '1.0.0' })
  const memory = new Client({ name: 'bench', version: '1.0.0' })
  await Promise.all([
    fs.connect(new StdioClientTransport({ command: bin('mcp-server-filesystem'), args: [folder], env, stderr: 'pipe' })),
    memory.connect(new StdioClientTransport({ command: bin('mcp-server-memory'), env, stderr: 'pipe' })),
  ])
  const context = createContext()
  await importMcpTools(fs, { context, prefix: 'fs' })
  await importMcpTools(memory, { context })
  return { tools: context.tools.list(), close: async () => void (await Promise.all([fs.close(), memory.close()])) }
}

/** Median ms of `runs` warm `run_code` calls of `code` over 500 typical tools, declared or listed, on QuickJS, unchecked. */
async function warmRunMs(listed: boolean, code: string, runs = 40): Promise<number> {
  await using engine = createQuickJSEngine()
  const context = createContext({
    tools: { mode: 'code', codeMode: createRunCode({ engine, typeCheck: false, largeToolSets: listed ? { maxTools: 0 } : { maxDeclarationChars: Number.POSITIVE_INFINITY } }) },
  })
  for (let index = 0; index < 500; index++) context.tools.register(typicalTool(index))
  const times: number[] = []
  for (let run = 0; run < runs + 5; run++) {
    const started = performance.now()
    const result = await context.tools.execute({ callId: `r${run}`, name: 'run_code', arguments: { code }, signal: new AbortController().signal })
    if (result.isError) throw new Error(result.error.message)
    if (run >= 5) times.push(performance.now() - started)
  }
  context.dispose()
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)] as number
}

function row(label: string, whole: string, listed: string): string {
  const ratio = (listed.length / whole.length).toFixed(2)
  return `  ${label.padEnd(28)} declared ${String(whole.length).padStart(7)} chars   listed ${String(listed.length).padStart(6)} chars  (x${ratio})`
}

/** The section's lines, its heading first. */
export async function benchDescription(): Promise<string[]> {
  const lines = ['\n== run_code description size (characters a model reads on every turn) ==']
  for (const count of [10, 100, 500]) {
    const tools = Array.from({ length: count }, (_, index) => typicalTool(index))
    const listed = descriptionOf(tools, true)
    const goal = count === 500 ? `  [goal < ${GOAL_500_CHARS}: ${listed.length < GOAL_500_CHARS ? 'met' : 'MISSED'}]` : ''
    lines.push(`${row(`${count} typical tools`, descriptionOf(tools, false), listed)}${goal}`)
  }
  try {
    const servers = await mcpServerTools()
    try {
      lines.push(row(`${servers.tools.length} tools of 2 MCP servers`, descriptionOf(servers.tools, false), descriptionOf(servers.tools, true)))
    } finally {
      await servers.close()
    }
  } catch (error) {
    lines.push(`  the MCP servers could not be started: ${(error as Error).message}`)
  }
  lines.push('  (by default the listing takes over when the declarations pass 10,000 characters)')
  // What a listed set costs each run: its catalog travels into the sandbox, where the lookups run.
  const declared = await warmRunMs(false, 'return 1')
  const listed = await warmRunMs(true, 'return 1')
  const search = await warmRunMs(true, 'return tools.$search("service 42 records").length')
  lines.push(`  500 tools, warm run_code on QuickJS: return 1 declared ${declared.toFixed(2)} ms, listed ${listed.toFixed(2)} ms (x${(listed / declared).toFixed(2)}); with one $search ${search.toFixed(2)} ms`)
  return lines
}
