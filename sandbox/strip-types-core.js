// The type removal behind sandbox/strip-types.ts, in plain JavaScript so that the worker thread
// that strips costly programs off the main thread (type-check-worker.js) can load it too: a worker
// cannot load TypeScript on Node 20. Both threads run this same code, so a program gets the same
// result, errors and positions on either.
//
// TypeScript (about 80 MB and half a second to load) is loaded on the first strip, never at
// import: a process that runs only plain JavaScript never loads it.

import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/** @type {typeof import('typescript')} */
let ts
/** @type {typeof import('ts-blank-space').blankSourceFile} */
let blankSourceFile

// The program is the body of an async function. Parsing it wrapped in one puts `await` and
// `return` in their real context; the prefix shares the first line, so no line number moves.
const PREFIX = 'async function __program__() {'
const SUFFIX = '\n}'

/** @type {import('typescript').CreateSourceFileOptions} */
let PARSE_OPTIONS
/** @type {ReadonlySet<import('typescript').SyntaxKind>} */
let PARAMETER_PROPERTY_MODIFIERS

/**
 * Take TypeScript and ts-blank-space (a namespace as `import()` or `require()` gives it).
 * TypeScript is resolved from ts-blank-space's own location: the blanker walks the tree with the
 * SyntaxKind numbers of its copy, so the parse must come from that same copy, even where a
 * project's own TypeScript sits beside it.
 * @param {{ blankSourceFile: typeof import('ts-blank-space').blankSourceFile }} blanker
 */
function use(blanker) {
  const typescript = createRequire(require.resolve('ts-blank-space'))('typescript')
  PARSE_OPTIONS = { languageVersion: typescript.ScriptTarget.ESNext, jsDocParsingMode: typescript.JSDocParsingMode.ParseNone }
  PARAMETER_PROPERTY_MODIFIERS = new Set([
    typescript.SyntaxKind.PublicKeyword,
    typescript.SyntaxKind.PrivateKeyword,
    typescript.SyntaxKind.ProtectedKeyword,
    typescript.SyntaxKind.ReadonlyKeyword,
    typescript.SyntaxKind.OverrideKeyword,
  ])
  blankSourceFile = blanker.blankSourceFile
  ts = typescript
}

/**
 * Load TypeScript and ts-blank-space now, asynchronously (any Node 20): what a worker thread does
 * before its first strip. Later calls do nothing.
 * @returns {Promise<void>}
 */
export async function loadStripper() {
  if (ts === undefined) use(await import('ts-blank-space'))
}

/**
 * Load them synchronously, on the first strip of a thread that did not call loadStripper:
 * ts-blank-space is an ES module, which `require` loads from Node 20.19 on.
 */
function loadStripperSync() {
  if (ts !== undefined) return
  let blanker
  try {
    blanker = require('ts-blank-space')
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause)
    throw new Error(
      `stripTypes could not load ts-blank-space synchronously (it is an ES module: Node 20.19 or newer loads it with require): ${reason}. ` +
        'Upgrade Node, or let run_code strip programs (it does so in a worker thread).',
      { cause },
    )
  }
  use(blanker)
}

/**
 * Why `node` (reported by ts-blank-space) cannot be erased, and what to write instead.
 * @param {import('typescript').Node} node
 * @returns {string}
 */
function describeNonErasable(node) {
  switch (node.kind) {
    case ts.SyntaxKind.EnumDeclaration:
      return '`enum` is not supported: use a union of string literals or a const object instead'
    case ts.SyntaxKind.ModuleDeclaration:
      return '`namespace` with values is not supported: use a plain object or top-level functions instead'
    case ts.SyntaxKind.TypeAssertionExpression:
      return 'angle-bracket type assertions (`<T>value`) are not supported: write `value as T` instead'
    case ts.SyntaxKind.ImportEqualsDeclaration:
      return '`import ... = ...` is not supported: tools are on the global `tools` object'
    case ts.SyntaxKind.ExportAssignment:
      return '`export =` is not supported: `return` the result instead'
    case ts.SyntaxKind.AsExpression:
    case ts.SyntaxKind.SatisfiesExpression:
      return 'a type assertion mixed with `??` and `&&`/`||` would change meaning once removed: wrap it in parentheses'
  }
  if (PARAMETER_PROPERTY_MODIFIERS.has(node.kind)) {
    return 'parameter properties (`constructor(private x: T)`) are not supported: declare the field in the class body and assign it in the constructor'
  }
  return `this TypeScript syntax (${ts.SyntaxKind[node.kind]}) cannot be removed without changing the program`
}

/**
 * @param {import('typescript').Statement} statement
 * @param {import('typescript').SyntaxKind} kind
 */
function hasModifier(statement, kind) {
  return ts.canHaveModifiers(statement) && (ts.getModifiers(statement)?.some((modifier) => modifier.kind === kind) ?? false)
}

/**
 * An `import` or `export` that survives blanking: valid nowhere in a function body.
 * @param {import('typescript').Statement} statement
 * @returns {string | undefined}
 */
function describeModuleSyntax(statement) {
  if (ts.isImportDeclaration(statement)) {
    if (statement.importClause?.isTypeOnly === true) return undefined
    return '`import` is not available in run_code: tools are on the global `tools` object, beside the JavaScript built-ins'
  }
  const erased =
    ts.isInterfaceDeclaration(statement) ||
    ts.isTypeAliasDeclaration(statement) ||
    (ts.isExportDeclaration(statement) && statement.isTypeOnly) ||
    hasModifier(statement, ts.SyntaxKind.DeclareKeyword)
  if (erased) return undefined
  if (ts.isExportDeclaration(statement) || ts.isExportAssignment(statement) || hasModifier(statement, ts.SyntaxKind.ExportKeyword)) {
    return '`export` is not available in run_code: `return` the result instead'
  }
  return undefined
}

/**
 * The first `<!--` that TypeScript reads as code. A program runs as a script, where `<!--` opens a
 * comment to the end of the line (ECMAScript Annex B), while TypeScript reads `x<!--y` as
 * `x < !--y`: program text could use the difference to hide code from these checks and close the
 * function it is wrapped in. The same characters in a string, template, regular expression or
 * comment are fine. (A script's other HTML-like comment, `-->` at the start of a line, is a
 * TypeScript syntax error already: no line break may come before a postfix `--`, and a prefix `--`
 * needs an operand.)
 * @param {import('typescript').SourceFile} file
 * @param {string} code
 * @returns {{ position: number, message: string } | undefined}
 */
function htmlOpenComment(file, code) {
  if (!code.includes('<!--')) return undefined
  /** @type {number | undefined} */
  let found
  /** @param {import('typescript').Node} node */
  const visit = (node) => {
    if (found !== undefined) return
    if (node.kind === ts.SyntaxKind.LessThanToken && code.startsWith('<!--', node.end - 1)) found = node.end - 1
    else for (const child of node.getChildren(file)) visit(child)
  }
  visit(file)
  return found === undefined ? undefined : { position: found, message: '`<!--` starts a comment in a script: put a space after `<` (`x < !--y`)' }
}

/**
 * Put a `;` where each overload signature (a function, method or constructor without a body) was.
 * ts-blank-space blanks them to spaces, its explicit `;` too, so the line before one ran on into
 * the line after it: `b = 4` / `function f(): void` / `(g)()` became `b = 4(g)()`, and a `/` on the
 * next line began a division in the engine where TypeScript had read a regular expression, so code
 * TypeScript took for a string ran (outside the program's wrapper, in sloppy mode). A `;` is an
 * empty statement, or an empty class element, wherever such a signature can stand.
 * @param {import('typescript').SourceFile} file
 * @param {string} blanked
 * @returns {string}
 */
function endOverloads(file, blanked) {
  /** @type {number[]} */
  const positions = []
  /** @param {import('typescript').Node} node */
  const visit = (node) => {
    if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node)) && node.body === undefined) {
      positions.push(node.getStart(file))
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  if (positions.length === 0) return blanked
  let out = ''
  let from = 0
  for (const position of positions) {
    // Blanked, as every body-less signature is; anything else is left as it is.
    if (blanked.charCodeAt(position) !== 0x20) continue
    out += blanked.slice(from, position) + ';'
    from = position + 1
  }
  return out + blanked.slice(from)
}

/**
 * See `stripTypes` in strip-types.ts, the typed public API.
 * @param {string} source
 * @returns {import('./strip-types-core.d.ts').CoreStripResult}
 */
export function stripTypes(source) {
  loadStripperSync()
  try {
    return strip(source)
  } catch (error) {
    // The parser and the blanker recurse once per nesting level: deep enough nesting (about 700
    // levels of brackets) exhausts the host's stack. That is the program's shape, not a host fault.
    if (error instanceof RangeError && /call stack/i.test(error.message)) {
      return { ok: false, message: 'the program nests too deeply to be parsed: flatten it (fewer nested brackets, calls or blocks)', line: 1, column: 1 }
    }
    throw error
  }
}

/**
 * @param {string} source
 * @returns {import('./strip-types-core.d.ts').CoreStripResult}
 */
function strip(source) {
  const wrapped = `${PREFIX}${source}${SUFFIX}`
  // `parseDiagnostics` is internal but has been on every SourceFile for years; the public routes to
  // the same list (a Program, `transpileModule`) cost milliseconds instead of nothing.
  /** @type {import('typescript').SourceFile & { readonly parseDiagnostics?: readonly import('typescript').DiagnosticWithLocation[] }} */
  const file = ts.createSourceFile('program.ts', wrapped, PARSE_OPTIONS, false, ts.ScriptKind.TS)

  /**
   * @param {number} position
   * @param {string} message
   * @returns {import('./strip-types-core.d.ts').CoreStripResult}
   */
  const fail = (position, message) => {
    // Positions inside the wrapper (a missing `}` is reported at its closing brace) belong at the program's end.
    const clamped = Math.min(Math.max(position, PREFIX.length), PREFIX.length + source.length)
    const { line, character } = file.getLineAndCharacterOfPosition(clamped)
    return { ok: false, message, line: line + 1, column: (line === 0 ? character - PREFIX.length : character) + 1 }
  }

  const wrapper = file.statements[0]
  const body = wrapper !== undefined && ts.isFunctionDeclaration(wrapper) ? wrapper.body : undefined
  if (body !== undefined && body.end < wrapped.length) {
    // The program closed the wrapper itself: its unmatched `}` is the first real mistake.
    return fail(body.end - 1, "Syntax error: '}' has no matching '{'")
  }
  const syntaxError = file.parseDiagnostics?.[0]
  if (syntaxError !== undefined) {
    return fail(syntaxError.start, `Syntax error: ${ts.flattenDiagnosticMessageText(syntaxError.messageText, '\n')}`)
  }

  /** @type {import('typescript').Node[]} */
  const nonErasable = []
  const blanked = endOverloads(file, blankSourceFile(file, (node) => nonErasable.push(node)))
  const problems = nonErasable.map((node) => ({ position: node.getStart(file), message: describeNonErasable(node) }))
  for (const statement of body?.statements ?? []) {
    const message = describeModuleSyntax(statement)
    if (message !== undefined) problems.push({ position: statement.getStart(file), message })
  }
  const htmlComment = htmlOpenComment(file, blanked)
  if (htmlComment !== undefined) problems.push(htmlComment)
  problems.sort((a, b) => a.position - b.position)
  const first = problems[0]
  if (first !== undefined) return fail(first.position, first.message)

  return { ok: true, code: blanked.slice(PREFIX.length, blanked.length - SUFFIX.length) }
}
