/** See ring.js. */
export declare const RING_HEADER_BYTES: number
export declare const RING_DATA_BYTES: number
export declare const REPLIES: number
export declare const WRITE: number
export declare const READ: number
export declare const MAIN_AWAKE: number
export declare const WORKER_IDLE: number
export declare const WORKER_SLEEPING: number
export declare const ANSWERS_TAKEN: number

/** A fresh ring's shared memory, with `dataBytes` of room for frames. */
export declare function createRingBuffer(dataBytes?: number): SharedArrayBuffer

/** The writing end of a ring. */
export declare class RingWriter {
  readonly words: Int32Array
  constructor(buffer: SharedArrayBuffer)
  /** Write `text` as one frame if the ring has room for all of it now; otherwise false. Never waits. */
  tryWrite(text: string): boolean
  /** Write `text` as one frame, waiting for room (calling `full()` first each time). Blocks. */
  write(text: string, full: () => void, waitMs: number): void
}

/** The worker's end of the message ring: writes a frame, then rings `bell` unless the main thread polls. */
export declare function createMessageSender(buffer: SharedArrayBuffer, bell: () => void, waitMs?: number): (text: string) => void

/** The reading end of a ring. */
export declare class RingReader {
  readonly words: Int32Array
  constructor(buffer: SharedArrayBuffer)
  /** True when bytes were written that are not yet read. */
  hasData(): boolean
  /** Hand the text of every complete frame now in the ring to `onFrame`, in order. */
  drain(onFrame: (text: string) => void): void
}

/** Sub-call answers of run `run` (`[call, envelope, ...]`) as one frame's text; `seq` orders frames. */
export declare function encodeAnswers(seq: number, run: number, answers: readonly (number | string)[]): string
/** The inverse of {@link encodeAnswers}; throws on text of any other shape. */
export declare function decodeAnswers(text: string): { seq: number; run: number; answers: (number | string)[] }

/** Reads `<digits>,` integers and texts of known length from a frame; anything else throws. */
export declare class FieldReader {
  constructor(text: string, message: string)
  readonly done: boolean
  integer(): number
  text(length: number): string
}
