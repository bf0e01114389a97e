import { MessageChannel, Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { KeepAwake, STRETCH } from '../../sandbox/keep-awake.ts'
import type { AwakePoller } from '../../sandbox/keep-awake.ts'
import { SpinBackoff } from '../../sandbox/spin-backoff.js'
import {
  MAIN_AWAKE,
  MessageRing,
  READ,
  REPLIES,
  RING_HEADER_BYTES,
  WORKER_IDLE,
  WRITE,
  createRingBuffer,
} from '../../sandbox/quickjs/message-ring.ts'
// @ts-expect-error plain JavaScript module of the worker, without declarations
import * as writerModule from '../../sandbox/quickjs/ring-writer.js'

interface RingWriter {
  send(message: unknown): void
}
const createRingWriter = writerModule.createRingWriter as (ring: SharedArrayBuffer, bell: () => void, waitMs?: number) => RingWriter

function drainAll(ring: MessageRing): unknown[] {
  const out: unknown[] = []
  ring.drain((message) => out.push(message))
  return out
}

describe('message ring', () => {
  it('agrees with the writer on its layout', () => {
    expect({
      RING_HEADER_BYTES: writerModule.RING_HEADER_BYTES,
      REPLIES: writerModule.REPLIES,
      WRITE: writerModule.WRITE,
      READ: writerModule.READ,
      MAIN_AWAKE: writerModule.MAIN_AWAKE,
      WORKER_IDLE: writerModule.WORKER_IDLE,
    }).toEqual({ RING_HEADER_BYTES, REPLIES, WRITE, READ, MAIN_AWAKE, WORKER_IDLE })
  })

  it('carries messages in order, multi-byte text intact, across the end of the ring many times', () => {
    const buffer = createRingBuffer(97)
    const ring = new MessageRing(buffer)
    let bells = 0
    const writer = createRingWriter(buffer, () => {
      bells += 1
    })
    const sent: unknown[] = []
    const received: unknown[] = []
    for (let i = 0; i < 400; i++) {
      // Frames from 16 to 80 bytes in a 96-byte ring (the writer would wait for room beyond what
      // is free, and nobody else would read), with 2-, 3- and 4-byte UTF-8 characters.
      const message = { i, text: 'é中😀x'.repeat(i % 6) }
      writer.send(message)
      sent.push(message)
      received.push(...drainAll(ring))
    }
    received.push(...drainAll(ring))
    expect(received).toEqual(sent)
    expect(Atomics.load(ring.words, READ)).toBe(Atomics.load(ring.words, WRITE))
    // Nobody announced polling, so every message rang the bell.
    expect(bells).toBe(400)
  })

  it('does not ring the bell while the main thread says it polls', () => {
    const buffer = createRingBuffer(256)
    const ring = new MessageRing(buffer)
    let bells = 0
    const writer = createRingWriter(buffer, () => {
      bells += 1
    })
    Atomics.store(ring.words, MAIN_AWAKE, 1)
    writer.send({ a: 1 })
    writer.send({ a: 2 })
    Atomics.store(ring.words, MAIN_AWAKE, 0)
    writer.send({ a: 3 })
    expect(bells).toBe(1)
    expect(drainAll(ring)).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }])
  })

  it('hands over a message many times larger than the ring, from another thread, in pieces', async () => {
    const buffer = createRingBuffer(1024)
    const ring = new MessageRing(buffer)
    const bell = new MessageChannel()
    const big = { t: 'log', text: 'ü😀'.repeat(5_000) }
    const messages = [{ n: 1 }, big, { n: 2 }, big, { n: 3 }]
    const received: unknown[] = []
    bell.port1.on('message', () => ring.drain((message) => received.push(message)))
    const worker = new Worker(new URL('./fixtures/ring-writer-worker.js', import.meta.url), {
      workerData: { ring: buffer, bell: bell.port2, messages },
      transferList: [bell.port2],
    })
    const report = await new Promise<{ bells: number }>((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
    // The last bell may still be on its way.
    for (let i = 0; i < 100 && received.length < messages.length; i++) await new Promise((resolve) => setTimeout(resolve, 5))
    bell.port1.close()
    await worker.terminate()
    expect(received).toEqual(messages)
    expect(report.bells).toBeGreaterThan(messages.length)
  })
})

describe('keep-awake', () => {
  /** A poller whose engine says it is working for the first `workingFor` times it is asked. */
  function poller(workingFor = 0): AwakePoller & { log: string[]; polls: number; asked: number; lastPoll: number } {
    const log: string[] = []
    return {
      log,
      polls: 0,
      asked: 0,
      lastPoll: 0,
      awake(on) {
        log.push(on ? 'on' : 'off')
      },
      poll() {
        this.polls += 1
        this.lastPoll = performance.now()
      },
      working() {
        this.asked += 1
        return this.asked <= workingFor
      },
    }
  }

  async function closed(p: { log: string[] }): Promise<void> {
    for (let i = 0; i < 200 && p.log.at(-1) !== 'off'; i++) await settle(5)
    expect(p.log.at(-1)).toBe('off')
  }

  const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

  it('polls on every turn of a window after an answer, announcing it, and looks once more after', async () => {
    const keepAwake = new KeepAwake(2_000)
    const p = poller()
    keepAwake.register(p)
    keepAwake.answered()
    expect(p.log).toEqual(['on'])
    let timerRan = false
    setTimeout(() => {
      timerRan = true
    }, 0)
    await settle(20)
    // Never blocking: a timer ran during the window, and the window polled many times.
    expect(timerRan).toBe(true)
    expect(p.log).toEqual(['on', 'off'])
    expect(p.polls).toBeGreaterThan(2)
  })

  it('backs off after windows that saw no activity, and resumes after one that did', async () => {
    const keepAwake = new KeepAwake(500)
    const p = poller()
    keepAwake.register(p)
    const idleWindow = async () => {
      keepAwake.answered()
      await settle(10)
    }
    // Two idle windows in a row are tolerated...
    await idleWindow()
    await idleWindow()
    expect(p.log).toEqual(['on', 'off', 'on', 'off'])
    // ...the third makes the next two answers open none.
    await idleWindow()
    expect(p.log).toHaveLength(6)
    keepAwake.answered()
    keepAwake.answered()
    expect(p.log).toHaveLength(6)
    keepAwake.answered()
    expect(p.log).toHaveLength(7)
    keepAwake.activity()
    await settle(10)
    // That window saw activity: the very next answer opens a window again.
    keepAwake.answered()
    expect(p.log.slice(6)).toEqual(['on', 'off', 'on'])
    await settle(10)
  })

  it('spin backoff: tolerates two misses, then skips 2, 4, 8 ... up to 64 waits, and one hit resets it', () => {
    const backoff = new SpinBackoff()
    const skippedAfterMiss = (): number => {
      backoff.miss()
      let skipped = 0
      while (!backoff.shouldSpin()) skipped += 1
      return skipped
    }
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(skippedAfterMiss)).toEqual([0, 0, 2, 4, 8, 16, 32, 64, 64, 64])
    backoff.hit()
    expect(skippedAfterMiss()).toBe(0)
    backoff.miss()
    backoff.hit()
    expect(backoff.shouldSpin()).toBe(true)
  })

  it('announces to a poller registered mid-window, and withdraws from one unregistered mid-window, looking once more', async () => {
    const keepAwake = new KeepAwake(5_000)
    const first = poller()
    keepAwake.register(first)
    keepAwake.answered()
    const late = poller()
    const stop = keepAwake.register(late)
    expect(late.log).toEqual(['on'])
    stop()
    expect(late.log).toEqual(['on', 'off'])
    // The last look comes in a turn of its own (the caller may be inside one of its messages).
    expect(late.polls).toBe(0)
    await settle(20)
    expect(late.log).toEqual(['on', 'off'])
    expect(late.polls).toBe(1)
    expect(first.log).toEqual(['on', 'off'])
  })

  it('stays awake past the window while the engine works toward its next message, up to STRETCH windows', async () => {
    const windowMs = 2
    const keepAwake = new KeepAwake(windowMs * 1000)
    const busy = poller(Number.POSITIVE_INFINITY)
    keepAwake.register(busy)
    const answeredAt = performance.now()
    keepAwake.answered()
    await closed(busy)
    // It kept polling beyond one window, then gave up at the stretch limit although still "working".
    expect(busy.asked).toBeGreaterThan(0)
    expect(busy.lastPoll - answeredAt).toBeGreaterThanOrEqual(STRETCH * windowMs - 0.1)
    expect(busy.log).toEqual(['on', 'off'])
  })

  it('closes at the first look that finds the engine waiting once the window is over', async () => {
    const keepAwake = new KeepAwake(1_000)
    const p = poller(3)
    keepAwake.register(p)
    keepAwake.answered()
    await closed(p)
    // Asked after the window: three times "working", then "waiting" closed it at once.
    expect(p.asked).toBe(4)
  })

  it('does nothing with a window of 0', async () => {
    const keepAwake = new KeepAwake(0)
    const p = poller()
    keepAwake.register(p)
    keepAwake.answered()
    await settle(5)
    expect(p.log).toEqual([])
    expect(p.polls).toBe(0)
  })
})
