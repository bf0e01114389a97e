/** See type-check-core.js; the public, typed API is type-check.ts. */

/** One problem found; line and column are 1-based. */
export interface CoreDiagnostic {
  readonly line: number
  readonly column: number
  readonly message: string
}

export declare function programDiagnostics(declarations: string, program: string): CoreDiagnostic[]
export declare function declarationDiagnostics(declarations: string): CoreDiagnostic[]
