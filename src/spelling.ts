/**
 * The one spelling matcher of the library, for messages that name what was meant: a misspelled enum
 * value or argument key (here, in the core), a misspelled tool or global (sandbox/feedback.ts), and,
 * transliterated into the guest runtime (sandbox/guest-runtime.ts, which takes its tables and limits
 * from here), an unknown `tools.x` at run time. Bounded functions: the names come from a model.
 */

/** Characters of a word compared; longer words are compared by their head. */
const MAX_COMPARED_CHARS = 64

/**
 * Levenshtein distance of `a` and `b` (a swap of neighbours counted as one edit), or `limit + 1`
 * as soon as it is sure to exceed `limit`: bounded work, O(|a|·|b|) at most.
 */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1
  let before: number[] = []
  let previous: number[] = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    let rowMin = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1
      let value = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + cost)
      if (i > 1 && j > 1 && a.charCodeAt(i - 1) === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === b.charCodeAt(j - 1)) {
        value = Math.min(value, (before[j - 2] as number) + 1)
      }
      current[j] = value
      if (value < rowMin) rowMin = value
    }
    if (rowMin > limit) return limit + 1
    before = previous
    previous = current
  }
  return previous[b.length] as number
}

/** A word with case and separators dropped: `read_file`, `readFile` and `Read-File` read the same. */
export function squashWord(word: string): string {
  return word.slice(0, MAX_COMPARED_CHARS).replace(/[^A-Za-z0-9]/g, '').toLowerCase()
}

/** Edits a squashed word of `length` letters may be from another and still be a misspelling of it. */
export function spellingLimit(length: number): number {
  // A word of one or two letters is a letter away from any other: only its casing can be wrong.
  return length < 3 ? 0 : Math.max(1, Math.min(3, Math.floor(length / 3)))
}

/**
 * The words of a name's first 64 characters, lower case, split at separators, case changes and
 * digit runs, an acronym kept whole: `readFileSync` → read, file, sync; `HTTPServer_v2` → http,
 * server, v, 2. A loop over character codes, so that the guest runtime's copy is the same steps.
 */
export function nameWords(name: string): string[] {
  const words: string[] = []
  let word = ''
  // 0 none, 1 lower (or Upper then lower), 2 upper run, 3 digits.
  let kind = 0
  const length = Math.min(name.length, MAX_COMPARED_CHARS)
  for (let i = 0; i <= length; i++) {
    const c = i < length ? name.charCodeAt(i) : 32
    const lower = c >= 97 && c <= 122
    const upper = c >= 65 && c <= 90
    const digit = c >= 48 && c <= 57
    if (lower) {
      if (kind === 3) {
        words.push(word)
        word = ''
      } else if (kind === 2 && word.length > 1) {
        // `HTTPServer`: the last capital of a run starts the next word.
        words.push(word.slice(0, -1))
        word = word.slice(-1)
      }
      word += String.fromCharCode(c)
      kind = 1
    } else if (upper) {
      if (kind === 1 || kind === 3) {
        words.push(word)
        word = ''
      }
      word += String.fromCharCode(c + 32)
      kind = 2
    } else if (digit) {
      if (kind === 1 || kind === 2) {
        words.push(word)
        word = ''
      }
      word += String.fromCharCode(c)
      kind = 3
    } else {
      if (word !== '') words.push(word)
      word = ''
      kind = 0
    }
  }
  return words
}

/**
 * Words a model uses for what a tool of another name does: a program that reaches for `fs` or
 * `fetch` wants a tool about files or the web. Small on purpose: a hint, not a thesaurus. The guest
 * runtime gets the same table.
 */
export const RELATED_WORDS: Readonly<Record<string, readonly string[]>> = Object.freeze({
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
})

/** The related words of `word`, none for a name Object.prototype has (`constructor`). */
function relatedTo(word: string): readonly string[] {
  return Object.hasOwn(RELATED_WORDS, word) ? (RELATED_WORDS[word] as readonly string[]) : []
}

/** Closeness scores below this are the same name spelled another way (case, separators, a few edits). */
export const NEAR_SPELLING = 5

/** Whether two words are the same word as a model would misspell or shorten it. */
function wordsMatch(a: string, b: string): boolean {
  if (a === b) return true
  if (a.length >= 3 && b.length >= 3 && (a.startsWith(b) || b.startsWith(a))) return true
  return a.length >= 4 && b.length >= 4 && editDistance(a, b, 1) <= 1
}

/** What is compared of a candidate: its squashed form and its words. */
interface Candidate {
  readonly name: string
  readonly squashed: string
  readonly words: readonly string[]
}

/**
 * How close `candidate` is to the name (`squashed`, and `words` with their related words), lower
 * is closer, or undefined when it is not worth naming: the same but for case and separators (0),
 * a few edits (1 + edits), one inside the other (5 and a bit for the length difference), shared
 * words (10 less the words shared, and a bit for the candidate's own words).
 */
function closeness(squashed: string, words: readonly string[], candidate: Candidate): number | undefined {
  const other = candidate.squashed
  if (other === '' || squashed === '') return undefined
  if (other === squashed) return 0
  const limit = spellingLimit(squashed.length)
  const distance = editDistance(squashed, other, limit)
  if (distance <= limit) return 1 + distance
  if (squashed.length >= 3 && (other.includes(squashed) || (other.length >= 4 && squashed.includes(other)))) return 5 + Math.abs(other.length - squashed.length) / 100
  const theirs = candidate.words
  let shared = 0
  for (const word of words) if (theirs.some((their) => wordsMatch(word, their))) shared += 1
  if (shared === 0) return undefined
  // More shared words first; among equals, the name with fewer words of its own.
  return 10 - Math.min(shared, 5) + theirs.length / 100
}

/** Candidates compared per lookup at most: a deployment with more names gets suggestions from the first ones. */
export const MAX_CANDIDATES = 5_000

/**
 * Candidates compared at most in one synchronous turn of the host, over every lookup in it: a
 * message is formatted in one turn, and a refusal may carry ten hints (or a guest may forge the
 * failures that ask for them), so this bounds the main thread's work per message, not per hint.
 */
export const MAX_COMPARISONS_PER_TURN = 5_000

/** The turn's budget and answers: reset at the next microtask. */
let turn: { remaining: number; readonly answers: WeakMap<readonly string[], Map<string, readonly string[]>> } | undefined
/** Candidates compared since the process started: for tests that check the bound by counting. */
let compared = 0

/** Candidates compared by {@link closestNames} since the process started (a test's counter). */
export function spellingComparisons(): number {
  return compared
}

function currentTurn(): NonNullable<typeof turn> {
  if (turn === undefined) {
    turn = { remaining: MAX_COMPARISONS_PER_TURN, answers: new WeakMap() }
    queueMicrotask(() => {
      turn = undefined
    })
  }
  return turn
}

/** Squashed forms and words of a candidate list, kept while the list lives (a view's tool names). */
const prepared = new WeakMap<readonly string[], Candidate[]>()

function candidateAt(candidates: readonly string[], index: number): Candidate {
  let list = prepared.get(candidates)
  if (list === undefined) prepared.set(candidates, (list = []))
  let candidate = list[index]
  const name = candidates[index] as string
  // A list changed in place since it was prepared gets its new name prepared.
  if (candidate === undefined || candidate.name !== name) {
    const words = nameWords(name)
    candidate = { name, squashed: words.join(''), words }
    list[index] = candidate
  }
  return candidate
}

/**
 * The names among `candidates` closest to `name`, closest first, at most `max`: a misspelling
 * (`readFlie`), another casing or separator (`readFile` for `read_file`), a prefix or part
 * (`read` for `read_text_file`), shared words (`listFiles` for `list_directory_files`), and for
 * Node and browser names the tools about the same thing (`fs` → file tools, `fetch` → web tools).
 * When some are near spellings, only those. Ties keep the candidates' order. Compares the first
 * {@link MAX_CANDIDATES} candidates and the first 64 characters of each name, and at most
 * {@link MAX_COMPARISONS_PER_TURN} candidates over all lookups of one synchronous turn (a lookup
 * repeated in the turn is answered from the first).
 */
export function closestNames(name: string, candidates: readonly string[], max = 3): string[] {
  const { remaining, answers } = currentTurn()
  let known = answers.get(candidates)
  if (known === undefined) answers.set(candidates, (known = new Map()))
  const key = `${max}\u0000${name}`
  const answered = known.get(key)
  if (answered !== undefined) return [...answered]
  const own = nameWords(name)
  const squashed = own.join('')
  const words = [...own]
  for (const word of own) for (const related of relatedTo(word)) if (!words.includes(related)) words.push(related)
  for (const related of relatedTo(squashed)) if (!words.includes(related)) words.push(related)
  const scored: Array<{ readonly name: string; readonly score: number; readonly index: number }> = []
  const count = Math.min(candidates.length, MAX_CANDIDATES, remaining)
  for (let index = 0; index < count; index++) {
    const candidate = candidates[index] as string
    if (candidate === name) continue
    const score = closeness(squashed, words, candidateAt(candidates, index))
    if (score !== undefined) scored.push({ name: candidate, score, index })
  }
  ;(turn as NonNullable<typeof turn>).remaining -= count
  compared += count
  scored.sort((a, b) => a.score - b.score || a.index - b.index)
  // A near spelling says more than names that merely share a word: when there is one, only those.
  const near = scored.length > 0 && (scored[0] as { score: number }).score < NEAR_SPELLING ? scored.filter((entry) => entry.score < NEAR_SPELLING) : scored
  const result = near.slice(0, Math.max(0, max)).map((entry) => entry.name)
  known.set(key, result)
  return [...result]
}

/**
 * The one candidate `word` most likely misspells: the same but for case and separators, or the
 * fewest edits within a third of its length (at least 1, at most 3; none for a word of one or two
 * letters), scored as {@link closestNames} scores near spellings; undefined when none is that
 * close, or two are equally close. Compares the first `maxCandidates` candidates.
 */
export function nearestSpelling(word: string, candidates: readonly string[], maxCandidates = 1_000): string | undefined {
  const squashed = squashWord(word)
  if (squashed === '') return undefined
  const limit = spellingLimit(squashed.length)
  let best: string | undefined
  let bestDistance = limit + 1
  let tied = false
  const count = Math.min(candidates.length, maxCandidates)
  for (let index = 0; index < count; index++) {
    const candidate = candidates[index] as string
    if (candidate === word) return undefined
    const other = squashWord(candidate)
    if (other === '') continue
    const distance = other === squashed ? 0 : editDistance(squashed, other, Math.min(limit, bestDistance))
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
      tied = false
    } else if (distance === bestDistance && distance <= limit) {
      tied = true
    }
  }
  return tied ? undefined : best
}
