import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import { closestNames } from '../../src/spelling.ts'
import type { SandboxEngine } from '../../sandbox/engine.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import type { RunCodeValue } from '../../sandbox/run-code.ts'
import { rawTool } from '../helpers.ts'
import { enginesUnderTest } from './engines.ts'

/** Tool sets, and names a program might reach for among them: misspellings, casings, parts, words, Node names, ties. */
const CASES: ReadonlyArray<{ readonly tools: readonly string[]; readonly names: readonly string[] }> = [
  {
    tools: ['read_file', 'write_file', 'list_directory', 'search_files', 'fetch_url', 'create_entities', 'read_graph', 'get_file_info', 'move_file', 'directory_tree', 'HTTPServerStatus', 'readFileSync_v2'],
    names: ['fs', 'fetch', 'readFile', 'readFlie', 'read', 'listDir', 'httpServer', 'HTTPServer', 'XMLHttpRequest', 'constructor', 'db', 'ls', 'rm', 'writeFiles', 'file', 'moveFIle', 'getFileInfo2', 'a', 'ab', 'directoryTreeX', 'searchFile', 'readfilesync', 'v2'],
  },
  {
    tools: ['get_user', 'get_users', 'get_user_info', 'user_get', 'getUserById', 'list_users', 'delete_user', 'remove_user'],
    names: ['getUser', 'user', 'users', 'get', 'info', 'getuserbyid', 'unlink', 'find', 'getUsrs', 'userGet', 'DELETE'],
  },
  {
    tools: ['ab_c', 'abc', 'a_bc', 'ABC', 'x', 'y2', 'sql_query', 'database_query', 'run_command', 'shell_exec'],
    names: ['Abc', 'abcd', 'X', 'y', 'sql', 'db', 'exec', 'spawn', 'child_process', 'query', 'command'],
  },
  { tools: ['HTTPServerStatus', 'read_file', 'write_file', 'list_directory'], names: ['fs', 'httpServer', 'http', 'fetch'] },
]

/** The tools a guest's message names after "Did you mean", in order. */
function suggested(message: string): string[] {
  const part = /Did you mean (.*?)\? Available tools/.exec(message)?.[1]
  return part === undefined ? [] : [...part.matchAll(/`tools\.([^`]*)`/g)].map((match) => match[1] as string)
}

describe.each(enginesUnderTest())('the guest names the same tools as the host for an unknown tools.x on $name', (engineUnderTest) => {
  let engine: SandboxEngine
  beforeAll(async () => {
    engine = await engineUnderTest.create()
  })
  afterAll(async () => {
    await engine?.dispose()
  })

  it.each(CASES.map((entry, index) => ({ ...entry, index })))('tool set $index', async ({ tools, names }) => {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, typeCheck: 'off' }) } })
    for (const tool of tools) ctx.tools.register(rawTool(tool))
    const agent = ctx.agent('model')
    const code = `const messages = []
for (const name of ${JSON.stringify(names)}) {
  try { tools[name]; messages.push('') } catch (e) { messages.push(e.message) }
}
return { order: Object.keys(tools), messages }`
    const result = await agent.ctx.tools.execute({ callId: 'parity', name: 'run_code', arguments: { code }, signal: new AbortController().signal })
    expect(result.isError ? result.error.message : '').toBe('')
    const { order, messages } = (result.isError ? undefined : (result.value as unknown as RunCodeValue).result) as { order: string[]; messages: string[] }
    expect([...order].sort()).toEqual([...tools].sort())
    const guest = messages.map(suggested)
    const host = names.map((name) => closestNames(name, order))
    expect(guest).toEqual(host)
    // The table is worth comparing: most names get suggestions.
    expect(host.filter((list) => list.length > 0).length).toBeGreaterThan(names.length / 2)
  })
})
