import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { ToolExecutionResult } from '../../src/execution.ts'
import type { SandboxEngine } from '../../sandbox/engine.ts'
import { mentionsTools, resolveTypeCheck } from '../../sandbox/program-check.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import type { RunCodeOptions, RunCodeValue } from '../../sandbox/run-code.ts'
import { corpusTools } from './corpus/tools.ts'
import { enginesUnderTest } from './engines.ts'

const engines = enginesUnderTest()

function messageOf(result: ToolExecutionResult): string {
  return result.isError ? result.error.message : ''
}

function valueOf(result: ToolExecutionResult): RunCodeValue | undefined {
  return result.isError ? undefined : (result.value as unknown as RunCodeValue)
}

describe('mentionsTools', () => {
  it('finds `tools` as a whole word, in code, strings and comments', () => {
    expect(mentionsTools('await tools.x()')).toBe(true)
    expect(mentionsTools('// uses tools\nreturn 1')).toBe(true)
    expect(mentionsTools('return "tools"')).toBe(true)
  })

  it('does not take a longer name for it', () => {
    expect(mentionsTools('const toolset = 1; const mytools = 2; return tools_')).toBe(false)
    expect(mentionsTools('return globalThis["to" + "ols"]')).toBe(false)
  })
})

describe('resolveTypeCheck', () => {
  it("reads true as 'enforce', false as 'off', and nothing as 'guard'", () => {
    expect(resolveTypeCheck(true)).toBe('enforce')
    expect(resolveTypeCheck(false)).toBe('off')
    expect(resolveTypeCheck(undefined)).toBe('guard')
    expect(resolveTypeCheck('enforce')).toBe('enforce')
  })
})

describe('createRunCode({ typeCheck })', () => {
  it('refuses a wait that is not a number of milliseconds', () => {
    expect(() => createRunCode({ typeCheckWaitMs: -1 })).toThrow(/typeCheckWaitMs must be a finite number of milliseconds, 0 or more; got -1/)
  })

  it('refuses a value that is not a mode, naming the modes', () => {
    expect(() => createRunCode({ typeCheck: 'strict' as never })).toThrow(/typeCheck must be 'guard', 'enforce', 'off' \(or true for 'enforce', false for 'off'\), or left out for 'guard'; got 'strict'/)
  })
})

describe.each(engines)('type check modes on $name', (engineUnderTest) => {
  let engine: SandboxEngine
  beforeAll(async () => {
    engine = await engineUnderTest.create()
  })
  afterAll(async () => {
    await engine?.dispose()
  })

  function setup(options: Omit<RunCodeOptions, 'engine'> = {}) {
    // The check may wait as long as the run: on a busy machine a warm check can take a second.
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, limits: { wallTimeMs: 30_000 }, typeCheckWaitMs: 60_000, ...options }) } })
    const { tools, effects } = corpusTools()
    for (const tool of tools) ctx.tools.register(tool)
    const agent = ctx.agent('model')
    const run = (code: string) => agent.ctx.tools.execute({ callId: 'run', name: 'run_code', arguments: { code }, signal: new AbortController().signal })
    return { run, effects, agent }
  }

  it('runs a program whose diagnostics are not certain failures by default, and returns them as notes', async () => {
    const { run } = setup()
    const value = valueOf(await run('const label: number = "seven"\nconst f = await tools.read_file({ path: "/data/b.txt" })\nreturn [label, f.size]'))
    expect(value?.result).toEqual(['seven', 3])
    expect(value?.notes).toEqual([expect.stringMatching(/^Type check, line 1, column 7: Type 'string' is not assignable to type 'number'\..*ran anyway/)])
  })

  it("refuses any diagnostic with 'enforce', before any tool ran", async () => {
    const { run, effects } = setup({ typeCheck: 'enforce' })
    const result = await run('await tools.write_file({ path: "/p", content: "" })\nconst label: number = "seven"\nreturn label')
    expect(messageOf(result)).toMatch(/not run: it has type errors.*line 2, column 7: Type 'string' is not assignable to type 'number'/s)
    expect(effects.writes).toEqual([])
  })

  it("takes true for 'enforce'", async () => {
    const { run } = setup({ typeCheck: true })
    expect(messageOf(await run('const label: number = "seven"\nreturn label'))).toMatch(/it has type errors/)
  })

  it.each([['off' as const], [false as const]])('runs a faulty program with typeCheck %j until it fails at run time', async (typeCheck) => {
    const { run, effects } = setup({ typeCheck })
    const result = await run('await tools.write_file({ path: "/p", content: "" })\nreturn await tools.readFile({ path: "/p" })')
    expect(result.isError).toBe(true)
    expect(effects.writes).toEqual([{ path: '/p', content: '' }])
  })

  it('runs a program that never names tools without its check: a certain failure on a path not taken does not refuse it', async () => {
    const { run } = setup()
    expect(valueOf(await run('if (Math.random() > 2) fs.readFileSync("x")\nreturn 1'))?.result).toBe(1)
    // The same mistake in a program that names `tools` is refused before it runs.
    const { run: again, effects } = setup()
    const refused = await again('await tools.write_file({ path: "/p", content: "" })\nif (Math.random() > 2) fs.readFileSync("x")\nreturn 1')
    expect(messageOf(refused)).toContain("Cannot find name 'fs'")
    expect(effects.writes).toEqual([])
  })

  it('checks a program that reaches the tools without naming them before its first call, and refuses it with no side effect', async () => {
    const { run, effects } = setup()
    const result = await run('const t = (0, eval)("to" + "ols")\nawait t.write_file({ path: "/p", content: "" })\nreturn nope')
    expect(messageOf(result)).toContain("Cannot find name 'nope'")
    expect(effects.writes).toEqual([])
  })

  it('lets a program that reaches the tools without naming them call them when its check finds nothing certain', async () => {
    const { run, effects } = setup()
    const value = valueOf(await run('const t = globalThis["to" + "ols"]\nconst w = await t.write_file({ path: "/p", content: "ab" })\nreturn w.bytes'))
    expect(value?.result).toBe(2)
    expect(effects.writes).toEqual([{ path: '/p', content: 'ab' }])
  })

  it('refuses a program at its first tool call reached without naming tools: no id taken, nothing logged, a CODE_RUN_FAILED error for the program', async () => {
    const { run, effects, agent } = setup()
    const steps: string[] = []
    agent.ctx.on('tools/code-progress', (_run, progress) => void steps.push(progress.type === 'log' ? `log ${progress.text}` : progress.type))
    const code = 'const t = globalThis["to" + "ols"]\nconst codes = []\nfor (const path of ["/p", "/q"]) {\n  try { await t.write_file({ path, content: "" }) } catch (e) { codes.push(e.code) }\n}\nconsole.log(codes.join(","))\nreturn nope'
    const result = await run(code)
    expect(messageOf(result)).toMatch(/^The program was stopped at its first tool call, which did not run \(nor did any other\): the type check found mistakes.*line 7, column 8: Cannot find name 'nope'/s)
    expect(effects.writes).toEqual([])
    expect(agent.session.events.filter((event) => event.type.startsWith('tool/code-dispatch'))).toEqual([])
    expect(steps).toEqual(['log CODE_RUN_FAILED,CODE_RUN_FAILED'])
  })

  it('numbers the calls of a program that reached the tools without naming them from 1 once its check passed, each start logged with its end', async () => {
    const { run, agent } = setup()
    const steps: string[] = []
    agent.ctx.on('tools/code-progress', (_run, progress) => void steps.push(`${progress.type} ${'subCallId' in progress ? progress.subCallId : ''}`))
    const code = 'const t = globalThis["to" + "ols"]\nconst [a, b] = await Promise.all([t.read_file({ path: "/data/a.txt" }), t.read_file({ path: "/data/b.txt" })])\nreturn [a.size, b.size]'
    expect(valueOf(await run(code))?.result).toEqual([11, 3])
    const dispatches = agent.session.events.filter((event) => event.type.startsWith('tool/code-dispatch')).map((event) => `${event.type} ${(event as { subCallId?: string }).subCallId}`)
    expect([...dispatches].sort()).toEqual(['tool/code-dispatch run:code:1', 'tool/code-dispatch run:code:2', 'tool/code-dispatch-start run:code:1', 'tool/code-dispatch-start run:code:2'])
    expect([...steps].sort()).toEqual(['call-end run:code:1', 'call-end run:code:2', 'call-start run:code:1', 'call-start run:code:2'])
  })

  it('never starts a call that still waited for the check when the program returned, and says it was left running', async () => {
    // The check is slow on purpose (seconds of nested conditional types), so the call surely still
    // waits for it when the program returns: a quick check could pass first and let the call run.
    const { run, agent } = setup()
    const slowToCheck = `type Build<N extends number, A extends unknown[] = []> = A['length'] extends N ? A : Build<N, [...A, 0]>
type Outer<A extends unknown[] = [], Acc = never> = A['length'] extends 400 ? Acc : Outer<[...A, 0], Acc | Build<A['length']>['length']>
const x: Outer = 5000
`
    const value = valueOf(await run(`${slowToCheck}globalThis["to" + "ols"].read_file({ path: "/data/a.txt" })\nreturn 1`))
    expect(value?.result).toBe(1)
    expect(value?.notes?.join('\n')).toMatch(/read_file/)
    // Another program's check queues behind the slow one in the checker's thread: once it has run,
    // the slow check has answered, and the waiting call must still not have started.
    const later = setup()
    expect(valueOf(await later.run('return (await tools.read_file({ path: "/data/b.txt" })).size'))?.result).toBe(3)
    expect(agent.session.events.filter((event) => event.type.startsWith('tool/code-dispatch'))).toEqual([])
  })

  it('runs a program unchecked when its check does not answer within typeCheckWaitMs', async () => {
    const { run } = setup({ typeCheckWaitMs: 100 })
    // Nested recursive conditional types: seconds of checking for a few hundred bytes.
    const code = `type Build<N extends number, A extends unknown[] = []> = A['length'] extends N ? A : Build<N, [...A, 0]>
type Outer<A extends unknown[] = [], Acc = never> = A['length'] extends 400 ? Acc : Outer<[...A, 0], Acc | Build<A['length']>['length']>
const x: Outer = 5000
return (await tools.read_file({ path: "/data/b.txt" })).size`
    const value = valueOf(await run(code))
    expect(value?.result).toBe(3)
    // A checker that is late is not the model's to fix: no note.
    expect(value?.notes).toBeUndefined()
  })

  it('names an unknown tool in a line of its own, not with the whole type of tools', async () => {
    const { run } = setup()
    const message = messageOf(await run('return await tools.read_fil({ path: "/data/a.txt" })'))
    expect(message).toContain('`tools.read_fil` is not a tool.')
    expect(message).toMatch(/Did you mean `tools\.read_file`\?/)
    expect(message).not.toContain('does not exist on type')
  })

  it("gives the model exactly the README's text for its example of a refused program", async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('### The program is checked before it runs'))
    const program = /would write a file and then fail:\n\n```ts\n([\s\S]*?)\n```/.exec(section)?.[1]
    const expected = /Nothing runs; the model gets a `CODE_RUN_FAILED` result whose text is:\n\n```text\n([\s\S]*?)\n```/.exec(section)?.[1]
    expect(program).toBeDefined()
    const { run, effects } = setup()
    const result = await run((program as string).replaceAll("'copy.txt'", "'/p'").replaceAll("'notes.txt'", "'/data/a.txt'"))
    expect(messageOf(result)).toBe(expected)
    expect(effects.writes).toEqual([])
  })

  it('reports a run-time error in a fenced program at the line and column the model wrote', async () => {
    const { run } = setup()
    const result = await run('```ts\nconst o: any = null\nreturn o.field\n```')
    // QuickJS points at the `.`, V8 at the property name.
    expect(messageOf(result)).toMatch(/at line 3, column (9|10)/)
  })

  it('reports a run-time error in a returned last expression at the column the model wrote', async () => {
    const { run } = setup()
    // `.field` is at columns 23-24 as written; the rewrite put `return(` (7 characters) before `o` on that line.
    const result = await run('const o: any = null; o.field')
    expect(messageOf(result)).toMatch(/at line 1, column (23|24):/)
    expect(messageOf(result)).toMatch(/program:1:(23|24)\b/)
  })
})
