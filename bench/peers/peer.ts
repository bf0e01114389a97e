/**
 * The one interface every runtime in the peers bench sits behind, and the programs they all run.
 * A program is a body written against a `tools` object with `noop` and `sleep` (top-level `await`
 * and `return` allowed); each adapter maps it onto its runtime's own shape (a namespace name, an
 * ES module, an arrow function) without changing what it does.
 */

/** Settings for one session: the runtime's defaults, or its caps raised where a default fails. */
export interface PeerSettings {
  readonly caps: 'default' | 'raised'
  /** Only for the runaway probe: the time limit the runtime is asked to hold a run to. */
  readonly timeLimitMs?: number
}

/** An opened runtime with the bench's two tools registered; `run` throws when the program fails. */
export interface PeerSession {
  run(body: string): Promise<unknown>
  close(): Promise<void>
}

/** One runtime under test. `open` does the imports, so its time belongs to the fresh-process start. */
export interface Peer {
  readonly id: string
  /** Packages whose installed versions the report names. */
  readonly packages: readonly string[]
  /** What `caps: 'raised'` changes, and why; absent when the defaults run every program. */
  readonly raised?: string
  /** How its time limit is enforced, for the runaway figure. */
  readonly timeLimit: string
  open(settings: PeerSettings): Promise<PeerSession>
}

/** Milliseconds the `sleep` tool waits before answering. */
export const SLEEP_MS = 5

/** The two tools, as plain host functions; each adapter registers them in its runtime's own way. */
export const hostTools = {
  noop: async (_args?: unknown): Promise<null> => null,
  sleep: (_args?: unknown): Promise<null> => new Promise((resolve) => setTimeout(() => resolve(null), SLEEP_MS)),
}

/** The programs, with the value each must return. */
export const programs = {
  returnOne: { body: 'return 1', expect: 1 },
  sequential: (calls: number) => ({ body: `for (let i = 0; i < ${calls}; i++) await tools.noop({ i })\nreturn ${calls}`, expect: calls }),
  parallel: (calls: number) => ({
    body: `await Promise.all(Array.from({ length: ${calls} }, () => tools.sleep({})))\nreturn ${calls}`,
    expect: calls,
  }),
  // Time-based so every engine spins as long, fast JIT or interpreter alike.
  spin: (ms: number) => ({ body: `const end = Date.now() + ${ms}\nlet n = 0\nwhile (Date.now() < end) n++\nreturn 1`, expect: 1 }),
  runaway: { body: 'while (true) {}', expect: undefined },
} as const
