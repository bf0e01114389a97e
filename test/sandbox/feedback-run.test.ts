import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { ToolExecutionResult } from '../../src/execution.ts'
import type { ObjectJsonSchema } from '../../src/schema/types.ts'
import type { SandboxEngine } from '../../sandbox/engine.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import { rawTool } from '../helpers.ts'
import { enginesUnderTest } from './engines.ts'

const readFileParameters: ObjectJsonSchema = {
  type: 'object',
  properties: { path: { type: 'string' }, encoding: { enum: ['utf8', 'base64'] } },
  required: ['path'],
  additionalProperties: false,
}

/** The text the model reads for a result: the failure's message, or the rendered success. */
function textOf(result: ToolExecutionResult): string {
  return result.isError ? result.error.message : result.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}

describe.each(enginesUnderTest())('errors that name the fix, on $name', (engineUnderTest) => {
  let engine: SandboxEngine
  beforeAll(async () => {
    engine = await engineUnderTest.create()
  })
  afterAll(async () => {
    await engine?.dispose()
  })

  // The check off: these are the failures a program meets at run time, whatever the check caught first.
  function setup() {
    const ran: string[] = []
    const ctx = createContext({ tools: { mode: 'code', maxParallelSubCalls: 8, codeMode: createRunCode({ engine, typeCheck: 'off', limits: { wallTimeMs: 20_000 } }) } })
    ctx.tools.register(rawTool('read_file', { parameters: readFileParameters, execute: async (args) => ({ content: `read ${(args as { path: string }).path}` }) }))
    ctx.tools.register(
      rawTool('write_file', {
        execute: async () => {
          ran.push('write_file')
          return null
        },
      }),
    )
    ctx.tools.register(rawTool('secret_vault', { execute: async () => 'SECRET' }))
    // Waits until its call is cancelled, and records that it was.
    ctx.tools.register(
      rawTool('wait_forever', {
        isConcurrencySafe: () => true,
        execute: async (_args, exec) => {
          ran.push('wait_forever started')
          await new Promise((resolve) => exec.signal.addEventListener('abort', resolve, { once: true }))
          ran.push('wait_forever cancelled')
          return null
        },
      }),
    )
    const scope = ctx.scope('coders')
    scope.tools.restrict({ deny: ['secret_vault'] })
    const agent = scope.agent('coder')
    const run = (code: string) => agent.ctx.tools.execute({ callId: 'run', name: 'run_code', arguments: { code }, signal: new AbortController().signal })
    return { run, ran }
  }

  it('an unknown global is quoted with a caret under it and named with the surface a program has and the closest tools', async () => {
    const { run } = setup()
    const text = textOf(await run('const path = "a.txt"\nconst text = fs.readFileSync(path, "utf8")\nreturn text'))
    expect(text).toMatch(/^The program threw ReferenceError at line 2, column 14: '?fs'? is not defined\n/)
    expect(text).toContain('\n  2 | const text = fs.readFileSync(path, "utf8")\n    |              ^\n')
    expect(text).toContain('Did you mean `tools.read_file` or `tools.write_file`?')
    expect(text).toContain('A program has `tools` (read_file, wait_forever, write_file), `console` and the JavaScript built-ins (JSON, Math')
  })

  it('a variable assigned without a declaration is named as one to declare', async () => {
    const { run } = setup()
    const text = textOf(await run('const r = await tools.read_file({ path: "a" })\ncount = 0\nreturn count'))
    expect(text).toMatch(/^The program threw ReferenceError at line 2, column 1: '?count'? is not defined\n {2}2 \| count = 0\n {4}\| \^\n/)
    expect(text).toContain('`count` is assigned but never declared, which strict mode (every program\'s) refuses: declare it first, `let count = ...`.')
  })

  it('an unknown global that looks like a tool names that tool', async () => {
    const { run } = setup()
    const text = textOf(await run('const data = await readFile({ path: "a" })\nreturn data'))
    expect(text).toMatch(/^The program threw ReferenceError at line 1, column 20: '?readFile'? is not defined\n {2}1 \| const data = await readFile/)
    expect(text).toContain('Did you mean `tools.read_file`?')
  })

  it('require is answered with how a program reaches the outside world', async () => {
    const { run } = setup()
    const text = textOf(await run('const fs = require("node:fs")'))
    expect(text).toContain('A program cannot load modules: it reaches the outside world only through `tools`.')
    expect(text).toContain('    |            ^')
  })

  it('never names a tool the agent cannot see, however close its name', async () => {
    const { run } = setup()
    const text = textOf(await run('return secretVault()'))
    expect(text).toMatch(/'?secretVault'? is not defined/)
    expect(text).not.toContain('secret_vault')
  })

  it('an unknown tool names the closest tools, at run time, with the line quoted', async () => {
    const { run, ran } = setup()
    const text = textOf(await run('await tools.write_file({ path: "out.txt" })\nconst r = await tools.readFile({ path: "a" })\nreturn r'))
    expect(text).toMatch(/^The program threw TypeError \(UNKNOWN_TOOL\) at line 2, column \d+: tools\.readFile is not a tool\. Did you mean `tools\.read_file`\? Available tools: read_file, wait_forever, write_file\n {2}2 \| const r = await tools\.readFile/)
    expect(ran).toEqual(['write_file'])
  })

  it('a program can catch an unknown tool and read the same suggestion', async () => {
    const { run } = setup()
    const result = await run('try { tools.writeFiel } catch (e) { return [e.code, e.message] }')
    expect(result).toMatchObject({
      isError: false,
      value: { result: ['UNKNOWN_TOOL', 'tools.writeFiel is not a tool. Did you mean `tools.write_file`? Available tools: read_file, wait_forever, write_file'] },
    })
  })

  it('an unknown tool suggests tools sharing words when no spelling is near, and none of the hidden ones', async () => {
    const { run } = setup()
    const result = await run('const out = []\nfor (const name of ["fileRead", "secret_vault", "secretVault", "zzz"]) { try { tools[name] } catch (e) { out.push(e.message) } }\nreturn out')
    expect(result).toMatchObject({
      isError: false,
      value: {
        result: [
          'tools.fileRead is not a tool. Did you mean `tools.read_file` or `tools.write_file`? Available tools: read_file, wait_forever, write_file',
          'tools.secret_vault is not a tool. Available tools: read_file, wait_forever, write_file',
          'tools.secretVault is not a tool. Available tools: read_file, wait_forever, write_file',
          'tools.zzz is not a tool. Available tools: read_file, wait_forever, write_file',
        ],
      },
    })
  })

  it('an unknown tool in a large tool set lists the first tools and how many more there are', async () => {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, typeCheck: 'off' }) } })
    for (let i = 0; i < 200; i++) ctx.tools.register(rawTool(`tool_${String(i).padStart(3, '0')}`))
    const agent = ctx.agent('many')
    const result = await agent.ctx.tools.execute({ callId: 'r', name: 'run_code', arguments: { code: 'try { tools.tool_1234 } catch (e) { return e.message }' }, signal: new AbortController().signal })
    expect(result).toMatchObject({ isError: false, value: { result: expect.stringMatching(/^tools\.tool_1234 is not a tool\. Did you mean `tools\.tool_123`, `tools\.tool_124` or `tools\.tool_134`\? Available tools: tool_000, tool_001, .*, tool_029 \(and 170 more\)$/) } })
  })

  it('an unknown tool of one or two letters is not told of every other short name', async () => {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, typeCheck: 'off' }) } })
    for (const name of ['a', 'b', 'X']) ctx.tools.register(rawTool(name))
    const agent = ctx.agent('short')
    const result = await agent.ctx.tools.execute({ callId: 'r', name: 'run_code', arguments: { code: 'const out = []\nfor (const name of ["c", "x"]) { try { tools[name] } catch (e) { out.push(e.message) } }\nreturn out' }, signal: new AbortController().signal })
    expect(result).toMatchObject({ isError: false, value: { result: ['tools.c is not a tool. Available tools: X, a, b', 'tools.x is not a tool. Did you mean `tools.X`? Available tools: X, a, b'] } })
  })

  it('a correct program sees tools as before: the names, typeof and in', async () => {
    const { run } = setup()
    const result = await run('return [Object.keys(tools), typeof tools.read_file, "read_file" in tools, "readFile" in tools, "toString" in tools]')
    expect(result).toMatchObject({ isError: false, value: { result: [['read_file', 'wait_forever', 'write_file'], 'function', true, false, true] } })
  })

  it('a thrown error quotes the line it was thrown at', async () => {
    const { run } = setup()
    const text = textOf(await run('const r = await tools.read_file({ path: "a" })\nif (!r.text) throw new Error("no text in the result")\nreturn r'))
    expect(text).toMatch(/^The program threw Error at line 2, column \d+: no text in the result\n {2}2 \| if \(!r\.text\) throw new Error\("no text in the result"\)\n {4}\| +\^\n {4}at program:2:\d+/)
  })

  it('a program that returns with calls still running gets its result and a note naming them', async () => {
    const { run, ran } = setup()
    const result = await run('tools.wait_forever({})\ntools.wait_forever({})\nreturn "done"')
    expect(result).toMatchObject({
      isError: false,
      value: {
        result: 'done',
        notes: ['2 tool calls were still running when the program returned: tools.wait_forever (2 calls). They were signalled to stop and their results discarded, but they may already have taken effect: check before repeating them. Did you forget `await`?'],
      },
    })
    expect(textOf(result)).toContain('Notes:\n- 2 tool calls were still running when the program returned')
    expect(ran.filter((event) => event === 'wait_forever cancelled')).toHaveLength(2)
  })

  it('a program whose calls all finished gets no note', async () => {
    const { run } = setup()
    const result = await run('const a = tools.read_file({ path: "a" })\nreturn (await a).content')
    expect(result).toMatchObject({ isError: false, value: { result: 'read a' } })
    expect(result.isError ? 'failed' : (result.value as { notes?: unknown }).notes).toBeUndefined()
  })

  it('a program that fails with calls still running says so in its failure', async () => {
    const { run } = setup()
    const text = textOf(await run('tools.wait_forever({})\nthrow new Error("gave up")'))
    expect(text).toMatch(/^The program threw Error at line 2/)
    expect(text).toContain('\n\n1 tool call was still running when the program failed: tools.wait_forever. It was signalled to stop and its result discarded, but it may already have taken effect')
  })

  it('a return value that is not JSON is told what to return instead', async () => {
    const { run } = setup()
    const text = textOf(await run('const byPath = new Map([["a", 1]])\nreturn { byPath }'))
    expect(text).toBe("The program's return value cannot be returned: the returned value is not JSON: a Map (not JSON) at $.byPath\nOnly JSON crosses: send a Map as `Object.fromEntries(map)`.")
    const promise = textOf(await run('return { page: tools.read_file({ path: "a" }) }'))
    expect(promise).toContain('a Promise (not JSON) at $.page\nOnly JSON crosses: a Promise is not data: `await` it first.')
  })

  it('an argument that is not JSON is told what to send instead, with the line quoted', async () => {
    const { run } = setup()
    const text = textOf(await run('await tools.write_file({ path: "a", content: new Set(["x"]) })'))
    expect(text).toMatch(/^The program threw TypeError \(INVALID_ARGS\) at line 1, column \d+: tools\.write_file: the argument is not JSON: a Set \(not JSON\) at \$\.content\n {2}1 \| await tools\.write_file/)
    expect(text).toContain('\nOnly JSON crosses: send a Set as `[...set]`.')
  })

  it('a program that returns a value that is not JSON with calls still running is told both', async () => {
    const { run } = setup()
    const text = textOf(await run('tools.wait_forever({})\nreturn () => 1'))
    expect(text).toMatch(/^The program's return value cannot be returned: .*a function/)
    expect(text).toContain('1 tool call was still running when the program returned: tools.wait_forever. It was signalled to stop and its result discarded, but it may already have taken effect: check before repeating it. Did you forget `await`?')
  })
})
