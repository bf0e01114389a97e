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

// An opening fence line: three or more backticks and any info string (`ts`, `typescript`, `js {1,3}`,
// none: models mislabel fences), or three or more tildes and at most a script language's name (a
// line of JavaScript can be `~~~x`, three bitwise nots; none can start with three backticks).
const OPENING_FENCE = /^[ \t]{0,3}(?:(`{3,})[^`]*|(~{3,})[ \t]*(?:ts|typescript|js|javascript|tsx|jsx|mjs|cjs)?[ \t]*)$/i
const LINE_BREAK = /\r\n|\r|\n|\u2028|\u2029/

/**
 * Blank the Markdown fence around `code` when it has one: the first non-blank line an opening
 * fence and the last non-blank line its closing fence (or no closing fence at all: a model cut
 * short). Fence lines become empty lines, so every other line keeps its number and its columns.
 * Refuses text outside the fence (prose around the program) and more than one fenced block.
 * Code without a fence line comes back unchanged (`fenced: false`).
 */
export function unfenceProgram(code: string): UnfencedProgram {
  // Cheap answer for the common case: no run of three backticks or tildes anywhere.
  if (!code.includes('```') && !code.includes('~~~')) return { ok: true, code, fenced: false }
  const lines = code.split(LINE_BREAK)
  const breaks = code.match(new RegExp(LINE_BREAK.source, 'g')) ?? []
  const fences: { index: number; marker: string; opening: boolean }[] = []
  let open: string | undefined
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] as string
    const match = OPENING_FENCE.exec(line)
    if (match === null) continue
    const marker = (match[1] ?? match[2]) as string
    if (open === undefined) {
      open = marker
      fences.push({ index, marker, opening: true })
    } else if (line.trim() === line.trim().charAt(0).repeat(line.trim().length) && line.trim().startsWith(open.charAt(0)) && line.trim().length >= open.length) {
      // A closing fence: only the fence's own character, at least as many as opened it.
      open = undefined
      fences.push({ index, marker, opening: false })
    }
  }
  const first = fences[0]
  if (first === undefined) return { ok: true, code, fenced: false }
  const blank = (from: number, to: number): boolean => lines.slice(from, to).every((line) => line.trim() === '')
  const blocks = fences.filter((fence) => fence.opening).length
  const closing = fences[1]
  const beforeIsBlank = blank(0, first.index)
  const afterIsBlank = closing === undefined || blank(closing.index + 1, lines.length)
  if (blocks > 1) {
    return { ok: false, message: `The program was not run: it holds ${blocks} Markdown code blocks (\`\`\` fences at lines ${fences.filter((fence) => fence.opening).map((fence) => fence.index + 1).join(', ')}). Send one program as \`code\`, only the code, without fences or explanations.` }
  }
  if (!beforeIsBlank || !afterIsBlank) {
    const where = !beforeIsBlank ? `before the fence at line ${first.index + 1}` : `after the fence at line ${(closing as { index: number }).index + 1}`
    return {
      ok: false,
      message: `The program was not run: \`code\` holds text ${where} that is not code (prose around a Markdown code block). Send only the program as \`code\`: no fences, no explanations (put those in \`description\` or in your reply).`,
    }
  }
  const kept = lines.map((line, index) => (index === first.index || index === closing?.index ? '' : line))
  return { ok: true, code: kept.map((line, index) => line + (breaks[index] ?? '')).join(''), fenced: true }
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
