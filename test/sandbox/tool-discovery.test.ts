import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import { createMemorySessionLog } from '../../src/session-log.ts'
import type { SandboxEngine } from '../../sandbox/engine.ts'
import { MAX_SEARCH_RESULTS } from '../../sandbox/guest-runtime.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import type { RunCodeValue } from '../../sandbox/run-code.ts'
import { rawTool } from '../helpers.ts'
import { enginesUnderTest } from './engines.ts'

/** Forty filler tools and a few a program looks for, one of them hidden from the agent. */
function registerMany(ctx: ReturnType<typeof createContext>, calls: string[]): void {
  for (let index = 0; index < 60; index++) {
    ctx.tools.register(rawTool(`filler_${String(index).padStart(2, '0')}`, { description: `Filler number ${index}. Nothing to see.` }))
  }
  ctx.tools.register(
    rawTool('read_file', {
      description: 'Read a text file from the workspace. Returns its lines.',
      parameters: { type: 'object', properties: { path: { type: 'string', description: 'Where the file is.' } }, required: ['path'], additionalProperties: false },
      execute: async (args) => {
        calls.push('read_file')
        return { text: `contents of ${(args as { path: string }).path}` }
      },
    }),
  )
  ctx.tools.register(rawTool('write_file', { description: 'Write a text file to the workspace.' }))
  ctx.tools.register(rawTool('secret_vault', { description: 'Read the secret file vault.' }))
}

describe.each(enginesUnderTest())('large tool sets on $name', (engineUnderTest) => {
  let engine: SandboxEngine
  beforeAll(async () => {
    engine = await engineUnderTest.create()
  })
  afterAll(async () => {
    await engine?.dispose()
  })

  function setup(maxTools = 10) {
    const calls: string[] = []
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, largeToolSets: { maxTools } }) } })
    registerMany(ctx, calls)
    const coders = ctx.scope('coders')
    coders.tools.restrict({ deny: ['secret_vault'] })
    const session = createMemorySessionLog()
    const agent = coders.agent('coder', { session })
    const run = async (code: string) => {
      const result = await agent.ctx.tools.execute({ callId: 'outer', name: 'run_code', arguments: { code }, signal: new AbortController().signal })
      if (result.isError) throw new Error(result.error.message)
      return (result.value as unknown as RunCodeValue).result
    }
    const failure = async (code: string) => {
      const result = await agent.ctx.tools.execute({ callId: 'outer', name: 'run_code', arguments: { code }, signal: new AbortController().signal })
      if (!result.isError) throw new Error(`expected the run to fail, got ${JSON.stringify(result.value)}`)
      return result.error.message
    }
    return { ctx, agent, run, failure, calls, session }
  }

  it("lists names and summaries in run_code's description instead of every declaration", () => {
    const { agent } = setup()
    const description = agent.ctx.tools.schemas(agent)[0]?.description ?? ''
    expect(description).toContain('- read_file({ path }): Read a text file from the workspace.')
    expect(description).toContain('tools.$search(query)')
    expect(description).not.toContain('read_file(args:')
    expect(description).not.toContain('secret_vault')
  })

  it('finds tools by the words of a query, best match first, as name and summary', async () => {
    const { run } = setup()
    const found = (await run('return tools.$search("read file")')) as { name: string; summary: string }[]
    expect(found[0]).toEqual({ name: 'read_file', summary: 'Read a text file from the workspace.' })
    expect(found.map((tool) => tool.name)).toContain('write_file')
  })

  it('returns at most the limit asked for, and never more than the most it allows', async () => {
    const { run } = setup()
    expect(await run('return tools.$search("filler", 3).length')).toBe(3)
    expect(await run('return tools.$search("filler").length')).toBe(10)
    expect(await run('return tools.$search("", 1000).length')).toBe(MAX_SEARCH_RESULTS)
  })

  it("describes a tool by its declaration, and the program can call what it found", async () => {
    const { run, calls } = setup()
    const declaration = (await run('return tools.$describe("read_file")')) as string
    expect(declaration).toContain('read_file(args: {')
    expect(declaration).toContain('Where the file is.')
    const value = await run('const [hit] = tools.$search("read file"); return (await tools[hit.name]({ path: "a.txt" })).text')
    expect(value).toBe('contents of a.txt')
    expect(calls).toEqual(['read_file'])
  })

  it("neither finds nor describes a tool outside the agent's view", async () => {
    const { run, failure } = setup()
    expect(await run('return tools.$search("secret vault").map((tool) => tool.name)')).not.toContain('secret_vault')
    const message = await failure('return tools.$describe("secret_vault")')
    expect(message).toContain('UNKNOWN_TOOL')
    expect(message).not.toContain('Read the secret file vault')
  })

  it('throws an error the program can catch, naming the closest tools, for an unknown name', async () => {
    const { run } = setup()
    const caught = await run('try { tools.$describe("read_fil") } catch (e) { return { code: e.code, message: e.message } }')
    expect(caught).toEqual({ code: 'UNKNOWN_TOOL', message: expect.stringContaining('Closest: read_file') })
  })

  it('refuses a query that is not a string with INVALID_ARGS', async () => {
    const { run } = setup()
        // Cast, so that a type check before the run lets the mistake reach the sandbox.
    expect(await run('try { (tools as any).$search({ q: 1 }) } catch (e) { return e.code }')).toBe('INVALID_ARGS')
  })

  it('reads only the first 200 characters of a query', async () => {
    const { run } = setup()
    const names = (query: string) => run(`return tools.$search(${query}).map((tool) => tool.name)`) as Promise<string[]>
    expect((await names('"x".repeat(150) + " read"'))[0]).toBe('read_file')
    // The word past the cut is never read: nothing matches.
    expect(await names('"x".repeat(300) + " read"')).toEqual([])
    expect(await names('"x".repeat(1e6) + " read"')).toEqual([])
  })

  it('compares at most 16 distinct words of a query, each once', async () => {
    const { run } = setup()
    const names = (query: string) => run(`return tools.$search(${JSON.stringify(query)}).map((tool) => tool.name)`) as Promise<string[]>
    const fillers = Array.from({ length: 16 }, (_, i) => `zq${i}`).join(' ')
    expect((await names(`read ${fillers}`))[0]).toBe('read_file')
    // A seventeenth distinct word is not read; repeats do not count towards the sixteen.
    expect(await names(`${fillers} read`)).toEqual([])
    expect((await names(`${'zq0 '.repeat(30)}read`))[0]).toBe('read_file')
  })

  it('answers the same after the program replaces the string and array methods it could reach', async () => {
    const { run } = setup()
    const code = `String.prototype.toLowerCase = () => 'x'
String.prototype.indexOf = () => -1
String.prototype.startsWith = () => false
Object.defineProperty(Array.prototype, '0', { set() { throw new Error('hooked') }, configurable: true })
const found = tools.$search('read file', 2)
const declared = tools.$describe('read_file').includes('read_file(args:')
delete Array.prototype[0]
return { names: found.map((tool) => tool.name), declared }`
    expect(await run(code)).toEqual({ names: ['read_file', 'write_file'], declared: true })
  })

  it('keeps lookups out of the session log and out of the sub-call numbering', async () => {
    const { run, session } = setup()
    await run('tools.$search("read"); tools.$describe("read_file"); await tools.read_file({ path: "x" }); return 1')
    const dispatches = session.events.filter((event) => event.type === 'tool/code-dispatch')
    expect(dispatches.map((event) => (event as { subCallId: string }).subCallId)).toEqual(['outer:code:1'])
    expect(JSON.stringify(session.events)).not.toContain('$search')
  })

  it('leaves the catalog out of a run whose program names neither lookup, and still calls the tools', async () => {
    const { run } = setup()
    // Built from parts, so that the program does not name the lookups.
    const code = "const own = Object.getOwnPropertyNames(tools).filter((name) => name.startsWith('$')); return { own, text: (await tools.read_file({ path: 'b' })).text }"
    expect(await run(code)).toEqual({ own: [], text: 'contents of b' })
    expect(await run("tools.$search('x'); return Object.getOwnPropertyNames(tools).filter((name) => name.startsWith('$'))")).toEqual(['$search', '$describe'])
  })

  it('has no lookups when the tool set is small enough to declare whole', async () => {
    const { run, agent } = setup(1_000)
    expect(agent.ctx.tools.schemas(agent)[0]?.description).toContain('read_file(args: {')
    expect(await run('try { (tools as any).$search("read") } catch (e) { return e.code }')).toBe('UNKNOWN_TOOL')
  })
})
