/** See type-check-core.js; the public, typed API is type-check.ts. */

/** One problem found; line and column are 1-based. */
export interface CoreDiagnostic {
  readonly line: number
  readonly column: number
  readonly message: string
}

/** A diagnostic with its TypeScript code, and whether it stands for a failure certain at run time. */
export interface ClassifiedDiagnostic extends CoreDiagnostic {
  readonly code: number
  readonly certain: boolean
  /**
   * For a certain failure about a name: an unknown global, an unknown tool (`tools.<name>`), a field
   * read on a promise, or a field a result does not have (`fields`: those it has).
   */
  readonly subject?: 'global' | 'tool' | 'promise' | 'property'
  readonly name?: string
  readonly fields?: readonly string[]
}

/** The comment an argument object type of the SDK opens with when its schema refuses other keys. */
export declare const CLOSED_OBJECT_MARKER: string

export declare function classifiedDiagnostics(declarations: string, program: string): ClassifiedDiagnostic[]
export declare function programDiagnostics(declarations: string, program: string): CoreDiagnostic[]
export declare function declarationDiagnostics(declarations: string): CoreDiagnostic[]
