/**
 * Feedback a model reads when its program is wrong, worded like a good compiler's: what is wrong,
 * where (the program's own line quoted with a caret under the column), and what would be right
 * (the closest names that do exist, the surface a program has). Small pure functions, shared by the
 * run-time failure text and the pre-run check: every one bounds its work and its output, since the
 * names and the program come from a model and a deployment may have thousands of tools.
 */

import { editDistance, squashWord } from '../src/spelling.ts'

/** Re-exported: the same distance the core's messages use. */
export { editDistance }

/** Names compared per lookup at most: a deployment with more tools gets suggestions from the first ones. */
export const MAX_CANDIDATES = 5_000

/** Characters of a name compared; longer names are compared by their head. */
const MAX_COMPARED_CHARS = 64

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

/** The words of an identifier, lower case: `readFileSync` → read, file, sync; `list_dir-2` → list, dir, 2. */
export function nameWords(name: string): string[] {
  const words: string[] = []
  for (const part of name.slice(0, MAX_COMPARED_CHARS).split(/[^A-Za-z0-9]+/)) {
    // camelCase and PascalCase boundaries, acronyms kept whole (`HTTPServer` → http, server).
    for (const word of part.match(/[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+/g) ?? []) words.push(word.toLowerCase())
  }
  return words
}

/**
 * Words a model uses for what a tool of another name does: a program that reaches for `fs` or
 * `fetch` wants a tool about files or the web. Small on purpose: a hint, not a thesaurus.
 */
const RELATED_WORDS: Readonly<Record<string, readonly string[]>> = {
  fs: ['file', 'files', 'dir', 'directory', 'read', 'write', 'path'],
  readdir: ['list', 'dir', 'directory', 'files'],
  fetch: ['http', 'url', 'web', 'request', 'download', 'browse'],
  axios: ['http', 'url', 'web', 'request', 'fetch'],
  http: ['fetch', 'url', 'web', 'request'],
  https: ['fetch', 'url', 'web', 'request'],
  xmlhttprequest: ['http', 'fetch', 'url', 'request'],
  exec: ['command', 'shell', 'run', 'execute'],
  spawn: ['command', 'shell', 'run', 'execute'],
  child: ['command', 'shell', 'run'],
  process: ['command', 'shell', 'run', 'env'],
  cat: ['read', 'file'],
  ls: ['list', 'dir', 'directory'],
  mkdir: ['create', 'directory', 'dir'],
  rm: ['delete', 'remove'],
  unlink: ['delete', 'remove', 'file'],
  search: ['find', 'query', 'lookup'],
  find: ['search', 'query', 'lookup'],
  db: ['database', 'query', 'sql'],
  sql: ['database', 'query', 'db'],
}

/** Closeness scores below this are the same name spelled another way (case, separators, a few edits). */
const NEAR_SPELLING = 5

/** Whether two words are the same word as a model would misspell or shorten it. */
function wordsMatch(a: string, b: string): boolean {
  if (a === b) return true
  if (a.length >= 3 && b.length >= 3 && (a.startsWith(b) || b.startsWith(a))) return true
  return a.length >= 4 && b.length >= 4 && withinOneEdit(a, b)
}

/** Whether `a` becomes `b` by one insertion, deletion, substitution or swap of neighbours: linear, no allocation. */
function withinOneEdit(a: string, b: string): boolean {
  if (Math.abs(a.length - b.length) > 1) return false
  let i = 0
  while (i < a.length && i < b.length && a.charCodeAt(i) === b.charCodeAt(i)) i++
  if (a.length === b.length) {
    if (i === a.length) return true
    const swapped = i + 1 < a.length && a.charCodeAt(i) === b.charCodeAt(i + 1) && a.charCodeAt(i + 1) === b.charCodeAt(i)
    return a.slice(swapped ? i + 2 : i + 1) === b.slice(swapped ? i + 2 : i + 1)
  }
  return a.length > b.length ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1)
}

/**
 * How close `candidate` is to `name`, lower is closer, or undefined when it is not worth naming.
 * Same name but for case and separators first, then a few edits, then a shared prefix or one name
 * inside the other, then shared words (with related words for Node and browser names).
 */
function closeness(squashed: string, words: readonly string[], candidate: string): number | undefined {
  const other = squashWord(candidate)
  if (other === '' || squashed === '') return undefined
  if (other === squashed) return 0
  // A name of one or two letters is a letter away from any other: only its casing can be wrong.
  const limit = squashed.length < 3 ? 0 : Math.max(1, Math.min(3, Math.floor(squashed.length / 3)))
  const distance = editDistance(squashed, other, limit)
  if (distance <= limit) return 1 + distance
  if (squashed.length >= 3 && (other.includes(squashed) || (other.length >= 4 && squashed.includes(other)))) return 5 + Math.abs(other.length - squashed.length) / 100
  const theirs = nameWords(candidate)
  let shared = 0
  for (const word of words) if (theirs.some((their) => wordsMatch(word, their))) shared += 1
  if (shared === 0) return undefined
  // More shared words first; among equals, the name with fewer words of its own.
  return 10 - Math.min(shared, 5) + theirs.length / 100
}

/**
 * The names among `candidates` closest to `name`, closest first, at most `max`: a misspelling
 * (`readFlie`), another casing or separator (`readFile` for `read_file`), a prefix or part
 * (`read` for `read_text_file`), shared words (`listFiles` for `list_directory_files`), and for
 * Node and browser names the tools about the same thing (`fs` → file tools, `fetch` → web tools).
 * Compares the first {@link MAX_CANDIDATES} candidates and the first 64 characters of each name.
 */
export function closestNames(name: string, candidates: readonly string[], max = 3): string[] {
  const squashed = squashWord(name)
  const own = nameWords(name)
  const words = [...own]
  for (const word of own) for (const related of RELATED_WORDS[word] ?? []) if (!words.includes(related)) words.push(related)
  const related = RELATED_WORDS[squashed]
  if (related !== undefined) for (const word of related) if (!words.includes(word)) words.push(word)
  const scored: Array<{ readonly name: string; readonly score: number; readonly index: number }> = []
  const count = Math.min(candidates.length, MAX_CANDIDATES)
  for (let index = 0; index < count; index++) {
    const candidate = candidates[index] as string
    if (candidate === name) continue
    const score = closeness(squashed, words, candidate)
    if (score !== undefined) scored.push({ name: candidate, score, index })
  }
  scored.sort((a, b) => a.score - b.score || a.index - b.index)
  // A near spelling says more than names that merely share a word: when there is one, only those.
  const near = scored.length > 0 && (scored[0] as { score: number }).score < NEAR_SPELLING ? scored.filter((entry) => entry.score < NEAR_SPELLING) : scored
  return near.slice(0, Math.max(0, max)).map((entry) => entry.name)
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
