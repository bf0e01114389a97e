/**
 * Which `run_code` programs need no type removal, decided without TypeScript (loading it costs
 * about half a second and 80 MB): a program that is plain JavaScript, and that TypeScript would
 * read exactly as JavaScript does, runs as written. Everything else goes to the strip, which a
 * wrong guess here only costs; the check never changes what a program means or where its lines
 * and columns are, because a program it accepts runs unchanged.
 */

/** The constructor of async functions: it compiles a body without running it. */
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (body: string) => unknown

/**
 * Whether `code` (the body of an async function) is plain JavaScript that `stripTypes` would give
 * back unchanged. Linear in the program's length and never runs it:
 * - `<!--` or `-->` anywhere: no. A script reads them as comments where TypeScript reads code
 *   (strip-types-core.js refuses what would hide code that way), so such a program is stripped.
 * - A `>` other than the one of `=>` after a `<`: no. Where TypeScript and JavaScript both accept
 *   a text but read it differently, TypeScript has read type arguments (`f<T>(x)` is a call to
 *   TypeScript, two comparisons to JavaScript), and those need a `<` and, later, a closing `>`.
 *   The characters are counted in strings and comments too: an over-count only costs the strip.
 * - The word `global` anywhere: no. TypeScript reads `global` followed by a name or `{` as a
 *   declaration even across a line break, where JavaScript reads two statements.
 * - Otherwise V8 compiles it as a strict async function's body (compiled, never called): a type
 *   annotation, `as`, `enum`, `interface`, or a `}` that would close the function early is a syntax
 *   error there. A body that does not compile is left to the strip, which names the mistake.
 */
export function isPlainJavaScript(code: string): boolean {
  if (code.includes('<!--') || code.includes('-->') || hasWord(code, 'global')) return false
  const firstLess = code.indexOf('<')
  if (firstLess >= 0) {
    for (let at = code.indexOf('>', firstLess); at >= 0; at = code.indexOf('>', at + 1)) {
      if (code.charCodeAt(at - 1) !== 0x3d) return false // not `=>`
    }
  }
  try {
    // A separate body: V8 parses it on its own, so it cannot close the function and reopen another.
    new AsyncFunction(`"use strict";${code}`)
    return true
  } catch {
    // A syntax error, a body nested past V8's stack, or code generation from strings disallowed
    // in this process (--disallow-code-generation-from-strings): the strip decides.
    return false
  }
}

/** Whether `word` occurs in `code` not as part of a longer identifier (`globalThis` is not `global`). */
function hasWord(code: string, word: string): boolean {
  for (let at = code.indexOf(word); at >= 0; at = code.indexOf(word, at + 1)) {
    if (!isIdentifierPart(code.charCodeAt(at - 1)) && !isIdentifierPart(code.charCodeAt(at + word.length))) return true
  }
  return false
}

/** ASCII letters, digits, `_`, `$` and `\` (an escape), and anything past ASCII: counted as part of a name. */
function isIdentifierPart(char: number): boolean {
  if (Number.isNaN(char)) return false
  return (
    (char >= 0x61 && char <= 0x7a) || (char >= 0x41 && char <= 0x5a) || (char >= 0x30 && char <= 0x39) || char === 0x5f || char === 0x24 || char === 0x5c || char > 0x7f
  )
}
