/**
 * Advisory type checking of a Code Mode program against generated declarations, in memory, with
 * the TypeScript compiler (type-check-core.js, which a worker thread also runs for `run_code`).
 * TypeScript is loaded by the first check on the calling thread, not by importing this module.
 */

import { declarationDiagnostics, programDiagnostics } from './type-check-core.js'

/** One problem found in a program; line and column are 1-based positions in the program text. */
export interface TypeCheckDiagnostic {
  readonly line: number
  readonly column: number
  readonly message: string
}

/** The outcome of one check: empty `diagnostics` means the program type-checks. */
export interface TypeCheckResult {
  readonly diagnostics: TypeCheckDiagnostic[]
}

/**
 * Type-check `program` (the body of an async function, as `run_code` runs it: top-level `await`
 * and `return`) against `declarations` from `generateSdk`, under `strict` (minus `noImplicitAny`)
 * with the ES2023 library (what both engines run) and a `console` global. Returns the program's
 * syntactic and semantic diagnostics in source order, positioned in the program text. Advisory:
 * the sandbox runs JavaScript and every tool validates its own arguments, whatever this reports.
 */
export function typeCheckProgram(declarations: string, program: string): TypeCheckResult {
  return { diagnostics: programDiagnostics(declarations, program) }
}

/** Diagnostics of the declarations themselves (positions in `declarations`); empty when valid. */
export function typeCheckDeclarations(declarations: string): TypeCheckResult {
  return { diagnostics: declarationDiagnostics(declarations) }
}
