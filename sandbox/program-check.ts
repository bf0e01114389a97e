/**
 * What `run_code` does with a program's type check, by mode. `'guard'` (the default) refuses,
 * before any tool runs, only what would certainly fail at run time (an unknown tool or global, a
 * tool call its validation refuses, a property a tool's result does not have, a call of what is
 * not a function: see `certainFailure` in sdk-gen/type-check-core.js) and passes every other
 * diagnostic to the model as a note beside its result; `'enforce'` refuses any diagnostic;
 * `'off'` never checks. Side effects come only from tool calls, so a program that never names
 * `tools` runs at once and its check waits until it reaches a tool some other way (see
 * {@link mentionsTools}).
 */

import type { ClassifiedDiagnostic } from '../sdk-gen/type-check-core.js'
import { alternatives, closestNames, echoName, listNames, placeText, quoteLine, unknownGlobalHint, unknownToolHint } from './feedback.ts'

/**
 * How `run_code` type-checks a program against the agent's SDK before running it:
 * - `'guard'` (default): refuse only what would certainly fail at run time; every other
 *   diagnostic lets the program run and comes back in the result's `notes`.
 * - `'enforce'`: refuse a program with any diagnostic (what `typeCheck: true` always did).
 * - `'off'`: no check; the checker is never started.
 */
export type TypeCheckMode = 'off' | 'guard' | 'enforce'

/** Every mode, in the order messages list them. */
export const TYPE_CHECK_MODES: readonly TypeCheckMode[] = Object.freeze(['guard', 'enforce', 'off'])

/** The mode an option value stands for: `true` is `'enforce'`, `false` is `'off'`, none is `'guard'`. */
export function resolveTypeCheck(value: TypeCheckMode | boolean | undefined): TypeCheckMode {
  if (value === undefined) return 'guard'
  if (value === true) return 'enforce'
  if (value === false) return 'off'
  return value
}

/** Whether `value` is a valid `typeCheck` option value. */
export function isTypeCheckOption(value: unknown): value is TypeCheckMode | boolean {
  return typeof value === 'boolean' || (TYPE_CHECK_MODES as readonly unknown[]).includes(value)
}

/**
 * Whether the program names `tools` (as a whole word, in code, strings or comments alike: an
 * over-count only costs waiting for the check). A program that does not can still reach the
 * tools indirectly (`globalThis['to' + 'ols']`, `eval`, the Function constructor), which no text
 * test rules out: such a program runs at once, and its first tool call waits for the check
 * (the run's `RunBridge` gate), so no tool runs before a certain failure is refused either way.
 */
export function mentionsTools(code: string): boolean {
  for (let at = code.indexOf('tools'); at >= 0; at = code.indexOf('tools', at + 1)) {
    if (!isNamePart(code.charCodeAt(at - 1)) && !isNamePart(code.charCodeAt(at + 5))) return true
  }
  return false
}

function isNamePart(char: number): boolean {
  if (Number.isNaN(char)) return false
  return (char >= 0x61 && char <= 0x7a) || (char >= 0x41 && char <= 0x5a) || (char >= 0x30 && char <= 0x39) || char === 0x5f || char === 0x24 || char > 0x7f
}

/** Diagnostics shown at most, in a refusal or as notes. */
const MAX_SHOWN = 10

/** What a check's diagnostics mean for the run: a refusal (the text a model reads), and notes. */
export interface CheckVerdict {
  readonly refusal?: string
  readonly notes: readonly string[]
}

/**
 * Judge `diagnostics` of `code` under `mode` (`'guard'` or `'enforce'`). A refusal names each
 * problem at the program's own line and column, quotes the line with a caret, and for an unknown
 * tool or global names what exists and the closest names (`toolNames`: what the program may call).
 * `when` says when the check refused: before the program started (the default), or at its first
 * tool call, a program that reached `tools` without naming them having run up to that call.
 */
export function judgeDiagnostics(
  diagnostics: readonly ClassifiedDiagnostic[],
  mode: 'guard' | 'enforce',
  code: string,
  toolNames: readonly string[],
  when: 'before-run' | 'first-call' = 'before-run',
): CheckVerdict {
  const refusing = mode === 'enforce' ? diagnostics : diagnostics.filter((d) => d.certain)
  if (refusing.length > 0) {
    const shown = refusing.slice(0, MAX_SHOWN).map((d) => describeDiagnostic(d, code, toolNames))
    if (refusing.length > MAX_SHOWN) shown.push(`... and ${refusing.length - MAX_SHOWN} more.`)
    const why = mode === 'enforce' ? 'it has type errors' : 'the type check found mistakes that would make it fail, before any tool ran'
    const stopped = 'The program was stopped at its first tool call, which did not run (nor did any other): the type check found mistakes that would make it fail'
    return { refusal: `${when === 'first-call' ? stopped : `The program was not run: ${why}`}.\n\n${shown.join('\n\n')}`, notes: [] }
  }
  const notes = diagnostics.slice(0, MAX_SHOWN).map((d) => `Type check, ${placeText(d.line, d.column)}: ${d.message} (the program ran anyway)`)
  if (diagnostics.length > MAX_SHOWN) notes.push(`The type check reported ${diagnostics.length - MAX_SHOWN} more problems.`)
  return { notes }
}

/** One diagnostic as a model reads it: where, what, the line quoted, and the names that would be right. */
function describeDiagnostic(diagnostic: ClassifiedDiagnostic, code: string, toolNames: readonly string[]): string {
  // TypeScript's own text for an unknown tool prints the whole type of `tools`: the hint below names the fix.
  const message = diagnostic.subject === 'tool' && diagnostic.name !== undefined ? `\`tools.${echoName(diagnostic.name)}\` is not a tool.` : diagnostic.message
  const parts = [`${placeText(diagnostic.line, diagnostic.column)}: ${message}`]
  const quoted = quoteLine(code, diagnostic.line, diagnostic.column)
  if (quoted !== undefined) parts.push(quoted)
  if (diagnostic.name !== undefined && diagnostic.subject === 'global') parts.push(unknownGlobalHint(diagnostic.name, toolNames))
  if (diagnostic.name !== undefined && diagnostic.subject === 'tool') parts.push(unknownToolHint(diagnostic.name, toolNames))
  if (diagnostic.subject === 'promise') parts.push('A tool call gives a promise: did you forget `await`?')
  if (diagnostic.name !== undefined && diagnostic.subject === 'property' && diagnostic.fields !== undefined && diagnostic.fields.length > 0) {
    const closest = closestNames(diagnostic.name, diagnostic.fields)
    const fields = `Its fields: ${listNames(diagnostic.fields)}.`
    parts.push(closest.length > 0 ? `Did you mean ${alternatives(closest)}? ${fields}` : fields)
  }
  return parts.join('\n')
}
