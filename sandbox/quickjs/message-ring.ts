/**
 * The reading end of a worker's message ring: a byte ring in a SharedArrayBuffer that carries
 * every message a QuickJS worker sends the main thread (the writing end is ring-writer.js).
 *
 * Why not `postMessage`: on the small VMs this runs on, each post that finds the main thread's
 * event loop idle costs the worker a system call of about 10 us, on every sub-call. Writing into
 * shared memory costs nothing of the kind, and a main thread that is awake (see keep-awake.ts) reads
 * it on its next turn. Only when the main thread says it is not watching (`MAIN_AWAKE` is 0) does
 * the worker ring a bell: an empty message on its port, on which the main thread drains the ring.
 *
 * Layout (shared with ring-writer.js, the writing end; change both together):
 *  - `Int32Array` header of {@link RING_HEADER_BYTES}: `[REPLIES]` bumped by the main thread after
 *    each answer it posts; `[WRITE]` and `[READ]`, byte positions in the data area (the writer
 *    owns WRITE, the reader owns READ; equal means empty, and the writer always leaves one byte
 *    free); `[MAIN_AWAKE]` 1 while the main thread polls the ring on every turn; `[WORKER_IDLE]` 1
 *    while the worker waits for answers with none in hand (set by the worker before it spins or
 *    sleeps, cleared by it when it wakes and by the main thread when it answers), so 0 means the
 *    worker is working toward its next message. The rest of the header is reserved.
 *  - The data area: frames of a 4-byte little-endian length followed by that many bytes of UTF-8
 *    JSON, wrapping around the end. A frame longer than the free space is written in pieces as the
 *    reader frees room, so no message is too big for the ring.
 */
export const RING_HEADER_BYTES = 32
export const RING_DATA_BYTES = 1 << 20
export const REPLIES = 0
export const WRITE = 1
export const READ = 2
export const MAIN_AWAKE = 3
export const WORKER_IDLE = 4

/** A fresh ring's shared memory, with `dataBytes` of room for frames. */
export function createRingBuffer(dataBytes: number = RING_DATA_BYTES): SharedArrayBuffer {
  return new SharedArrayBuffer(RING_HEADER_BYTES + dataBytes)
}

export class MessageRing {
  readonly words: Int32Array
  readonly #data: Buffer
  readonly #capacity: number
  /** Bytes of the frame being read: its length header first, then its body. */
  #pending: Buffer[] = []
  #pendingBytes = 0
  /** Body length of the frame being read, or -1 while its length header is still incomplete. */
  #frameLength = -1

  constructor(buffer: SharedArrayBuffer) {
    this.words = new Int32Array(buffer, 0, RING_HEADER_BYTES / 4)
    this.#data = Buffer.from(buffer, RING_HEADER_BYTES)
    this.#capacity = this.#data.length
  }

  /** True when the worker has written bytes not yet read. */
  hasData(): boolean {
    return Atomics.load(this.words, WRITE) !== Atomics.load(this.words, READ)
  }

  /**
   * Hand every complete message now in the ring to `onMessage`, in the order written, after
   * freeing the room they took (so a call from inside `onMessage` simply reads what came since).
   */
  drain(onMessage: (message: unknown) => void): void {
    const write = Atomics.load(this.words, WRITE)
    let read = Atomics.load(this.words, READ)
    if (write === read) return
    const messages: unknown[] = []
    while (read !== write) {
      read = this.#consume(read, write > read ? write : this.#capacity, messages)
      if (read === this.#capacity) read = 0
    }
    Atomics.store(this.words, READ, read)
    // Wakes a worker waiting for room (only a message larger than the free space makes it wait).
    Atomics.notify(this.words, READ)
    for (const message of messages) onMessage(message)
  }

  /** Read bytes `[from, to)` of the data area into frames; returns where reading stopped. */
  #consume(from: number, to: number, out: unknown[]): number {
    let at = from
    while (at < to) {
      const need = (this.#frameLength < 0 ? 4 : this.#frameLength) - this.#pendingBytes
      const take = Math.min(need, to - at)
      // The common case: a whole frame part lies in one piece of the ring, with nothing pending.
      if (take === need && this.#pendingBytes === 0) {
        this.#complete(this.#data.subarray(at, at + take), out)
      } else {
        this.#pending.push(Buffer.from(this.#data.subarray(at, at + take)))
        this.#pendingBytes += take
        if (take === need) {
          const whole = Buffer.concat(this.#pending, this.#pendingBytes)
          this.#pending = []
          this.#pendingBytes = 0
          this.#complete(whole, out)
        }
      }
      at += take
    }
    return at
  }

  /** A complete length header or frame body. */
  #complete(bytes: Buffer, out: unknown[]): void {
    if (this.#frameLength < 0) {
      this.#frameLength = bytes.readUInt32LE(0)
      if (this.#frameLength === 0) throw new Error('QuickJS worker wrote an empty frame')
      return
    }
    this.#frameLength = -1
    out.push(JSON.parse(bytes.toString('utf8')))
  }
}
