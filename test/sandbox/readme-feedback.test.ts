import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { ToolExecutionResult } from '../../src/execution.ts'
import { createQuickJSEngine } from '../../sandbox/quickjs/quickjs-engine.ts'
import { createRunCode } from '../../sandbox/run-code.ts'
import { rawTool } from '../helpers.ts'

const HEADING = '### When a program is wrong: what the model reads'

/** The fenced blocks of the README section under {@link HEADING}, in order, as [language, text]. */
function sectionBlocks(): Array<[string, string]> {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
  const start = readme.indexOf(`\n${HEADING}\n`)
  if (start < 0) throw new Error(`README.md has no section "${HEADING}"`)
  const rest = readme.slice(start + HEADING.length + 2)
  const next = rest.search(/\n#{2,3} /)
  const section = next < 0 ? rest : rest.slice(0, next)
  return [...section.matchAll(/```(\w+)\n([\s\S]*?)\n```/g)].map((match) => [match[1] as string, match[2] as string])
}

/** What the model reads for a result. */
function textOf(result: ToolExecutionResult): string {
  return result.isError ? result.error.message : result.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}

describe('the README section on what the model reads when a program is wrong', () => {
  const engine = createQuickJSEngine()
  afterAll(async () => {
    await engine.dispose()
  })

  function setup() {
    const ctx = createContext({ tools: { mode: 'code', codeMode: createRunCode({ engine, limits: { wallTimeMs: 60_000 } }) } })
    ctx.tools.register(
      rawTool('read_file', {
        parameters: {
          type: 'object',
          properties: { path: { type: 'string' }, limit: { type: 'integer', minimum: 1 } },
          required: ['path'],
          additionalProperties: false,
        },
        outputSchema: { type: 'string' },
        execute: async () => 'hello',
      }),
    )
    // A write that takes until it is cancelled: the forgotten await is certain to find it running.
    ctx.tools.register(
      rawTool('write_file', {
        parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'], additionalProperties: false },
        outputSchema: { type: 'null' },
        execute: (_args, exec) => new Promise((resolve) => exec.signal.addEventListener('abort', () => resolve(null), { once: true })),
      }),
    )
    const agent = ctx.agent('model')
    return (code: string) => agent.ctx.tools.execute({ callId: 'readme', name: 'run_code', arguments: { code }, signal: new AbortController().signal })
  }

  it('shows two programs and exactly the text each one gets back', async () => {
    const blocks = sectionBlocks()
    expect(blocks.map(([language]) => language)).toEqual(['ts', 'text', 'ts', 'text'])
    const run = setup()
    const [[, failing], [, failure], [, forgetful], [, noted]] = blocks as [[string, string], [string, string], [string, string], [string, string]]
    const failed = await run(failing)
    expect(failed.isError && failed.error.info?.code).toBe('CODE_RUN_FAILED')
    expect(textOf(failed)).toBe(failure)
    const succeeded = await run(forgetful)
    expect(succeeded.isError).toBe(false)
    expect(textOf(succeeded)).toBe(noted)
  })
})
