/**
 * Tool schemas → the TypeScript SDK a Code Mode program calls, the `run_code` description that
 * shows it, and an advisory type check of a program against it.
 */

export { generateSdk } from './declarations.ts'
export { MAX_SUMMARY_CHARS, summarize } from './declarations.ts'
export type { GeneratedSdk, SdkCatalogEntry, SdkToolInput } from './declarations.ts'
export { assignBindings, isSafeBinding } from './identifiers.ts'
export type { SdkBinding } from './identifiers.ts'
export { renderRunCodeDescription, renderRunCodeGuide } from './run-code-description.ts'
export type { CallBudget, RunBudget, RunCodeDescriptionOptions } from './run-code-description.ts'
export {
  DEFAULT_LISTING_CHARS,
  DEFAULT_MAX_DECLARATION_CHARS,
  DISCOVERY_DECLARATIONS,
  DISCOVERY_MEMBERS,
  discoverySdk,
  renderToolListing,
  usesDiscovery,
} from './tool-discovery.ts'
export type { LargeToolSetOptions } from './tool-discovery.ts'
export { MAX_TYPE_DEPTH, schemaToType } from './schema-to-ts.ts'
export type { SchemaTypeOptions } from './schema-to-ts.ts'
export { typeCheckDeclarations, typeCheckProgram } from './type-check.ts'
export type { TypeCheckDiagnostic, TypeCheckResult } from './type-check.ts'
