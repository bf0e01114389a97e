import { describe, expect, expectTypeOf, test } from 'vitest'
import { ToolArgsError, ToolDefinitionError, ToolErrorCode } from '../../src/errors.ts'
import type { ToolRunContext } from '../../src/execution.ts'
import { text } from '../../src/messages.ts'
import { SchemaSpecError } from '../../src/schema/dsl.ts'
import { defineTool } from '../../src/tool.ts'
import type { TypedToolSpec } from '../../src/tool.ts'

const exec = {} as ToolRunContext

function grep(overrides: Partial<TypedToolSpec<never, never>> = {}) {
  return defineTool({
    name: 'grep',
    description: 'Search files',
    parameters: {
      pattern: { type: 'string', required: true },
      mode: { type: 'string', enum: ['fast', 'slow'] },
    },
    output: {
      schema: { type: 'array', items: { type: 'string' } },
      render: (args, value) => [text(`${args.pattern}: ${value.join(',')}`)],
    },
    execute: async (args) => [args.pattern, args.mode ?? 'fast'],
    ...(overrides as object),
  })
}

describe('defineTool', () => {
  test('returns a plain definition whose parameters are the compiled object schema', () => {
    const tool = grep()
    expect(tool.name).toBe('grep')
    expect(tool.description).toBe('Search files')
    expect(tool.parameters).toEqual({
      type: 'object',
      properties: { pattern: { type: 'string' }, mode: { type: 'string', enum: ['fast', 'slow'] } },
      required: ['pattern'],
    })
  })

  test('compiles output.schema to raw JSON Schema', () => {
    expect(grep().output.schema).toEqual({ type: 'array', items: { type: 'string' } })
  })

  test('freezes the definition and its output declaration', () => {
    const tool = grep()
    expect(Object.isFrozen(tool)).toBe(true)
    expect(Object.isFrozen(tool.output)).toBe(true)
    expect(Object.isFrozen(tool.parameters)).toBe(true)
  })

  test('runs the body with validated arguments', async () => {
    await expect(grep().execute({ pattern: 'x', mode: 'slow' }, exec)).resolves.toEqual(['x', 'slow'])
  })

  test('rejects invalid arguments with ToolArgsError before the body runs', async () => {
    let ran = false
    const tool = defineTool({
      name: 't',
      description: '',
      parameters: { n: { type: 'integer', required: true } },
      output: { schema: { type: 'null' }, render: () => [] },
      execute: () => {
        ran = true
        return null
      },
    })
    await expect(tool.execute({ n: 'one' }, exec)).rejects.toThrow(ToolArgsError)
    await expect(tool.execute({ n: 'one' }, exec)).rejects.toThrow('Invalid arguments for tool "t": $.n: expected integer, found string "one"')
    expect(ran).toBe(false)
  })

  test('hands the body a frozen copy of its arguments', async () => {
    let seen: unknown
    const tool = defineTool({
      name: 't',
      description: '',
      parameters: { list: { type: 'array', items: { type: 'integer' } } },
      output: { schema: { type: 'null' }, render: () => [] },
      execute: (args) => {
        seen = args
        return null
      },
    })
    const args = { list: [1] }
    await tool.execute(args, exec)
    expect(seen).toEqual(args)
    expect(Object.isFrozen((seen as { list: unknown }).list)).toBe(true)
  })

  test('renders through the author projection', () => {
    expect(grep().output.render({ pattern: 'p' }, ['a', 'b'])).toEqual([text('p: a,b')])
  })

  test('passes presentationMeta through when given and omits it otherwise', () => {
    expect(grep().output.presentationMeta).toBeUndefined()
    const tool = grep({ output: { schema: { type: 'string' }, render: () => [], presentationMeta: (_args: unknown, value: unknown) => ({ v: value }) } } as never)
    expect(tool.output.presentationMeta?.({ pattern: 'p' }, 'x')).toEqual({ v: 'x' })
  })

  test('omits isConcurrencySafe when the author gave none', () => {
    expect(grep().isConcurrencySafe).toBeUndefined()
  })

  test('answers isConcurrencySafe with the author classifier for valid arguments', () => {
    const tool = grep({ isConcurrencySafe: (args: { mode?: string }) => args.mode === 'fast' } as never)
    expect(tool.isConcurrencySafe?.({ pattern: 'x', mode: 'fast' })).toBe(true)
    expect(tool.isConcurrencySafe?.({ pattern: 'x', mode: 'slow' })).toBe(false)
  })

  test('answers isConcurrencySafe false for invalid arguments without calling the classifier', () => {
    let called = false
    const tool = grep({
      isConcurrencySafe: () => {
        called = true
        return true
      },
    } as never)
    expect(tool.isConcurrencySafe?.({ mode: 'fast' })).toBe(false)
    expect(called).toBe(false)
  })

  test('counts only an exact true from the classifier', () => {
    const tool = grep({ isConcurrencySafe: () => 'yes' as unknown as boolean } as never)
    expect(tool.isConcurrencySafe?.({ pattern: 'x' })).toBe(false)
  })

  test('answers isConcurrencySafe false when the classifier throws', () => {
    const tool = grep({
      isConcurrencySafe: () => {
        throw new Error('boom')
      },
    } as never)
    expect(tool.isConcurrencySafe?.({ pattern: 'x' })).toBe(false)
  })

  test('keeps timeoutMs, finalizeContent, presentCall and presentResult', () => {
    const finalizeContent = () => undefined
    const presentCall = () => undefined
    const presentResult = () => undefined
    const tool = grep({ timeoutMs: 5000, finalizeContent, presentCall, presentResult } as never)
    expect(tool.timeoutMs).toBe(5000)
    expect(tool.finalizeContent).toBe(finalizeContent)
    expect(tool.presentCall).toBe(presentCall)
    expect(tool.presentResult).toBe(presentResult)
  })

  test('does not add optional callbacks the author left out', () => {
    expect(Object.keys(grep()).sort()).toEqual(['description', 'execute', 'name', 'output', 'parameters'])
  })

  test('fails at definition time for malformed schemas, listing every bad path of both', () => {
    try {
      defineTool({
        name: 'bad',
        description: '',
        parameters: { mode: { type: 'string', enum: [1] }, opts: { type: 'object' } } as never,
        output: { schema: { oneOf: [{ type: 'string' }] } as never, render: () => [] },
        execute: () => 'x' as never,
      })
      expect.unreachable()
    } catch (error) {
      expect(error).toBeInstanceOf(SchemaSpecError)
      expect((error as SchemaSpecError).code).toBe(ToolErrorCode.UNSUPPORTED_SCHEMA)
      expect((error as SchemaSpecError).issues.map((issue) => issue.path)).toEqual([
        'parameters.mode.enum[0]',
        'parameters.opts.additionalProperties',
        'output.schema.oneOf',
      ])
      expect((error as Error).message).toMatch(/^Invalid schema of tool "bad": parameters\.mode\.enum\[0\]: /)
    }
  })

  test('fails at definition time for a non-positive timeoutMs', () => {
    expect(() => grep({ timeoutMs: 0 })).toThrow(ToolDefinitionError)
  })

  test('fails at definition time for an empty name', () => {
    expect(() => grep({ name: '' })).toThrow(expect.objectContaining({ code: ToolErrorCode.INVALID_DEFINITION }))
  })

  test('fails at definition time when render is missing', () => {
    expect(() => grep({ output: { schema: { type: 'string' } } } as never)).toThrow(/output\.render must be a function/)
  })
})

describe('defineTool types', () => {
  test('types execute arguments from parameters and its result from output.schema', () => {
    defineTool({
      name: 'typed',
      description: '',
      parameters: {
        path: { type: 'string', required: true },
        depth: { type: 'integer', enum: [1, 2] },
      },
      output: {
        schema: { type: 'object', additionalProperties: false, properties: { lines: { type: 'integer', required: true } } },
        render: (args, value) => {
          expectTypeOf(args).toEqualTypeOf<{ path: string; depth?: 1 | 2 }>()
          expectTypeOf(value).toEqualTypeOf<{ lines: number }>()
          return []
        },
        presentationMeta: (_args, value) => value.lines,
      },
      execute: async (args) => {
        expectTypeOf(args.path).toEqualTypeOf<string>()
        expectTypeOf(args.depth).toEqualTypeOf<1 | 2 | undefined>()
        return { lines: 3 }
      },
      isConcurrencySafe: (args) => args.depth === 1,
    })
  })

  test('rejects a body result that does not match output.schema at compile time', () => {
    defineTool({
      name: 'typed',
      description: '',
      parameters: {},
      output: { schema: { type: 'string', enum: ['ok', 'failed'] }, render: () => [] },
      // @ts-expect-error 'maybe' is not one of the declared literals
      execute: () => 'maybe',
    })
  })

  test('rejects an object spec without additionalProperties at compile time', () => {
    expect(() =>
      defineTool({
        name: 'typed',
        description: '',
        // @ts-expect-error object nodes must declare additionalProperties
        parameters: { o: { type: 'object', properties: {} } },
        output: { schema: { type: 'null' }, render: () => [] },
        execute: () => null,
      }),
    ).toThrow(SchemaSpecError)
  })
})

describe('defineTool additionalParameters', () => {
  test('false closes the parameter root: an undeclared key is refused', async () => {
    const tool = grep({ additionalParameters: false })
    expect(tool.parameters).toEqual({
      type: 'object',
      properties: { pattern: { type: 'string' }, mode: { type: 'string', enum: ['fast', 'slow'] } },
      required: ['pattern'],
      additionalProperties: false,
    })
    await expect(tool.execute({ pattern: 'x', mdoe: 'slow' }, exec)).rejects.toThrow(/no key "mdoe" \(allowed keys: pattern, mode; did you mean "mode"\?\)/)
  })

  test('absent or true leaves the root open, as JSON Schema says', async () => {
    for (const tool of [grep(), grep({ additionalParameters: true })]) {
      expect(tool.parameters).not.toHaveProperty('additionalProperties')
      await expect(tool.execute({ pattern: 'x', extra: 1 }, exec)).resolves.toEqual(['x', 'fast'])
    }
  })

  test('anything but a boolean is a definition error', () => {
    expect(() => grep({ additionalParameters: 'no' as never })).toThrow(ToolDefinitionError)
  })
})
