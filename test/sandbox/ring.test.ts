import { MessageChannel, Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { KeepAwake, STRETCH, SpinBackoff } from '../../sandbox/keep-awake.ts'
import type { AwakePoller } from '../../sandbox/keep-awake.ts'
import {
  MAIN_AWAKE,
  READ,
  RingReader,
  RingWriter,
  WRITE,
  createMessageSender,
  createRingBuffer,
  decodeAnswers,
  FieldReader,
  encodeAnswers,
} from '../../sandbox/quickjs/ring.js'

function drainAll(ring: RingReader): string[] {
  const out: string[] = []
  ring.drain((text) => out.push(text))
  return out
}

describe('rings', () => {
  it('carry frames in order, multi-byte text intact, across the end of the ring many times', () => {
    const buffer = createRingBuffer(97)
    const reader = new RingReader(buffer)
    const writer = new RingWriter(buffer)
    const sent: string[] = []
    const received: string[] = []
    for (let i = 0; i < 600; i++) {
      // Frames of 6 to 48 bytes in a 97-byte ring (two always fit), with 2-, 3- and 4-byte UTF-8
      // characters: some fit whole before the end of the ring, some are split across it.
      const text = `${i}:` + 'é中😀x'.repeat(i % 4)
      expect(writer.tryWrite(text)).toBe(true)
      sent.push(text)
      // Two frames between reads now and then, so the write position moves unevenly.
      if (i % 3 !== 1) received.push(...drainAll(reader))
    }
    received.push(...drainAll(reader))
    expect(received).toEqual(sent)
    expect(Atomics.load(reader.words, READ)).toBe(Atomics.load(reader.words, WRITE))
  })

  it('tryWrite writes nothing when the whole frame does not fit, and fits it once room is freed', () => {
    const buffer = createRingBuffer(64)
    const reader = new RingReader(buffer)
    const writer = new RingWriter(buffer)
    expect(writer.tryWrite('a'.repeat(40))).toBe(true)
    const write = Atomics.load(writer.words, WRITE)
    // 4 + 20 bytes would fit in the 19 left only in part.
    expect(writer.tryWrite('b'.repeat(20))).toBe(false)
    // A character counted in UTF-8 bytes, not UTF-16 units: 5 x 4 bytes does not fit either.
    expect(writer.tryWrite('😀'.repeat(5))).toBe(false)
    expect(Atomics.load(writer.words, WRITE)).toBe(write)
    expect(writer.tryWrite('c'.repeat(15))).toBe(true)
    expect(drainAll(reader)).toEqual(['a'.repeat(40), 'c'.repeat(15)])
    expect(writer.tryWrite('b'.repeat(20))).toBe(true)
    expect(drainAll(reader)).toEqual(['b'.repeat(20)])
  })

  it('refuses an empty frame', () => {
    const writer = new RingWriter(createRingBuffer(64))
    expect(() => writer.write('', () => {}, 1)).toThrow(RangeError)
  })

  it('hand over a frame many times larger than the ring, from another thread, in pieces', async () => {
    const buffer = createRingBuffer(1024)
    const reader = new RingReader(buffer)
    const bell = new MessageChannel()
    const big = 'ü😀'.repeat(5_000)
    const frames = ['one', big, 'two', big, 'three']
    const received: string[] = []
    bell.port1.on('message', () => reader.drain((text) => received.push(text)))
    const worker = new Worker(new URL('./fixtures/ring-frames-worker.js', import.meta.url), {
      workerData: { ring: buffer, bell: bell.port2, frames },
      transferList: [bell.port2],
    })
    const report = await new Promise<{ full: number }>((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
    // The last bell may still be on its way.
    for (let i = 0; i < 100 && received.length < frames.length; i++) await new Promise((resolve) => setTimeout(resolve, 5))
    bell.port1.close()
    await worker.terminate()
    expect(received).toEqual(frames)
    expect(report.full).toBeGreaterThan(0)
  })

  it('message sender: rings the bell unless the main thread says it polls', () => {
    const buffer = createRingBuffer(256)
    const reader = new RingReader(buffer)
    let bells = 0
    const send = createMessageSender(buffer, () => {
      bells += 1
    })
    Atomics.store(reader.words, MAIN_AWAKE, 1)
    send('{"a":1}')
    send('{"a":2}')
    Atomics.store(reader.words, MAIN_AWAKE, 0)
    send('{"a":3}')
    expect(bells).toBe(1)
    expect(drainAll(reader)).toEqual(['{"a":1}', '{"a":2}', '{"a":3}'])
  })

  it('answer frames round-trip, whatever the envelopes hold', () => {
    const answers = [0, '{"ok":true,"value":"1,2,3"}', 17, '{"ok":false,"message":"é中😀, 4,5"}', 3, '{"ok":true,"value":""}']
    const text = encodeAnswers(9, 42, answers)
    expect(decodeAnswers(text)).toEqual({ seq: 9, run: 42, answers })
    expect(decodeAnswers(encodeAnswers(0, 7, []))).toEqual({ seq: 0, run: 7, answers: [] })
    for (const bad of ['', 'x,', '1', '1,2', '1,2,3', '1,2,3,', '1,2,3,50,{}', '1,2,-3,2,{}', '1,2,3,2', '-1,2,']) {
      expect(() => decodeAnswers(bad), bad).toThrow('malformed answer frame')
    }
  })
})

describe('FieldReader', () => {
  it('reads 1 to 15 plain digits and a comma, and texts of the length given, nothing else', () => {
    const fields = new FieldReader('7,123456789012345,3,abc', 'bad')
    expect([fields.integer(), fields.integer(), fields.text(fields.integer()), fields.done]).toEqual([7, 123456789012345, 'abc', true])
    for (const bad of ['', ',', '-1,', '+1,', ' 1,', '1 ,', '1e3,', '1.5,', '1234567890123456,', '1']) {
      expect(() => new FieldReader(bad, 'bad').integer(), JSON.stringify(bad)).toThrow('bad')
    }
    expect(() => new FieldReader('ab', 'bad').text(3)).toThrow('bad')
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

  /** A keep-awake with a 0.5 ms window, one poller, and a way to let one window pass idle. */
  function watched() {
    const keepAwake = new KeepAwake(500)
    const p = poller()
    keepAwake.register(p)
    const idleWindow = async () => {
      keepAwake.answered()
      await settle(10)
    }
    return { keepAwake, p, idleWindow }
  }

  it('backs off after windows that saw no activity, and resumes after one that did', async () => {
    const { keepAwake, p, idleWindow } = watched()
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

  it('counts activity inside a window as a hit at once, so misses around it are not in a row', async () => {
    const { keepAwake, p, idleWindow } = watched()
    await idleWindow()
    await idleWindow()
    // A busy window: the guest called back, was answered, then nothing came (a stall) and it closed.
    keepAwake.answered()
    keepAwake.activity()
    keepAwake.answered()
    await settle(10)
    expect(p.log).toEqual(['on', 'off', 'on', 'off', 'on', 'off'])
    // Not three misses in a row: the next answer still opens a window.
    keepAwake.answered()
    expect(p.log).toHaveLength(7)
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
    // A 20 ms window: the stretch limit (5 windows) stays far beyond three turns of the event
    // loop even on a loaded machine, where a 1 ms window let it cut the looks short.
    const keepAwake = new KeepAwake(20_000)
    const p = poller(3)
    keepAwake.register(p)
    keepAwake.answered()
    await closed(p)
    // Asked after the window: three times "working", then "waiting" closed it at once.
    expect(p.asked).toBe(4)
  })

  it('polls every poller in a turn even when one withdraws while it is polled', async () => {
    const keepAwake = new KeepAwake(5_000)
    const first = poller()
    const stopFirst = keepAwake.register({ ...first, poll: () => stopFirst() })
    const second = poller()
    keepAwake.register(second)
    keepAwake.answered()
    // Runs right after the window's first turn, in the same phase of the event loop.
    const polledInFirstTurn = await new Promise<number>((resolve) => setImmediate(() => resolve(second.polls)))
    expect(polledInFirstTurn).toBe(1)
    await closed(second)
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
