/**
 * MCP costs, each beside its goal: importing 100 tools from an in-memory MCP server (the
 * `tools/list` round trip, every schema checked, every tool registered), and what serving
 * `run_code` over MCP adds to a `run_code` call made in process (the SDK client and server over
 * an in-memory transport against the same `ctx.tools.execute()`).
 */
import { performance } from 'node:perf_hooks'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import { createMcpServer, importMcpTools } from '../mcp/index.ts'
import { createContext } from '../src/context.ts'
import { createQuickJSEngine, createRunCode } from '../sandbox/index.ts'

const IMPORTED_TOOLS = 100
const IMPORT_RUNS = Number(process.env.BENCH_MCP_IMPORT_RUNS ?? 30)
const CALL_RUNS = Number(process.env.BENCH_MCP_CALL_RUNS ?? 300)
const GOALS = { importMs: 50, servedOverheadMs: 1 } as const

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

function verdict(value: number, goal: number): string {
  return value < goal ? `[goal < ${goal} ms: met]` : `[goal < ${goal} ms: MISSED]`
}

/** A tool the way servers write them: a few typed, described, constrained properties and an output schema. */
function typicalTool(index: number): Tool {
  return {
    name: `tool_${index}`,
    description: `Tool number ${index}: looks things up.`,
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What to look for.', minLength: 1 },
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
        tags: { type: 'array', items: { type: 'string' } },
        mode: { type: 'string', enum: ['fast', 'full'] },
      },
      required: ['query'],
    },
    outputSchema: {
      type: 'object',
      properties: { hits: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, score: { type: 'number' } }, required: ['id'] } } },
      required: ['hits'],
    },
    annotations: { readOnlyHint: true },
  }
}

async function connectedPair(server: Server): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await server.connect(serverSide)
  const client = new Client({ name: 'bench', version: '1.0.0' })
  await client.connect(clientSide)
  return client
}

async function benchImport(): Promise<string> {
  const tools = Array.from({ length: IMPORTED_TOOLS }, (_, index) => typicalTool(index))
  const server = new Server({ name: 'bench-server', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }))
  server.setRequestHandler(CallToolRequestSchema, () => ({ content: [], structuredContent: { hits: [] } }))
  const client = await connectedPair(server)
  const times: number[] = []
  try {
    for (let run = 0; run < IMPORT_RUNS + 3; run++) {
      // A fresh deployment each time: nothing of the last import is reused but the SDK itself.
      const context = createContext()
      const start = performance.now()
      const imported = await importMcpTools(client, { context, prefix: 'bench' })
      const elapsed = performance.now() - start
      if (imported.report.imported.length !== IMPORTED_TOOLS) throw new Error(`imported ${imported.report.imported.length} of ${IMPORTED_TOOLS} tools`)
      imported.dispose()
      context.dispose()
      if (run >= 3) times.push(elapsed)
    }
  } finally {
    await client.close()
    await server.close()
  }
  const ms = median(times)
  return `import ${IMPORTED_TOOLS} tools from an in-memory MCP server: ${ms.toFixed(2)} ms median  ${verdict(ms, GOALS.importMs)}`
}

async function benchServe(): Promise<string[]> {
  const engine = createQuickJSEngine()
  const context = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine }) } })
  const server = createMcpServer({ context })
  const client = await connectedPair(server)
  const code = 'return 1'
  let callId = 0
  const inProcess = async (): Promise<void> => {
    callId += 1
    const result = await context.tools.execute({ callId: `bench-${callId}`, name: 'run_code', arguments: { code }, signal: new AbortController().signal })
    if (result.isError) throw new Error(result.error.message)
  }
  const served = async (): Promise<void> => {
    const result = await client.callTool({ name: 'run_code', arguments: { code } })
    if (result.isError === true) throw new Error(JSON.stringify(result.content))
  }
  const direct: number[] = []
  const overMcp: number[] = []
  try {
    for (let run = 0; run < 20; run++) {
      await inProcess()
      await served()
    }
    // Interleaved, so a busy moment of the host weighs on both sides alike.
    for (let run = 0; run < CALL_RUNS; run++) {
      let start = performance.now()
      await inProcess()
      direct.push(performance.now() - start)
      start = performance.now()
      await served()
      overMcp.push(performance.now() - start)
    }
  } finally {
    await client.close()
    await server.close()
    context.dispose()
    await engine.dispose()
  }
  const base = median(direct)
  const total = median(overMcp)
  const added = total - base
  return [
    `run_code "return 1" in process: ${base.toFixed(3)} ms median; served over MCP (in-memory transport): ${total.toFixed(3)} ms`,
    `serve's added latency per run_code: ${added.toFixed(3)} ms  ${verdict(added, GOALS.servedOverheadMs)}`,
  ]
}

/** Run the MCP benchmarks; returns the lines to print. */
export async function benchMcp(): Promise<string[]> {
  return ['MCP', `  ${await benchImport()}`, ...(await benchServe()).map((line) => `  ${line}`)]
}
