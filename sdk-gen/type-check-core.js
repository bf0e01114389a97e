// The type checker behind sdk-gen/type-check.ts, in plain JavaScript so that the worker thread
// that runs it for `run_code` (sandbox/type-check-worker.js) can load it too: a worker cannot load
// TypeScript on Node 20. Lib files are parsed (and bound) once per thread and shared by every
// check; only the declarations and the program are parsed per call. TypeScript is loaded on the
// first check, never at import: importing the SDK generator costs nothing of it.

import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'

/** @type {typeof import('typescript')} */
let ts
/** @type {import('typescript').CompilerOptions} */
let OPTIONS
/** @type {string} */
let DEFAULT_LIB_FILE
/** @type {string} */
let LIB_DIR

/** Load TypeScript (CommonJS, so `require` takes it on any Node) on the first check of a thread. */
function load() {
  if (ts !== undefined) return
  const typescript = createRequire(import.meta.url)('typescript')
  OPTIONS = compilerOptions(typescript)
  DEFAULT_LIB_FILE = typescript.getDefaultLibFilePath(OPTIONS)
  LIB_DIR = dirname(DEFAULT_LIB_FILE)
  ts = typescript
}

/** @param {typeof import('typescript')} ts @returns {import('typescript').CompilerOptions} */
const compilerOptions = (ts) => ({
  target: ts.ScriptTarget.ES2023,
  // What both engines provide (QuickJS 2024, V8 11.3 in Node 20): ES2023 (findLast, toSorted, ...).
  lib: ['lib.es2023.d.ts'],
  strict: true,
  // Untyped helper parameters are ordinary in a quick script; flagging them would only add noise.
  noImplicitAny: false,
  noEmit: true,
  noResolve: true,
  types: [],
  skipDefaultLibCheck: true,
})

const DECLARATIONS_FILE = '/code-mode/sdk.ts'
const PROGRAM_FILE = '/code-mode/program.ts'
const GLOBALS_FILE = '/code-mode/globals.d.ts'

// The sandbox's console; no DOM or Node globals exist there.
const GLOBALS = `declare const console: {
  log(...data: unknown[]): void
  info(...data: unknown[]): void
  warn(...data: unknown[]): void
  error(...data: unknown[]): void
  debug(...data: unknown[]): void
}
`

// Same-line prefix, so only columns of the first line move and every line keeps its number.
const PROGRAM_PREFIX = 'async function __program__() {'
const PROGRAM_SUFFIX = '\n}\n'

/** @type {Map<string, import('typescript').SourceFile>} */
const sharedFiles = new Map()

/** @param {string} fileName */
function sharedSourceFile(fileName) {
  const cached = sharedFiles.get(fileName)
  if (cached !== undefined) return cached
  let text
  if (fileName === GLOBALS_FILE) text = GLOBALS
  else if (dirname(fileName) === LIB_DIR) text = readFileSync(fileName, 'utf8')
  else return undefined
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2023)
  sharedFiles.set(fileName, file)
  return file
}

/** @param {ReadonlyMap<string, import('typescript').SourceFile>} files @returns {import('typescript').CompilerHost} */
function createHost(files) {
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
/** @type {import('typescript').SourceFile | undefined} */
let lastDeclarations

/** @param {string} declarations */
function declarationsFile(declarations) {
  if (lastDeclarations?.text !== declarations) {
    lastDeclarations = ts.createSourceFile(DECLARATIONS_FILE, declarations, ts.ScriptTarget.ES2023)
  }
  return lastDeclarations
}

/** @param {string} declarations @param {string | undefined} program */
function check(declarations, program) {
  load()
  const files = new Map()
  files.set(DECLARATIONS_FILE, declarationsFile(declarations))
  if (program !== undefined) {
    const text = `${PROGRAM_PREFIX}${program}${PROGRAM_SUFFIX}`
    files.set(PROGRAM_FILE, ts.createSourceFile(PROGRAM_FILE, text, ts.ScriptTarget.ES2023))
  }
  const roots = [GLOBALS_FILE, ...files.keys()]
  const compiled = ts.createProgram({ rootNames: roots, options: OPTIONS, host: createHost(files) })
  const target = /** @type {import('typescript').SourceFile} */ (compiled.getSourceFile(program === undefined ? DECLARATIONS_FILE : PROGRAM_FILE))
  return [...compiled.getSyntacticDiagnostics(target), ...compiled.getSemanticDiagnostics(target)]
}

/** @param {import('typescript').Diagnostic} diagnostic @param {number} offset @param {number} length */
function toDiagnostic(diagnostic, offset, length) {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')
  const file = diagnostic.file
  if (file === undefined || diagnostic.start === undefined) return { line: 1, column: 1, message }
  // A problem reported in the wrapper's closing brace (a missing `}`) belongs at the program's end.
  const start = Math.min(Math.max(diagnostic.start, offset), offset + length)
  const { line, character } = file.getLineAndCharacterOfPosition(start)
  return { line: line + 1, column: (line === 0 ? character - offset : character) + 1, message }
}

/** See typeCheckProgram in type-check.ts. @param {string} declarations @param {string} program */
export function programDiagnostics(declarations, program) {
  const diagnostics = check(declarations, program).map((d) => toDiagnostic(d, PROGRAM_PREFIX.length, program.length))
  diagnostics.sort((a, b) => a.line - b.line || a.column - b.column)
  return diagnostics
}

/** See typeCheckDeclarations in type-check.ts. @param {string} declarations */
export function declarationDiagnostics(declarations) {
  return check(declarations, undefined).map((d) => toDiagnostic(d, 0, declarations.length))
}
