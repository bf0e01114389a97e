/**
 * Spelling distance between names, for messages that name what was meant: a misspelled enum value
 * or argument key (here, in the core), a misspelled tool or global (sandbox/feedback.ts). Pure,
 * bounded functions: the names come from a model.
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

/**
 * The one candidate `word` most likely misspells: the same but for case and separators, or the
 * fewest edits within a third of its length (at least 1, at most 3; none for a word of one or two
 * letters); undefined when none is that close, or two are equally close. Compares the first `maxCandidates` candidates.
 */
export function nearestSpelling(word: string, candidates: readonly string[], maxCandidates = 1_000): string | undefined {
  const squashed = squashWord(word)
  if (squashed === '') return undefined
  // A word of one or two letters is any other such word a letter away: only its casing can be wrong.
  const limit = squashed.length < 3 ? 0 : Math.max(1, Math.min(3, Math.floor(squashed.length / 3)))
  let best: string | undefined
  let bestDistance = limit + 1
  let tied = false
  const count = Math.min(candidates.length, maxCandidates)
  for (let index = 0; index < count; index++) {
    const candidate = candidates[index] as string
    if (candidate === word) return undefined
    const other = squashWord(candidate)
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
