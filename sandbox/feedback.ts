/**
 * Feedback a model reads when its program is wrong, worded like a good compiler's: what is wrong,
 * where (the program's own line quoted with a caret under the column), and what would be right
 * (the closest names that do exist, the surface a program has). Small pure functions, shared by the
 * run-time failure text and the pre-run check: every one bounds its work and its output, since the
 * names and the program come from a model and a deployment may have thousands of tools.
 */

import { closestNames, editDistance, MAX_CANDIDATES, MAX_COMPARISONS_PER_TURN, nameWords } from '../src/spelling.ts'

/** Re-exported: the core's one spelling matcher (src/spelling.ts), which every message here uses. */
export { closestNames, editDistance, MAX_CANDIDATES, MAX_COMPARISONS_PER_TURN, nameWords }

/** Characters of a quoted program line shown at most (a window around the column when longer). */
export const MAX_QUOTED_LINE_CHARS = 120

/** Characters of a name echoed in a message at most. */
const MAX_ECHOED_NAME_CHARS = 80

/** Names listed when a message lists what exists. */
const MAX_LISTED_NAMES = 30

/**
 * The globals a program has besides `tools` and `console`: the ECMAScript built-ins both engines
 * provide. Named in the message for an unknown global, so a model stops reaching for Node or
 * browser APIs.
 */
export const PROGRAM_GLOBALS: readonly string[] = Object.freeze([
  'JSON', 'Math', 'Date', 'Promise', 'Object', 'Array', 'String', 'Number', 'Boolean', 'RegExp', 'Map', 'Set',
  'Error', 'Intl', 'encodeURIComponent', 'decodeURIComponent', 'parseInt', 'parseFloat',
])

/** `name` clipped for a message: a model's identifier can be any length. */
export function echoName(name: string): string {
  return name.length <= MAX_ECHOED_NAME_CHARS ? name : `${name.slice(0, MAX_ECHOED_NAME_CHARS)}...`
}

/** `a`, `a or b`, `a, b or c`: names as alternatives, each in backticks. */
export function alternatives(names: readonly string[]): string {
  const quoted = names.map((name) => `\`${echoName(name)}\``)
  return quoted.length <= 1 ? (quoted[0] ?? '') : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1) as string}`
}

/** Up to {@link MAX_LISTED_NAMES} names joined with commas, and how many more there are. */
export function listNames(names: readonly string[], max = MAX_LISTED_NAMES): string {
  if (names.length === 0) return 'none'
  const shown = names.slice(0, max).map(echoName).join(', ')
  return names.length > max ? `${shown} (and ${names.length - max} more)` : shown
}

/**
 * Line `line` of `code` (1-based) quoted with its number, and a caret under `column` (1-based, in
 * UTF-16 code units), as two lines of text:
 *
 * ```text
 *   3 | const text = fs.readFileSync('a.txt')
 *     |              ^
 * ```
 *
 * A long line shows a window of about {@link MAX_QUOTED_LINE_CHARS} characters around the column,
 * with `...` where it is cut. Undefined when the line does not exist. Tabs stay tabs under the
 * caret so it lines up however they are shown.
 */
export function quoteLine(code: string, line: number, column?: number): string | undefined {
  if (!Number.isInteger(line) || line < 1) return undefined
  let start = 0
  for (let at = 1; at < line; at++) {
    const next = code.indexOf('\n', start)
    if (next < 0) return undefined
    start = next + 1
  }
  let end = code.indexOf('\n', start)
  if (end < 0) end = code.length
  let text = code.slice(start, end)
  if (text.endsWith('\r')) text = text.slice(0, -1)
  let caretAt = column === undefined || !Number.isInteger(column) || column < 1 ? undefined : Math.min(column - 1, text.length)
  if (text.length > MAX_QUOTED_LINE_CHARS) {
    const half = Math.floor(MAX_QUOTED_LINE_CHARS / 2)
    const from = Math.max(0, Math.min((caretAt ?? 0) - half, text.length - MAX_QUOTED_LINE_CHARS))
    const head = from > 0 ? '...' : ''
    const tail = from + MAX_QUOTED_LINE_CHARS < text.length ? '...' : ''
    if (caretAt !== undefined) caretAt = caretAt - from + head.length
    text = head + text.slice(from, from + MAX_QUOTED_LINE_CHARS) + tail
  }
  const number = String(line)
  const gutter = ' '.repeat(number.length)
  const quoted = `  ${number} | ${text}`
  if (caretAt === undefined) return quoted
  const padding = text.slice(0, caretAt).replace(/[^\t]/g, ' ')
  return `${quoted}\n  ${gutter} | ${padding}^`
}

/** `line 3, column 14` (or `line 3`), the way every message names a place in the program. */
export function placeText(line: number, column?: number): string {
  return column === undefined ? `line ${line}` : `line ${line}, column ${column}`
}

/**
 * What to do about a global the program used that does not exist (`fs`, `require`, `fetch`,
 * `process`, `setTimeout`): what a program has instead, and the tools whose names look like it.
 * @param toolNames - the names the program may call as `tools.<name>` (the agent's own view only).
 * @param options.assigned - the program assigns to the name (`total = 0`): it forgot to declare it.
 */
export function unknownGlobalHint(name: string, toolNames: readonly string[], options: { readonly assigned?: boolean } = {}): string {
  const shown = echoName(name)
  if (options.assigned === true) {
    return `\`${shown}\` is assigned but never declared, which strict mode (every program's) refuses: declare it first, \`let ${shown} = ...\`.`
  }
  const parts: string[] = []
  if (name === 'require' || name === 'module' || name === 'exports' || name === 'import') {
    parts.push('A program cannot load modules: it reaches the outside world only through `tools`.')
  } else if (name === 'setTimeout' || name === 'setInterval' || name === 'setImmediate' || name === 'queueMicrotask') {
    parts.push(`A program has no timers (\`${shown}\`): call the tools one after another with \`await\`, or together with \`await Promise.all([...])\`.`)
  } else if (name === 'process' || name === 'Buffer' || name === 'window' || name === 'document' || name === 'global') {
    parts.push(`\`${shown}\` is a Node or browser global, which a program does not have: it reaches the outside world only through \`tools\`.`)
  }
  const closest = closestNames(name, toolNames)
  if (closest.length > 0) parts.push(`Did you mean ${alternatives(closest.map((tool) => `tools.${tool}`))}?`)
  parts.push(`A program has \`tools\` (${listNames(toolNames, 10)}), \`console\` and the JavaScript built-ins (${PROGRAM_GLOBALS.slice(0, 12).join(', ')}, ...).`)
  return parts.join(' ')
}

/**
 * What to do about `tools.<name>` for a name that is not a tool: the closest tools, or the tools
 * there are when none is close.
 * @param toolNames - the names the program may call as `tools.<name>` (the agent's own view only).
 */
export function unknownToolHint(name: string, toolNames: readonly string[]): string {
  const closest = closestNames(name, toolNames)
  const available = `Available tools: ${listNames(toolNames)}.`
  return closest.length > 0 ? `Did you mean ${alternatives(closest.map((tool) => `tools.${tool}`))}? ${available}` : available
}

/**
 * The note for sub-calls still running when the program ended, naming their tools and saying that
 * they were signalled to stop but may already have taken effect (a write may have landed): on a success
 * (`returned`) the likely cause is a missing `await`; on a failure (`failed`) they may also be
 * the calls a `Promise.all` left behind when another one failed.
 * @param tools - the tool of each call still running, one entry per call, in call order.
 */
export function pendingCallsNote(tools: readonly string[], ended: 'returned' | 'failed'): string {
  const counts = new Map<string, number>()
  for (const tool of tools) counts.set(tool, (counts.get(tool) ?? 0) + 1)
  const named = [...counts].slice(0, 10).map(([tool, count]) => `tools.${echoName(tool)}${count > 1 ? ` (${count} calls)` : ''}`)
  if (counts.size > 10) named.push(`${counts.size - 10} more tools`)
  const one = tools.length === 1
  const calls = one ? '1 tool call was' : `${tools.length} tool calls were`
  const which = named.join(', ')
  // Stopping is a request: a write may have landed before it, so the model must not repeat it blindly.
  const fate = one
    ? 'It was signalled to stop and its result discarded, but it may already have taken effect: check before repeating it.'
    : 'They were signalled to stop and their results discarded, but they may already have taken effect: check before repeating them.'
  return ended === 'returned'
    ? `${calls} still running when the program returned: ${which}. ${fate} Did you forget \`await\`?`
    : `${calls} still running when the program failed: ${which}. ${fate} A call that is not awaited, or one a \`Promise.all\` left running when another failed, is not waited for.`
}

/** What to write instead of each value the guest's JSON walker refuses (see guest-runtime.ts). */
const NOT_JSON_FIXES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^a function\b/, 'a function is not data: did you mean to call it (and `await` it)?'],
  [/^a Map\b/, 'send a Map as `Object.fromEntries(map)`'],
  [/^a Set\b/, 'send a Set as `[...set]`'],
  [/^a Promise\b/, 'a Promise is not data: `await` it first'],
  [/^a class instance\b/, 'copy the fields you need into a plain object (`{ ...value }` keeps its own fields)'],
  [/^undefined\b/, 'an array element cannot be `undefined`: use `null`'],
  [/^(?:NaN|Infinity|-Infinity|-0)\b/, 'JSON has no NaN, Infinity or -0: send `null` or a string'],
  [/^a BigInt\b/, 'send a BigInt as a string (`String(n)`) or a number'],
  [/^a symbol\b/, 'send a symbol as its description (`symbol.description`)'],
  [/^a circular reference\b/, 'send a copy without the cycle'],
  [/^a hole\b/, 'fill the holes of the array (`Array.from(array, (x) => x ?? null)`)'],
  [/^an invalid Date\b/, 'an invalid Date has no ISO string: check where it was made'],
  [/^nesting deeper\b/, 'send a flatter value'],
]

/**
 * What would be right for a value that is not JSON, from the guest's words for it (`a Map (not
 * JSON) at $.byId`, `a function at $.callback`), or undefined when there is nothing to add.
 */
export function notJsonHint(what: string): string | undefined {
  for (const [pattern, fix] of NOT_JSON_FIXES) if (pattern.test(what)) return `Only JSON crosses: ${fix}${fix.endsWith('?') ? '' : '.'}`
  return undefined
}
