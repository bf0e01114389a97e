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
  // `catch (e) { e.message }` is how programs read a failed call's error (its message and code).
  useUnknownInCatchVariables: false,
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

// Agents' declarations change rarely: keeping the parses of the last few (one per view in use)
// spares a parse and a bind per run. Bounded, least recently used first out.
const MAX_DECLARATION_FILES = 8
/** @type {Map<string, import('typescript').SourceFile>} */
const declarationFiles = new Map()

/** @param {string} declarations */
function declarationsFile(declarations) {
  let file = declarationFiles.get(declarations)
  if (file === undefined) {
    file = ts.createSourceFile(DECLARATIONS_FILE, declarations, ts.ScriptTarget.ES2023)
    if (declarationFiles.size >= MAX_DECLARATION_FILES) declarationFiles.delete(/** @type {string} */ (declarationFiles.keys().next().value))
  } else {
    declarationFiles.delete(declarations)
  }
  declarationFiles.set(declarations, file)
  return file
}

/** @type {import('typescript').Program | undefined} */
let lastProgram

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
  // The previous program lends its unchanged files (the libraries, the same declarations).
  const compiled = ts.createProgram({ rootNames: roots, options: OPTIONS, host: createHost(files), ...(lastProgram === undefined ? {} : { oldProgram: lastProgram }) })
  lastProgram = compiled
  const target = /** @type {import('typescript').SourceFile} */ (compiled.getSourceFile(program === undefined ? DECLARATIONS_FILE : PROGRAM_FILE))
  return { compiled, target, diagnostics: [...compiled.getSyntacticDiagnostics(target), ...compiled.getSemanticDiagnostics(target)] }
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

/**
 * The comment an argument object type of the SDK opens with when its schema refuses other keys
 * (`additionalProperties: false`, see schema-to-ts.ts): only there is an undeclared key certain to
 * fail; an open object passes it to the tool.
 */
export const CLOSED_OBJECT_MARKER = '/* no other keys */'

/** See typeCheckProgram in type-check.ts. @param {string} declarations @param {string} program */
export function programDiagnostics(declarations, program) {
  return classifiedDiagnostics(declarations, program).map(({ line, column, message }) => ({ line, column, message }))
}

/**
 * The program's diagnostics in source order, each with its TypeScript code and whether it stands
 * for a failure certain at run time (see {@link certainFailure}).
 * @param {string} declarations @param {string} program
 */
export function classifiedDiagnostics(declarations, program) {
  const { compiled, target, diagnostics } = check(declarations, program)
  /** @type {import('typescript').TypeChecker | undefined} */
  let checker
  const classified = diagnostics.map((d) => {
    checker ??= compiled.getTypeChecker()
    const node = d.file === target && d.start !== undefined ? nodeAt(target, d.start) : undefined
    const certain = node !== undefined && certainFailure(checker, target, d, node)
    const found = toDiagnostic(d, PROGRAM_PREFIX.length, program.length)
    // An undeclared key the tool lets through: it runs, but the key is most likely misspelled.
    if (!certain && node !== undefined && UNDECLARED_KEY.has(d.code) && objectClosedness(checker, node) === 'open') {
      found.message += ' The tool accepts keys it does not declare, so this runs, but the key is likely a typo.'
    }
    return { ...found, code: d.code, certain, ...(certain ? subjectOf(/** @type {import('typescript').TypeChecker} */ (checker), d.code, /** @type {import('typescript').Node} */ (node)) : {}) }
  })
  classified.sort((a, b) => a.line - b.line || a.column - b.column)
  return classified
}

/** See typeCheckDeclarations in type-check.ts. @param {string} declarations */
export function declarationDiagnostics(declarations) {
  return check(declarations, undefined).diagnostics.map((d) => toDiagnostic(d, 0, declarations.length))
}

// Which diagnostics stand for a failure certain at run time, chosen by measurement on the program
// corpus (test/sandbox/corpus/): every faulty program there is refused, no correct one is.
/** A name that resolves to nothing: a ReferenceError where it is read (`fs`, `require`, `fetch`, a misspelled `tool`). */
const UNKNOWN_NAME = new Set([2304, 2552, 2580, 2581, 2582, 2583, 2584, 2585, 2591, 2592, 2593, 2662, 2663, 18004])
/** A property a type does not have: certain only on a tool's own types (a tool name, a result field). */
const MISSING_PROPERTY = new Set([2339, 2551])
/** A property read on a promise (a forgotten `await`): always `undefined`. */
const PROPERTY_OF_PROMISE = 2570
/** Calling (or `new` on) what has no call signature: a TypeError. */
const NOT_CALLABLE = new Set([2348, 2349, 2351])
/** A tool's arguments do not fit its parameters: the call fails validation (`INVALID_ARGS`). */
const BAD_ARGUMENT = new Set([2322, 2345, 2353, 2554, 2555, 2559, 2561, 2739, 2740, 2741, 2820])
/** Arguments missing (a required key, a required argument): certain whatever the types say. */
const MISSING_ARGUMENT = new Set([2554, 2555, 2739, 2740, 2741])
/** Too few or too many arguments, reported at the callee. */
const ARGUMENT_COUNT = new Set([2554, 2555])
/** Keys a tool does not declare, in an object literal (`tgas` for `tags`). */
const UNDECLARED_KEY = new Set([2353, 2561])

/**
 * Whether `diagnostic` stands for a failure certain at run time: a name that does not exist, a
 * tool or result property that does not exist, a call of what is not a function, or a tool call
 * whose arguments its validation refuses. Everything else (a stricter type than the program
 * needs, a possibly-undefined value, an unknown type name) may well run: not certain.
 * @param {import('typescript').TypeChecker} checker
 * @param {import('typescript').SourceFile} file
 * @param {import('typescript').Diagnostic} diagnostic
 * @param {import('typescript').Node} node the node at the diagnostic's start
 */
function certainFailure(checker, file, diagnostic, node) {
  const { code } = diagnostic
  if (UNKNOWN_NAME.has(code)) return !inTypePosition(node) && !(node.parent !== undefined && ts.isTypeOfExpression(node.parent))
  if (code === PROPERTY_OF_PROMISE) return true
  if (MISSING_PROPERTY.has(code)) {
    const owner = propertyOwner(node)
    if (owner === undefined || inTypePosition(node)) return false
    const type = checker.getTypeAtLocation(owner)
    return isPromise(type) || onlySdkTypes(checker, type, node.getText(file))
  }
  if (NOT_CALLABLE.has(code)) return true
  if (BAD_ARGUMENT.has(code)) {
    // An argument count is reported at the callee, every other argument problem inside the arguments.
    if (toolCallOf(checker, node, ARGUMENT_COUNT.has(code)) === undefined) return false
    const codes = [code, ...chainCodes(diagnostic.messageText)]
    if (codes.some((c) => MISSING_ARGUMENT.has(c))) return true
    // An undeclared key fails validation only where the schema refuses other keys.
    if (codes.some((c) => UNDECLARED_KEY.has(c))) return objectClosedness(checker, node) === 'closed'
    return disjoint(checker, node)
  }
  return false
}

/**
 * Whether the object literal whose key `node` names (`mode` of `{ path, mode: 'x' }`) is typed by
 * SDK argument types that refuse other keys (`closed`: every one opens with
 * {@link CLOSED_OBJECT_MARKER}), by ones that let them through (`open`), or by something else.
 * @param {import('typescript').TypeChecker} checker @param {import('typescript').Node} node
 * @returns {'closed' | 'open' | undefined}
 */
function objectClosedness(checker, node) {
  let literal = node.parent
  if (literal !== undefined && (ts.isPropertyAssignment(literal) || ts.isShorthandPropertyAssignment(literal))) literal = literal.parent
  if (literal === undefined || !ts.isObjectLiteralExpression(literal)) return undefined
  const contextual = checker.getContextualType(literal)
  if (contextual === undefined) return undefined
  const type = checker.getNonNullableType(contextual)
  let closed = 0
  let open = 0
  for (const member of type.isUnion() ? type.types : [type]) {
    const declaration = member.getSymbol()?.getDeclarations()?.[0]
    if (declaration === undefined || !ts.isTypeLiteralNode(declaration) || declaration.getSourceFile().fileName !== DECLARATIONS_FILE) return undefined
    // The marker sits between the brace and the first member, where no nested type can put one.
    const file = declaration.getSourceFile()
    const end = declaration.members.length > 0 ? (declaration.members[0]).getStart(file) : declaration.end
    if (file.text.slice(declaration.getStart(file) + 1, end).includes(CLOSED_OBJECT_MARKER)) closed += 1
    else open += 1
  }
  return open === 0 && closed > 0 ? 'closed' : closed === 0 && open > 0 ? 'open' : undefined
}

/** The codes of a diagnostic's message and of the messages it elaborates into. @param {string | import('typescript').DiagnosticMessageChain} text */
function chainCodes(text, codes = /** @type {number[]} */ ([])) {
  if (typeof text === 'string') return codes
  codes.push(text.code)
  for (const next of text.next ?? []) chainCodes(next, codes)
  return codes
}

/**
 * What a certain failure is about, for the hint that goes with it: an unknown global's name, the
 * name of an unknown tool (`tools.<name>`), a field read on a promise, or a field a result does not
 * have with the fields it does.
 * @param {import('typescript').TypeChecker} checker @param {number} code @param {import('typescript').Node} node
 */
function subjectOf(checker, code, node) {
  if (!ts.isIdentifier(node)) return {}
  if (UNKNOWN_NAME.has(code)) return { subject: 'global', name: node.text }
  const parent = node.parent
  if (!MISSING_PROPERTY.has(code) && code !== PROPERTY_OF_PROMISE) return {}
  if (ts.isPropertyAccessExpression(parent) && ts.isIdentifier(parent.expression) && parent.expression.text === 'tools') return { subject: 'tool', name: node.text }
  if (code === PROPERTY_OF_PROMISE || (ts.isPropertyAccessExpression(parent) && isPromise(checker.getTypeAtLocation(parent.expression)))) return { subject: 'promise', name: node.text }
  const owner = propertyOwner(node)
  if (owner === undefined) return {}
  // The fields the result does have: the model's fix is one of them.
  const value = checker.getNonNullableType(checker.getTypeAtLocation(owner))
  const fields = new Set()
  for (const member of value.isUnion() ? value.types : [value]) {
    if (checker.isArrayType(member)) continue
    for (const property of checker.getPropertiesOfType(member)) fields.add(property.getName())
  }
  return { subject: 'property', name: node.text, fields: [...fields].slice(0, MAX_FIELDS) }
}

/** Fields named at most for a property a result does not have. */
const MAX_FIELDS = 30

/** The deepest node of `file` whose text starts at or spans `position`. @param {import('typescript').SourceFile} file @param {number} position */
function nodeAt(file, position) {
  /** @type {import('typescript').Node | undefined} */
  let found
  /** @param {import('typescript').Node} node */
  const visit = (node) => {
    if (node.getStart(file) <= position && position < node.end) {
      found = node
      ts.forEachChild(node, visit)
      return true
    }
    return undefined
  }
  ts.forEachChild(file, visit)
  return found
}

/** Whether `node` is part of a type (erased before the program runs). @param {import('typescript').Node} node */
function inTypePosition(node) {
  for (let at = node; at !== undefined && !ts.isSourceFile(at); at = at.parent) {
    if (ts.isTypeNode(at) || ts.isTypeAliasDeclaration(at) || ts.isInterfaceDeclaration(at) || ts.isExpressionWithTypeArguments(at)) return true
    if (ts.isStatement(at) || ts.isBlock(at)) return false
  }
  return false
}

/** The expression whose type lacks the property `node` names (`r` of `r.text`, or `{ text } = r`'s `r`). @param {import('typescript').Node} node */
function propertyOwner(node) {
  const parent = node.parent
  if (parent === undefined) return undefined
  if (ts.isPropertyAccessExpression(parent) && parent.name === node) return parent.expression
  if (ts.isBindingElement(parent) && ts.isObjectBindingPattern(parent.parent)) return parent.parent
  if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) return node.parent
  return undefined
}

/** Whether `type` is a promise (a property read on it is a forgotten `await`). @param {import('typescript').Type} type */
function isPromise(type) {
  const symbol = type.getSymbol()
  return symbol?.getName() === 'Promise' && (symbol.getDeclarations() ?? []).every((d) => d.getSourceFile().fileName.startsWith(LIB_DIR))
}

/**
 * Whether every possible value of `type` (null and undefined aside) is an object whose type the
 * SDK declares (`tools`, a result, a nested result object), or an array of them, and none has
 * `name`: the read is `undefined` whatever the tool returns.
 * @param {import('typescript').TypeChecker} checker @param {import('typescript').Type} type @param {string} name
 */
function onlySdkTypes(checker, type, name) {
  const value = checker.getNonNullableType(type)
  const members = value.isUnion() ? value.types : [value]
  return members.every((member) => checker.getPropertyOfType(member, name) === undefined && (declaredBySdk(member) || (checker.isArrayType(member) && checker.getTypeArguments(/** @type {import('typescript').TypeReference} */ (member)).every(declaredBySdk))))
}

/** Whether the SDK declares `type` (`tools`, a result, a nested result object). @param {import('typescript').Type} type */
function declaredBySdk(type) {
  const declarations = type.getSymbol()?.getDeclarations() ?? []
  return declarations.length > 0 && declarations.every((d) => d.getSourceFile().fileName === DECLARATIONS_FILE)
}

/**
 * The call of a tool (`tools.<name>(...)`, `tools["name"](...)`) whose arguments (or, with
 * `atCallee`, whose callee) hold `node`, or undefined.
 * @param {import('typescript').TypeChecker} checker @param {import('typescript').Node} node @param {boolean} [atCallee]
 */
function toolCallOf(checker, node, atCallee = false) {
  for (let at = node; at.parent !== undefined && !ts.isSourceFile(at); at = at.parent) {
    const parent = at.parent
    if (ts.isCallExpression(parent)) {
      if (parent.expression === at ? !atCallee : !parent.arguments.includes(/** @type {import('typescript').Expression} */ (at))) return undefined
      const callee = parent.expression
      const object = ts.isPropertyAccessExpression(callee) || ts.isElementAccessExpression(callee) ? callee.expression : undefined
      if (object === undefined || !ts.isIdentifier(object)) return undefined
      const declarations = checker.getSymbolAtLocation(object)?.getDeclarations() ?? []
      return object.text === 'tools' && declarations.some((d) => d.getSourceFile().fileName === DECLARATIONS_FILE) ? parent : undefined
    }
    if (ts.isFunctionLike(at) || ts.isStatement(at)) return undefined
  }
  return undefined
}

/**
 * Whether the value at `node` (an argument, or an argument's property) and the type expected
 * there share no value: a `number` for a `string` fails validation whatever it holds, a `string`
 * for `"asc" | "desc"` or a `string | undefined` for a `string` may not.
 * @param {import('typescript').TypeChecker} checker @param {import('typescript').Node} node
 */
function disjoint(checker, node) {
  let value = node
  const parent = node.parent
  if (parent !== undefined && ts.isPropertyAssignment(parent) && parent.name === node) value = parent.initializer
  else if (parent !== undefined && ts.isShorthandPropertyAssignment(parent)) value = parent.name
  if (!ts.isExpression(value)) return false
  const contextual = checker.getContextualType(value)
  if (contextual === undefined) return false
  // An optional key's `undefined` is no value a program means to pass, nor a given `undefined` one it means to send.
  const expected = checker.getNonNullableType(contextual)
  const given = checker.getNonNullableType(checker.getTypeAtLocation(value))
  return !checker.isTypeAssignableTo(given, expected) && !checker.isTypeAssignableTo(expected, given)
}
