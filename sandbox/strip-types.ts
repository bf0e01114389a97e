/**
 * Position-preserving type removal for `run_code` programs. Models often write TypeScript; its
 * types are blanked out with `ts-blank-space`, so every line and column of the JavaScript that
 * runs is where the model wrote it, and a guest error position needs no mapping back. The work is
 * done in strip-types-core.js, plain JavaScript that the TypeScript worker thread runs too. TypeScript
 * is loaded by the first call, not by importing this module; `run_code` never calls it on the main
 * thread (plain JavaScript needs no removal, see plain-javascript.ts, and the rest is removed in its
 * TypeScript thread).
 */

import { stripTypes as stripTypesCore } from './strip-types-core.js'

/** The outcome of {@link stripTypes}. Line and column are 1-based positions in the program text. */
export type StripTypesResult =
  | { readonly ok: true; readonly code: string }
  | { readonly ok: false; readonly message: string; readonly line: number; readonly column: number }

/**
 * Remove the TypeScript types from `source`, the body of an async function (top-level `await` and
 * `return` are fine). On success every remaining character keeps its line and column; plain
 * JavaScript comes back unchanged. Fails, with the first problem's 1-based line and column, on a
 * syntax error or on TypeScript that cannot simply be erased (`enum`, value `namespace`, parameter
 * properties, `<T>x` assertions, `import`/`export`), naming the construct and what to write instead.
 *
 * Synchronous, and the parse can take seconds on a hostile program of a few hundred bytes: call it
 * on a thread that may block only for a program {@link stripsQuickly} accepts. The first call loads
 * TypeScript (about half a second; ts-blank-space, an ES module, needs Node 20.19 or newer here).
 */
export function stripTypes(source: string): StripTypesResult {
  return stripTypesCore(source)
}

// The TypeScript parser re-parses speculatively in a few places, and nesting or chaining them
// costs far more than the text's length. Measured on a slow 2-core VM (TypeScript 6.0.3):
//  - `x = a<a<...<a` (each `<` retried as type arguments): 500 operands in 1 KB take ~100 ms;
//  - `async (async (... 1))` (a failed async arrow, not remembered): doubles per level, 20 levels
//    in 165 bytes take 1.6 s; `\u0061sync` does the same, and so does `async<T>(`;
//  - `(a = a < (a = a < ...` (type arguments around arrow parameters): doubles per level, 10
//    levels in 105 bytes take ~140 ms;
//  - `(a = (a = ...`, `({a = (`, `([a = (`, `(a, b = (` (arrow parameters with defaults): quadratic,
//    192 levels in 1.5 KB take 16-28 ms;
//  - `[infer A extends [infer A extends ... ? 1 : 1]` (the constraint read twice when a `?`
//    follows): doubles per level, 20 levels in 541 bytes take 1.6 s (found by a red-team pass).
// Every such level needs a `(` or a `<`/`async`/`infer`/`\u`, so counting those characters (in strings and
// comments too: an over-count only costs a thread hop) bounds the nesting. Within the limits below
// the worst cases found, the constructs above nested in one another and padded to the size limit,
// took 9-14 ms (median of 5 runs) on that VM; an ordinary 500-byte program takes ~0.1 ms.
/** The longest program parsed on the calling thread, in UTF-16 code units. */
const QUICK_MAX_CHARS = 2_048
/** The most `(` in a program parsed on the calling thread. */
const QUICK_MAX_PARENS = 32
/** The most `<`, `async`, `infer` and `\u` together in a program parsed on the calling thread. */
const QUICK_MAX_SPECULATIONS = 3

/**
 * Whether {@link stripTypes} is bounded to milliseconds for `source` (a linear pre-scan): small,
 * with few of the tokens that make the parser re-parse. `false` says nothing about the program
 * itself, only that its parse belongs on a thread that may be stopped.
 */
export function stripsQuickly(source: string): boolean {
  if (source.length > QUICK_MAX_CHARS) return false
  let parens = 0
  let speculations = 0
  for (let index = 0; index < source.length; index++) {
    switch (source.charCodeAt(index)) {
      case 0x28: // (
        parens++
        break
      case 0x3c: // <
        speculations++
        break
      case 0x61: // a
        if (source.startsWith('async', index)) speculations++
        break
      case 0x69: // i
        if (source.startsWith('infer', index)) speculations++
        break
      case 0x5c: // backslash
        if (source.charCodeAt(index + 1) === 0x75) speculations++ // \u
        break
    }
  }
  return parens <= QUICK_MAX_PARENS && speculations <= QUICK_MAX_SPECULATIONS
}
