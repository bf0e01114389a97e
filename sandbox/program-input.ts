/**
 * Forgiving input for `run_code`: what a model sends is taken as it meant it, and every line and
 * column a message names stays where the model wrote it.
 * - Markdown fences around the program (```` ```ts ````, ```` ``` ````, `~~~`) are blanked, not
 *   removed, so line N of what the model sent is line N of what runs. Prose around a fenced
 *   program is refused with a message naming the fix: guessing which part is code would run text
 *   the model did not mean as code.
 * - A program whose last top-level statement is an expression, and that has no `return` of its
 *   own, returns that expression's value (as a REPL shows it; `await` included). The rewrite adds
 *   text only where no program token moves, or records the one shift it made on a line, so that
 *   engine positions map back ({@link ProgramShift}).
 * The completion rewrite parses JavaScript with acorn, loaded on the first program that needs it
 * (TypeScript never loads on the main thread for it).
 */

import type { EngineFailure } from './engine.ts'

/** How {@link unfenceProgram} ended: the program (fence lines blanked) or why it was not taken. */
export type UnfencedProgram = { readonly ok: true; readonly code: string; readonly fenced: boolean } | { readonly ok: false; readonly message: string }

/** A fence line's marker: its character (`` ` `` or `~`) and how many of them open or close it. */
export interface FenceMarker {
  readonly char: '`' | '~'
  readonly length: number
}

// The languages a tilde fence may name: a line of JavaScript can be `~~~x` (three bitwise nots), so
// a tilde fence's info string is a script language or nothing. None can start with three backticks.
const TILDE_LANGUAGES: ReadonlySet<string> = new Set(['ts', 'typescript', 'js', 'javascript', 'tsx', 'jsx', 'mjs', 'cjs'])
const LINE_BREAK = /\r\n|\r|\n|\u2028|\u2029/

/** Whether `char` (a UTF-16 code unit) is a space or a tab, the blanks a fence line may hold. */
function isBlank(char: number): boolean {
  return char === 0x20 || char === 0x09
}

/**
 * The marker of `line` when it opens a Markdown fence, else `undefined`: at most three spaces of
 * indent, three or more backticks and any info string without a backtick (`ts`, `js {1,3}`, none:
 * models mislabel fences), or three or more tildes and at most a script language's name. One pass
 * over the line, no regular expression: what a model sends never costs more than its length.
 */
export function openingFence(line: string): FenceMarker | undefined {
  let at = 0
  while (at < line.length && at < 4 && line.charCodeAt(at) === 0x20) at++
  if (at > 3) return undefined
  const char = line.charAt(at)
  if (char !== '`' && char !== '~') return undefined
  const from = at
  while (at < line.length && line.charAt(at) === char) at++
  const length = at - from
  if (length < 3) return undefined
  if (char === '`') return line.includes('`', at) ? undefined : { char, length }
  const info = line.slice(at).trim().toLowerCase()
  return info === '' || TILDE_LANGUAGES.has(info) ? { char, length } : undefined
}

/** Whether `line` closes a fence opened by `opening`: only its character, at least as many, blanks around. */
export function closesFence(line: string, opening: FenceMarker): boolean {
  const text = line.trim()
  if (text.length < opening.length) return false
  for (let at = 0; at < text.length; at++) if (text.charAt(at) !== opening.char) return false
  return true
}

/** Whether `line` holds only blanks (spaces, tabs, or nothing). */
function isBlankLine(line: string): boolean {
  for (let at = 0; at < line.length; at++) if (!isBlank(line.charCodeAt(at))) return false
  return true
}

/**
 * Blank the Markdown fence around `code` when it has one: the first non-blank line an opening
 * fence and the last non-blank line its closing fence (or no closing fence at all: a model cut
 * short). Only those two lines can be fences: a ```` ``` ```` line anywhere else (in a template
 * literal holding Markdown, say) is the program's own text and stays as written. Fence lines
 * become empty lines, so every other line keeps its number and its columns. A program whose last
 * non-blank line is a bare closing fence but whose first is not an opening one is prose around a
 * code block (no JavaScript ends in a line of three backticks or tildes): it is refused, naming
 * the fix. Code without a fence comes back unchanged (`fenced: false`). Linear in `code`'s length.
 */
export function unfenceProgram(code: string): UnfencedProgram {
  // Cheap answer for the common case: no run of three backticks or tildes anywhere.
  if (!code.includes('```') && !code.includes('~~~')) return { ok: true, code, fenced: false }
  const lines = code.split(LINE_BREAK)
  let first = 0
  while (first < lines.length && isBlankLine(lines[first] as string)) first++
  let last = lines.length - 1
  while (last > first && isBlankLine(lines[last] as string)) last--
  if (first >= lines.length) return { ok: true, code, fenced: false }
  const opening = openingFence(lines[first] as string)
  if (opening === undefined) {
    const closing = openingFence(lines[last] as string)
    if (last === first || closing === undefined || !closesFence(lines[last] as string, closing)) return { ok: true, code, fenced: false }
    // The nearest line before it that opens such a fence is where the code block began.
    let start = last - 1
    while (start > first) {
      const marker = openingFence(lines[start] as string)
      if (marker !== undefined && marker.char === closing.char && closing.length >= marker.length) break
      start--
    }
    const where = start > first ? `before the fence at line ${start + 1}` : `before the fence that line ${last + 1} closes`
    return {
      ok: false,
      message: `The program was not run: \`code\` holds text ${where} that is not code (prose around a Markdown code block). Send only the program as \`code\`: no fences, no explanations (put those in \`description\` or in your reply).`,
    }
  }
  const closed = last > first && closesFence(lines[last] as string, opening)
  const breaks = code.match(new RegExp(LINE_BREAK.source, 'g')) ?? []
  const kept = lines.map((line, index) => (index === first || (closed && index === last) ? '' : line))
  return { ok: true, code: kept.map((line, index) => line + (breaks[index] ?? '')).join(''), fenced: true }
}

/**
 * The 1-based number of the first line of `code` that looks like a Markdown fence (opening or
 * bare), if any: said beside a syntax error, since a second code block or prose after a block
 * (which {@link unfenceProgram} leaves in the program) fails to parse there. Linear in `code`.
 */
export function fenceLikeLine(code: string): number | undefined {
  if (!code.includes('```') && !code.includes('~~~')) return undefined
  const lines = code.split(LINE_BREAK)
  for (let index = 0; index < lines.length; index++) if (openingFence(lines[index] as string) !== undefined) return index + 1
  return undefined
}

/** Text inserted on one line of a rewritten program: engine columns past `column` on `line` are `length` too far right. */
export interface ProgramShift {
  readonly line: number
  /** 1-based column in the program before the rewrite, where the text went in. */
  readonly column: number
  readonly length: number
}

/** A program ready to run: its text, and the one column shift its rewrite made, if any. */
export interface PreparedProgram {
  readonly code: string
  readonly shift?: ProgramShift
}

/**
 * Programs above this many UTF-16 code units get no completion value (they must `return`): acorn
 * takes about 0.4 ms for a 4 KB program but 60-190 ms for 160 KB on the main thread (measured on a
 * busy 2-core VM), and models' programs are a few kilobytes.
 */
export const MAX_COMPLETION_PARSE_CHARS = 32_768

type AcornModule = typeof import('acorn')
let acornModule: Promise<AcornModule> | undefined

/** acorn, imported by the first program that needs a parse (15 ms of import the other programs never pay). */
function acorn(): Promise<AcornModule> {
  acornModule ??= import('acorn')
  return acornModule
}

interface Node {
  readonly type: string
  readonly start: number
  readonly end: number
  readonly [key: string]: unknown
}

/**
 * `code` (JavaScript: the program after type removal) rewritten so that a last top-level
 * expression statement is returned, when the program has no top-level `return` anywhere.
 * Declarations, blocks, loops, `if` and the like as the last statement change nothing. `return(`
 * goes right after the previous statement (nothing but blanks and comments move) or, when the
 * expression shares that line or is the first statement, right before the expression, the shift
 * recorded. A program acorn cannot parse comes back unchanged: the engine names its mistake.
 */
export async function withCompletionValue(code: string): Promise<PreparedProgram> {
  if (code.length > MAX_COMPLETION_PARSE_CHARS || !mayEndInExpression(code)) return { code }
  const { parse } = await acorn()
  let program: Node
  try {
    program = parse(code, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      allowReturnOutsideFunction: true,
      allowAwaitOutsideFunction: true,
      allowHashBang: false,
    }) as unknown as Node
  } catch {
    // A syntax error (the engine reports it where the model wrote it) or nesting past the stack.
    return { code }
  }
  const body = program.body as readonly Node[]
  const last = body.at(-1)
  if (last === undefined || last.type !== 'ExpressionStatement' || typeof last.directive === 'string') return { code }
  if (body.some(hasOwnReturn)) return { code }
  const expression = last.expression as Node
  const previous = body.at(-2)
  const insertAt = previous !== undefined && code.slice(previous.end, expression.start).match(LINE_BREAK) !== null ? previous.end : expression.start
  // Inserted after the previous statement it must end that statement; before the expression, nothing precedes it on its line but a `;` or `}`.
  const opening = insertAt === expression.start ? 'return(' : ';return('
  const rewritten = `${code.slice(0, insertAt)}${opening}${code.slice(insertAt, expression.end)})${code.slice(expression.end)}`
  if (insertAt !== expression.start) return { code: rewritten }
  const { line, column } = positionOf(code, insertAt)
  return { code: rewritten, shift: { line, column, length: opening.length } }
}

/**
 * A cheap pre-filter: the program's last non-blank line does not start with `return` (the usual
 * ending), so a parse may find a last expression. A miss only costs the parse.
 */
function mayEndInExpression(code: string): boolean {
  const trimmed = code.trimEnd()
  const lastLine = trimmed.slice(Math.max(trimmed.lastIndexOf('\n'), trimmed.lastIndexOf('\r')) + 1).trimStart()
  return !/^return\b[^{}()[\]`]*$/.test(lastLine)
}

/** Whether `node` holds a `return` of the program itself (not of a function nested in it). */
function hasOwnReturn(node: Node): boolean {
  if (node.type === 'ReturnStatement') return true
  if (node.type === 'FunctionDeclaration' || node.type === 'FunctionExpression' || node.type === 'ArrowFunctionExpression' || node.type.startsWith('Class')) return false
  for (const key in node) {
    const value = node[key]
    if (Array.isArray(value)) {
      for (const child of value) if (isNode(child) && hasOwnReturn(child)) return true
    } else if (isNode(value) && hasOwnReturn(value)) return true
  }
  return false
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
}

/** 1-based line and column of `offset` in `code`, lines broken as JavaScript breaks them. */
function positionOf(code: string, offset: number): { line: number; column: number } {
  let line = 1
  let lineStart = 0
  for (let index = 0; index < offset; index++) {
    const char = code.charCodeAt(index)
    if (char === 0x0a || char === 0x2028 || char === 0x2029 || (char === 0x0d && code.charCodeAt(index + 1) !== 0x0a)) {
      line++
      lineStart = index + 1
    }
  }
  return { line, column: offset - lineStart + 1 }
}

/** A column an engine reported in the rewritten program, as the model wrote it. */
export function columnBeforeShift(shift: ProgramShift | undefined, line: number, column: number): number {
  if (shift === undefined || line !== shift.line || column < shift.column) return column
  return Math.max(shift.column, column - shift.length)
}

/** An engine failure with its positions (and those in its stack text) mapped back across `shift`. */
export function failureBeforeShift(failure: EngineFailure, shift: ProgramShift | undefined): EngineFailure {
  if (shift === undefined || failure.kind !== 'guest') return failure
  const { line, column, stack } = failure
  return {
    ...failure,
    ...(line !== undefined && column !== undefined ? { column: columnBeforeShift(shift, line, column) } : {}),
    ...(stack !== undefined
      ? { stack: stack.replace(/\bprogram:(\d+):(\d+)\b/g, (_text, at: string, col: string) => `program:${at}:${columnBeforeShift(shift, Number(at), Number(col))}`) }
      : {}),
  }
}
