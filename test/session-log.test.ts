import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises'
import * as fsPromises from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ToolErrorCode } from '../src/errors.ts'
import type { ToolExecutionResult, ToolResult } from '../src/execution.ts'
import { isFrozenJson, snapshotJson } from '../src/json-boundary.ts'
import type { JsonValue } from '../src/json-boundary.ts'
import { text } from '../src/messages.ts'
import type { ContentBlock } from '../src/messages.ts'
import { presentToolCall, presentToolResult } from '../src/presentation.ts'
import type { ToolCallView, ToolResultView } from '../src/presentation.ts'
import {
  SessionLogError,
  codeDispatchEvent,
  codeDispatchStartEvent,
  createMemorySessionLog,
  openJsonlSessionLog,
  replaySession,
  toolCallEvent,
  toolResultEvent,
} from '../src/session-log.ts'
import type { CodeDispatchEvent, ReplayCard, SessionEvent, SessionLog } from '../src/session-log.ts'
import type { ToolDefinition } from '../src/tool.ts'

// Lets one test close the log's file handle underneath it; every other test gets the real `open`.
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>()
  return { ...real, open: vi.fn(real.open) }
})

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'session-log-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const callEvent = (callId: string, args: JsonValue = { q: callId }): SessionEvent => ({
  type: 'tool/call',
  callId,
  rootCallId: callId,
  name: 'grep',
  arguments: args,
})

const resultEvent = (callId: string, body = 'ok'): SessionEvent => ({
  type: 'tool/result',
  callId,
  name: 'grep',
  isError: false,
  content: [text(body)],
})

async function logError(promise: Promise<unknown>): Promise<SessionLogError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof SessionLogError) return error
    throw error
  }
  throw new Error('expected a SessionLogError, the promise resolved')
}

async function fileLines(path: string): Promise<string[]> {
  return (await readFile(path, 'utf8')).split('\n')
}

describe('event builders', () => {
  it('toolCallEvent snapshots the arguments and defaults rootCallId to the call itself', () => {
    const args = { pattern: 'x' }
    const event = toolCallEvent({ callId: 'c1', name: 'grep', arguments: args })
    expect(event).toEqual({ type: 'tool/call', callId: 'c1', rootCallId: 'c1', name: 'grep', arguments: { pattern: 'x' } })
    expect(event.arguments).not.toBe(args)
    expect(Object.isFrozen(event.arguments)).toBe(true)
  })

  it('toolResultEvent keeps content, error and meta and drops the canonical value and deferred contexts', () => {
    const result: ToolExecutionResult = {
      isError: false,
      value: { secret: 42 },
      content: [text('done')],
      meta: { lines: 3 },
      additionalContexts: [{ role: 'user', content: [text('later')] }],
    }
    expect(toolResultEvent('c1', 'grep', result)).toEqual({
      type: 'tool/result',
      callId: 'c1',
      name: 'grep',
      isError: false,
      content: [text('done')],
      meta: { lines: 3 },
    })
  })
})

describe('code-dispatch event builders', () => {
  const args = snapshotJson({ pattern: 'x' })
  const content = snapshotJson([text('done')]) as unknown as ContentBlock[]

  it('build events that are kept exactly as the same plain literals would be', async () => {
    const built = createMemorySessionLog()
    const plain = createMemorySessionLog()
    await built.append(codeDispatchStartEvent('run', 'run:code:1', 'grep', args))
    await built.append(codeDispatchEvent('run', 'run:code:1', 'grep', args, false, content))
    await plain.append({ type: 'tool/code-dispatch-start', callId: 'run', subCallId: 'run:code:1', name: 'grep', arguments: args })
    await plain.append({ type: 'tool/code-dispatch', callId: 'run', subCallId: 'run:code:1', name: 'grep', arguments: args, isError: false, content })
    expect(built.events).toStrictEqual(plain.events)
    for (const [index, event] of built.events.entries()) {
      expect(Object.keys(event)).toEqual(Object.keys(plain.events[index] as SessionEvent))
      expect(isFrozenJson(event)).toBe(true)
    }
  })

  it('leave content that has not crossed the boundary for append to copy', async () => {
    const log = createMemorySessionLog()
    const reshaped = [text('reshaped by a listener')]
    const event = codeDispatchEvent('run', 'run:code:1', 'grep', args, false, reshaped)
    expect(Object.isFrozen(event)).toBe(false)
    await log.append(event)
    reshaped.push(text('added later'))
    const kept = log.events[0] as CodeDispatchEvent
    expect(kept.content).toEqual([text('reshaped by a listener')])
    expect(Object.isFrozen(kept.content)).toBe(true)
  })

  it('still have every event checked: a malformed one is refused as its plain literal is', async () => {
    const bad = [{ type: 'text' }] as unknown as ContentBlock[]
    const built = await logError(createMemorySessionLog().append(codeDispatchEvent('run', 'run:code:1', 'grep', args, false, bad)))
    const plain = await logError(
      createMemorySessionLog().append({ type: 'tool/code-dispatch', callId: 'run', subCallId: 'run:code:1', name: 'grep', arguments: args, isError: false, content: bad }),
    )
    expect(built.message).toBe(plain.message)
    expect(built.message).toMatch(/malformed \$\.content/)
    const frozenBad = snapshotJson([{ type: 'text' }]) as unknown as ContentBlock[]
    const checked = await logError(createMemorySessionLog().append(codeDispatchEvent('run', 'run:code:1', 'grep', args, false, frozenBad)))
    expect(checked.message).toMatch(/malformed \$\.content/)
  })
})

describe('createMemorySessionLog', () => {
  it('keeps a deep-frozen copy of each appended event, detached from the caller', async () => {
    const log = createMemorySessionLog()
    const args = { list: [1, 2] }
    await log.append(callEvent('c1', args))
    args.list.push(3)
    const [kept] = log.events
    expect(kept).toEqual(callEvent('c1', { list: [1, 2] }))
    expect(Object.isFrozen(kept)).toBe(true)
    expect(Object.isFrozen((kept as unknown as { arguments: { list: number[] } }).arguments.list)).toBe(true)
  })

  it('exposes events as a frozen array that later appends do not change', async () => {
    const log = createMemorySessionLog()
    await log.append(callEvent('c1'))
    const before = log.events
    await log.append(resultEvent('c1'))
    expect(Object.isFrozen(before)).toBe(true)
    expect(before).toHaveLength(1)
    expect(log.events).toHaveLength(2)
  })

  it('refuses an event that carries a canonical value, leaving the log unchanged', async () => {
    const log = createMemorySessionLog()
    const leaking = { ...resultEvent('c1'), value: { secret: 42 } } as unknown as SessionEvent
    const error = await logError(log.append(leaking))
    expect(error.code).toBe(ToolErrorCode.SESSION_LOG_FAILED)
    expect(error.message).toMatch(/unexpected field \$\.value/)
    expect(log.events).toEqual([])
  })

  const malformed: [string, unknown, RegExp][] = [
    ['an unknown type', { type: 'tool/other', callId: 'c' }, /unknown event type "tool\/other"/],
    ['a type named like an Object.prototype member', { type: 'toString', callId: 'c' }, /unknown event type "toString"/],
    ['a field named like an Object.prototype member', { ...callEvent('c'), constructor: 'x' }, /unexpected field \$\.constructor/],
    ['a missing field', { type: 'tool/call', callId: 'c', name: 'grep', arguments: {} }, /missing \$\.rootCallId/],
    ['a malformed content block', { ...resultEvent('c'), content: [{ type: 'text' }] }, /malformed \$\.content/],
    ['an error result without its failure', { ...resultEvent('c'), isError: true }, /isError has no error/],
    ['a failure with extra fields', { ...resultEvent('c'), isError: true, error: { message: 'x', stack: 'at ...' } }, /malformed \$\.error/],
    ['arguments that are not JSON', callEvent('c', { when: new Date(0) } as unknown as JsonValue), /\$\.arguments\.when: an instance of Date/],
  ]
  for (const [what, event, reason] of malformed) {
    it(`refuses ${what}`, async () => {
      const log = createMemorySessionLog()
      expect((await logError(log.append(event as SessionEvent))).message).toMatch(reason)
    })
  }

  it('accepts an error result with its failure identity', async () => {
    const log = createMemorySessionLog()
    await log.append({
      ...resultEvent('c'),
      isError: true,
      error: { message: 'boom', info: { code: 'TOOL_FAILED', name: 'Error' } },
    } as SessionEvent)
    expect(log.events).toHaveLength(1)
  })

  it('rejects appends after close', async () => {
    const log = createMemorySessionLog()
    await log.close()
    expect((await logError(log.append(callEvent('c1')))).message).toMatch(/after close/)
  })
})

describe('openJsonlSessionLog', () => {
  it('writes one compact lossless line per event and reads them back on reopen', async () => {
    const path = join(dir, 'session.jsonl')
    const { log, recovered } = await openJsonlSessionLog(path)
    expect(recovered).toEqual([])
    const events = [callEvent('c1', { big: 1e300, edge: 2 ** 53, tiny: 5e-324, s: '\ud800"\n' }), resultEvent('c1')]
    for (const event of events) await log.append(event)
    await log.close()

    const lines = await fileLines(path)
    expect(lines).toHaveLength(3)
    expect(lines[2]).toBe('')
    expect(lines[0]).toBe(
      '{"type":"tool/call","callId":"c1","rootCallId":"c1","name":"grep","arguments":{"big":1e+300,"edge":9007199254740992,"tiny":5e-324,"s":"\\ud800\\"\\n"}}',
    )
    const reopened = await openJsonlSessionLog(path)
    expect(reopened.recovered).toEqual(events)
    expect(reopened.tornLine).toBeUndefined()
    expect(reopened.log.events).toEqual(events)
    await reopened.log.close()
  })

  it('lands concurrently issued appends in call order, even when an early write is slow', async () => {
    const path = join(dir, 'session.jsonl')
    const realOpen = (await vi.importActual<typeof import('node:fs/promises')>('node:fs/promises')).open
    let writes = 0
    vi.mocked(fsPromises.open).mockImplementationOnce(async (file, flags) => {
      const handle = await realOpen(file, flags)
      const write = handle.write.bind(handle) as (...args: unknown[]) => Promise<unknown>
      // The first write stalls, so any write issued without waiting for it would overtake it.
      ;(handle as unknown as { write: typeof write }).write = async (...args) => {
        if (writes++ === 0) await new Promise((resolve) => setTimeout(resolve, 50))
        return write(...args)
      }
      return handle
    })
    const { log } = await openJsonlSessionLog(path)
    const appends = Array.from({ length: 20 }, (_, index) => log.append(callEvent(`c${index}`)))
    await Promise.all(appends)
    await log.close()
    const ids = (await fileLines(path)).filter((line) => line !== '').map((line) => /"callId":"(c\d+)"/.exec(line)?.[1])
    expect(ids).toEqual(Array.from({ length: 20 }, (_, index) => `c${index}`))
    expect(log.events.map((event) => event.callId)).toEqual(ids)
  })

  it('surfaces a write failure and refuses every later append, so the file has no hole', async () => {
    const path = join(dir, 'session.jsonl')
    const realOpen = (await vi.importActual<typeof import('node:fs/promises')>('node:fs/promises')).open
    let handle: FileHandle | undefined
    vi.mocked(fsPromises.open).mockImplementationOnce(async (file, flags) => {
      handle = await realOpen(file, flags)
      return handle
    })
    const { log } = await openJsonlSessionLog(path)
    await log.append(callEvent('c1'))
    await handle?.close()

    const first = log.append(resultEvent('c1'))
    const queuedBehind = log.append(callEvent('c2'))
    const failure = await logError(first)
    expect(failure.code).toBe(ToolErrorCode.SESSION_LOG_FAILED)
    expect(failure.message).toMatch(/failed to write/)
    expect(failure.cause).toBeInstanceOf(Error)
    expect(await logError(queuedBehind)).toBe(failure)
    expect(await logError(log.append(callEvent('c3')))).toBe(failure)
    expect(log.events.map((event) => event.type)).toEqual(['tool/call'])
    expect((await fileLines(path)).filter((line) => line !== '')).toHaveLength(1)
  })

  it('does not count a refused event as a write failure', async () => {
    const { log } = await openJsonlSessionLog(join(dir, 'session.jsonl'))
    await logError(log.append({ type: 'nope' } as unknown as SessionEvent))
    await log.append(callEvent('c1'))
    expect(log.events).toHaveLength(1)
    await log.close()
  })

  it('reports a torn last line without a newline, skips it and cuts it off before appending', async () => {
    const path = join(dir, 'session.jsonl')
    const good = `${JSON.stringify(callEvent('c1'))}\n${JSON.stringify(resultEvent('c1'))}\n`
    await writeFile(path, `${good}{"type":"tool/call","callId":"c2","na`)
    const { log, recovered, tornLine } = await openJsonlSessionLog(path)
    expect(recovered).toEqual([callEvent('c1'), resultEvent('c1')])
    expect(tornLine).toEqual({ line: 3, text: '{"type":"tool/call","callId":"c2","na' })
    expect(await readFile(path, 'utf8')).toBe(good)
    await log.append(callEvent('c3'))
    await log.close()
    expect(await readFile(path, 'utf8')).toBe(`${good}${JSON.stringify(callEvent('c3'))}\n`)
  })

  it('treats a complete event without its newline as torn, since its append never finished', async () => {
    const path = join(dir, 'session.jsonl')
    await writeFile(path, `${JSON.stringify(callEvent('c1'))}\n${JSON.stringify(resultEvent('c1'))}`)
    const { log, recovered, tornLine } = await openJsonlSessionLog(path)
    expect(recovered).toEqual([callEvent('c1')])
    expect(tornLine?.line).toBe(2)
    await log.close()
  })

  it('treats an unreadable last line as torn even with its newline', async () => {
    const path = join(dir, 'session.jsonl')
    await writeFile(path, `${JSON.stringify(callEvent('c1'))}\n\u0000\u0000\u0000\n`)
    const { log, recovered, tornLine } = await openJsonlSessionLog(path)
    expect(recovered).toHaveLength(1)
    expect(tornLine).toEqual({ line: 2, text: '\u0000\u0000\u0000' })
    await log.close()
    expect(await readFile(path, 'utf8')).toBe(`${JSON.stringify(callEvent('c1'))}\n`)
  })

  it('reports a torn line that ends inside a multi-byte character', async () => {
    const path = join(dir, 'session.jsonl')
    const line = Buffer.from(`${JSON.stringify(callEvent('c1', { q: 'é' }))}\n`)
    const cut = line.indexOf(Buffer.from('é')) + 1
    await writeFile(path, Buffer.concat([line, line.subarray(0, cut)]))
    const { log, recovered, tornLine } = await openJsonlSessionLog(path)
    expect(recovered).toHaveLength(1)
    expect(tornLine?.line).toBe(2)
    await log.close()
  })

  it('refuses a file with a corrupt line before the last one, naming the line', async () => {
    const path = join(dir, 'session.jsonl')
    await writeFile(path, `${JSON.stringify(callEvent('c1'))}\n{"type":\n${JSON.stringify(resultEvent('c1'))}\n`)
    const error = await logError(openJsonlSessionLog(path))
    expect(error.code).toBe(ToolErrorCode.SESSION_LOG_FAILED)
    expect(error.line).toBe(2)
    expect(error.message).toMatch(/corrupt at line 2/)
  })

  it('refuses a middle line that is JSON but not a session event', async () => {
    const path = join(dir, 'session.jsonl')
    const leaked = { ...resultEvent('c1'), value: 42 }
    await writeFile(path, `${JSON.stringify(callEvent('c1'))}\n${JSON.stringify(leaked)}\n${JSON.stringify(callEvent('c2'))}\n`)
    const error = await logError(openJsonlSessionLog(path))
    expect(error.line).toBe(2)
    expect(error.message).toMatch(/unexpected field \$\.value/)
  })

  it('refuses a middle line whose number would round', async () => {
    const path = join(dir, 'session.jsonl')
    const rounding = '{"type":"tool/call","callId":"c1","rootCallId":"c1","name":"grep","arguments":{"id":9007199254740993}}'
    await writeFile(path, `${rounding}\n${JSON.stringify(callEvent('c2'))}\n`)
    const error = await logError(openJsonlSessionLog(path))
    expect(error.line).toBe(1)
    expect(error.message).toMatch(/\$\.arguments\.id/)
  })

  it('fails to open a path that is a directory', async () => {
    const path = join(dir, 'a-directory')
    await mkdir(path)
    expect((await logError(openJsonlSessionLog(path))).message).toMatch(/Cannot read session log/)
  })

  it('rejects appends after close and closes once', async () => {
    const { log } = await openJsonlSessionLog(join(dir, 'session.jsonl'))
    const pending = log.append(callEvent('c1'))
    const closed = log.close()
    expect(log.close()).toBe(closed)
    await closed
    await pending
    expect((await logError(log.append(callEvent('c2')))).message).toMatch(/after close/)
  })

  it('closes through await using', async () => {
    const path = join(dir, 'session.jsonl')
    {
      await using opened = await openJsonlSessionLogDisposable(path)
      await opened.append(callEvent('c1'))
    }
    expect((await fileLines(path))[0]).toBe(JSON.stringify(callEvent('c1')))
  })
})

async function openJsonlSessionLogDisposable(path: string): Promise<SessionLog> {
  return (await openJsonlSessionLog(path)).log
}

describe('replaySession', () => {
  // A read tool whose completed card needs meta (total lines) that only the canonical value had.
  const readTool: ToolDefinition = {
    name: 'read',
    description: 'Read a file window.',
    parameters: { type: 'object', properties: { path: { type: 'string' }, offset: { type: 'integer' } }, required: ['path'] },
    output: {
      schema: { type: 'object' },
      render: (_args, value) => [text((value as { lines: string[] }).lines.join('\n'))],
      presentationMeta: (_args, value) => ({ totalLines: (value as { totalLines: number }).totalLines }),
    },
    execute: async () => ({ lines: [], totalLines: 0 }),
    presentCall: (args) => {
      const { path } = args as { path: string }
      return { card: 'generic', title: `Read ${path}`, kind: 'read', locations: [{ path }] }
    },
    presentResult: (args, result): ToolResultView | undefined => {
      if (result.isError) return undefined
      const { path, offset = 1 } = args as { path: string; offset?: number }
      const body = result.content[0]?.type === 'text' ? result.content[0].text : ''
      const lines = body.split('\n').map((line, index) => ({ number: offset + index, text: line }))
      return { card: 'read', path, offset, lines, totalLines: (result.meta as { totalLines: number }).totalLines }
    },
  }
  const lookup = (name: string): ToolDefinition | undefined => (name === 'read' ? readTool : undefined)

  it('gives a call id used again after its call ended a card of its own (providers that number ids per turn)', () => {
    const events: SessionEvent[] = [
      { type: 'tool/call', callId: 'call_0', rootCallId: 'call_0', name: 'read', arguments: { path: 'a' } },
      { type: 'tool/result', callId: 'call_0', name: 'read', isError: true, content: [text('turn 1 failed')] },
      { type: 'tool/call', callId: 'call_0', rootCallId: 'call_0', name: 'other', arguments: { q: 1 } },
      { type: 'tool/result', callId: 'call_0', name: 'other', isError: false, content: [text('turn 2')] },
    ]
    const cards = replaySession(events, lookup)
    expect(cards.map((card) => [card.callId, card.name, card.isError])).toEqual([
      ['call_0', 'read', true],
      ['call_0', 'other', false],
    ])
    // A call event repeated before its result stays one card.
    const repeated = replaySession([events[0] as SessionEvent, events[0] as SessionEvent, events[1] as SessionEvent], lookup)
    expect(repeated).toHaveLength(1)
  })

  it('reproduces the cards a live UI showed, from a reopened log without any canonical value', async () => {
    const path = join(dir, 'session.jsonl')
    const { log } = await openJsonlSessionLog(path)
    const args = snapshotJson({ path: 'src/a.ts', offset: 10 })
    const value = snapshotJson({ lines: ['const a = 1', 'export { a }'], totalLines: 99, secret: 'canonical-only' })
    const live: ToolExecutionResult = {
      isError: false,
      value,
      content: readTool.output.render(args, value),
      meta: readTool.output.presentationMeta?.(args, value) as JsonValue,
    }
    const liveCards: ReplayCard[] = [
      {
        callId: 'c1',
        name: 'read',
        call: presentToolCall(readTool, 'read', args),
        result: presentToolResult(readTool, args, live),
        isError: false,
      },
    ]
    await log.append(toolCallEvent({ callId: 'c1', name: 'read', arguments: args }))
    await log.append(toolResultEvent('c1', 'read', live))
    await log.close()

    expect(await readFile(path, 'utf8')).not.toContain('canonical-only')
    const { recovered, log: reopened } = await openJsonlSessionLog(path)
    await reopened.close()
    const replayed = replaySession(recovered, lookup)
    expect(replayed).toEqual(liveCards)
    expect(replayed[0]?.result).toEqual({
      card: 'read',
      path: 'src/a.ts',
      offset: 10,
      lines: [
        { number: 10, text: 'const a = 1' },
        { number: 11, text: 'export { a }' },
      ],
      totalLines: 99,
    })
  })

  it('never shows a presenter the canonical value, even when the live caller passes it', () => {
    let seen: unknown
    const tool: ToolDefinition = { ...readTool, presentResult: (_args, result) => ((seen = result), undefined) }
    const live: ToolExecutionResult = { isError: false, value: { secret: 1 }, content: [text('x')] }
    presentToolResult(tool, {}, live)
    expect(seen).toEqual({ isError: false, content: [text('x')] })
  })

  it('falls back to generic cards for a tool that is not known or has no presenters', () => {
    const cards = replaySession([callEvent('c1', { q: 'x' }), resultEvent('c1', 'found')], () => undefined)
    expect(cards).toEqual([
      {
        callId: 'c1',
        name: 'grep',
        call: { card: 'generic', title: 'grep', rawInput: { q: 'x' } },
        result: { card: 'generic', content: [text('found')] },
        isError: false,
      },
    ])
  })

  const broken: [string, Partial<ToolDefinition>][] = [
    ['presenters that throw', { presentCall: () => { throw new Error('bug') }, presentResult: () => { throw new Error('bug') } }],
    [
      'views that are not JSON',
      {
        presentCall: () => ({ card: 'generic', title: 'x', kind: undefined }) as unknown as ToolCallView,
        presentResult: () => ({ card: 'generic', when: new Date() }) as unknown as ToolResultView,
      },
    ],
    [
      'views with an unknown card',
      {
        presentCall: () => ({ card: 'search', title: 'x' }) as unknown as ToolCallView,
        presentResult: () => ({ card: 'video' }) as unknown as ToolResultView,
      },
    ],
    [
      // A UI dispatching on the card would show a partial search as complete, or a card without its title.
      'known cards missing a field they must have',
      {
        presentCall: () => ({ card: 'generic' }) as unknown as ToolCallView,
        presentResult: () => ({ card: 'search', shape: 'matches', files: [] }) as unknown as ToolResultView,
      },
    ],
    [
      'known cards with a field of the wrong kind',
      {
        presentCall: () => ({ card: 'diff', title: 'x', diffs: [{ path: 'a', newText: 'b' }] }) as unknown as ToolCallView,
        presentResult: () => ({ card: 'terminal', exitCode: 'zero' }) as unknown as ToolResultView,
      },
    ],
    [
      'known cards carrying a field their card does not have',
      {
        presentCall: () => ({ card: 'terminal', title: 'x', body: 'y' }) as unknown as ToolCallView,
        presentResult: () => ({ card: 'web', kind: 'fetch', url: 'u', statusCode: 200, truncated: false, body: '<html>' }) as unknown as ToolResultView,
      },
    ],
    [
      'generic cards with invalid content blocks',
      {
        presentCall: () => ({ card: 'generic', title: 'x', content: [{ type: 'text' }] }) as unknown as ToolCallView,
        presentResult: () => ({ card: 'generic', content: [{ type: 'image' }] }) as unknown as ToolResultView,
      },
    ],
  ]
  it('passes every card of the vocabulary through in its full shape', () => {
    const calls: ToolCallView[] = [
      { card: 'generic', title: 't', kind: 'read', rawInput: { a: [1] }, content: [text('c')], locations: [{ path: 'a.ts', line: 3 }, { path: 'b.ts' }] },
      { card: 'terminal', title: 'ls', description: 'list', cwd: '/w' },
      { card: 'diff', title: 'edit', diffs: [{ path: 'a', oldText: null, newText: 'x' }], locations: [{ path: 'a' }] },
    ]
    const results: ToolResultView[] = [
      { card: 'generic', title: 't', content: [text('c')] },
      { card: 'terminal', title: 'ls', output: 'a\nb', exitCode: null, signal: 'SIGTERM' },
      { card: 'diff', diffs: [{ path: 'a', oldText: 'x', newText: 'y' }] },
      { card: 'search', shape: 'matches', truncated: true, total: 9, files: [{ path: 'a', matches: [{ line: 1, text: 'x' }] }] },
      { card: 'search', shape: 'paths', title: 'glob', truncated: false, total: 1, paths: ['a'] },
      { card: 'read', path: 'a.ts', offset: 1, lines: [{ number: 1, text: 'x' }], totalLines: 1, lang: 'ts', content: 'x' },
      { card: 'web', kind: 'search', sources: [{ url: 'u', title: 't', snippet: 's' }], answer: 'a', truncated: false },
      { card: 'web', kind: 'fetch', title: 'f', url: 'u', statusCode: 404, truncated: true },
    ]
    for (const view of calls) expect(presentToolCall({ ...readTool, presentCall: () => view }, 'x', {})).toEqual(view)
    for (const view of results) expect(presentToolResult({ ...readTool, presentResult: () => view }, {}, { isError: false, content: [] })).toEqual(view)
  })

  for (const [what, presenters] of broken) {
    it(`contains ${what} and shows the generic cards instead`, () => {
      const tool = { ...readTool, name: 'grep', ...presenters } as ToolDefinition
      const cards = replaySession([callEvent('c1'), resultEvent('c1')], () => tool)
      expect(cards[0]?.call).toEqual({ card: 'generic', title: 'grep', rawInput: { q: 'c1' } })
      expect(cards[0]?.result).toEqual({ card: 'generic', content: [text('ok')] })
    })
  }

  it('contains a lookup that throws', () => {
    const cards = replaySession([callEvent('c1')], () => {
      throw new Error('registry gone')
    })
    expect(cards[0]?.call.card).toBe('generic')
  })

  it('leaves a call without a result pending', () => {
    const [card] = replaySession([callEvent('c1')], lookup)
    expect(card?.result).toBeUndefined()
    expect(card?.isError).toBeUndefined()
  })

  it('attaches run_code sub-dispatches to their card in dispatch order', () => {
    const events: SessionEvent[] = [
      { type: 'tool/call', callId: 'r1', rootCallId: 'r1', name: 'run_code', arguments: { code: '...' } },
      { type: 'tool/code-dispatch-start', callId: 'r1', subCallId: 'r1:code:1', name: 'grep', arguments: {} },
      { type: 'tool/code-dispatch-start', callId: 'r1', subCallId: 'r1:code:2', name: 'read', arguments: {} },
      { type: 'tool/code-dispatch', callId: 'r1', subCallId: 'r1:code:2', name: 'read', arguments: {}, isError: true, content: [] },
      { type: 'tool/result', callId: 'r1', name: 'run_code', isError: false, content: [text('done')] },
    ]
    const [card] = replaySession(events, () => undefined)
    expect(card?.subCalls).toEqual([
      { subCallId: 'r1:code:1', name: 'grep' },
      { subCallId: 'r1:code:2', name: 'read', isError: true },
    ])
  })

  it('keeps nested calls as their own cards with their parent', () => {
    const nested: SessionEvent = { type: 'tool/call', callId: 'c2', rootCallId: 'c1', name: 'grep', arguments: {}, parentCallId: 'c1' }
    const cards = replaySession([callEvent('c1'), nested], () => undefined)
    expect(cards.map((card) => [card.callId, card.parentCallId])).toEqual([
      ['c1', undefined],
      ['c2', 'c1'],
    ])
  })

  it('gives a result without its call a generic card, without running the tool presenter', () => {
    const cards = replaySession([{ ...resultEvent('c9'), name: 'read' } as SessionEvent], lookup)
    expect(cards).toEqual([
      {
        callId: 'c9',
        name: 'read',
        call: { card: 'generic', title: 'read' },
        result: { card: 'generic', content: [text('ok')] },
        isError: false,
      },
    ])
  })

  it('returns deep-frozen cards', () => {
    const [card] = replaySession([callEvent('c1'), resultEvent('c1')], lookup)
    expect(Object.isFrozen(card)).toBe(true)
    expect(Object.isFrozen(card?.call)).toBe(true)
  })

  it('replays a result presented from an error with its failure', () => {
    const events: SessionEvent[] = [
      { type: 'tool/call', callId: 'c1', rootCallId: 'c1', name: 'read', arguments: { path: 'x' } },
      {
        type: 'tool/result',
        callId: 'c1',
        name: 'read',
        isError: true,
        content: [text('no such file')],
        error: { message: 'no such file', info: { code: 'TOOL_FAILED', name: 'Error' } },
      },
    ]
    const [card] = replaySession(events, lookup)
    expect(card?.isError).toBe(true)
    expect(card?.result).toEqual({ card: 'generic', content: [text('no such file')] })
    const failure: ToolResult = { isError: true, content: [text('no such file')], error: { message: 'no such file' } }
    expect(presentToolResult(readTool, { path: 'x' }, failure)).toEqual(card?.result)
  })
})
