// Byte rings in shared memory that carry text frames between the main thread and a QuickJS worker:
// the message ring (worker → main: every message the worker sends) and the answer ring (main →
// worker: sub-call answers). Plain JavaScript so the worker can import it; ring.d.ts declares it.
//
// Why not `postMessage`: a sub-call is a round trip, and on the small VMs this runs on each post
// costs a structured clone on both sides plus a wake-up of the receiver's event loop. Through shared
// memory a round trip between two threads that are awake costs about 2 us (measured: 1.7-2.0 us,
// against 4.4-6.0 us with a port in the same loop).
//
// Layout of each ring: an `Int32Array` header of RING_HEADER_BYTES, then the data area.
//  - `[WRITE]`, `[READ]`: byte positions in the data area. The writer owns WRITE, the reader READ;
//    equal means empty, and the writer always leaves one byte free.
//  - The message ring's header also carries the round trip's signals: `[REPLIES]`, bumped by the
//    main thread after each answer it writes (the worker waits on it); `[MAIN_AWAKE]`, 1 while the
//    main thread polls the message ring on every turn (keep-awake.ts), else the worker rings a bell
//    (an empty message on a port); `[WORKER_IDLE]`, 1 while the worker waits for answers with none
//    in hand (set by the worker before it spins or sleeps, cleared by it when it wakes and by the
//    main thread when it answers); `[WORKER_SLEEPING]`, 1 while the worker waits in Atomics.wait
//    (after its spin, if any), the only time the main thread notifies `[REPLIES]` (a notify takes a
//    process-wide lock even with nobody waiting). The rest of the header is reserved.
//  - Frames: a 4-byte little-endian byte length, then that much UTF-8 text, wrapping around the
//    end of the data area. A frame is never empty.

export const RING_HEADER_BYTES = 32
export const RING_DATA_BYTES = 1 << 20
export const REPLIES = 0
export const WRITE = 1
export const READ = 2
export const MAIN_AWAKE = 3
export const WORKER_IDLE = 4
export const WORKER_SLEEPING = 5
export const ANSWERS_TAKEN = 6

/** A fresh ring's shared memory, with `dataBytes` of room for frames. */
export function createRingBuffer(dataBytes = RING_DATA_BYTES) {
  return new SharedArrayBuffer(RING_HEADER_BYTES + dataBytes)
}

/** The writing end of a ring. */
export class RingWriter {
  #data
  #capacity
  #header = Buffer.alloc(4)

  /** @param {SharedArrayBuffer} buffer */
  constructor(buffer) {
    this.words = new Int32Array(buffer, 0, RING_HEADER_BYTES / 4)
    this.#data = Buffer.from(buffer, RING_HEADER_BYTES)
    this.#capacity = this.#data.length
  }

  /**
   * Write `text` as one frame if the ring has room for all of it now, and publish it; otherwise
   * write nothing and return false. Never waits: the main thread writes with this.
   * @param {string} text
   */
  tryWrite(text) {
    if (text.length === 0) throw new RangeError('a ring frame cannot be empty')
    const words = this.words
    const capacity = this.#capacity
    const at = Atomics.load(words, WRITE)
    const free = (Atomics.load(words, READ) - at - 1 + capacity) % capacity
    // At most 3 bytes per UTF-16 unit: count exactly only when that bound does not settle it.
    let bytes = text.length * 3
    if (4 + bytes > free || at + 4 + bytes > capacity) {
      bytes = Buffer.byteLength(text, 'utf8')
      if (4 + bytes > free) return false
      if (at + 4 + bytes > capacity) {
        this.#copy(at, this.#frameHeader(bytes))
        this.#copy((at + 4) % capacity, Buffer.from(text, 'utf8'))
        Atomics.store(words, WRITE, (at + 4 + bytes) % capacity)
        return true
      }
    }
    // The common case: the whole frame in one stretch, encoded straight into the ring.
    const written = this.#data.write(text, at + 4, 'utf8')
    this.#data.writeUInt32LE(written, at)
    Atomics.store(words, WRITE, (at + 4 + written) % capacity)
    return true
  }

  /**
   * Write `text` as one frame, in pieces if it is bigger than the free room, each published as
   * soon as it is written; while the ring is full, call `full()` (make sure the reader reads) and
   * wait up to `waitMs` for room. Blocks: only the worker writes with this.
   * @param {string} text
   * @param {() => void} full
   * @param {number} waitMs
   */
  write(text, full, waitMs) {
    if (this.tryWrite(text)) return
    const body = Buffer.from(text, 'utf8')
    this.#writeWaiting(this.#frameHeader(body.length), full, waitMs)
    this.#writeWaiting(body, full, waitMs)
  }

  #frameHeader(length) {
    this.#header.writeUInt32LE(length, 0)
    return this.#header
  }

  /** Copy `bytes` in at `at`, wrapping around the end (the caller made sure there is room). */
  #copy(at, bytes) {
    const first = Math.min(bytes.length, this.#capacity - at)
    bytes.copy(this.#data, at, 0, first)
    if (first < bytes.length) bytes.copy(this.#data, 0, first)
  }

  #writeWaiting(bytes, full, waitMs) {
    const words = this.words
    const capacity = this.#capacity
    let offset = 0
    while (offset < bytes.length) {
      const at = Atomics.load(words, WRITE)
      const read = Atomics.load(words, READ)
      const free = (read - at - 1 + capacity) % capacity
      if (free === 0) {
        full()
        Atomics.wait(words, READ, read, waitMs)
        continue
      }
      const length = Math.min(free, bytes.length - offset, capacity - at)
      bytes.copy(this.#data, at, offset, offset + length)
      Atomics.store(words, WRITE, (at + length) % capacity)
      offset += length
    }
  }
}

/**
 * The worker's end of the message ring: `send(text)` writes a frame, then rings `bell` if the main
 * thread is not polling the ring. The bell check comes after the frame is published, and the main
 * thread withdraws MAIN_AWAKE before its last look at the ring, so one of the two sees the frame.
 * @param {SharedArrayBuffer} buffer
 * @param {() => void} bell tells the main thread to read the ring (an empty message on a port)
 * @param {number} waitMs how long one wait for room lasts before the bell is rung again
 * @returns {(text: string) => void}
 */
export function createMessageSender(buffer, bell, waitMs = 100) {
  const writer = new RingWriter(buffer)
  return (text) => {
    writer.write(text, bell, waitMs)
    if (Atomics.load(writer.words, MAIN_AWAKE) === 0) bell()
  }
}

/** The reading end of a ring. */
export class RingReader {
  #data
  #capacity
  /** Bytes of the frame being read: its length header first, then its body. */
  #pending = []
  #pendingBytes = 0
  /** Body length of the frame being read, or -1 while its length header is still incomplete. */
  #frameLength = -1

  /** @param {SharedArrayBuffer} buffer */
  constructor(buffer) {
    this.words = new Int32Array(buffer, 0, RING_HEADER_BYTES / 4)
    this.#data = Buffer.from(buffer, RING_HEADER_BYTES)
    this.#capacity = this.#data.length
  }

  /** True when bytes were written that are not yet read. */
  hasData() {
    return Atomics.load(this.words, WRITE) !== Atomics.load(this.words, READ)
  }

  /**
   * Hand the text of every complete frame now in the ring to `onFrame`, in the order written,
   * after freeing the room they took (so a call from inside `onFrame` simply reads what came since).
   * @param {(text: string) => void} onFrame
   */
  drain(onFrame) {
    const words = this.words
    const write = Atomics.load(words, WRITE)
    let read = Atomics.load(words, READ)
    if (write === read) return
    const frames = []
    while (read !== write) {
      read = this.#consume(read, write > read ? write : this.#capacity, frames)
      if (read === this.#capacity) read = 0
    }
    Atomics.store(words, READ, read)
    // Wakes a writer waiting for room (only a frame larger than the free room makes it wait).
    Atomics.notify(words, READ)
    for (let i = 0; i < frames.length; i++) onFrame(frames[i])
  }

  /** Read bytes `[from, to)` of the data area into frames; returns where reading stopped. */
  #consume(from, to, out) {
    let at = from
    while (at < to) {
      const need = (this.#frameLength < 0 ? 4 : this.#frameLength) - this.#pendingBytes
      const take = Math.min(need, to - at)
      // The common case: a whole header or body lies in one stretch, with nothing pending.
      if (take === need && this.#pendingBytes === 0) {
        this.#complete(this.#data, at, at + take, out)
      } else {
        this.#pending.push(Buffer.from(this.#data.subarray(at, at + take)))
        this.#pendingBytes += take
        if (take === need) {
          const whole = Buffer.concat(this.#pending, this.#pendingBytes)
          this.#pending = []
          this.#pendingBytes = 0
          this.#complete(whole, 0, whole.length, out)
        }
      }
      at += take
    }
    return at
  }

  /** Bytes `[start, end)` of `bytes` are a complete length header or frame body. */
  #complete(bytes, start, end, out) {
    if (this.#frameLength < 0) {
      this.#frameLength = bytes.readUInt32LE(start)
      if (this.#frameLength === 0) throw new Error('a ring frame was empty')
      return
    }
    this.#frameLength = -1
    out.push(bytes.toString('utf8', start, end))
  }
}

/**
 * Sub-call answers of run `run` as one frame: `seq,run,` then, per answer, `call,length,` and the
 * envelope text of that length. `answers` is `[call, envelope, call, envelope, ...]`; `seq` numbers
 * the frames a worker is sent, so those that took the port can be put back in order.
 * @param {number} seq
 * @param {number} run
 * @param {(number | string)[]} answers
 */
export function encodeAnswers(seq, run, answers) {
  let text = `${seq},${run},`
  for (let i = 0; i < answers.length; i += 2) {
    const envelope = answers[i + 1]
    text += `${answers[i]},${envelope.length},${envelope}`
  }
  return text
}

/**
 * The inverse of {@link encodeAnswers}. Throws on text of any other shape.
 * @param {string} text
 * @returns {{ seq: number, run: number, answers: (number | string)[] }}
 */
export function decodeAnswers(text) {
  const fields = new FieldReader(text, 'malformed answer frame')
  const seq = fields.integer()
  const run = fields.integer()
  const answers = []
  while (!fields.done) {
    const call = fields.integer()
    answers.push(call, fields.text(fields.integer()))
  }
  return { seq, run, answers }
}

/**
 * Reads a frame made of `<digits>,` integers and texts whose lengths came before them: answer
 * frames here, and the QuickJS call queue's text (worker.js). Anything else throws `message`.
 */
export class FieldReader {
  #text
  #at = 0
  #message

  /** @param {string} text @param {string} message */
  constructor(text, message) {
    this.#text = text
    this.#message = message
  }

  /** True once every character is read. */
  get done() {
    return this.#at >= this.#text.length
  }

  /** The next field: 1 to 15 decimal digits and a comma (no sign, no exponent, no spaces). */
  integer() {
    const text = this.#text
    let at = this.#at
    let value = 0
    while (at < text.length && at - this.#at < 16) {
      const code = text.charCodeAt(at)
      if (code === 0x2c) break
      if (code < 0x30 || code > 0x39) throw new Error(this.#message)
      value = value * 10 + (code - 0x30)
      at += 1
    }
    const digits = at - this.#at
    if (digits === 0 || digits > 15 || text.charCodeAt(at) !== 0x2c) throw new Error(this.#message)
    this.#at = at + 1
    return value
  }

  /** The next `length` characters. @param {number} length */
  text(length) {
    const start = this.#at
    if (start + length > this.#text.length) throw new Error(this.#message)
    this.#at = start + length
    return this.#text.slice(start, start + length)
  }
}
