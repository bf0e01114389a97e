/**
 * An adversarial second reading of the tool pipeline contract: listeners that misbehave in every
 * way we could think of, and the invariants that must hold anyway.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { Context } from '../../src/context.ts'
import type { ToolExecution, ToolExecutionResult, ToolRunContext } from '../../src/execution.ts'
import { CallScheduler, runToolCalls } from '../../src/scheduler.ts'
import { installTimeoutPolicy } from '../../src/timeout-policy.ts'
import { createMemorySessionLog, toolResultEvent } from '../../src/session-log.ts'
import { call, deferred, isDeepFrozen, rawTool } from '../helpers.ts'

function errorCode(result: ToolExecutionResult): string | undefined {
  return result.isError ? result.error.info?.code : undefined
}

const tick = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Unhandled rejections raised while a test runs: a contained failure must never produce one. */
let unhandled: unknown[] = []
const onUnhandled = (reason: unknown): void => void unhandled.push(reason)
beforeEach(() => {
  unhandled = []
  process.on('unhandledRejection', onUnhandled)
})
afterEach(async () => {
  await tick(5)
  process.off('unhandledRejection', onUnhandled)
  expect(unhandled).toEqual([])
})

/** A context with one tool `t` whose body is counted, plus a counted finalizeContent. */
function setup(
  overrides: Parameters<typeof rawTool>[1] = {},
  options: Parameters<typeof createContext>[0] = {},
): { ctx: Context; body: ReturnType<typeof vi.fn>; finalize: ReturnType<typeof vi.fn> } {
  const ctx = createContext({ onListenerError: () => {}, ...options })
  const body = vi.fn(async (args: unknown) => args)
  const finalize = vi.fn(() => undefined)
  ctx.tools.register(rawTool('t', { execute: body, finalizeContent: finalize, ...overrides }))
  return { ctx, body, finalize }
}

describe('pre-execute: a denial is never undone', () => {
  it('an outer listener that calls next() without awaiting it cannot lose an inner async denial', async () => {
    const { ctx, body, finalize } = setup()
    ctx.on('tools/pre-execute', (_exec, next) => {
      void next()
      return { kind: 'allow' }
    })
    ctx.on('tools/pre-execute', async () => {
      await tick(5)
      return { kind: 'deny', reason: 'late no' }
    })
    const result = await ctx.tools.execute(call('t'))
    expect(result.isError).toBe(true)
    expect(body).not.toHaveBeenCalled()
    expect(finalize).toHaveBeenCalledTimes(1)
  })

  it('an outer listener that calls next() without awaiting and then throws fails closed, without an unhandled rejection', async () => {
    const { ctx, body } = setup()
    ctx.on('tools/pre-execute', (_exec, next) => {
      void next()
      throw new Error('outer bug')
    })
    ctx.on('tools/pre-execute', async () => {
      throw new Error('inner bug')
    })
    const result = await ctx.tools.execute(call('t'))
    expect(errorCode(result)).toBe('LISTENER_FAILED')
    expect(body).not.toHaveBeenCalled()
  })

  it('an un-awaited inner listener failure is contained (no unhandled rejection) and fails closed', async () => {
    const { ctx, body } = setup()
    ctx.on('tools/pre-execute', (_exec, next) => {
      void next()
      return { kind: 'allow' }
    })
    ctx.on('tools/pre-execute', async () => {
      await tick(1)
      throw new Error('inner bug')
    })
    const result = await ctx.tools.execute(call('t'))
    expect(errorCode(result)).toBe('LISTENER_FAILED')
    expect(body).not.toHaveBeenCalled()
  })

  it('an outer listener that rewrites an inner deny or ask into allow is ignored', async () => {
    for (const inner of [
      { kind: 'deny', reason: 'no' },
      { kind: 'ask', reason: 'please' },
    ] as const) {
      const { ctx, body } = setup()
      ctx.on('tools/pre-execute', async (_exec, next) => {
        await next()
        return { kind: 'allow' }
      })
      ctx.on('tools/pre-execute', async () => inner)
      const result = await ctx.tools.execute(call('t'))
      expect(errorCode(result)).toBe('DENIED')
      expect(body).not.toHaveBeenCalled()
    }
  })

  it('throwing non-Error values (undefined, null, a string, an object) fails closed', async () => {
    for (const thrown of [undefined, null, 'str', { weird: true }, 0]) {
      const { ctx, body, finalize } = setup()
      ctx.on('tools/pre-execute', () => {
        throw thrown
      })
      const result = await ctx.tools.execute(call('t'))
      expect(errorCode(result)).toBe('LISTENER_FAILED')
      expect(body).not.toHaveBeenCalled()
      expect(finalize).toHaveBeenCalledTimes(1)
      expect(isDeepFrozen(result)).toBe(true)
    }
  })

  it('rejecting with undefined fails closed', async () => {
    const { ctx, body } = setup()
    ctx.on('tools/pre-execute', () => Promise.reject(undefined))
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('LISTENER_FAILED')
    expect(body).not.toHaveBeenCalled()
  })

  it('sync listeners returning plain (non-promise) decisions work, and a non-decision fails closed', async () => {
    const { ctx, body } = setup()
    ctx.on('tools/pre-execute', () => ({ kind: 'allow' }))
    expect((await ctx.tools.execute(call('t'))).isError).toBe(false)
    const second = setup()
    second.ctx.on('tools/pre-execute', (() => undefined) as never)
    expect(errorCode(await second.ctx.tools.execute(call('t')))).toBe('LISTENER_FAILED')
    expect(second.body).not.toHaveBeenCalled()
    expect(body).toHaveBeenCalledTimes(1)
  })

  it('a deny with a non-string reason, or an unknown kind, fails closed', async () => {
    for (const decision of [{ kind: 'deny' }, { kind: 'deny', reason: 5 }, { kind: 'maybe' }, { kind: 'ask', reason: 1 }]) {
      const { ctx, body } = setup()
      ctx.on('tools/pre-execute', async () => decision as never)
      expect((await ctx.tools.execute(call('t'))).isError).toBe(true)
      expect(body).not.toHaveBeenCalled()
    }
  })

  it('a listener that calls next() twice fails closed, even when it swallows the error', async () => {
    const { ctx, body } = setup()
    ctx.on('tools/pre-execute', async (_exec, next) => {
      await next()
      try {
        await next()
      } catch {
        // swallowed
      }
      return { kind: 'allow' }
    })
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('LISTENER_FAILED')
    expect(body).not.toHaveBeenCalled()
  })
})

describe('guards only narrow', () => {
  it('an empty string denies', async () => {
    const { ctx, body } = setup()
    ctx.tools.guard(() => '')
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('DENIED')
    expect(body).not.toHaveBeenCalled()
  })

  it('non-strings, throws and throwing non-Errors deny', async () => {
    const guards: (() => unknown)[] = [
      () => null,
      () => 0,
      () => false,
      () => ({ kind: 'allow' }),
      () => {
        throw undefined
      },
      () => {
        throw new Error('guard bug')
      },
    ]
    for (const guard of guards) {
      const { ctx, body, finalize } = setup()
      ctx.tools.guard(guard as never)
      expect(errorCode(await ctx.tools.execute(call('t')))).toBe('DENIED')
      expect(body).not.toHaveBeenCalled()
      expect(finalize).toHaveBeenCalledTimes(1)
    }
  })

  it('an async guard (a Promise is not a reason) denies, and its rejection is never unhandled', async () => {
    for (const guard of [async () => undefined, async () => 'no', async () => Promise.reject(new Error('async guard bug'))]) {
      const { ctx, body } = setup()
      ctx.tools.guard(guard as never)
      expect(errorCode(await ctx.tools.execute(call('t')))).toBe('DENIED')
      expect(body).not.toHaveBeenCalled()
    }
  })

  it('a guard denial stands whatever the pre-execute listeners say, and a later guard cannot allow it back', async () => {
    const { ctx, body } = setup()
    ctx.tools.guard(() => 'first')
    ctx.tools.guard(() => undefined)
    ctx.on('tools/pre-execute', async () => ({ kind: 'allow' }))
    const result = await ctx.tools.execute(call('t'))
    expect(result.isError && result.error.message).toContain('first')
    expect(body).not.toHaveBeenCalled()
  })

  it('a guard sees frozen arguments it cannot rewrite', async () => {
    const { ctx, body } = setup()
    ctx.tools.guard((exec) => {
      ;(exec.arguments as { x: number }).x = 2
      return undefined
    })
    const result = await ctx.tools.execute(call('t', { x: 1 }))
    expect(errorCode(result)).toBe('DENIED')
    expect(body).not.toHaveBeenCalled()
  })
})

describe('arguments are frozen for every hook', () => {
  it('no hook can rewrite the arguments the body, the log and the observers see', async () => {
    const attempts: string[] = []
    const tryWrite = (where: string, exec: { arguments: unknown }): void => {
      try {
        ;(exec.arguments as { x: number }).x = 99
        attempts.push(`${where}: wrote`)
      } catch {
        // expected
      }
      try {
        ;(exec as { arguments: unknown }).arguments = { x: 99 }
        attempts.push(`${where}: replaced`)
      } catch {
        // expected
      }
      try {
        Object.defineProperty(exec, 'arguments', { value: { x: 99 } })
        attempts.push(`${where}: redefined`)
      } catch {
        // expected
      }
    }
    const seen: unknown[] = []
    const ctx = createContext({ onListenerError: () => {} })
    ctx.tools.register(
      rawTool('t', {
        execute: async (args, exec) => {
          tryWrite('body', exec)
          seen.push(args, exec.arguments)
          return args
        },
        finalizeContent: (exec) => {
          tryWrite('finalize', exec as { arguments: unknown })
          seen.push(exec.arguments)
          return undefined
        },
      }),
    )
    ctx.on('tools/pre-execute', async (exec, next) => {
      tryWrite('pre', exec)
      return next()
    })
    ctx.tools.guard((exec) => {
      tryWrite('guard', exec as { arguments: unknown })
      return undefined
    })
    ctx.on('tools/execute', async (exec, next) => {
      tryWrite('wrapper', exec)
      return next()
    })
    ctx.on('tools/post-execute', async (exec, _result, next) => {
      tryWrite('post', exec)
      return next()
    })
    ctx.on('tools/result', (exec) => {
      tryWrite('result', exec as { arguments: unknown })
      seen.push(exec.arguments)
    })
    const result = await ctx.tools.execute(call('t', { x: 1 }))
    expect(attempts).toEqual([])
    expect(result).toMatchObject({ isError: false, value: { x: 1 } })
    for (const args of seen) expect(args).toEqual({ x: 1 })
  })

  it('a pre-execute decision carrying new arguments does not change them', async () => {
    const { ctx, body } = setup()
    ctx.on('tools/pre-execute', async () => ({ kind: 'allow', arguments: { x: 2 } }) as never)
    const result = await ctx.tools.execute(call('t', { x: 1 }))
    expect(body).toHaveBeenCalledTimes(1)
    expect(body.mock.calls[0]?.[0]).toEqual({ x: 1 })
    expect(result).toMatchObject({ value: { x: 1 } })
  })
})

describe('execute wrappers never abandon the body', () => {
  it('a wrapper that short-circuits after calling next() still waits for the body', async () => {
    const gate = deferred()
    let settled = false
    const { ctx, finalize } = setup({
      execute: async () => {
        await gate.promise
        settled = true
        return 1
      },
    })
    ctx.on('tools/execute', (_exec, next) => {
      void next()
      return { isError: true, error: { message: 'short' }, content: [{ type: 'text', text: 'short' }] }
    })
    const pending = ctx.tools.execute(call('t'))
    let resolved = false
    void pending.then(() => (resolved = true))
    await tick(5)
    expect(resolved).toBe(false)
    gate.resolve()
    await pending
    expect(settled).toBe(true)
    expect(finalize).toHaveBeenCalledTimes(1)
  })

  it('an outer wrapper that does not await next() cannot make an inner async wrapper start the body after execute() resolved', async () => {
    const started: string[] = []
    const { ctx, finalize } = setup({
      execute: async () => {
        started.push('body')
        return 1
      },
    })
    ctx.on('tools/result', () => void started.push('result'))
    ctx.on('tools/execute', (_exec, next) => {
      void next()
      return { isError: true, error: { message: 'short' }, content: [{ type: 'text', text: 'short' }] }
    })
    ctx.on('tools/execute', async (_exec, next) => {
      await tick(5)
      return next()
    })
    await ctx.tools.execute(call('t'))
    started.push('resolved')
    await tick(20)
    // Either the body never runs, or it runs and settles before the result is final.
    expect(started.indexOf('body') === -1 || started.indexOf('body') < started.indexOf('result')).toBe(true)
    expect(finalize).toHaveBeenCalledTimes(1)
  })

  it('a wrapper that calls next() without awaiting and then throws: body drained, LISTENER_FAILED', async () => {
    const gate = deferred()
    let settled = false
    const { ctx, finalize } = setup({
      execute: async () => {
        await gate.promise
        settled = true
        return 1
      },
    })
    ctx.on('tools/execute', (_exec, next) => {
      void next()
      throw undefined
    })
    const pending = ctx.tools.execute(call('t'))
    await tick(5)
    gate.resolve()
    const result = await pending
    expect(settled).toBe(true)
    expect(errorCode(result)).toBe('LISTENER_FAILED')
    expect(finalize).toHaveBeenCalledTimes(1)
  })

  it('a next() kept and called after the wrapper settled never starts the body late', async () => {
    const { ctx, body, finalize } = setup()
    let late: Promise<unknown> | undefined
    ctx.on('tools/execute', (_exec, next) => {
      setTimeout(() => {
        late = next()
      }, 5)
      return { isError: true, error: { message: 'no body' }, content: [{ type: 'text', text: 'no body' }] }
    })
    const result = await ctx.tools.execute(call('t'))
    await tick(20)
    expect(result.isError).toBe(true)
    expect(body).not.toHaveBeenCalled()
    expect(finalize).toHaveBeenCalledTimes(1)
    await expect(late).rejects.toThrow(/after the chain settled/)
  })

  it('a pre-execute next() called after the chain settled runs no inner listener', async () => {
    const { ctx } = setup()
    const inner = vi.fn(async () => ({ kind: 'allow' as const }))
    ctx.on('tools/pre-execute', (_exec, next) => {
      setTimeout(() => void next(), 5)
      return { kind: 'allow' }
    })
    ctx.on('tools/pre-execute', inner)
    expect((await ctx.tools.execute(call('t'))).isError).toBe(false)
    await tick(20)
    expect(inner).not.toHaveBeenCalled()
  })

  it('a wrapper calling next() again while the first is in flight runs the body once and fails closed', async () => {
    const { ctx, body } = setup()
    ctx.on('tools/execute', async (_exec, next) => {
      const first = next()
      try {
        await next()
      } catch {
        // swallowed
      }
      return first
    })
    const result = await ctx.tools.execute(call('t'))
    expect(body).toHaveBeenCalledTimes(1)
    expect(errorCode(result)).toBe('LISTENER_FAILED')
  })

  it('a wrapper returning a non-result, a non-promise or nothing fails closed', async () => {
    for (const wrapper of [() => undefined, () => 5, () => ({ isError: false }), () => ({ isError: true, error: {} })]) {
      const { ctx, body, finalize } = setup()
      ctx.on('tools/execute', wrapper as never)
      const result = await ctx.tools.execute(call('t'))
      expect(result.isError).toBe(true)
      expect(body).not.toHaveBeenCalled()
      expect(finalize).toHaveBeenCalledTimes(1)
      expect('value' in result).toBe(false)
    }
  })

  it('a wrapper-made failure carrying a value never leaks the value', async () => {
    const { ctx } = setup()
    ctx.on('tools/execute', async () => ({ isError: true, error: { message: 'no' }, value: 7, concludesTurn: true, content: [] }) as never)
    const result = await ctx.tools.execute(call('t'))
    expect(result.isError).toBe(true)
    expect('value' in result).toBe(false)
    expect('concludesTurn' in result).toBe(false)
  })

  it('a wrapper-made success carrying an error never leaks the error', async () => {
    const { ctx } = setup()
    ctx.on('tools/execute', async () => ({ isError: false, value: 1, error: { message: 'x' }, content: [{ type: 'text', text: '1' }] }) as never)
    const result = await ctx.tools.execute(call('t'))
    expect(result.isError).toBe(false)
    expect('error' in result).toBe(false)
  })

  it('execute() does not resolve before the body settles when the caller aborts mid-body', async () => {
    const gate = deferred()
    let settled = false
    const controller = new AbortController()
    const { ctx } = setup({
      execute: async () => {
        controller.abort()
        await gate.promise
        settled = true
        return 1
      },
    })
    installTimeoutPolicy(ctx)
    ctx.on('tools/execute', async (_exec, next) => next())
    const pending = ctx.tools.execute(call('t', {}, { signal: controller.signal }))
    let resolved = false
    void pending.then(() => (resolved = true))
    await tick(5)
    expect(resolved).toBe(false)
    gate.resolve()
    const result = await pending
    expect(settled).toBe(true)
    expect(errorCode(result)).toBe('ABORTED')
  })

  it('a wrapper cannot remove the signal or swap it for a non-signal', async () => {
    const { ctx, body } = setup()
    ctx.on('tools/execute', async (exec, next) => {
      ;(exec as { signal: unknown }).signal = undefined
      return next()
    })
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('LISTENER_FAILED')
    expect(body).not.toHaveBeenCalled()
  })

  it('a wrapper replacing the signal cannot detach the caller signal from the body', async () => {
    const controller = new AbortController()
    let bodySignal: AbortSignal | undefined
    const { ctx } = setup({
      execute: async (_args: unknown, exec: ToolRunContext) => {
        bodySignal = exec.signal
        controller.abort()
        return 1
      },
    })
    ctx.on('tools/execute', async (exec, next) => {
      exec.signal = new AbortController().signal
      return next()
    })
    const result = await ctx.tools.execute(call('t', {}, { signal: controller.signal }))
    expect(bodySignal?.aborted).toBe(true)
    expect(errorCode(result)).toBe('ABORTED')
  })
})

describe('post-execute', () => {
  it('an outer listener that does not await next() cannot lose an inner async block', async () => {
    const { ctx } = setup()
    ctx.on('tools/post-execute', (_exec, _result, next) => {
      void next()
      return { kind: 'accept' }
    })
    ctx.on('tools/post-execute', async () => {
      await tick(5)
      return { kind: 'block', feedback: [{ type: 'text', text: 'blocked late' }] }
    })
    const result = await ctx.tools.execute(call('t'))
    expect(result.isError).toBe(true)
  })

  it('rejects content and value together, even when the value is null', async () => {
    const { ctx } = setup()
    ctx.on('tools/post-execute', async () => ({ kind: 'accept', content: [{ type: 'text', text: 'x' }], value: null }) as never)
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('LISTENER_FAILED')
  })

  it('a null replacement value is re-validated and re-rendered', async () => {
    const ok = setup({ outputSchema: { type: 'null' } as never, execute: async () => null })
    ok.ctx.on('tools/post-execute', async () => ({ kind: 'accept', value: null }))
    expect(await ok.ctx.tools.execute(call('t'))).toMatchObject({ isError: false, value: null, content: [{ type: 'text', text: 'null' }] })
    const bad = setup({ outputSchema: { type: 'object' } as never, execute: async () => ({}) })
    bad.ctx.on('tools/post-execute', async () => ({ kind: 'accept', value: null }))
    expect(errorCode(await bad.ctx.tools.execute(call('t')))).toBe('INVALID_TOOL_OUTPUT')
  })

  it('a replaced value recomputes meta; replaced content keeps value and meta', async () => {
    const tool = (ctx: Context): void =>
      void ctx.tools.register({
        ...rawTool('m', { execute: async () => 1 }),
        output: {
          schema: { type: 'integer' },
          render: (_args, value) => [{ type: 'text', text: `v=${String(value)}` }],
          presentationMeta: (_args, value) => ({ doubled: (value as number) * 2 }),
        },
      })
    const a = createContext()
    tool(a)
    a.on('tools/post-execute', async () => ({ kind: 'accept', value: 5 }))
    expect(await a.tools.execute(call('m'))).toMatchObject({ value: 5, content: [{ type: 'text', text: 'v=5' }], meta: { doubled: 10 } })
    const b = createContext()
    tool(b)
    b.on('tools/post-execute', async () => ({ kind: 'accept', content: [{ type: 'text', text: 'shown' }] }))
    expect(await b.tools.execute(call('m'))).toMatchObject({ value: 1, content: [{ type: 'text', text: 'shown' }], meta: { doubled: 2 } })
  })

  it('a block removes the value and never concludes the turn', async () => {
    const { ctx } = setup({
      execute: async (_args: unknown, exec: ToolRunContext) => {
        exec.concludeTurn()
        return 1
      },
    })
    ctx.on('tools/post-execute', async () => ({ kind: 'block', feedback: [{ type: 'text', text: 'stop' }] }))
    const result = await ctx.tools.execute(call('t'))
    expect(result.isError).toBe(true)
    expect('value' in result).toBe(false)
    expect('concludesTurn' in result).toBe(false)
    expect(result.content).toEqual([{ type: 'text', text: 'stop' }])
  })

  it('throwing undefined or returning a non-decision fails closed without a value', async () => {
    for (const listener of [
      () => {
        throw undefined
      },
      () => undefined,
      () => ({ kind: 'nope' }),
      () => ({ kind: 'block', feedback: 'not content' }),
    ]) {
      const { ctx, finalize } = setup()
      ctx.on('tools/post-execute', listener as never)
      const result = await ctx.tools.execute(call('t'))
      expect(errorCode(result)).toBe('LISTENER_FAILED')
      expect('value' in result).toBe(false)
      expect(finalize).toHaveBeenCalledTimes(1)
    }
  })
})

describe('finalizeContent runs exactly once for every outcome, and its replacement applies', () => {
  const replaced = [{ type: 'text' as const, text: 'FINAL' }]
  const cases: [string, (ctx: Context, controller: AbortController) => void, Parameters<typeof rawTool>[1]][] = [
    ['success', () => {}, {}],
    [
      'body throw',
      () => {},
      {
        execute: async () => {
          throw undefined
        },
      },
    ],
    ['pre-execute deny', (ctx) => void ctx.on('tools/pre-execute', async () => ({ kind: 'deny', reason: 'r' })), {}],
    ['ask without service', (ctx) => void ctx.on('tools/pre-execute', async () => ({ kind: 'ask' })), {}],
    ['guard deny', (ctx) => void ctx.tools.guard(() => 'no'), {}],
    [
      'pre-execute listener failure',
      (ctx) =>
        void ctx.on('tools/pre-execute', () => {
          throw undefined
        }),
      {},
    ],
    [
      'wrapper failure',
      (ctx) =>
        void ctx.on('tools/execute', () => {
          throw new Error('w')
        }),
      {},
    ],
    ['post-execute block', (ctx) => void ctx.on('tools/post-execute', async () => ({ kind: 'block', feedback: [{ type: 'text', text: 'b' }] })), {}],
    [
      'post-execute failure',
      (ctx) =>
        void ctx.on('tools/post-execute', async () => {
          throw new Error('p')
        }),
      {},
    ],
    ['cancellation before dispatch', (_ctx, controller) => controller.abort(), {}],
    [
      'cancellation during the body',
      () => {},
      {
        execute: async (_args: unknown, exec: ToolRunContext) => {
          ;(exec as unknown as { abort: () => void }).abort?.()
          return 1
        },
      },
    ],
    ['invalid output', () => {}, { outputSchema: { type: 'string' } as never, execute: async () => 1 }],
    [
      'render failure',
      () => {},
      {
        output: {
          schema: {},
          render: () => {
            throw new Error('render')
          },
        },
      },
    ],
  ]
  for (const [label, arrange, overrides] of cases) {
    it(label, async () => {
      const controller = new AbortController()
      const finalize = vi.fn(() => replaced)
      const ctx = createContext({ onListenerError: () => {} })
      const tool = rawTool('t', { finalizeContent: finalize, ...overrides })
      if (label === 'cancellation during the body') {
        tool.execute = async () => {
          controller.abort()
          return 1
        }
      }
      ctx.tools.register(tool)
      arrange(ctx, controller)
      const seen: ToolExecutionResult[] = []
      ctx.on('tools/result', (_exec, result) => void seen.push(result))
      const result = await ctx.tools.execute(call('t', {}, { signal: controller.signal }))
      expect(finalize).toHaveBeenCalledTimes(1)
      expect(result.content).toEqual(replaced)
      expect(seen).toHaveLength(1)
      expect(seen[0]).toBe(result)
      expect(isDeepFrozen(result)).toBe(true)
      if (label === 'cancellation before dispatch') expect(errorCode(result)).toBe('ABORTED_BEFORE_DISPATCH')
      if (label === 'cancellation during the body') expect(errorCode(result)).toBe('ABORTED')
      if (label !== 'success') expect('value' in result).toBe(false)
    })
  }

  it('ask denied by the approval service', async () => {
    const finalize = vi.fn(() => replaced)
    const ctx = createContext({ approval: { request: async () => 'denied' } })
    ctx.tools.register(rawTool('t', { finalizeContent: finalize }))
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask' }))
    const agent = ctx.agent('a')
    const result = await agent.ctx.tools.execute(call('t'))
    expect(errorCode(result)).toBe('DENIED')
    expect(finalize).toHaveBeenCalledTimes(1)
    expect(result.content).toEqual(replaced)
  })

  it('invalid (non-JSON) arguments', async () => {
    const finalize = vi.fn(() => replaced)
    const ctx = createContext()
    ctx.tools.register(rawTool('t', { finalizeContent: finalize }))
    const result = await ctx.tools.execute(call('t', { n: Number.NaN }))
    expect(errorCode(result)).toBe('INVALID_ARGS')
    expect(finalize).toHaveBeenCalledTimes(1)
    expect(result.content).toEqual(replaced)
  })

  it('sees the frozen execution and the complete normalized result, keeping isError, error and value', async () => {
    let seenExec: Readonly<ToolExecution> | undefined
    let seenResult: Readonly<ToolExecutionResult> | undefined
    const ctx = createContext()
    ctx.tools.register(
      rawTool('t', {
        execute: async () => ({ big: 'x'.repeat(10) }),
        finalizeContent: (exec, result) => {
          seenExec = exec
          seenResult = result
          return [{ type: 'text', text: 'short' }]
        },
      }),
    )
    const result = await ctx.tools.execute(call('t', { a: 1 }))
    expect(Object.isFrozen(seenExec)).toBe(true)
    expect(isDeepFrozen(seenResult)).toBe(true)
    expect(result).toMatchObject({ isError: false, value: { big: 'x'.repeat(10) }, content: [{ type: 'text', text: 'short' }] })
  })

  it('an async finalizeContent (not allowed) fails closed without an unhandled rejection', async () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('t', {
        finalizeContent: (async () => {
          throw new Error('async finalize')
        }) as never,
      }),
    )
    const result = await ctx.tools.execute(call('t'))
    expect(result.isError).toBe(true)
  })
})

describe('callbacks that wrongly return promises never cause unhandled rejections', () => {
  it('an async render or presentationMeta fails closed', async () => {
    const ctx = createContext()
    ctx.tools.register({
      ...rawTool('r'),
      output: {
        schema: {},
        render: (async () => {
          throw new Error('async render')
        }) as never,
      },
    })
    ctx.tools.register({
      ...rawTool('m'),
      output: {
        schema: {},
        render: () => [{ type: 'text', text: 'ok' }],
        presentationMeta: (async () => {
          throw new Error('async meta')
        }) as never,
      },
    })
    expect((await ctx.tools.execute(call('r'))).isError).toBe(true)
    expect((await ctx.tools.execute(call('m'))).isError).toBe(true)
  })

  it('an async isConcurrencySafe is exclusive', () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('p', {
        isConcurrencySafe: (async () => {
          throw new Error('async classifier')
        }) as never,
      }),
    )
    expect(ctx.tools.executionMode(call('p'))).toEqual({ kind: 'exclusive' })
  })
})

describe('results', () => {
  it('are deep-frozen, identical to what every tools/result observer saw, with the shape of the union', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('ok', { execute: async () => ({ deep: [{ x: 1 }] }) }))
    ctx.tools.register(
      rawTool('bad', {
        execute: async (_args, exec) => {
          exec.concludeTurn()
          throw new Error('boom')
        },
      }),
    )
    const agent = ctx.agent('a')
    const seen: ToolExecutionResult[] = []
    ctx.on('tools/result', (_exec, result) => void seen.push(result))
    agent.ctx.on('tools/result', (_exec, result) => void seen.push(result))
    const ok = await agent.ctx.tools.execute(call('ok'))
    const bad = await agent.ctx.tools.execute(call('bad'))
    expect(seen).toEqual([ok, ok, bad, bad])
    expect(seen[0]).toBe(ok)
    expect(seen[1]).toBe(ok)
    expect(seen[2]).toBe(bad)
    expect(isDeepFrozen(ok)).toBe(true)
    expect(isDeepFrozen(bad)).toBe(true)
    expect('error' in ok).toBe(false)
    expect('value' in bad).toBe(false)
    expect('concludesTurn' in bad).toBe(false)
  })

  it('UNKNOWN_TOOL lists only the names the caller can see', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('shared'))
    ctx.tools.register(rawTool('secret'))
    const a = ctx.agent('a')
    a.ctx.tools.register(rawTool('mine'))
    a.ctx.tools.restrict({ deny: ['secret'] })
    ctx.agent('b').ctx.tools.register(rawTool('theirs'))
    const result = await a.ctx.tools.execute(call('nope'))
    expect(errorCode(result)).toBe('UNKNOWN_TOOL')
    const message = result.isError ? result.error.message : ''
    expect(message).toContain('shared')
    expect(message).toContain('mine')
    expect(message).not.toContain('secret')
    expect(message).not.toContain('theirs')
    expect(errorCode(await a.ctx.tools.execute(call('secret')))).toBe('UNKNOWN_TOOL')
  })
})

describe('ask approval', () => {
  const answers: [string, ConstructorParameters<typeof Object>[0]][] = [
    ['denied', async () => 'denied'],
    ['allowed-always', async () => 'allowed-always'],
    ['ALLOWED-ONCE', async () => 'ALLOWED-ONCE'],
    ['allowed-once with spaces', async () => ' allowed-once'],
    ['an object', async () => ({ answer: 'allowed-once' })],
    ['undefined', async () => undefined],
    ['a throw', async () => Promise.reject(new Error('service down'))],
    [
      'a sync throw',
      () => {
        throw undefined
      },
    ],
  ]
  for (const [label, request] of answers) {
    it(`denies when the service answers ${label}`, async () => {
      const ctx = createContext({ approval: { request: request as never } })
      const body = vi.fn(async () => 1)
      ctx.tools.register(rawTool('t', { execute: body }))
      ctx.on('tools/pre-execute', async () => ({ kind: 'ask', reason: 'why' }))
      const result = await ctx.agent('a').ctx.tools.execute(call('t'))
      expect(errorCode(result)).toBe('DENIED')
      expect(body).not.toHaveBeenCalled()
    })
  }

  it('runs only for exactly allowed-once, and passes the reason, agent and signal', async () => {
    const request = vi.fn(async () => 'allowed-once')
    const ctx = createContext({ approval: { request } })
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body }))
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask', reason: 'why' }))
    const agent = ctx.agent('a')
    const input = call('t')
    expect((await agent.ctx.tools.execute(input)).isError).toBe(false)
    expect(body).toHaveBeenCalledTimes(1)
    expect(request).toHaveBeenCalledWith(expect.objectContaining({ agent, reason: 'why', signal: input.signal }))
  })

  it('denies without an agent even with a service that would allow', async () => {
    const request = vi.fn(async () => 'allowed-once')
    const ctx = createContext({ approval: { request } })
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body }))
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask' }))
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('DENIED')
    expect(request).not.toHaveBeenCalled()
    expect(body).not.toHaveBeenCalled()
  })

  it('reports ABORTED_BEFORE_DISPATCH when the caller aborts while a human decides', async () => {
    const controller = new AbortController()
    const ctx = createContext({
      approval: {
        request: async () => {
          controller.abort()
          return 'allowed-once'
        },
      },
    })
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body }))
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask' }))
    const result = await ctx.agent('a').ctx.tools.execute(call('t', {}, { signal: controller.signal }))
    expect(errorCode(result)).toBe('ABORTED_BEFORE_DISPATCH')
    expect(body).not.toHaveBeenCalled()
  })
})

describe('scope filtering', () => {
  it('an agent listener never sees another agent call in any waterfall or emit', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const preset = ctx.scope('p')
    const a = preset.agent('a')
    const b = preset.agent('b')
    const seen: string[] = []
    const record = (who: string) => (exec: { agent?: { id: string } }) => void seen.push(`${who}<-${exec.agent?.id ?? '-'}`)
    for (const [who, scope] of [
      ['a', a.ctx],
      ['p', preset],
    ] as const) {
      scope.on('tools/pre-execute', async (exec, next) => {
        record(`${who}:pre`)(exec)
        return next()
      })
      scope.on('tools/execute', async (exec, next) => {
        record(`${who}:exec`)(exec)
        return next()
      })
      scope.on('tools/post-execute', async (exec, _r, next) => {
        record(`${who}:post`)(exec)
        return next()
      })
      scope.on('tools/result', (exec) => record(`${who}:result`)(exec))
    }
    await b.ctx.tools.execute(call('t'))
    await ctx.tools.execute(call('t', {}, { agent: b }))
    await ctx.tools.execute(call('t'))
    expect(seen.filter((entry) => entry.startsWith('a:'))).toEqual([])
    expect(seen.filter((entry) => entry.startsWith('p:'))).toEqual([
      'p:pre<-b',
      'p:exec<-b',
      'p:post<-b',
      'p:result<-b',
      'p:pre<-b',
      'p:exec<-b',
      'p:post<-b',
      'p:result<-b',
    ])
  })

  it('an agent-scoped guard does not deny another agent', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const a = ctx.agent('a')
    const b = ctx.agent('b')
    a.ctx.tools.guard(() => 'a only')
    expect((await b.ctx.tools.execute(call('t'))).isError).toBe(false)
    expect((await ctx.tools.execute(call('t'))).isError).toBe(false)
    expect(errorCode(await a.ctx.tools.execute(call('t')))).toBe('DENIED')
  })

  it('an agent cannot execute on behalf of an agent its context does not cover', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const a = ctx.agent('a')
    const b = ctx.agent('b')
    await expect(a.ctx.tools.execute(call('t', {}, { agent: b }))).rejects.toThrow()
  })

  it('tools/change reaches agent and preset listeners for restrictions, presentations and disposals anywhere', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('g'))
    const a = ctx.agent('a')
    const changes = vi.fn()
    a.ctx.on('tools/change', changes)
    const b = ctx.scope('p').agent('b')
    const unregister = b.ctx.tools.register(rawTool('own'))
    const lift = b.ctx.tools.restrict({ deny: ['g'] })
    lift()
    unregister()
    expect(changes).toHaveBeenCalledTimes(4)
  })
})

describe('disposers', () => {
  it('disposing one of two identical listeners removes only that one, and disposers are idempotent', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const listener = vi.fn()
    const first = ctx.on('tools/result', listener)
    ctx.on('tools/result', listener)
    first()
    first()
    await ctx.tools.execute(call('t'))
    expect(listener).toHaveBeenCalledTimes(1)
  })

  it('the same holds for identical guards', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const guard = vi.fn(() => undefined)
    const first = ctx.tools.guard(guard)
    ctx.tools.guard(guard)
    first()
    first()
    await ctx.tools.execute(call('t'))
    expect(guard).toHaveBeenCalledTimes(1)
  })

  it('a stale register disposer does not remove a newer registration of the same name', async () => {
    const ctx = createContext()
    const first = ctx.tools.register(rawTool('t', { execute: async () => 'one' }))
    first()
    ctx.tools.register(rawTool('t', { execute: async () => 'two' }))
    first()
    expect(await ctx.tools.execute(call('t'))).toMatchObject({ value: 'two' })
  })

  it('a stale restrict or presentAs disposer does not lift a newer one', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('g'))
    const a = ctx.agent('a')
    const lift = a.ctx.tools.restrict({ deny: ['g'] })
    lift()
    a.ctx.tools.restrict({ deny: ['g'] })
    lift()
    expect(a.ctx.tools.get('g', a)).toBeUndefined()
  })

  it('dispose undoes in reverse order, including child scopes, and is idempotent', () => {
    const ctx = createContext()
    const order: string[] = []
    ctx.tools.register(rawTool('g'))
    ctx.on('tools/change', () => void order.push(`change:${ctx.tools.list().map((tool) => tool.name).join(',')}`))
    const preset = ctx.scope('p')
    preset.tools.register(rawTool('p1'))
    ctx.tools.register(rawTool('g2'))
    order.length = 0
    ctx.dispose()
    ctx.dispose()
    // newest first: g2, then the preset (p1), then g, then the listener itself
    expect(order).toEqual(['change:g', 'change:g'])
    expect(preset.disposed).toBe(true)
  })

  it('use after dispose throws for every registering call and for execute', async () => {
    const ctx = createContext()
    const a = ctx.agent('a')
    ctx.tools.register(rawTool('t'))
    ctx.dispose()
    expect(() => ctx.tools.register(rawTool('u'))).toThrow(/dispose/)
    expect(() => ctx.on('tools/result', () => {})).toThrow(/dispose/)
    expect(() => ctx.tools.guard(() => undefined)).toThrow(/dispose/)
    expect(() => ctx.scope('x')).toThrow(/dispose/)
    expect(() => ctx.agent('x')).toThrow(/dispose/)
    expect(() => a.ctx.tools.restrict({ deny: ['t'] })).toThrow(/dispose/)
    expect(() => a.ctx.tools.presentAs('native')).toThrow(/dispose/)
    await expect(ctx.tools.execute(call('t'))).rejects.toThrow(/dispose/)
    await expect(a.ctx.tools.execute(call('t'))).rejects.toThrow(/dispose/)
    expect(() => ctx.tools.executionMode(call('t'))).toThrow(/dispose/)
  })
})

describe('restrictions', () => {
  it('allow hides later globals; deny-only lets them through; restrictions intersect', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('a'))
    ctx.tools.register(rawTool('b'))
    const allowAgent = ctx.agent('allow')
    const denyAgent = ctx.agent('deny')
    const both = ctx.agent('both')
    allowAgent.ctx.tools.restrict({ allow: ['a'] })
    denyAgent.ctx.tools.restrict({ deny: ['a'] })
    both.ctx.tools.restrict({ allow: ['a', 'b'] })
    both.ctx.tools.restrict({ deny: ['b'] })
    ctx.tools.register(rawTool('later'))
    const names = (agent: typeof allowAgent): string[] => ctx.tools.schemas(agent).map((schema) => schema.name)
    expect(names(allowAgent)).toEqual(['a'])
    expect(names(denyAgent)).toEqual(['b', 'later'])
    expect(names(both)).toEqual(['a'])
  })

  it('a preset restriction applies to its agents but never hides an agent own or the preset own tools', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('g'))
    const preset = ctx.scope('p')
    preset.tools.register(rawTool('pOwn'))
    preset.tools.restrict({ allow: ['g'] })
    const agent = preset.agent('a')
    agent.ctx.tools.register(rawTool('aOwn'))
    agent.ctx.tools.restrict({ deny: ['g'] })
    ctx.tools.register(rawTool('later'))
    expect(ctx.tools.schemas(agent).map((schema) => schema.name).sort()).toEqual(['aOwn', 'pOwn'])
    expect(ctx.tools.schemas(preset).map((schema) => schema.name).sort()).toEqual(['g', 'pOwn'])
  })

  it('rejects empty, unknown, scope-local, reserved and root restrictions', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('g'))
    const a = ctx.agent('a')
    a.ctx.tools.register(rawTool('own'))
    for (const filter of [{}, { allow: [] }, { deny: [] }, { allow: [], deny: [] }, { deny: ['nope'] }, { allow: ['own'] }, { deny: ['run_code'] }, { deny: 'g' }]) {
      expect(() => a.ctx.tools.restrict(filter as never)).toThrow()
    }
    expect(() => ctx.tools.restrict({ deny: ['g'] })).toThrow()
    expect(ctx.tools.get('g', a)).toBeDefined()
  })
})

describe('executionMode fails closed', () => {
  it('is parallel only for an exact true', () => {
    const ctx = createContext()
    const results: [string, unknown][] = [
      ['yes', true],
      ['one', 1],
      ['str', 'true'],
      ['obj', {}],
      ['promise', Promise.resolve(true)],
    ]
    for (const [name, answer] of results) ctx.tools.register(rawTool(name, { isConcurrencySafe: () => answer as boolean }))
    ctx.tools.register(
      rawTool('throws', {
        isConcurrencySafe: () => {
          throw undefined
        },
      }),
    )
    ctx.tools.register(rawTool('plain'))
    expect(ctx.tools.executionMode(call('yes'))).toEqual({ kind: 'parallel' })
    for (const name of ['one', 'str', 'obj', 'promise', 'throws', 'plain', 'missing']) {
      expect(ctx.tools.executionMode(call(name))).toEqual({ kind: 'exclusive' })
    }
    expect(ctx.tools.executionMode(call('yes', { bad: undefined }))).toEqual({ kind: 'exclusive' })
    expect(ctx.tools.executionMode(null as never)).toEqual({ kind: 'exclusive' })
  })

  it('a hidden tool is exclusive for the restricted agent', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('p', { isConcurrencySafe: () => true }))
    const a = ctx.agent('a')
    a.ctx.tools.restrict({ deny: ['p'] })
    expect(ctx.tools.executionMode(call('p', {}, { agent: a }))).toEqual({ kind: 'exclusive' })
    expect(ctx.tools.executionMode(call('p'))).toEqual({ kind: 'parallel' })
  })
})

describe('presentAs and registration rules', () => {
  it('presentAs is scoped only, one per scope, and validates its mode', () => {
    const ctx = createContext()
    const a = ctx.agent('a')
    expect(() => ctx.tools.presentAs('native')).toThrow()
    expect(() => a.ctx.tools.presentAs('bogus' as never)).toThrow()
    expect(() => a.ctx.tools.presentAs('code')).toThrow(/transport/)
    const undo = a.ctx.tools.presentAs('native')
    expect(() => a.ctx.tools.presentAs('native')).toThrow()
    undo()
    undo()
    expect(() => a.ctx.tools.presentAs('native')).not.toThrow()
  })

  it('timeoutMs must be a positive finite number', () => {
    const ctx = createContext()
    for (const timeoutMs of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, '100', null]) {
      expect(() => ctx.tools.register(rawTool('t', { timeoutMs: timeoutMs as number }))).toThrow()
    }
    expect(() => ctx.tools.register(rawTool('t', { timeoutMs: 0.5 }))).not.toThrow()
  })

  it('schemas never leak callbacks or host-only fields', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t', { timeoutMs: 10, isConcurrencySafe: () => true, finalizeContent: () => undefined }))
    const [schema] = ctx.tools.schemas()
    expect(Object.keys(schema ?? {}).sort()).toEqual(['description', 'name', 'parameters'])
  })
})

describe('cancellation codes', () => {
  it('ABORTED_BEFORE_DISPATCH when a wrapper sees the abort before next(), ABORTED when it lands during the body', async () => {
    const controller = new AbortController()
    const { ctx, body } = setup()
    ctx.on('tools/execute', async (_exec, next) => {
      controller.abort()
      return next()
    })
    expect(errorCode(await ctx.tools.execute(call('t', {}, { signal: controller.signal })))).toBe('ABORTED_BEFORE_DISPATCH')
    expect(body).not.toHaveBeenCalled()
  })

  it('a cancellation during post-execute replaces a successful outcome with ABORTED', async () => {
    const controller = new AbortController()
    const { ctx } = setup()
    ctx.on('tools/post-execute', async (_exec, _result, next) => {
      controller.abort()
      return next()
    })
    expect(errorCode(await ctx.tools.execute(call('t', {}, { signal: controller.signal })))).toBe('ABORTED')
  })

  it('a wrapper that never calls next() and fabricates a success under cancellation is ABORTED_BEFORE_DISPATCH', async () => {
    const controller = new AbortController()
    const { ctx, body } = setup()
    ctx.on('tools/execute', async () => {
      controller.abort()
      return { isError: false, value: 1, content: [{ type: 'text', text: '1' }] }
    })
    expect(errorCode(await ctx.tools.execute(call('t', {}, { signal: controller.signal })))).toBe('ABORTED_BEFORE_DISPATCH')
    expect(body).not.toHaveBeenCalled()
  })
})

describe('session log', () => {
  it('never stores the canonical value, even from a spread result', async () => {
    const log = createMemorySessionLog()
    const result = { isError: false, value: { secret: 1 }, content: [{ type: 'text' as const, text: 'shown' }] }
    await log.append(toolResultEvent('c', 't', result))
    await expect(log.append({ ...toolResultEvent('c', 't', result), value: { secret: 1 } } as never)).rejects.toThrow()
    expect(JSON.stringify(log.events)).not.toContain('secret')
  })

  it('runToolCalls logs results without values, in call order, with exclusive barriers', async () => {
    const ctx = createContext()
    const events: string[] = []
    ctx.tools.register(
      rawTool('par', {
        isConcurrencySafe: () => true,
        execute: async (args) => {
          events.push(`start:${String((args as { i: number }).i)}`)
          await tick(5 - (args as { i: number }).i)
          events.push(`end:${String((args as { i: number }).i)}`)
          return { secret: (args as { i: number }).i }
        },
      }),
    )
    ctx.tools.register(
      rawTool('ex', {
        execute: async () => {
          events.push('ex')
          return { secret: 'x' }
        },
      }),
    )
    const agent = ctx.agent('a')
    const results = await runToolCalls(
      ctx.tools,
      [
        { callId: '1', name: 'par', arguments: { i: 1 } },
        { callId: '2', name: 'par', arguments: { i: 2 } },
        { callId: '3', name: 'ex', arguments: {} },
        { callId: '4', name: 'par', arguments: { i: 4 } },
      ],
      { agent, signal: new AbortController().signal },
    )
    expect(results.map((result) => (result.isError ? 'err' : JSON.stringify(result.value)))).toEqual([
      '{"secret":1}',
      '{"secret":2}',
      '{"secret":"x"}',
      '{"secret":4}',
    ])
    const exIndex = events.indexOf('ex')
    expect(events.indexOf('end:1')).toBeLessThan(exIndex)
    expect(events.indexOf('end:2')).toBeLessThan(exIndex)
    expect(events.indexOf('start:4')).toBeGreaterThan(exIndex)
    for (const event of agent.session.events) expect('value' in event).toBe(false)
    expect(JSON.stringify(agent.session.events)).toContain('secret')
  })

  it('runToolCalls settles every call before it rejects', async () => {
    const ctx = createContext()
    let settled = false
    ctx.tools.register(
      rawTool('slow', {
        isConcurrencySafe: () => true,
        execute: async () => {
          await tick(10)
          settled = true
          return 1
        },
      }),
    )
    ctx.tools.register(rawTool('fast', { isConcurrencySafe: () => true }))
    await expect(
      runToolCalls(
        ctx.tools,
        [
          { callId: 'a', name: 'slow', arguments: {} },
          { callId: '', name: 'fast', arguments: {} },
        ],
        { signal: new AbortController().signal },
      ),
    ).rejects.toThrow()
    expect(settled).toBe(true)
  })

  it('the scheduler survives a task that returns a plain value or throws synchronously', async () => {
    const scheduler = new CallScheduler(2)
    await expect(scheduler.run({ kind: 'exclusive' }, (() => 5) as never)).resolves.toBe(5)
    await expect(
      scheduler.run({ kind: 'exclusive' }, () => {
        throw new Error('sync')
      }),
    ).rejects.toThrow('sync')
    await expect(scheduler.run({ kind: 'parallel' }, async () => 6)).resolves.toBe(6)
  })
})

describe('post-execute sees a result it cannot mutate', () => {
  it('a wrapper-made or pipeline-made failure cannot be flipped into a success without a value', async () => {
    const arrange: ((ctx: Context) => void)[] = [
      (ctx) => void ctx.on('tools/execute', async () => ({ isError: true, error: { message: 'wrapped' }, content: [{ type: 'text', text: 'w' }] })),
      (ctx) =>
        void ctx.on('tools/execute', async () => {
          throw new Error('wrapper bug')
        }),
      () => {},
    ]
    for (const setupWrapper of arrange) {
      const ctx = createContext()
      ctx.tools.register(
        rawTool('t', {
          execute: async () => {
            throw new Error('body')
          },
        }),
      )
      setupWrapper(ctx)
      let frozen: boolean | undefined
      ctx.on('tools/post-execute', async (_exec, result, next) => {
        frozen = isDeepFrozen(result)
        try {
          ;(result as { isError: boolean }).isError = false
          ;(result.content as unknown[]).push({ type: 'text', text: 'sneaky' })
        } catch {
          // expected: frozen
        }
        return next()
      })
      const final = await ctx.tools.execute(call('t'))
      expect(frozen).toBe(true)
      expect(final.isError).toBe(true)
      expect(JSON.stringify(final.content)).not.toContain('sneaky')
    }
  })

  it('a wrapper-made success is re-checked and frozen before post-execute sees it', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t', { outputSchema: { type: 'integer' } as never, execute: async () => 1 }))
    ctx.on('tools/execute', async () => ({ isError: false, value: 2, content: [{ type: 'text', text: '2' }] }))
    let seen: Readonly<ToolExecutionResult> | undefined
    ctx.on('tools/post-execute', async (_exec, result, next) => {
      seen = result
      return next()
    })
    const final = await ctx.tools.execute(call('t'))
    expect(isDeepFrozen(seen)).toBe(true)
    expect(final).toMatchObject({ isError: false, value: 2 })
  })
})

describe('results stay appendable to the durable session log', () => {
  it('a wrapper error with extra fields or a malformed info does not break the turn log', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    ctx.on('tools/execute', async () => ({
      isError: true,
      error: { message: 'wrapped', stack: 'at host.js:1', info: { code: 'TOOL_FAILED', name: 'X', extra: 1 } },
      content: [{ type: 'text', text: 'w' }],
    }) as never)
    const agent = ctx.agent('a')
    const [result] = await runToolCalls(ctx.tools, [{ callId: 'c1', name: 't', arguments: {} }], {
      agent,
      signal: new AbortController().signal,
    })
    expect(result?.isError).toBe(true)
    expect(result?.isError && Object.keys(result.error).sort()).toEqual(['info', 'message'])
    expect(agent.session.events.map((event) => event.type)).toEqual(['tool/call', 'tool/result'])
    expect(JSON.stringify(agent.session.events)).not.toContain('host.js')
  })

  it('content blocks carrying extra fields do not break the turn log', async () => {
    const ctx = createContext()
    ctx.tools.register({
      ...rawTool('t'),
      output: { schema: {}, render: () => [{ type: 'text', text: 'x', cache: true } as never] },
    })
    const agent = ctx.agent('a')
    const results = await runToolCalls(ctx.tools, [{ callId: 'c1', name: 't', arguments: {} }], {
      agent,
      signal: new AbortController().signal,
    })
    expect(results).toHaveLength(1)
    expect(agent.session.events.map((event) => event.type)).toEqual(['tool/call', 'tool/result'])
  })
})

describe('identity', () => {
  it('the registry assigns the token; a caller-supplied token is ignored', async () => {
    const forged = Symbol('forged')
    let seen: symbol | undefined
    const ctx = createContext()
    ctx.tools.register(
      rawTool('t', {
        execute: async (_args, exec) => {
          seen = exec.token
          return 1
        },
      }),
    )
    await ctx.tools.execute({ ...call('t'), token: forged } as never)
    expect(typeof seen).toBe('symbol')
    expect(seen).not.toBe(forged)
  })

  it('finalizeContent is snapshotted when execution starts', async () => {
    const ctx = createContext()
    const original = vi.fn(() => [{ type: 'text' as const, text: 'original' }])
    const swapped = vi.fn(() => [{ type: 'text' as const, text: 'swapped' }])
    const definition = rawTool('t', { finalizeContent: original })
    definition.execute = async () => {
      ;(definition as { finalizeContent?: unknown }).finalizeContent = swapped
      return 1
    }
    ctx.tools.register(definition)
    const result = await ctx.tools.execute(call('t'))
    expect(result.content).toEqual([{ type: 'text', text: 'original' }])
    expect(swapped).not.toHaveBeenCalled()
  })

  it('schemas are deep clones: editing one changes nothing', () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const [first] = ctx.tools.schemas()
    ;(first?.parameters as { properties: Record<string, unknown> }).properties.injected = { type: 'string' }
    const [second] = ctx.tools.schemas()
    expect(second?.parameters).toEqual({ type: 'object', properties: {}, additionalProperties: true })
  })
})

describe('timeout policy', () => {
  it('reports TOOL_TIMEOUT only once the body settled, and restores the signal', async () => {
    const ctx = createContext()
    let settled = false
    ctx.tools.register(
      rawTool('slow', {
        timeoutMs: 5,
        execute: async (_args, exec) => {
          await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
          await tick(10)
          settled = true
          return 1
        },
      }),
    )
    const signals: AbortSignal[] = []
    ctx.on('tools/execute', async (exec, next) => {
      signals.push(exec.signal)
      const result = await next()
      signals.push(exec.signal)
      return result
    })
    installTimeoutPolicy(ctx)
    const input = call('slow')
    const result = await ctx.tools.execute(input)
    expect(settled).toBe(true)
    expect(errorCode(result)).toBe('TOOL_TIMEOUT')
    expect(signals).toEqual([input.signal, input.signal])
  })

  it('uses the timeoutMs of the definition that actually runs for a call through a preset context', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t', { timeoutMs: 10_000 }))
    const preset = ctx.scope('p')
    preset.tools.register(
      rawTool('t', {
        timeoutMs: 5,
        execute: async (_args, exec) => {
          await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
          return 1
        },
      }),
    )
    installTimeoutPolicy(ctx)
    const result = await Promise.race([preset.tools.execute(call('t')), tick(2_000).then(() => 'hung' as const)])
    expect(result === 'hung' ? 'hung' : errorCode(result)).toBe('TOOL_TIMEOUT')
  })
})

describe('Code Mode visibility (with a stub transport)', () => {
  function codeContext(mode: 'native' | 'code' = 'code') {
    let host: import('../../src/context.ts').CodeModeHost | undefined
    let lastToken: symbol | undefined
    const ctx = createContext({
      onListenerError: () => {},
      tools: {
        mode,
        codeMode: (h) => {
          host = h
          return {
            ...rawTool('run_code'),
            describe: (tools) => tools.map((tool) => tool.name).join(','),
            execute: async (args, exec) => {
              lastToken = exec.token
              const { name, agent } = args as { name: string; agent?: string }
              const sub = await h.execute({
                callId: `${exec.callId}:code:1`,
                rootCallId: exec.rootCallId,
                name,
                arguments: {},
                ...(agent === 'other' ? { agent: other } : exec.agent === undefined ? {} : { agent: exec.agent }),
                parent: exec.token,
                signal: exec.signal,
              })
              return sub.isError ? { error: sub.error.info?.code ?? 'none' } : { value: sub.value }
            },
          }
        },
      },
    })
    const other = ctx.agent('other')
    return { ctx, host: () => host, lastToken: () => lastToken }
  }

  it('a model-direct native call under code mode is UNKNOWN_TOOL before any policy runs', async () => {
    const { ctx } = codeContext()
    ctx.tools.register(rawTool('native'))
    const pre = vi.fn(async (_exec: ToolExecution, next: () => Promise<import('../../src/execution.ts').PreToolDecision>) => next())
    ctx.on('tools/pre-execute', pre)
    const agent = ctx.agent('a')
    const result = await agent.ctx.tools.execute(call('native'))
    expect(errorCode(result)).toBe('UNKNOWN_TOOL')
    expect(pre).not.toHaveBeenCalled()
    expect(ctx.tools.schemas(agent).map((schema) => schema.name)).toEqual(['run_code'])
  })

  it('a sub-call with the live parent token runs natively; a stale token or another agent does not', async () => {
    const { ctx, lastToken } = codeContext()
    ctx.tools.register(rawTool('native', { execute: async () => 'ran' }))
    const agent = ctx.agent('a')
    expect(await agent.ctx.tools.execute(call('run_code', { name: 'native' }))).toMatchObject({ value: { value: 'ran' } })
    expect(await agent.ctx.tools.execute(call('run_code', { name: 'run_code' }))).toMatchObject({ value: { error: 'UNKNOWN_TOOL' } })
    expect(await agent.ctx.tools.execute(call('run_code', { name: 'native', agent: 'other' }))).toMatchObject({ value: { error: 'DENIED' } })
    const stale = await agent.ctx.tools.execute(call('native', {}, { parent: lastToken() as never }))
    expect(errorCode(stale)).toBe('UNKNOWN_TOOL')
  })

  it('presentAs: nearest scope wins and its disposer restores', () => {
    const { ctx } = codeContext('native')
    ctx.tools.register(rawTool('native'))
    const preset = ctx.scope('p')
    const a = preset.agent('a')
    const undoPreset = preset.tools.presentAs('code')
    expect(ctx.tools.schemas(a).map((schema) => schema.name)).toEqual(['run_code'])
    const undoAgent = a.ctx.tools.presentAs('native')
    expect(ctx.tools.schemas(a).map((schema) => schema.name)).toEqual(['native'])
    undoAgent()
    expect(ctx.tools.schemas(a).map((schema) => schema.name)).toEqual(['run_code'])
    undoPreset()
    expect(ctx.tools.schemas(a).map((schema) => schema.name)).toEqual(['native'])
    expect(ctx.tools.get('run_code', a)).toBeUndefined()
  })

  it('tools/code-dispatch-log is scope-filtered and a failing listener falls back to the original content', async () => {
    const { ctx, host } = codeContext()
    const a = ctx.agent('a')
    const b = ctx.agent('b')
    const seenByB = vi.fn()
    b.ctx.on('tools/code-dispatch-log', async (_d, next) => {
      seenByB()
      return next()
    })
    a.ctx.on('tools/code-dispatch-log', async (_d, next) => {
      void next()
      throw undefined
    })
    const content = [{ type: 'text' as const, text: 'orig' }]
    const exec = { callId: 'x', rootCallId: 'x', name: 'run_code', arguments: {}, agent: a, signal: new AbortController().signal, token: Symbol('t') } as unknown as ToolExecution
    const logged = await host()?.codeDispatchLog({ exec, agent: a, subCallId: 'x:code:1', name: 'n', isError: false, content })
    expect(logged).toEqual(content)
    expect(seenByB).not.toHaveBeenCalled()
  })
})

describe('runToolCalls keeps every call on the one pipeline', () => {
  it('arguments text that is not lossless JSON still reaches finalizeContent and tools/result exactly once', async () => {
    const ctx = createContext()
    const finalize = vi.fn(() => [{ type: 'text' as const, text: 'FINAL' }])
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body, finalizeContent: finalize }))
    const observed: ToolExecutionResult[] = []
    ctx.on('tools/result', (_exec, result) => void observed.push(result))
    const agent = ctx.agent('a')
    const [result] = await runToolCalls(
      ctx.tools,
      [
        { callId: 'c1', name: 't', argumentsText: '{"n": 123456789012345678901234567890}' },
      ],
      { agent, signal: new AbortController().signal },
    )
    expect(result && errorCode(result)).toBe('INVALID_ARGS')
    expect(result?.isError && result.error.message).toContain('$.n')
    expect(body).not.toHaveBeenCalled()
    expect(finalize).toHaveBeenCalledTimes(1)
    expect(result?.content).toEqual([{ type: 'text', text: 'FINAL' }])
    expect(observed).toHaveLength(1)
    expect(observed[0]).toBe(result)
    expect(agent.session.events.map((event) => event.type)).toEqual(['tool/call', 'tool/result'])
  })

  it('unparseable arguments for an unknown tool report UNKNOWN_TOOL like execute() would', async () => {
    const ctx = createContext()
    const [result] = await runToolCalls(ctx.tools, [{ callId: 'c1', name: 'nope', argumentsText: '{' }], {
      signal: new AbortController().signal,
    })
    expect(result && errorCode(result)).toBe('UNKNOWN_TOOL')
  })
})

describe('structured error identity', () => {
  it('every UNKNOWN_TOOL is a ToolNotFoundError, including a sub-call naming a parent that is not running', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const results = [
      await ctx.tools.execute(call('missing')),
      await ctx.tools.execute(call('run_code')),
      await ctx.tools.execute(call('t', {}, { parent: Symbol('not running') as never })),
    ]
    for (const result of results) {
      expect(result.isError && result.error.info).toEqual({ code: 'UNKNOWN_TOOL', name: 'ToolNotFoundError' })
    }
  })

  it('every invalid produced value is a ToolOutputError (INVALID_TOOL_OUTPUT), including a value that is not JSON', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('schema', { outputSchema: { type: 'string' } as never, execute: async () => 1 }))
    ctx.tools.register(rawTool('nonjson', { execute: async () => new Date(0) }))
    ctx.tools.register(rawTool('replaced', { outputSchema: { type: 'integer' } as never, execute: async () => 1 }))
    ctx.on('tools/post-execute', async (exec, _result, next) => (exec.name === 'replaced' ? { kind: 'accept', value: 'x' } : next()))
    for (const name of ['schema', 'nonjson', 'replaced']) {
      const result = await ctx.tools.execute(call(name))
      expect(result.isError && result.error.info).toEqual({ code: 'INVALID_TOOL_OUTPUT', name: 'ToolOutputError' })
    }
  })

  it('invalid arguments are a ToolArgsError (INVALID_ARGS)', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const result = await ctx.tools.execute(call('t', { x: undefined }))
    expect(result.isError && result.error.info).toEqual({ code: 'INVALID_ARGS', name: 'ToolArgsError' })
  })
})

describe('decisions are captured when they are made', () => {
  it('an outer listener mutating an inner block decision in place cannot turn it into an accept', async () => {
    const { ctx } = setup()
    ctx.on('tools/post-execute', async (_exec, _result, next) => {
      const decision = (await next()) as { kind: string; feedback?: unknown }
      decision.kind = 'accept'
      delete decision.feedback
      return decision as never
    })
    ctx.on('tools/post-execute', async () => ({ kind: 'block', feedback: [{ type: 'text', text: 'blocked' }] }))
    const result = await ctx.tools.execute(call('t'))
    expect(result.isError).toBe(true)
    expect(result.content).toEqual([{ type: 'text', text: 'blocked' }])
  })

  it('an outer listener mutating an inner deny decision in place cannot turn it into an allow', async () => {
    const { ctx, body } = setup()
    ctx.on('tools/pre-execute', async (_exec, next) => {
      const decision = (await next()) as { kind: string }
      decision.kind = 'allow'
      return decision as never
    })
    ctx.on('tools/pre-execute', async () => ({ kind: 'deny', reason: 'no' }))
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('DENIED')
    expect(body).not.toHaveBeenCalled()
  })
})
