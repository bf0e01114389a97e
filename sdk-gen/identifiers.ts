/**
 * Names in generated TypeScript: which strings may be written bare, and the safe, collision-free
 * binding each tool gets on the guest's `tools` object.
 */

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

// Reserved in some context (strict mode, modules, async functions) or misleading as a binding.
const RESERVED_WORDS: ReadonlySet<string> = new Set([
  'arguments', 'await', 'break', 'case', 'catch', 'class', 'const', 'continue', 'debugger', 'default',
  'delete', 'do', 'else', 'enum', 'eval', 'export', 'extends', 'false', 'finally', 'for', 'function',
  'if', 'implements', 'import', 'in', 'instanceof', 'interface', 'let', 'new', 'null', 'package',
  'private', 'protected', 'public', 'return', 'static', 'super', 'switch', 'this', 'throw', 'true',
  'try', 'typeof', 'undefined', 'var', 'void', 'while', 'with', 'yield', 'NaN', 'Infinity',
])

/** The members TypeScript's `Object` interface gives every object type. */
export const OBJECT_MEMBERS: ReadonlySet<string> = new Set([
  'constructor', 'toString', 'toLocaleString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', 'propertyIsEnumerable',
])

// Keys an object inherits from Object.prototype, plus names the language calls on its own: a
// `tools.then` would make the tools object a thenable (`await tools` would call a tool), and a
// `tools.toJSON` would be called by `JSON.stringify(tools)`.
const UNSAFE_PROPERTY_NAMES: ReadonlySet<string> = new Set([
  ...OBJECT_MEMBERS, '__proto__', 'prototype', '__defineGetter__', '__defineSetter__', '__lookupGetter__',
  '__lookupSetter__', 'then', 'toJSON',
])

/** True when `name` can be written bare as a property key (ASCII identifier syntax). */
export function isIdentifierName(name: string): boolean {
  return IDENTIFIER.test(name)
}

/**
 * True when `name` can be used unchanged as a tool binding: an ASCII identifier that is not a
 * reserved word and not a name every object already has (`constructor`, `__proto__`, `then`, ...).
 */
export function isSafeBinding(name: string): boolean {
  return isIdentifierName(name) && !RESERVED_WORDS.has(name) && !UNSAFE_PROPERTY_NAMES.has(name)
}

/**
 * A property key as TypeScript source: bare when it is an identifier, otherwise a double-quoted
 * string literal that no key (quotes, backslashes, line breaks) can break out of.
 */
export function renderPropertyKey(name: string): string {
  return isIdentifierName(name) ? name : renderStringLiteral(name)
}

/** A string as a double-quoted TypeScript string literal; line separators are escaped too. */
export function renderStringLiteral(value: string): string {
  return JSON.stringify(value).replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')
}

function sanitize(name: string): string {
  let base = name.replace(/[^A-Za-z0-9_$]/g, '_')
  if (base === '') base = 'tool'
  if (/^[0-9]/.test(base)) base = `_${base}`
  if (RESERVED_WORDS.has(base) || UNSAFE_PROPERTY_NAMES.has(base)) base = `${base}_`
  return base
}

/** One tool's binding: `tools[binding](args)` calls the tool registered as `name`. */
export interface SdkBinding {
  readonly binding: string
  readonly name: string
}

/**
 * Assign every tool name a binding, in the order given. Names that are already safe bindings keep
 * themselves, whatever their position; every other name is sanitized (`my-tool` → `my_tool`,
 * `delete` → `delete_`, `2fa` → `_2fa`) and, when that is taken, suffixed `_2`, `_3`, ... until
 * it is free. Deterministic for a given list of distinct names.
 */
export function assignBindings(names: readonly string[]): SdkBinding[] {
  const taken = new Set<string>()
  for (const name of names) {
    if (isSafeBinding(name)) taken.add(name)
  }
  return names.map((name) => {
    if (isSafeBinding(name)) return { binding: name, name }
    const base = sanitize(name)
    let binding = base
    for (let n = 2; taken.has(binding); n++) binding = `${base}_${n}`
    taken.add(binding)
    return { binding, name }
  })
}
