/** See strip-types-core.js; the public, typed API is strip-types.ts. */

/** Line and column are 1-based positions in the program text. */
export type CoreStripResult =
  | { readonly ok: true; readonly code: string }
  | { readonly ok: false; readonly message: string; readonly line: number; readonly column: number }

export declare function stripTypes(source: string): CoreStripResult

/** Load TypeScript and ts-blank-space ahead of the first strip, asynchronously (what a worker does). */
export declare function loadStripper(): Promise<void>
