/**
 * Tool schemas → the TypeScript SDK a Code Mode program calls, the `run_code` description that
 * shows it, and an advisory type check of a program against it.
 */

export { generateSdk } from './declarations.ts'
export type { GeneratedSdk, SdkToolInput } from './declarations.ts'
export { assignBindings, isSafeBinding } from './identifiers.ts'
export type { SdkBinding } from './identifiers.ts'
export { renderRunCodeDescription } from './run-code-description.ts'
export type { CallBudget } from './run-code-description.ts'
export { MAX_TYPE_DEPTH, schemaToType } from './schema-to-ts.ts'
export type { SchemaTypeOptions } from './schema-to-ts.ts'
export { typeCheckDeclarations, typeCheckProgram } from './type-check.ts'
export type { TypeCheckDiagnostic, TypeCheckResult } from './type-check.ts'
