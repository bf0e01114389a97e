/**
 * Advisory type checking of a Code Mode program against generated declarations, in memory, with
 * the TypeScript compiler. Lib files are parsed (and bound) once per process and shared by every
 * check; only the declarations and the program are parsed per call.
 */

import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import ts from 'typescript'

/** One problem found in a program; line and column are 1-based positions in the program text. */
export interface TypeCheckDiagnostic {
  readonly line: number
  readonly column: number
  readonly message: string
}

/** The outcome of one check: empty `diagnostics` means the program type-checks. */
export interface TypeCheckResult {
  readonly diagnostics: TypeCheckDiagnostic[]
}

const OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2022.d.ts'],
  strict: true,
  // Untyped helper parameters are ordinary in a quick script; flagging them would only add noise.
  noImplicitAny: false,
  noEmit: true,
  noResolve: true,
  types: [],
  skipDefaultLibCheck: true,
}

const DECLARATIONS_FILE = '/code-mode/sdk.ts'
const PROGRAM_FILE = '/code-mode/program.ts'
const GLOBALS_FILE = '/code-mode/globals.d.ts'

// The sandbox's console; no DOM or Node globals exist there.
const GLOBALS = `declare const console: {
  log(...data: unknown[]): void
  info(...data: unknown[]): void
  warn(...data: unknown[]): void
  error(...data: unknown[]): void
}
`

// Same-line prefix, so only columns of the first line move and every line keeps its number.
const PROGRAM_PREFIX = 'async function __program__() {'
const PROGRAM_SUFFIX = '\n}\n'

const DEFAULT_LIB_FILE = ts.getDefaultLibFilePath(OPTIONS)
const LIB_DIR = dirname(DEFAULT_LIB_FILE)
const sharedFiles = new Map<string, ts.SourceFile>()

function sharedSourceFile(fileName: string): ts.SourceFile | undefined {
  const cached = sharedFiles.get(fileName)
  if (cached !== undefined) return cached
  let text: string
  if (fileName === GLOBALS_FILE) text = GLOBALS
  else if (dirname(fileName) === LIB_DIR) text = readFileSync(fileName, 'utf8')
  else return undefined
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022)
  sharedFiles.set(fileName, file)
  return file
}

function createHost(files: ReadonlyMap<string, ts.SourceFile>): ts.CompilerHost {
  return {
    getSourceFile: (fileName) => files.get(fileName) ?? sharedSourceFile(fileName),
    getDefaultLibFileName: () => DEFAULT_LIB_FILE,
    getDefaultLibLocation: () => LIB_DIR,
    writeFile: () => {},
    getCurrentDirectory: () => '/code-mode',
    getCanonicalFileName: (fileName) => fileName,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => '\n',
    fileExists: (fileName) => files.has(fileName) || fileName === GLOBALS_FILE || (dirname(fileName) === LIB_DIR && ts.sys.fileExists(fileName)),
    readFile: (fileName) => sharedSourceFile(fileName)?.text ?? files.get(fileName)?.text,
  }
}

// An agent's declarations change rarely; reusing the last parse spares a parse and a bind per run.
let lastDeclarations: ts.SourceFile | undefined

function declarationsFile(declarations: string): ts.SourceFile {
  if (lastDeclarations?.text !== declarations) {
    lastDeclarations = ts.createSourceFile(DECLARATIONS_FILE, declarations, ts.ScriptTarget.ES2022)
  }
  return lastDeclarations
}

function check(declarations: string, program: string | undefined): ts.Diagnostic[] {
  const files = new Map<string, ts.SourceFile>()
  files.set(DECLARATIONS_FILE, declarationsFile(declarations))
  if (program !== undefined) {
    const text = `${PROGRAM_PREFIX}${program}${PROGRAM_SUFFIX}`
    files.set(PROGRAM_FILE, ts.createSourceFile(PROGRAM_FILE, text, ts.ScriptTarget.ES2022))
  }
  const roots = [GLOBALS_FILE, ...files.keys()]
  const compiled = ts.createProgram({ rootNames: roots, options: OPTIONS, host: createHost(files) })
  const target = compiled.getSourceFile(program === undefined ? DECLARATIONS_FILE : PROGRAM_FILE)!
  return [...compiled.getSyntacticDiagnostics(target), ...compiled.getSemanticDiagnostics(target)]
}

function toDiagnostic(diagnostic: ts.Diagnostic, offset: number, length: number): TypeCheckDiagnostic {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')
  const file = diagnostic.file
  if (file === undefined || diagnostic.start === undefined) return { line: 1, column: 1, message }
  // A problem reported in the wrapper's closing brace (a missing `}`) belongs at the program's end.
  const start = Math.min(Math.max(diagnostic.start, offset), offset + length)
  const { line, character } = file.getLineAndCharacterOfPosition(start)
  return { line: line + 1, column: (line === 0 ? character - offset : character) + 1, message }
}

/**
 * Type-check `program` (the body of an async function, as `run_code` runs it: top-level `await`
 * and `return`) against `declarations` from `generateSdk`, under `strict` (minus `noImplicitAny`)
 * with the ES2022 library and a `console` global. Returns the program's syntactic and semantic
 * diagnostics in source order, positioned in the program text. Advisory: the sandbox runs
 * JavaScript and every tool validates its own arguments, whatever this reports.
 */
export function typeCheckProgram(declarations: string, program: string): TypeCheckResult {
  const diagnostics = check(declarations, program).map((d) => toDiagnostic(d, PROGRAM_PREFIX.length, program.length))
  diagnostics.sort((a, b) => a.line - b.line || a.column - b.column)
  return { diagnostics }
}

/** Diagnostics of the declarations themselves (positions in `declarations`); empty when valid. */
export function typeCheckDeclarations(declarations: string): TypeCheckResult {
  return { diagnostics: check(declarations, undefined).map((d) => toDiagnostic(d, 0, declarations.length)) }
}
