// The writing end of a QuickJS worker's message ring (the reading end, and the layout, are in
// message-ring.ts; change both together). Plain JavaScript: worker.js imports it.

export const RING_HEADER_BYTES = 32
export const REPLIES = 0
export const WRITE = 1
export const READ = 2
export const MAIN_AWAKE = 3
export const WORKER_IDLE = 4

/**
 * @param {SharedArrayBuffer} ring the ring's shared memory
 * @param {() => void} ringBell tells the main thread to read the ring (an empty message on a port)
 * @param {number} waitMs how long one wait for room lasts before the bell is rung again
 */
export function createRingWriter(ring, ringBell, waitMs = 100) {
  const words = new Int32Array(ring, 0, RING_HEADER_BYTES / 4)
  const data = Buffer.from(ring, RING_HEADER_BYTES)
  const capacity = data.length
  const header = Buffer.alloc(4)

  /** Copy `bytes` into the ring, publishing each piece; waits for room when the ring is full. */
  function write(bytes) {
    let offset = 0
    while (offset < bytes.length) {
      const at = Atomics.load(words, WRITE)
      const read = Atomics.load(words, READ)
      const free = (read - at - 1 + capacity) % capacity
      if (free === 0) {
        // Only a message bigger than the free space gets here: make sure the main thread reads.
        ringBell()
        Atomics.wait(words, READ, read, waitMs)
        continue
      }
      const length = Math.min(free, bytes.length - offset, capacity - at)
      bytes.copy(data, at, offset, offset + length)
      Atomics.store(words, WRITE, (at + length) % capacity)
      offset += length
    }
  }

  return {
    words,
    /**
     * Send one message: a frame in the ring, then the bell if the main thread is not polling the
     * ring. The bell check comes after the frame is published, and the main thread withdraws
     * MAIN_AWAKE before its last look at the ring, so one of the two always sees the frame.
     */
    send(message) {
      const body = Buffer.from(JSON.stringify(message), 'utf8')
      header.writeUInt32LE(body.length, 0)
      write(header)
      write(body)
      if (Atomics.load(words, MAIN_AWAKE) === 0) ringBell()
    },
  }
}
