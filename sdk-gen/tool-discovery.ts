/**
 * Large tool sets: when an SDK is too large to send whole, `run_code`'s description lists the tools
 * and the program looks up the rest inside the sandbox (`tools.$search`, `tools.$describe`).
 */

import type { GeneratedSdk, SdkCatalogEntry } from './declarations.ts'

/** When a description lists the tools rather than declaring them (`createRunCode({ largeToolSets })`). */
export interface LargeToolSetOptions {
  /** List rather than declare above this many tools. Default: no count (only the character budget applies). */
  readonly maxTools?: number
  /** List rather than declare when the declarations are longer than this. Default {@link DEFAULT_MAX_DECLARATION_CHARS}. */
  readonly maxDeclarationChars?: number
  /** Characters the listing takes at most. Default {@link DEFAULT_LISTING_CHARS}. */
  readonly listingChars?: number
}

/**
 * Declarations longer than this are listed instead, unless told otherwise: about 20 tools of
 * typical MCP servers (23 tools of the filesystem and memory servers declare about 13,000).
 */
export const DEFAULT_MAX_DECLARATION_CHARS = 10_000

/** Characters a discovery listing takes at most, unless told otherwise. */
export const DEFAULT_LISTING_CHARS = 4_500

/** Whether `sdk` should be listed and discovered in the sandbox rather than declared whole. */
export function usesDiscovery(sdk: GeneratedSdk, options: LargeToolSetOptions = {}): boolean {
  if (options.maxTools !== undefined && sdk.catalog.length > options.maxTools) return true
  return sdk.declarations.length > (options.maxDeclarationChars ?? DEFAULT_MAX_DECLARATION_CHARS)
}

/**
 * `sdk` for a program that discovers its tools: the declarations it is type-checked against gain
 * `tools.$search` and `tools.$describe`, and each binding carries its catalog entry (summary and
 * declaration), which the sandbox searches without calling the host.
 */
export function discoverySdk(sdk: GeneratedSdk): GeneratedSdk {
  const marker = 'declare const tools: '
  const at = sdk.declarations.lastIndexOf(marker)
  const rest = sdk.declarations.slice(at + marker.length)
  const members = rest.startsWith('{\n') ? `{\n${DISCOVERY_MEMBERS}${rest.slice(2)}` : `{\n${DISCOVERY_MEMBERS}}\n`
  return { declarations: `${sdk.declarations.slice(0, at + marker.length)}${members}`, bindings: sdk.catalog, catalog: sdk.catalog }
}

/**
 * The tools of a large set, in at most about `maxChars` characters: one line each (name, argument
 * keys, summary) while they fit, then bare names, then how many more `tools.$search` finds.
 */
export function renderToolListing(catalog: readonly SdkCatalogEntry[], maxChars: number): string {
  const head = `Available tools (${catalog.length}; find any with tools.$search, read its types with tools.$describe):`
  const lines: string[] = []
  let used = head.length + 1
  let index = 0
  for (; index < catalog.length; index++) {
    const entry = catalog[index]!
    const line = `- ${entry.binding}(${entry.args})${entry.summary === '' ? '' : `: ${entry.summary}`}`
    // Room is kept for the names of every tool left after this one, as far as the budget goes.
    if (used + line.length + 1 > maxChars * 0.75 && index > 0) break
    lines.push(line)
    used += line.length + 1
  }
  if (index < catalog.length) {
    const names: string[] = []
    let named = index
    for (; named < catalog.length; named++) {
      const name = catalog[named]!.binding
      // Room is kept for "Also: " and ", and N more.\n".
      if (used + name.length + 2 + 32 > maxChars) break
      names.push(name)
      used += name.length + 2
    }
    const rest = catalog.length - named
    lines.push(`Also: ${names.join(', ')}${rest === 0 ? '' : `${names.length === 0 ? '' : ', '}and ${rest} more`}.`)
  }
  return `${head}\n${lines.join('\n')}\n`
}

/** The two lookups a program of a large tool set uses, as TypeScript members of `tools`. */
export const DISCOVERY_MEMBERS =
  '  /** Tools whose name or description best match the words of `query`, best first: at most `limit` (default 10, at most 50). */\n' +
  '  $search(query: string, limit?: number): { name: string; summary: string }[]\n' +
  "  /** The declaration of tool `name`: its documented argument and result types. */\n" +
  '  $describe(name: string): string\n'

/** The SDK a description shows for a large tool set: `JsonValue` and the lookups, any other name callable. */
export const DISCOVERY_DECLARATIONS =
  '/** Any JSON value. */\n' +
  'type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue | undefined }\n\n' +
  '/** The tools this program can call (listed above), and two lookups that run inside the sandbox. */\n' +
  `declare const tools: {\n${DISCOVERY_MEMBERS}} & { readonly [name: string]: (args?: { [key: string]: JsonValue | undefined }) => Promise<JsonValue> }\n`
