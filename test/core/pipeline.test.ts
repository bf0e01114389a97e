import { describe, expect, it, vi } from 'vitest'
import { createContext } from '../../src/context.ts'
import type { ToolExecution, ToolExecutionResult, ToolRunContext } from '../../src/execution.ts'
import type { ObjectJsonSchema } from '../../src/schema/types.ts'
import { defineTool } from '../../src/tool.ts'
import { call, deferred, isDeepFrozen, rawTool } from '../helpers.ts'

function errorCode(result: ToolExecutionResult): string | undefined {
  return result.isError ? result.error.info?.code : undefined
}

describe('identity and arguments', () => {
  it('returns a deep-frozen result that is the same object tools/result observers receive', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('echo'))
    const seen: ToolExecutionResult[] = []
    ctx.on('tools/result', (_exec, result) => void seen.push(result))
    const result = await ctx.tools.execute(call('echo', { a: [1, { b: 2 }] }))
    expect(result).toMatchObject({ isError: false, value: { a: [1, { b: 2 }] } })
    expect(isDeepFrozen(result)).toBe(true)
    expect(seen).toEqual([result])
    expect(seen[0]).toBe(result)
  })

  it('snapshots and freezes arguments so neither the caller nor the body can change them', async () => {
    const ctx = createContext()
    const original = { list: [1, 2] }
    let bodyArgs: unknown
    ctx.tools.register(
      rawTool('touch', {
        execute: async (args) => {
          bodyArgs = args
          original.list.push(3)
          expect(() => {
            ;(args as { list: number[] }).list.push(4)
          }).toThrow(TypeError)
          return args
        },
      }),
    )
    const result = await ctx.tools.execute(call('touch', original))
    expect(bodyArgs).not.toBe(original)
    expect(isDeepFrozen(bodyArgs)).toBe(true)
    expect(result).toMatchObject({ isError: false, value: { list: [1, 2] } })
  })

  it('rejects non-JSON arguments as INVALID_ARGS naming the path, without running the body', async () => {
    const ctx = createContext()
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body }))
    const result = await ctx.tools.execute(call('t', { when: new Date(0) }))
    expect(errorCode(result)).toBe('INVALID_ARGS')
    expect(result.isError && result.error.message).toContain('$.when')
    expect(body).not.toHaveBeenCalled()
  })

  it('assigns a fresh opaque symbol token and resolves rootCallId for a root call', async () => {
    const ctx = createContext()
    let seen: ToolRunContext | undefined
    ctx.tools.register(
      rawTool('t', {
        execute: async (_args, exec) => {
          seen = exec
          return null
        },
      }),
    )
    await ctx.tools.execute(call('t', {}, { callId: 'abc' }))
    expect(typeof seen?.token).toBe('symbol')
    expect(seen?.rootCallId).toBe('abc')
    expect(Object.isFrozen(seen)).toBe(true)
  })

  it('hands the body the fields of its execution in the same order, then its two callbacks, all frozen', async () => {
    const ctx = createContext()
    const agent = ctx.agent('a')
    const seen: ToolRunContext[] = []
    const observed: ToolExecution[] = []
    ctx.tools.register(rawTool('t', { execute: async (_args, exec) => (seen.push(exec), null) }))
    ctx.on('tools/result', (exec) => void observed.push(exec))
    await agent.ctx.tools.execute(call('t', { q: 1 }, { callId: 'with-agent' }))
    await ctx.tools.execute(call('t', { q: 2 }, { callId: 'no-agent', rootCallId: 'root' }))
    expect(Object.keys(observed[0] as object)).toEqual(['callId', 'rootCallId', 'name', 'arguments', 'agent', 'signal', 'token'])
    expect(Object.keys(observed[1] as object)).toEqual(['callId', 'rootCallId', 'name', 'arguments', 'signal', 'token'])
    expect(observed[1]).toMatchObject({ callId: 'no-agent', rootCallId: 'root', name: 't', arguments: { q: 2 } })
    for (const [index, exec] of observed.entries()) {
      const context = seen[index] as ToolRunContext
      expect(Object.keys(context)).toEqual([...Object.keys(exec), 'deferContext', 'concludeTurn'])
      for (const key of Object.keys(exec)) expect(context[key as keyof ToolExecution]).toBe(exec[key as keyof ToolExecution])
      expect(Object.isFrozen(exec)).toBe(true)
      expect(Object.isFrozen(context)).toBe(true)
    }
  })

  it('rejects an input without a signal as a harness bug', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    await expect(ctx.tools.execute({ callId: 'x', name: 't', arguments: {} } as never)).rejects.toThrow(/signal/)
  })
})

describe('unknown tools', () => {
  it('reports UNKNOWN_TOOL with the visible names in the message', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('alpha'))
    ctx.tools.register(rawTool('beta'))
    const result = await ctx.tools.execute(call('gamma'))
    expect(errorCode(result)).toBe('UNKNOWN_TOOL')
    expect(result.isError && result.error.message).toMatch(/gamma.*alpha, beta/)
  })

  it('treats a restricted-away tool as unknown to the restricted agent only', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('secret'))
    const preset = ctx.scope('preset')
    preset.tools.restrict({ deny: ['secret'] })
    const agent = preset.agent('a1')
    const other = ctx.agent('a2')
    expect(errorCode(await agent.ctx.tools.execute(call('secret')))).toBe('UNKNOWN_TOOL')
    expect((await other.ctx.tools.execute(call('secret'))).isError).toBe(false)
  })
})

describe('pre-execute policy', () => {
  it('denies with the reason and never runs the body', async () => {
    const ctx = createContext()
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body }))
    ctx.on('tools/pre-execute', async () => ({ kind: 'deny', reason: 'not today' }))
    const result = await ctx.tools.execute(call('t'))
    expect(errorCode(result)).toBe('DENIED')
    expect(result.isError && result.error.message).toContain('not today')
    expect(body).not.toHaveBeenCalled()
  })

  it('keeps a deny from a later listener even when an earlier listener rewrites it to allow', async () => {
    const ctx = createContext()
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body }))
    ctx.on('tools/pre-execute', async (_exec, next) => {
      await next()
      return { kind: 'allow' }
    })
    ctx.on('tools/pre-execute', async () => ({ kind: 'deny', reason: 'inner says no' }))
    const result = await ctx.tools.execute(call('t'))
    expect(errorCode(result)).toBe('DENIED')
    expect(result.isError && result.error.message).toContain('inner says no')
    expect(body).not.toHaveBeenCalled()
  })

  it('fails closed when a listener throws, and never runs the body', async () => {
    const ctx = createContext()
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body }))
    ctx.on('tools/pre-execute', () => {
      throw new Error('policy crashed')
    })
    const result = await ctx.tools.execute(call('t'))
    expect(errorCode(result)).toBe('LISTENER_FAILED')
    expect(body).not.toHaveBeenCalled()
  })

  it('fails closed when an outer listener swallows an inner listener failure', async () => {
    const ctx = createContext()
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body }))
    ctx.on('tools/pre-execute', async (_exec, next) => {
      try {
        return await next()
      } catch {
        return { kind: 'allow' }
      }
    })
    ctx.on('tools/pre-execute', async () => {
      throw new Error('inner crashed')
    })
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('LISTENER_FAILED')
    expect(body).not.toHaveBeenCalled()
  })

  it('makes next() single-use: a second call throws and the call fails closed', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    let secondCallError: unknown
    ctx.on('tools/pre-execute', async (_exec, next) => {
      await next()
      try {
        await next()
      } catch (error) {
        secondCallError = error
      }
      return { kind: 'allow' }
    })
    const result = await ctx.tools.execute(call('t'))
    expect(secondCallError).toBeInstanceOf(Error)
    expect(errorCode(result)).toBe('LISTENER_FAILED')
  })

  it('denies a malformed decision', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    ctx.on('tools/pre-execute', async () => ({ kind: 'maybe' }) as never)
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('LISTENER_FAILED')
  })

  it('denies ask without an approval service', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask', reason: 'dangerous' }))
    const agent = ctx.agent('a')
    const result = await agent.ctx.tools.execute(call('t'))
    expect(errorCode(result)).toBe('DENIED')
    expect(result.isError && result.error.message).toContain('no approval service')
  })

  it('runs ask only when the approval service answers allowed-once', async () => {
    const answers = ['allowed-once', 'denied', 'allowed-always']
    const request = vi.fn(async (_request: { agent: unknown; reason?: string }) => answers.shift() as string)
    const ctx = createContext({ approval: { request } })
    const body = vi.fn(async () => 'ran')
    ctx.tools.register(rawTool('t', { execute: body }))
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask', reason: 'check' }))
    const agent = ctx.agent('a')
    expect((await agent.ctx.tools.execute(call('t'))).isError).toBe(false)
    expect(errorCode(await agent.ctx.tools.execute(call('t')))).toBe('DENIED')
    expect(errorCode(await agent.ctx.tools.execute(call('t')))).toBe('DENIED')
    expect(body).toHaveBeenCalledTimes(1)
    expect(request.mock.calls[0]?.[0]).toMatchObject({ agent, reason: 'check' })
  })

  it('denies ask when the approval service fails or there is no agent', async () => {
    const ctx = createContext({
      approval: {
        request: async () => {
          throw new Error('service down')
        },
      },
    })
    ctx.tools.register(rawTool('t'))
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask' }))
    const viaAgent = await ctx.agent('a').ctx.tools.execute(call('t'))
    expect(viaAgent.isError && viaAgent.error.message).toContain('service down')
    const noAgent = await ctx.tools.execute(call('t'))
    expect(noAgent.isError && noAgent.error.message).toContain('without an agent')
  })
})

describe('guards', () => {
  it('run after every pre-execute listener and can deny what they allowed', async () => {
    const ctx = createContext()
    const order: string[] = []
    ctx.tools.register(rawTool('t'))
    ctx.tools.guard(() => {
      order.push('guard')
      return 'guarded'
    })
    ctx.on('tools/pre-execute', async (_exec, next) => {
      order.push('pre')
      return next()
    })
    const result = await ctx.tools.execute(call('t'))
    expect(order).toEqual(['pre', 'guard'])
    expect(errorCode(result)).toBe('DENIED')
    expect(result.isError && result.error.message).toContain('guarded')
  })

  it('deny before any human is asked when the pre-execute decision was ask', async () => {
    const request = vi.fn(async () => 'allowed-once')
    const ctx = createContext({ approval: { request } })
    ctx.tools.register(rawTool('t'))
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask' }))
    ctx.tools.guard(() => 'never this one')
    const result = await ctx.agent('a').ctx.tools.execute(call('t'))
    expect(result.isError && result.error.message).toContain('never this one')
    expect(request).not.toHaveBeenCalled()
  })

  it('apply globally from the root and only to their agent from an agent context', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const a = ctx.agent('a')
    const b = ctx.agent('b')
    a.ctx.tools.guard((exec) => (exec.name === 't' ? 'a may not' : undefined))
    expect((await a.ctx.tools.execute(call('t'))).isError).toBe(true)
    expect((await b.ctx.tools.execute(call('t'))).isError).toBe(false)
  })

  it('deny when a guard throws or returns something other than a reason', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const dispose = ctx.tools.guard(() => {
      throw new Error('boom')
    })
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('DENIED')
    dispose()
    ctx.tools.guard(() => true as never)
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('DENIED')
  })

  it('stop applying once their disposer ran', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const dispose = ctx.tools.guard(() => 'no')
    dispose()
    expect((await ctx.tools.execute(call('t'))).isError).toBe(false)
  })
})

describe('execute wrappers and the body', () => {
  it('let a wrapper replace the signal while the caller signal stays fused', async () => {
    const ctx = createContext()
    const started = deferred()
    let bodySignal: AbortSignal | undefined
    ctx.tools.register(
      rawTool('t', {
        execute: async (_args, exec) => {
          bodySignal = exec.signal
          started.resolve()
          await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
          return 'stopped'
        },
      }),
    )
    ctx.on('tools/execute', async (exec, next) => {
      exec.signal = new AbortController().signal
      return next()
    })
    const controller = new AbortController()
    const pending = ctx.tools.execute(call('t', {}, { signal: controller.signal }))
    await started.promise
    controller.abort()
    const result = await pending
    expect(bodySignal?.aborted).toBe(true)
    expect(errorCode(result)).toBe('ABORTED')
  })

  it('forbid a wrapper from changing identity or removing the signal', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const errors: unknown[] = []
    ctx.on('tools/execute', async (exec, next) => {
      for (const attempt of [
        () => Object.assign(exec, { callId: 'forged' }),
        () => Object.assign(exec, { arguments: { evil: true } }),
        () => Object.assign(exec, { signal: undefined }),
      ]) {
        try {
          attempt()
        } catch (error) {
          errors.push(error)
        }
      }
      return next()
    })
    const result = await ctx.tools.execute(call('t', { good: true }))
    expect(errors).toHaveLength(3)
    expect(result).toMatchObject({ isError: false, value: { good: true } })
  })

  it('never abandon the body when a wrapper throws after starting it', async () => {
    const ctx = createContext()
    const finished = vi.fn()
    ctx.tools.register(
      rawTool('slow', {
        execute: async () => {
          await new Promise((resolve) => setTimeout(resolve, 20))
          finished()
          return 1
        },
      }),
    )
    ctx.on('tools/execute', async (_exec, next) => {
      void next()
      throw new Error('wrapper broke')
    })
    const result = await ctx.tools.execute(call('slow'))
    expect(finished).toHaveBeenCalledTimes(1)
    expect(errorCode(result)).toBe('LISTENER_FAILED')
  })

  it('hold a wrapper-made success to the output schema', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('n', { outputSchema: { type: 'number' } }))
    ctx.on('tools/execute', async () => ({ isError: false, value: 'not a number', content: [] }) as never)
    expect(errorCode(await ctx.tools.execute(call('n')))).toBe('INVALID_TOOL_OUTPUT')
  })

  it('let a retrying wrapper run the inner chain and the body again once an attempt settled', async () => {
    const ctx = createContext()
    let attempts = 0
    const finalize = vi.fn(() => undefined)
    ctx.tools.register(
      rawTool('flaky', {
        finalizeContent: finalize,
        execute: async () => {
          attempts += 1
          if (attempts < 3) throw new Error(`attempt ${attempts} failed`)
          return attempts
        },
      }),
    )
    const innerRuns: number[] = []
    ctx.on('tools/execute', async (_exec, next) => {
      let result = await next()
      for (let retry = 1; retry < 3 && result.isError; retry++) result = await next()
      return result
    })
    ctx.on('tools/execute', async (_exec, next) => {
      innerRuns.push(attempts)
      return next()
    })
    const result = await ctx.tools.execute(call('flaky'))
    expect(result).toMatchObject({ isError: false, value: 3 })
    expect(innerRuns).toEqual([0, 1, 2])
    expect(finalize).toHaveBeenCalledTimes(1)
  })

  it('wait for every attempt a retrying wrapper started, whichever result it returns', async () => {
    const ctx = createContext()
    const gates = [deferred(), deferred()]
    const settled: number[] = []
    let attempt = 0
    ctx.tools.register(
      rawTool('slow', {
        execute: async () => {
          const mine = attempt++
          await gates[mine]!.promise
          settled.push(mine)
          return mine
        },
      }),
    )
    ctx.on('tools/execute', async (_exec, next) => {
      const first = next()
      gates[0]!.resolve()
      await first
      void next()
      return first
    })
    const pending = ctx.tools.execute(call('slow'))
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(settled).toEqual([0])
    gates[1]!.resolve()
    expect(await pending).toMatchObject({ isError: false, value: 0 })
    expect(settled).toEqual([0, 1])
  })

  it('never run two attempts of a body at once, even when an inner wrapper answers before its next() settled', async () => {
    const ctx = createContext()
    let running = 0
    let most = 0
    ctx.tools.register(
      rawTool('slow', {
        execute: async () => {
          most = Math.max(most, ++running)
          await new Promise((resolve) => setTimeout(resolve, 20))
          running -= 1
          return 'done'
        },
      }),
    )
    ctx.on('tools/execute', async (_exec, next) => {
      const first = await next()
      return first.isError ? next() : first
    })
    let answered = false
    ctx.on('tools/execute', (_exec, next) => {
      const attempt = next()
      if (answered) return attempt
      answered = true
      // A hedge: fail fast without waiting for the body it started.
      return { isError: true, content: [{ type: 'text', text: 'busy' }], error: { message: 'busy' } } as never
    })
    expect(await ctx.tools.execute(call('slow'))).toMatchObject({ isError: false, value: 'done' })
    expect(most).toBe(1)
  })

  it('keep the deferred contexts of a success a wrapper spreads into a result of its own', async () => {
    const ctx = createContext()
    const message = { role: 'user' as const, content: [{ type: 'text' as const, text: 'note' }] }
    ctx.tools.register(
      rawTool('t', {
        execute: async (_args, exec) => {
          exec.deferContext(message)
          return 1
        },
      }),
    )
    ctx.on('tools/execute', async (_exec, next) => ({ ...(await next()) }))
    expect((await ctx.tools.execute(call('t'))).additionalContexts).toEqual([message])
  })

  it('rebuild a wrapper-made success from its value: its own content and turn marker do not stand', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('n', { outputSchema: { type: 'number' }, execute: async () => 1 }))
    ctx.on('tools/execute', async (_exec, next) => {
      const result = await next()
      return { ...result, value: 2, content: [{ type: 'text', text: 'one' }], concludesTurn: true } as never
    })
    const result = await ctx.tools.execute(call('n'))
    expect(result).toEqual({ isError: false, value: 2, content: [{ type: 'text', text: '2' }] })
  })

  it('blame a wrapper-made success without a value on the wrapper', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('n'))
    ctx.on('tools/execute', async () => ({ isError: false, content: [] }) as never)
    const result = await ctx.tools.execute(call('n'))
    expect(errorCode(result)).toBe('LISTENER_FAILED')
    expect(result.isError && result.error.message).toContain('a success without a value')
  })

  it('turn a thrown body into TOOL_FAILED without a stack trace', async () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('boom', {
        execute: async () => {
          throw new Error('disk full')
        },
      }),
    )
    const result = await ctx.tools.execute(call('boom'))
    expect(errorCode(result)).toBe('TOOL_FAILED')
    expect(result.isError && result.error.message).toBe('disk full')
    expect(JSON.stringify(result)).not.toMatch(/at .*\.ts:\d+/)
  })

  it('reject a value its output schema does not accept', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('n', { outputSchema: { type: 'number' }, execute: async () => 'three' }))
    const result = await ctx.tools.execute(call('n'))
    expect(errorCode(result)).toBe('INVALID_TOOL_OUTPUT')
    expect(result.isError && result.error.message).toMatch(/number/)
  })

  it('reject a value that is not JSON', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('nan', { execute: async () => ({ x: Number.NaN }) }))
    const result = await ctx.tools.execute(call('nan'))
    expect(errorCode(result)).toBe('INVALID_TOOL_OUTPUT')
    expect(result.isError && result.error.message).toContain('$.x')
  })

  it('compute presentation meta for top-level calls', async () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('m', {
        output: { schema: {}, render: () => [], presentationMeta: (_args, value) => ({ shown: value }) },
        execute: async () => 7,
      }),
    )
    const result = await ctx.tools.execute(call('m'))
    expect(result.meta).toEqual({ shown: 7 })
  })

  it('check and copy a deferred context message when it is deferred', async () => {
    const ctx = createContext()
    const message = { role: 'user' as const, content: [{ type: 'text' as const, text: 'as deferred' }] }
    let refused: unknown
    ctx.tools.register(
      rawTool('t', {
        execute: async (_args, exec) => {
          exec.deferContext(message)
          message.content[0]!.text = 'edited later'
          try {
            exec.deferContext({ role: 'assistant', content: [] } as never)
          } catch (error) {
            refused = error
          }
          return 1
        },
      }),
    )
    const result = await ctx.tools.execute(call('t'))
    expect(result.additionalContexts).toEqual([{ role: 'user', content: [{ type: 'text', text: 'as deferred' }] }])
    expect(String(refused)).toContain('deferContext(message): message.role must be "user"')
  })

  it('ferry deferred contexts and the conclude-turn marker on success', async () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('c', {
        execute: async (_args, exec) => {
          exec.deferContext({ role: 'user', content: [{ type: 'text', text: 'later' }], source: 'plugin' })
          exec.concludeTurn()
          return 1
        },
      }),
    )
    const result = await ctx.tools.execute(call('c'))
    expect(result.additionalContexts).toEqual([{ role: 'user', content: [{ type: 'text', text: 'later' }], source: 'plugin' }])
    expect(result.concludesTurn).toBe(true)
  })

  it('never let a failed call conclude the turn', async () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('c', {
        execute: async (_args, exec) => {
          exec.concludeTurn()
          throw new Error('no')
        },
      }),
    )
    const result = await ctx.tools.execute(call('c'))
    expect(result.isError).toBe(true)
    expect(result.concludesTurn).toBeUndefined()
  })
})

describe('post-execute policy', () => {
  it('replaces content and keeps the canonical value', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t', { execute: async () => ({ secret: 1 }) }))
    ctx.on('tools/post-execute', async () => ({ kind: 'accept', content: [{ type: 'text', text: 'redacted' }] }))
    const result = await ctx.tools.execute(call('t'))
    expect(result).toMatchObject({ isError: false, value: { secret: 1 }, content: [{ type: 'text', text: 'redacted' }] })
  })

  it('replaces the value, re-validating and re-rendering it', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t', { outputSchema: { type: 'number' }, execute: async () => 1 }))
    ctx.on('tools/post-execute', async () => ({ kind: 'accept', value: 2 }))
    const result = await ctx.tools.execute(call('t'))
    expect(result).toMatchObject({ isError: false, value: 2, content: [{ type: 'text', text: '2' }] })
  })

  it('rejects a replacement value the output schema does not accept', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t', { outputSchema: { type: 'number' }, execute: async () => 1 }))
    ctx.on('tools/post-execute', async () => ({ kind: 'accept', value: 'two' }))
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('INVALID_TOOL_OUTPUT')
  })

  it('blocks into an error carrying the feedback, dropping the value', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t', { execute: async () => 'value' }))
    ctx.on('tools/post-execute', async () => ({ kind: 'block', feedback: [{ type: 'text', text: 'try again with a path' }] }))
    const result = await ctx.tools.execute(call('t'))
    expect(result.isError).toBe(true)
    expect(result.value).toBeUndefined()
    expect(result.content).toEqual([{ type: 'text', text: 'try again with a path' }])
  })

  it('keeps a block even when an outer listener accepts afterwards', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    ctx.on('tools/post-execute', async (_exec, _result, next) => {
      await next()
      return { kind: 'accept' }
    })
    ctx.on('tools/post-execute', async () => ({ kind: 'block', feedback: [{ type: 'text', text: 'no' }] }))
    expect((await ctx.tools.execute(call('t'))).isError).toBe(true)
  })

  it('refuses a decision replacing both content and value', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    ctx.on('tools/post-execute', async () => ({ kind: 'accept', value: 1, content: [] }) as never)
    expect(errorCode(await ctx.tools.execute(call('t')))).toBe('LISTENER_FAILED')
  })

  it('sees thrown tools as errors', async () => {
    const ctx = createContext()
    const seen: boolean[] = []
    ctx.tools.register(
      rawTool('t', {
        execute: async () => {
          throw new Error('x')
        },
      }),
    )
    ctx.on('tools/post-execute', async (_exec, result, next) => {
      seen.push(result.isError)
      return next()
    })
    await ctx.tools.execute(call('t'))
    expect(seen).toEqual([true])
  })
})

describe('finalizeContent', () => {
  const outcomes: [string, (ctx: ReturnType<typeof createContext>) => void, (() => Promise<unknown>) | undefined][] = [
    ['a success', () => {}, async () => 1],
    [
      'a thrown body',
      () => {},
      async () => {
        throw new Error('x')
      },
    ],
    ['a pre-execute denial', (ctx) => void ctx.on('tools/pre-execute', async () => ({ kind: 'deny', reason: 'r' })), undefined],
    ['a guard denial', (ctx) => void ctx.tools.guard(() => 'no'), undefined],
    [
      'a failing post-execute listener',
      (ctx) =>
        void ctx.on('tools/post-execute', async () => {
          throw new Error('post')
        }),
      undefined,
    ],
  ]
  for (const [label, setup, execute] of outcomes) {
    it(`runs exactly once for ${label}, and its content replaces the result's`, async () => {
      const ctx = createContext()
      const finalize = vi.fn((_exec: Readonly<ToolExecution>, result: Readonly<ToolExecutionResult>) => [
        { type: 'text' as const, text: `final:${String(result.isError)}` },
      ])
      ctx.tools.register(rawTool('t', { finalizeContent: finalize, ...(execute ? { execute } : {}) }))
      setup(ctx)
      const result = await ctx.tools.execute(call('t'))
      expect(finalize).toHaveBeenCalledTimes(1)
      expect(result.content).toEqual([{ type: 'text', text: `final:${String(result.isError)}` }])
    })
  }

  it('runs exactly once for arguments that are not JSON', async () => {
    const ctx = createContext()
    const finalize = vi.fn(() => undefined)
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { finalizeContent: finalize, execute: body }))
    const result = await ctx.tools.execute(call('t', { bad: Symbol('x') }))
    expect(result.isError && result.error.info?.code).toBe('INVALID_ARGS')
    expect(finalize).toHaveBeenCalledTimes(1)
    expect(body).not.toHaveBeenCalled()
  })

  it('keeps the content when it returns undefined, and fails a success closed when it throws', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('keep', { finalizeContent: () => undefined, execute: async () => 5 }))
    ctx.tools.register(
      rawTool('throws', {
        finalizeContent: () => {
          throw new Error('finalizer bug')
        },
      }),
    )
    ctx.tools.register(rawTool('invalid', { finalizeContent: () => [{ type: 'image' }] as never }))
    expect((await ctx.tools.execute(call('keep'))).content).toEqual([{ type: 'text', text: '5' }])
    const failed = await ctx.tools.execute(call('throws'))
    expect(errorCode(failed)).toBe('TOOL_FAILED')
    expect(failed.isError && failed.error.message).toContain('finalizer bug')
    const invalid = await ctx.tools.execute(call('invalid'))
    expect(errorCode(invalid)).toBe('INVALID_TOOL_OUTPUT')
    expect(invalid.isError && invalid.error.message).toContain('finalizeContent of tool "invalid" failed: it returned invalid content')
  })

  it('keeps a failed outcome as it was when it throws, and reports the bug aside', async () => {
    const reported: [unknown, string][] = []
    const ctx = createContext({ onListenerError: (error, event) => void reported.push([error, event]) })
    const bug = new Error('finalizer bug')
    ctx.tools.register(
      rawTool('t', {
        finalizeContent: () => {
          throw bug
        },
      }),
    )
    ctx.tools.guard(() => 'not today')
    const result = await ctx.tools.execute(call('t'))
    expect(errorCode(result)).toBe('DENIED')
    expect(result.isError && result.error.message).toContain('not today')
    expect(reported).toEqual([[bug, 'finalizeContent']])
  })
})

describe('cancellation', () => {
  it('reports ABORTED_BEFORE_DISPATCH and skips the body when cancelled before dispatch', async () => {
    const ctx = createContext()
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body }))
    const controller = new AbortController()
    controller.abort()
    const result = await ctx.tools.execute(call('t', {}, { signal: controller.signal }))
    expect(errorCode(result)).toBe('ABORTED_BEFORE_DISPATCH')
    expect(body).not.toHaveBeenCalled()
  })

  it('reports ABORTED_BEFORE_DISPATCH when cancelled while an async gate decides', async () => {
    const ctx = createContext()
    const body = vi.fn(async () => 1)
    ctx.tools.register(rawTool('t', { execute: body }))
    const controller = new AbortController()
    ctx.on('tools/pre-execute', async (_exec, next) => {
      controller.abort()
      return next()
    })
    const result = await ctx.tools.execute(call('t', {}, { signal: controller.signal }))
    expect(errorCode(result)).toBe('ABORTED_BEFORE_DISPATCH')
    expect(body).not.toHaveBeenCalled()
  })

  it('replaces a started success with ABORTED but keeps a tool-owned error', async () => {
    const ctx = createContext()
    const controller = new AbortController()
    ctx.tools.register(
      rawTool('ok', {
        execute: async () => {
          controller.abort()
          return 1
        },
      }),
    )
    const ctx2 = createContext()
    const controller2 = new AbortController()
    ctx2.tools.register(
      rawTool('err', {
        execute: async () => {
          controller2.abort()
          throw new Error('own failure')
        },
      }),
    )
    expect(errorCode(await ctx.tools.execute(call('ok', {}, { signal: controller.signal })))).toBe('ABORTED')
    const kept = await ctx2.tools.execute(call('err', {}, { signal: controller2.signal }))
    expect(kept.isError && kept.error.message).toBe('own failure')
  })
})

describe('cancellation reported by the body', () => {
  it('reads a body that stops by throwing its signal reason as ABORTED, not as a failure', async () => {
    const ctx = createContext()
    const controller = new AbortController()
    ctx.tools.register(
      rawTool('polite', {
        execute: async (_args, exec) => {
          controller.abort()
          exec.signal.throwIfAborted()
          return 1
        },
      }),
    )
    const result = await ctx.tools.execute(call('polite', {}, { signal: controller.signal }))
    expect(errorCode(result)).toBe('ABORTED')
  })

  it('keeps an AbortError the body threw without being cancelled as its own failure', async () => {
    const ctx = createContext()
    ctx.tools.register(
      rawTool('fetchy', {
        execute: async () => {
          throw new DOMException('upstream request aborted', 'AbortError')
        },
      }),
    )
    expect(errorCode(await ctx.tools.execute(call('fetchy')))).toBe('TOOL_FAILED')
  })
})

describe('containment of observers', () => {
  it('isolates throwing and rejecting tools/result listeners and still returns the result', async () => {
    const reported: string[] = []
    const ctx = createContext({ onListenerError: (error) => reported.push((error as Error).message) })
    ctx.tools.register(rawTool('t'))
    ctx.on('tools/result', () => {
      throw new Error('sync observer bug')
    })
    ctx.on('tools/result', async () => {
      throw new Error('async observer bug')
    })
    const after = vi.fn()
    ctx.on('tools/result', after)
    const result = await ctx.tools.execute(call('t', { v: 1 }))
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(result.isError).toBe(false)
    expect(after).toHaveBeenCalledTimes(1)
    expect(reported.sort()).toEqual(['async observer bug', 'sync observer bug'])
  })
})

describe('scope filtering', () => {
  it('delivers an agent listener only its own calls, a preset listener its agents calls, the root all', async () => {
    const ctx = createContext()
    ctx.tools.register(rawTool('t'))
    const preset = ctx.scope('preset')
    const a = preset.agent('a')
    const b = ctx.agent('b')
    const seen: Record<string, string[]> = { root: [], preset: [], a: [], b: [] }
    ctx.on('tools/result', (exec) => void seen.root?.push(exec.agent?.id ?? '-'))
    preset.on('tools/result', (exec) => void seen.preset?.push(exec.agent?.id ?? '-'))
    a.ctx.on('tools/result', (exec) => void seen.a?.push(exec.agent?.id ?? '-'))
    b.ctx.on('tools/pre-execute', async (exec, next) => {
      seen.b?.push(exec.agent?.id ?? '-')
      return next()
    })
    await a.ctx.tools.execute(call('t'))
    await b.ctx.tools.execute(call('t'))
    await ctx.tools.execute(call('t'))
    expect(seen).toEqual({ root: ['a', 'b', '-'], preset: ['a'], a: ['a'], b: ['b'] })
  })

  it('never filters tools/change', async () => {
    const ctx = createContext()
    const a = ctx.agent('a')
    const changes = vi.fn()
    a.ctx.on('tools/change', changes)
    ctx.tools.register(rawTool('global'))
    ctx.agent('b').ctx.tools.register(rawTool('other-agent-tool'))
    expect(changes).toHaveBeenCalledTimes(2)
  })
})

describe("a listener's this", () => {
  it('is the ctx.tools of the context it was registered through, for every tool event', async () => {
    const ctx = createContext()
    const preset = ctx.scope('preset')
    const agent = preset.agent('a')
    const seen: [string, unknown][] = []
    // Function expressions: an arrow function would ignore its `this`.
    preset.on('tools/pre-execute', function (_exec, next) {
      seen.push(['pre-execute', this])
      return next()
    })
    ctx.on('tools/execute', function (_exec, next) {
      seen.push(['execute', this])
      return next()
    })
    agent.ctx.on('tools/post-execute', function (_exec, _result, next) {
      seen.push(['post-execute', this])
      return next()
    })
    preset.on('tools/result', function () {
      seen.push(['result', this])
    })
    ctx.on('tools/change', function () {
      seen.push(['change', this])
    })
    agent.ctx.tools.register(rawTool('echo'))
    const result = await agent.ctx.tools.execute(call('echo', { a: 1 }))
    expect(result.isError).toBe(false)
    // By identity: every ToolRuntime looks alike to a deep comparison.
    const runtimes = new Map<unknown, string>([[ctx.tools, 'root'], [preset.tools, 'preset'], [agent.ctx.tools, 'agent']])
    expect(seen.map(([event, self]) => [event, runtimes.get(self) ?? String(self)])).toEqual([
      ['change', 'root'],
      ['pre-execute', 'preset'],
      ['execute', 'root'],
      ['post-execute', 'agent'],
      ['result', 'preset'],
    ])
  })
})

describe('arguments are validated before any policy', () => {
  const strict: ObjectJsonSchema = {
    type: 'object',
    properties: { status: { type: 'string', enum: ['open', 'closed'] }, limit: { type: 'integer', minimum: 1 } },
    required: ['status'],
    additionalProperties: false,
  }

  it('refuses invalid arguments of a raw definition before pre-execute, guards, approval and the body, naming every issue', async () => {
    const request = vi.fn(async () => 'allowed-once')
    const ctx = createContext({ approval: { request } })
    const body = vi.fn(async () => 'ran')
    const policy = vi.fn(async (_exec: ToolExecution, next: () => Promise<never>) => ({ kind: 'ask' as const }))
    const guard = vi.fn(() => undefined)
    ctx.tools.register(rawTool('t', { parameters: strict, execute: body }))
    ctx.on('tools/pre-execute', policy as never)
    ctx.tools.guard(guard)
    const finalized: unknown[] = []
    ctx.tools.register(rawTool('u', { parameters: strict, execute: body, finalizeContent: (_exec, result) => void finalized.push(result.isError) }))
    const seen: ToolExecutionResult[] = []
    ctx.on('tools/result', (_exec, result) => void seen.push(result))
    const agent = ctx.agent('a')

    const result = await agent.ctx.tools.execute(call('t', { stauts: 'open', limit: 0 }))
    expect(errorCode(result)).toBe('INVALID_ARGS')
    expect(result.isError && result.error.message).toBe(
      'Invalid arguments for tool "t": $.status: expected one of "open" | "closed" (required key), found missing, but there is a key "stauts": did you mean "status"?; ' +
        '$: expected no key "stauts" (allowed keys: status, limit; did you mean "status"?), found unexpected key; $.limit: expected a number >= 1, found number 0',
    )
    expect(await agent.ctx.tools.execute(call('u', { status: 'shut' }))).toMatchObject({ isError: true })
    expect(policy).not.toHaveBeenCalled()
    expect(guard).not.toHaveBeenCalled()
    expect(request).not.toHaveBeenCalled()
    expect(body).not.toHaveBeenCalled()
    // The outcome still reaches finalizeContent and tools/result like any other.
    expect(finalized).toEqual([true])
    expect(seen).toHaveLength(2)
  })

  it('lets valid arguments of the same definition through to the policy', async () => {
    const ctx = createContext()
    const policy = vi.fn(async (exec: ToolExecution, next: () => Promise<{ kind: 'allow' }>) => next())
    ctx.tools.register(rawTool('t', { parameters: strict }))
    ctx.on('tools/pre-execute', policy as never)
    expect(await ctx.tools.execute(call('t', { status: 'open' }))).toMatchObject({ isError: false, value: { status: 'open' } })
    expect(policy.mock.calls[0]?.[0].arguments).toEqual({ status: 'open' })
  })

  it('refuses invalid arguments of a defineTool definition before pre-execute', async () => {
    const ctx = createContext()
    const policy = vi.fn(async (_exec: ToolExecution, next: () => Promise<{ kind: 'allow' }>) => next())
    const body = vi.fn(async () => 'ran')
    ctx.tools.register(
      defineTool({
        name: 'close',
        description: 'closes',
        parameters: { id: { type: 'integer', required: true } },
        additionalParameters: false,
        output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
        execute: body,
      }),
    )
    ctx.on('tools/pre-execute', policy as never)
    const result = await ctx.tools.execute(call('close', { id: 1, force: true }))
    expect(errorCode(result)).toBe('INVALID_ARGS')
    expect(result.isError && result.error.message).toContain('no key "force"')
    expect(policy).not.toHaveBeenCalled()
    expect(body).not.toHaveBeenCalled()
  })
})
