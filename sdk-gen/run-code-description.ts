/**
 * The description of the `run_code` tool: how to write the program (error codes, the limits in force,
 * one example), then the SDK it may call: whole, or, for a large tool set, a listing of names the
 * program looks up inside the sandbox with `tools.$search` and `tools.$describe`.
 */

import type { GeneratedSdk } from './declarations.ts'
import { DEFAULT_LISTING_CHARS, DISCOVERY_DECLARATIONS, renderToolListing } from './tool-discovery.ts'

/** The guide's first sentence: in the tool's own description, or in a system prompt that names the tool. */
const OPENING = {
  tool: 'Run a JavaScript program that calls the tools declared below, and get back the value it returns.',
  'system-prompt': 'With the `run_code` tool, run a JavaScript program that calls the tools declared below, and get back the value it returns.',
} as const

const GUIDE = `How to write the program:
- The code is the body of an async function: use \`await\` at the top level and \`return\` the result. The returned value must be JSON (objects, arrays, strings, numbers, booleans, null); returning nothing gives null.
- Call a tool with \`await tools.name(args)\`. It resolves to the tool's result value; a failed call throws an Error whose message says why, so use try/catch where you can recover.
- Start independent calls together: \`const [a, b] = await Promise.all([tools.x(...), tools.y(...)])\`.
- \`console.log\` output is captured and returned beside the result.
- TypeScript type annotations are allowed; \`enum\` and \`namespace\` are not. There is no \`import\`, \`require\`, file system or network: only \`tools\` and standard JavaScript built-ins.
- Process data inside the program and return only what you need.`

// The codes a failed call's Error can carry that a program can act on (src/errors.ts, the bridge and
// the guest runtime). Cancellation and the host's own faults end the run whatever the program does.
const ERROR_CODES =
  "- A failed call's Error has a `.code`: `INVALID_ARGS` (arguments do not match the tool's types), `UNKNOWN_TOOL`, " +
  '`DENIED` (refused by policy or the user: do not retry it), `TOOL_TIMEOUT`, `TOOL_FAILED` (the tool itself failed), ' +
  '`INVALID_TOOL_OUTPUT`, `ANSWER_TOO_LARGE` (the result does not fit in the program\'s memory).'

const EXAMPLE = `Example (placeholder tool names):
\`\`\`ts
const ids = ['a', 'b', 'c']
const items = await Promise.all(ids.map(async (id) => {
  try { return await tools.get_item({ id }) }
  catch (e: any) { if (e.code === 'DENIED' || e.code === 'TOOL_TIMEOUT') return null; throw e }
}))
console.log(\`\${items.length} looked up\`)
return items.filter((item) => item !== null)
\`\`\``

const DISCOVERY = `- Not every tool's types are shown here: \`tools.$search(query)\` returns the best matches by name and description (\`[{ name, summary }]\`), \`tools.$describe(name)\` returns one tool's declaration (argument and result types). Both answer at once, without a tool call: look up what you need, then call \`tools[name](args)\` in the same program or the next one.`

/** How many tool calls one program may make, in all and at once (the transport's limits). */
export interface CallBudget {
  readonly maxSubCalls: number
  readonly maxSubCallsInFlight: number
}

/**
 * The limits of one run the guide states: the call budget and, when given, time, result size and
 * console output (the names and units of the sandbox's `SandboxLimits`, which satisfies this type).
 */
export interface RunBudget extends CallBudget {
  readonly cpuTimeMs?: number
  readonly wallTimeMs?: number
  readonly maxResultBytes?: number
  readonly maxLogBytes?: number
}

/** How `run_code`'s description shows the SDK. */
export interface RunCodeDescriptionOptions {
  /**
   * `'declarations'` (default): the whole SDK. `'discovery'`: one line per tool (name, argument keys,
   * summary) while they fit in `listingChars`, the names after that, and the declarations of
   * `tools.$search` and `tools.$describe`, which the program uses to find the rest.
   */
  readonly sdk?: 'declarations' | 'discovery'
  /** Characters the discovery listing may take. Default {@link DEFAULT_LISTING_CHARS}. */
  readonly listingChars?: number
  /**
   * Where the text goes: `'tool'` (default) is `run_code`'s own description; `'system-prompt'` is
   * the same text for a system prompt, whose opening names the tool.
   */
  readonly audience?: 'tool' | 'system-prompt'
}

/** `n` as a short figure: `1M`, `64K`, `1,500`. */
function figure(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)}M`
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024}K`
  return n.toLocaleString('en-US')
}

/** `ms` as seconds when whole: `5 s`, `1500 ms`. */
function duration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`
}

/** The guide's lines on the limits in force. */
function limitLines(budget: RunBudget): string[] {
  const parts: string[] = []
  if (budget.cpuTimeMs !== undefined) parts.push(`${duration(budget.cpuTimeMs)} of CPU`)
  if (budget.wallTimeMs !== undefined) parts.push(`${duration(budget.wallTimeMs)} in all (waiting for tools included)`)
  if (budget.maxResultBytes !== undefined) parts.push(`a result of ${figure(budget.maxResultBytes)} characters of JSON`)
  if (budget.maxLogBytes !== undefined) parts.push(`${figure(budget.maxLogBytes)} characters of console output`)
  const calls = `- A program may make at most ${budget.maxSubCalls} tool calls, at most ${budget.maxSubCallsInFlight} of them started and not yet finished at once: batch a long list into Promise.all groups of that size.`
  return parts.length === 0 ? [calls] : [calls, `- A run may take ${parts.join(', ')}; past a limit it stops with an error naming it.`]
}

/**
 * The guide to writing a `run_code` program: how it runs, the error codes it can branch on, the
 * limits of `budget` (leave it out to state none), and one short example. With `discovery`, how to
 * find tools with `tools.$search` and `tools.$describe`. The same text heads the description and
 * the system-prompt text of `codeModeDeclarations`.
 */
export function renderRunCodeGuide(budget?: RunBudget, discovery = false, audience: 'tool' | 'system-prompt' = 'tool'): string {
  const lines = [`${OPENING[audience]}\n`, GUIDE, ERROR_CODES]
  if (budget !== undefined) lines.push(...limitLines(budget))
  if (discovery) lines.push(DISCOVERY)
  return `${lines.join('\n')}\n\n${EXAMPLE}`
}

/** The SDK's declarations in a fenced ts block that no backtick run inside them can close. */
function fenced(declarations: string): string {
  // A fence longer than any backtick run in the declarations (author text may hold one) stays closed.
  const longestRun = Math.max(0, ...(declarations.match(/`+/g) ?? []).map((run) => run.length))
  const fence = '`'.repeat(Math.max(3, longestRun + 1))
  return `${fence}ts\n${declarations}${fence}\n`
}

/**
 * The `run_code` tool's description for `sdk`: the guide ({@link renderRunCodeGuide}) followed by
 * the declarations in a fenced block, or, with `options.sdk: 'discovery'`, by a bounded listing of
 * the tools and the declarations of `tools.$search` / `tools.$describe`.
 */
export function renderRunCodeDescription(sdk: GeneratedSdk, budget?: RunBudget, options: RunCodeDescriptionOptions = {}): string {
  const discovery = options.sdk === 'discovery'
  const guide = renderRunCodeGuide(budget, discovery, options.audience)
  if (!discovery) return `${guide}\n\nAvailable tools:\n${fenced(sdk.declarations)}`
  return `${guide}\n\n${renderToolListing(sdk.catalog, options.listingChars ?? DEFAULT_LISTING_CHARS)}\n${fenced(DISCOVERY_DECLARATIONS)}`
}
