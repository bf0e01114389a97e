import { describe, expect, it, vi } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { PreToolDecision } from '../../src/execution.ts'
import type { CodeModeTool } from '../../src/registry.ts'
import { z } from 'zod'
import { call, rawTool } from '../helpers.ts'

function names(schemas: { name: string }[]): string[] {
  return schemas.map((schema) => schema.name)
}

describe('register', () => {
  it('rejects a duplicate within one layer but lets a scope shadow a global', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('read', { execute: async () => 'global' }))
    expect(() => ctx.tools.register(rawTool('read'))).toThrow(/already registered globally/)
    const agent = ctx.agent('a')
    agent.ctx.tools.register(rawTool('read', { execute: async () => 'scoped' }))
    expect(() => agent.ctx.tools.register(rawTool('read'))).toThrow(/already registered in scope/)
    expect(await agent.ctx.tools.execute(call('read'))).toMatchObject({ value: 'scoped' })
    expect(await ctx.tools.execute(call('read'))).toMatchObject({ value: 'global' })
    expect(ctx.tools.get('read', agent)).not.toBe(ctx.tools.get('read'))
  })

  it('reserves run_code', () => {
    const ctx = createContext()
    expect(() => ctx.tools.register(rawTool('run_code'))).toThrow(/reserved/)
  })

  it('checks timeoutMs, the output schema and the parameters at registration, listing every problem', () => {
    const ctx = createContext()
    for (const timeoutMs of [0, -1, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() => ctx.tools.register(rawTool('t', { timeoutMs }))).toThrow(/timeoutMs must be a positive finite/)
    }
    const bad = { ...rawTool('t', { outputSchema: { type: 'string', not: { const: 'x' } } as never }), parameters: { type: 'array' } as never }
    let message = ''
    try {
      ctx.tools.register(bad)
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).toMatch(/parameters/)
    expect(message).toMatch(/output\.schema/)
  })

  it('registers schemas straight from z.toJSONSchema and enforces them, its ~standard member left out', async () => {
    const ctx = createContext()
    const parameters = z.toJSONSchema(z.object({ title: z.string().min(1), tags: z.array(z.string()).max(2).optional() }))
    ctx.tools.register(rawTool('file_issue', { parameters: parameters as never, outputSchema: z.toJSONSchema(z.object({ id: z.int() })) as never, execute: async () => ({ id: 1 }) }))
    const [schema] = ctx.tools.schemas()
    expect(schema?.parameters).not.toHaveProperty('~standard')
    expect(Object.getOwnPropertyNames(schema?.parameters)).toEqual(['$schema', 'type', 'properties', 'required', 'additionalProperties'])
    expect(await ctx.tools.execute(call('file_issue', { title: 'Bug' }))).toMatchObject({ isError: false, value: { id: 1 } })
    const invalid = await ctx.tools.execute(call('file_issue', { title: '', tags: ['a', 'b', 'c'] }))
    expect(invalid.isError && invalid.error.message).toBe(
      'Invalid arguments for tool "file_issue": $.title: expected a string of at least 1 character, found string ""; $.tags: expected an array of at most 2 items, found array of 3 items',
    )
  })

  it('returns the exact disposer, which unregisters only that tool', async () => {
    const ctx = createContext()
    const dispose = ctx.tools.register(rawTool('a'))
    ctx.tools.register(rawTool('b'))
    dispose()
    dispose()
    expect(names(ctx.tools.schemas())).toEqual(['b'])
    ctx.tools.register(rawTool('a'))
    dispose()
    expect(names(ctx.tools.schemas())).toEqual(['b', 'a'])
  })

  it('captures the schemas at registration so later mutation of the definition changes nothing', () => {
    const ctx = createContext()
    const definition = rawTool('t')
    ctx.tools.register(definition)
    ;(definition.parameters as { type: string }).type = 'array'
    expect(ctx.tools.schemas()[0]?.parameters.type).toBe('object')
  })
})

describe('schemas', () => {
  it('projects only name, description and parameters, deep-cloned', () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('t', {
        parameters: { type: 'object', properties: { p: { type: 'string' } }, required: ['p'] },
        timeoutMs: 5,
        isConcurrencySafe: () => true,
      }),
    )
    const [schema] = ctx.tools.schemas()
    expect(Object.keys(schema ?? {}).sort()).toEqual(['description', 'name', 'parameters'])
    ;(schema?.parameters.properties as Record<string, unknown>).p = { type: 'number' }
    expect(ctx.tools.schemas()[0]?.parameters.properties?.p).toEqual({ type: 'string' })
  })
})

describe('restrict', () => {
  it('reads an empty deny list beside an allow list as no deny list', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('g'))
    ctx.tools.register(rawTool('h'))
    const scope = ctx.scope('s')
    scope.tools.restrict({ allow: ['g'], deny: [] })
    expect(ctx.tools.list(scope).map((tool) => tool.name)).toEqual(['g'])
  })

  it('rejects empty filters, unknown names, scope-local names, run_code and the root', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('g'))
    const scope = ctx.scope('s')
    scope.tools.register(rawTool('own'))
    expect(() => scope.tools.restrict({})).toThrow(/names no tools/)
    expect(() => scope.tools.restrict({ deny: [] })).toThrow(/names no tools/)
    // An empty allow is ambiguous (hide everything, or say nothing), beside a deny list too.
    expect(() => scope.tools.restrict({ allow: [], deny: [] })).toThrow(/allow is empty: list at least one tool name/)
    expect(() => scope.tools.restrict({ allow: [], deny: ['g'] })).toThrow(/allow is empty: list at least one tool name/)
    expect(() => scope.tools.restrict({ deny: ['nope'] })).toThrow(/"nope" is not an inherited tool \(inherited: g\)/)
    expect(() => scope.tools.restrict({ deny: ['own'] })).toThrow(/registered in this scope itself/)
    expect(() => scope.tools.restrict({ deny: ['run_code'] })).toThrow(/reserved/)
    expect(() => ctx.tools.restrict({ deny: ['g'] })).toThrow(/root inherits nothing/)
    // A misspelt key would be a filter that filters nothing.
    const misspelt = { allow: ['g'], denny: ['g'] } as unknown as Parameters<typeof scope.tools.restrict>[0]
    expect(() => scope.tools.restrict(misspelt)).toThrow(/unknown key "denny": a restriction has only "allow" and "deny"/)
  })

  it('never hides a scope its own tools and hides later globals under an allow list', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('a'))
    ctx.tools.register(rawTool('b'))
    const agent = ctx.agent('x')
    agent.ctx.tools.register(rawTool('mine'))
    agent.ctx.tools.restrict({ allow: ['a'] })
    ctx.tools.register(rawTool('later'))
    expect(names(agent.ctx.tools.schemas(agent)).sort()).toEqual(['a', 'mine'])
  })

  it('lets later globals through a deny-only filter', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('a'))
    const agent = ctx.agent('x')
    agent.ctx.tools.restrict({ deny: ['a'] })
    ctx.tools.register(rawTool('later'))
    expect(names(agent.ctx.tools.schemas(agent))).toEqual(['later'])
  })

  it('intersects restrictions along the chain and lifts exactly one with its disposer', () => {
    const ctx = createContext()
    for (const name of ['a', 'b', 'c']) ctx.tools.register(rawTool(name))
    const preset = ctx.scope('p')
    preset.tools.restrict({ allow: ['a', 'b'] })
    const agent = preset.agent('x')
    const lift = agent.ctx.tools.restrict({ deny: ['b'] })
    expect(names(agent.ctx.tools.schemas(agent))).toEqual(['a'])
    lift()
    expect(names(agent.ctx.tools.schemas(agent))).toEqual(['a', 'b'])
  })

  it('filters a preset-scoped tool for agents under a restricting child scope', () => {
    const ctx = createContext()
    const preset = ctx.scope('p')
    preset.tools.register(rawTool('preset-tool'))
    const team = preset.scope('team')
    team.tools.restrict({ deny: ['preset-tool'] })
    const x = team.agent('x')
    const y = preset.agent('y')
    expect(names(x.ctx.tools.schemas(x))).toEqual([])
    expect(names(y.ctx.tools.schemas(y))).toEqual(['preset-tool'])
  })
})

describe('lookups without a scope', () => {
  it('give the global view from any context, as the spec has it', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('g', { description: 'global g' }))
    ctx.tools.register(rawTool('h'))
    const agent = ctx.agent('a')
    agent.ctx.tools.register(rawTool('g', { description: 'scoped g' }))
    agent.ctx.tools.register(rawTool('own'))
    agent.ctx.tools.restrict({ deny: ['h'] })
    for (const view of [ctx.tools, agent.ctx.tools]) {
      expect(names(view.schemas())).toEqual(['g', 'h'])
      expect(view.get('g')?.description).toBe('global g')
      expect(view.get('h')).toBeDefined()
      expect(view.get('own')).toBeUndefined()
      expect(view.list().map((tool) => tool.name)).toEqual(['g', 'h'])
    }
    // The agent's own view is asked for by name.
    expect(names(ctx.tools.schemas(agent)).sort()).toEqual(['g', 'own'])
    expect(agent.ctx.tools.get('g', agent)?.description).toBe('scoped g')
    expect(agent.ctx.tools.get('h', agent.ctx)).toBeUndefined()
  })

  it('refuse a context of another deployment, as they refuse its agents', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('g'))
    const other = createContext()
    other.tools.register(rawTool('g'))
    for (const foreign of [other, other.scope('s'), other.agent('b').ctx]) {
      expect(() => ctx.tools.schemas(foreign)).toThrow(/another deployment/)
      expect(() => ctx.tools.get('g', foreign)).toThrow(/another deployment/)
      expect(() => ctx.tools.list(foreign)).toThrow(/another deployment/)
    }
    expect(() => ctx.tools.get('g', other.agent('c'))).toThrow(/neither a context nor an agent of this deployment/)
  })
})

describe('executionMode', () => {
  it('is parallel only for an exact true and fails closed otherwise', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('yes', { isConcurrencySafe: () => true }))
    ctx.tools.register(rawTool('truthy', { isConcurrencySafe: () => 'true' as never }))
    ctx.tools.register(rawTool('none'))
    ctx.tools.register(
      rawTool('throws', {
        isConcurrencySafe: () => {
          throw new Error('x')
        },
      }),
    )
    ctx.tools.register(rawTool('hidden', { isConcurrencySafe: () => true }))
    const agent = ctx.agent('a')
    agent.ctx.tools.restrict({ deny: ['hidden'] })
    const mode = (name: string, args: unknown = {}) => agent.ctx.tools.executionMode(call(name, args)).kind
    expect(mode('yes')).toBe('parallel')
    expect(mode('yes', { bad: () => 1 })).toBe('exclusive')
    expect(mode('truthy')).toBe('exclusive')
    expect(mode('none')).toBe('exclusive')
    expect(mode('throws')).toBe('exclusive')
    expect(mode('hidden')).toBe('exclusive')
    expect(mode('missing')).toBe('exclusive')
  })
})

function fakeTransport(execute = async () => ({ ok: true })) {
  return () =>
    ({
      ...rawTool('run_code', { execute }),
      name: 'run_code',
      describe: (tools) => `SDK for ${tools.map((tool) => tool.name).join(',')}`,
    }) as CodeModeTool
}

describe('presentation modes', () => {
  it('shows code-mode agents exactly run_code describing their own view, and native agents their tools', () => {
    const ctx = createContext({ tools: { codeMode: fakeTransport() } })
    ctx.tools.register(rawTool('a'))
    ctx.tools.register(rawTool('b'))
    const coders = ctx.scope('coders')
    coders.tools.presentAs('code')
    coders.tools.restrict({ deny: ['b'] })
    const coder = coders.agent('c')
    const native = ctx.agent('n')
    expect(coder.ctx.tools.schemas(coder)).toEqual([
      { name: 'run_code', description: 'SDK for a', parameters: expect.objectContaining({ type: 'object' }) },
    ])
    expect(names(native.ctx.tools.schemas(native))).toEqual(['a', 'b'])
  })

  it('is scoped only, one per scope, nearest wins, and the disposer restores', () => {
    const ctx = createContext({ tools: { codeMode: fakeTransport() } })
    ctx.tools.register(rawTool('a'))
    expect(() => ctx.tools.presentAs('code')).toThrow(/scoped only/)
    const preset = ctx.scope('p')
    const undo = preset.tools.presentAs('code')
    expect(() => preset.tools.presentAs('native')).toThrow(/already declared/)
    const agent = preset.agent('x')
    expect(names(agent.ctx.tools.schemas(agent))).toEqual(['run_code'])
    const nativeAgain = agent.ctx.tools.presentAs('native')
    expect(names(agent.ctx.tools.schemas(agent))).toEqual(['a'])
    nativeAgain()
    expect(names(agent.ctx.tools.schemas(agent))).toEqual(['run_code'])
    undo()
    expect(names(agent.ctx.tools.schemas(agent))).toEqual(['a'])
  })

  it("refuses presentAs('code') and mode 'code' without a transport", () => {
    expect(() => createContext({ tools: { mode: 'code' } })).toThrow(/codeMode/)
    expect(() => createContext().scope('s').tools.presentAs('code')).toThrow(/transport/)
  })

  it('denies native names to model-direct calls under code mode before any policy, and hides run_code from native agents', async () => {
    const ctx = createContext({ tools: { mode: 'code', codeMode: fakeTransport() } })
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('a', { execute: body }))
    const policy = vi.fn(async (_exec: unknown, next: () => Promise<PreToolDecision>) => next())
    ctx.on('tools/pre-execute', policy)
    const coder = ctx.agent('c')
    const direct = await coder.ctx.tools.execute(call('a'))
    expect(direct.isError && direct.error.info?.code).toBe('UNKNOWN_TOOL')
    expect(policy).not.toHaveBeenCalled()
    expect(body).not.toHaveBeenCalled()

    const native = ctx.scope('natives')
    native.tools.presentAs('native')
    const result = await native.agent('n').ctx.tools.execute(call('run_code', { code: 'return 1' }))
    expect(result.isError && result.error.info?.code).toBe('UNKNOWN_TOOL')
  })

  it('accepts a sub-call only with the live token of a running run_code for the same agent', async () => {
    let subResult: unknown
    let forgedResult: unknown
    const ctx = createContext({
      tools: {
        mode: 'code',
        codeMode: (host) => ({
          ...rawTool('run_code'),
          name: 'run_code',
          describe: () => 'sdk',
          execute: async (_args, exec) => {
            subResult = await host.execute({
              callId: `${exec.callId}:code:1`,
              rootCallId: exec.rootCallId,
              name: 'a',
              arguments: { x: 1 },
              parent: exec.token,
              signal: exec.signal,
              ...(exec.agent === undefined ? {} : { agent: exec.agent }),
            })
            return null
          },
        }),
      },
    })
    ctx.tools.register(rawTool('a'))
    const agent = ctx.agent('c')
    let seenParent: symbol | undefined
    ctx.on('tools/pre-execute', async (exec, next) => {
      if (exec.parent !== undefined) seenParent = exec.parent
      return next()
    })
    const outer = await agent.ctx.tools.execute(call('run_code', { code: '' }, { callId: 'outer' }))
    expect(outer.isError).toBe(false)
    expect(subResult).toMatchObject({ isError: false, value: { x: 1 } })
    expect(typeof seenParent).toBe('symbol')
    forgedResult = await agent.ctx.tools.execute(call('a', {}, { parent: Symbol('forged') as never }))
    expect(forgedResult).toMatchObject({ isError: true, error: { info: { code: 'UNKNOWN_TOOL' } } })
  })
})

describe('context disposal', () => {
  it('undoes everything registered through a context and its descendants, newest first', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('g'))
    const preset = ctx.scope('p')
    const agent = preset.agent('a')
    agent.ctx.tools.register(rawTool('own'))
    const guard = vi.fn(() => undefined)
    agent.ctx.tools.guard(guard)
    const order: string[] = []
    preset.on('tools/change', () => void order.push('change'))
    preset.dispose()
    expect(names(ctx.tools.schemas())).toEqual(['g'])
    expect(agent.ctx.disposed).toBe(true)
    expect(() => agent.ctx.tools.register(rawTool('x'))).toThrow(/after dispose/)
    expect(() => preset.scope('again')).toThrow(/after dispose/)
  })

  it('refuses lookups and classification after dispose, and unknown event names at any time', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    expect(() => ctx.on('tools/rsult' as 'tools/change', () => {})).toThrow(/unknown tool event "tools\/rsult"; known events: tools\/change/)
    const agent = ctx.agent('a')
    agent.ctx.dispose()
    expect(() => agent.ctx.tools.schemas()).toThrow(/after dispose/)
    expect(() => agent.ctx.tools.get('t')).toThrow(/after dispose/)
    expect(() => agent.ctx.tools.list()).toThrow(/after dispose/)
    expect(() => agent.ctx.tools.executionMode(call('t'))).toThrow(/after dispose/)
  })

  it('lets a disposed child go without disturbing its siblings', () => {
    const ctx = createContext()
    const a = ctx.agent('a')
    const b = ctx.agent('b')
    a.ctx.tools.register(rawTool('ta'))
    b.ctx.tools.register(rawTool('tb'))
    a.ctx.dispose()
    expect(names(b.ctx.tools.schemas(b))).toEqual(['tb'])
    ctx.dispose()
    expect(b.ctx.disposed).toBe(true)
  })
})
