import { ToolDefinitionError } from './errors.ts'
import type { ToolGuard } from './execution.ts'
import { snapshotJson } from './json-boundary.ts'
import { assertObjectJsonSchema, assertSupportedJsonSchema, isImmutableSchema, withoutStandardMarker } from './schema/json-schema.ts'
import type { JsonSchemaNode, ObjectJsonSchema, ToolSchema } from './schema/types.ts'
import type { ScopeNode } from './scope.ts'
import type { ToolDefinition } from './tool.ts'

/** The reserved name of the Code Mode transport tool. */
export const RUN_CODE = 'run_code'

/** How a scope's models see its tools: one schema per tool, or a single `run_code`. */
export type ToolPresentationMode = 'native' | 'code'

/** Per-scope filter over inherited tools. Restrictions intersect; own registrations stay visible. */
export interface ToolRestriction {
  /** Inherited tool names that stay visible; every other inherited tool is removed. */
  readonly allow?: readonly string[]
  /** Inherited tool names removed from visibility. */
  readonly deny?: readonly string[]
}

/**
 * The `run_code` tool a Code Mode transport provides: an ordinary definition plus the description
 * a model sees for one view of tools (it embeds the SDK generated for that view).
 */
export interface CodeModeTool extends ToolDefinition {
  describe(tools: readonly ToolDefinition[]): string
}

/** One registered tool with the schemas captured (and frozen) when it was registered. */
export interface RegisteredTool {
  readonly definition: ToolDefinition
  readonly scope: ScopeNode
  readonly schema: ToolSchema
  readonly outputSchema: JsonSchemaNode
}

interface CompiledRestriction {
  readonly allow: ReadonlySet<string> | undefined
  readonly deny: ReadonlySet<string> | undefined
}

interface GuardEntry {
  readonly scope: ScopeNode
  readonly guard: ToolGuard
}

const NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/

function isFunction(value: unknown): value is (...args: never[]) => unknown {
  return typeof value === 'function'
}

/**
 * A schema as the registry keeps it: one this library built (`defineTool`'s, deep-frozen) as it
 * is, so the pipeline's argument check and the definition's own share one compiled validator;
 * any other as a frozen JSON copy, zod's `~standard` member left out.
 */
function frozenSchema(schema: unknown, label: string): unknown {
  if (typeof schema === 'object' && schema !== null && isImmutableSchema(schema)) return schema
  return snapshotJson(withoutStandardMarker(schema), label)
}

/** Check a definition and capture frozen copies of its schemas; lists every problem at once. */
export function checkDefinition(
  definition: ToolDefinition,
  allowReserved = false,
): { readonly schema: ToolSchema; readonly outputSchema: JsonSchemaNode } {
  if (typeof definition !== 'object' || definition === null) {
    throw new ToolDefinitionError(`a tool definition must be an object, got ${definition === null ? 'null' : typeof definition}`)
  }
  const problems: string[] = []
  const { name } = definition
  const label = typeof name === 'string' ? `tool "${name}"` : 'tool'
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    problems.push(`name must match ${String(NAME_PATTERN)} (letters, digits, _ . : -; at most 128), got ${JSON.stringify(name)}`)
  } else if (name === RUN_CODE && !allowReserved) {
    problems.push(`name "${RUN_CODE}" is reserved for the Code Mode transport`)
  }
  if (typeof definition.description !== 'string') problems.push('description must be a string')
  if (!isFunction(definition.execute)) problems.push('execute must be a function')
  let parameters: ObjectJsonSchema | undefined
  try {
    const copy = frozenSchema(definition.parameters, 'parameters')
    assertSupportedJsonSchema(copy)
    assertObjectJsonSchema(copy)
    parameters = copy
  } catch (error) {
    problems.push(`parameters: ${(error as Error).message}`)
  }
  const output = definition.output as ToolDefinition['output'] | undefined
  let outputSchema: JsonSchemaNode | undefined
  if (typeof output !== 'object' || output === null) {
    problems.push('output must be { schema, render, presentationMeta? }')
  } else {
    try {
      const copy = frozenSchema(output.schema, 'output.schema')
      assertSupportedJsonSchema(copy)
      outputSchema = copy as JsonSchemaNode
    } catch (error) {
      problems.push(`output.schema: ${(error as Error).message}`)
    }
    if (!isFunction(output.render)) problems.push('output.render must be a function')
    if (output.presentationMeta !== undefined && !isFunction(output.presentationMeta)) {
      problems.push('output.presentationMeta must be a function when given')
    }
  }
  const timeoutMs: unknown = definition.timeoutMs
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0)) {
    problems.push(`timeoutMs must be a positive finite number of milliseconds, got ${String(timeoutMs)}`)
  }
  for (const key of ['finalizeContent', 'isConcurrencySafe', 'presentCall', 'presentResult'] as const) {
    if (definition[key] !== undefined && !isFunction(definition[key])) problems.push(`${key} must be a function when given`)
  }
  if (problems.length > 0 || parameters === undefined || outputSchema === undefined) {
    throw new ToolDefinitionError(`Invalid ${label}: ${problems.join('; ')}`)
  }
  return { schema: Object.freeze({ name: name as string, description: definition.description, parameters }), outputSchema }
}

/**
 * The deployment's registry state: layers of registrations (the root node is the global layer),
 * restrictions, guards and presentation modes, all keyed by scope node. One visibility resolver
 * ({@link ToolRegistry.resolve}) feeds lookup, schemas and dispatch.
 */
export class ToolRegistry {
  readonly #layers = new Map<ScopeNode, Map<string, RegisteredTool>>()
  readonly #restrictions = new Map<ScopeNode, CompiledRestriction[]>()
  readonly #presentation = new Map<ScopeNode, ToolPresentationMode>()
  readonly #guards: GuardEntry[] = []
  readonly #mode: ToolPresentationMode
  #transport: { tool: CodeModeTool; schema: ToolSchema; outputSchema: JsonSchemaNode } | undefined

  constructor(mode: ToolPresentationMode) {
    this.#mode = mode
  }

  /** Add a definition to `scope`'s layer; throws on a duplicate within that layer. */
  register(scope: ScopeNode, definition: ToolDefinition): RegisteredTool {
    const { schema, outputSchema } = checkDefinition(definition)
    let layer = this.#layers.get(scope)
    if (layer === undefined) {
      layer = new Map()
      this.#layers.set(scope, layer)
    }
    if (layer.has(schema.name)) {
      const where = scope.parent === undefined ? 'globally' : `in scope "${scope.path}"`
      throw new ToolDefinitionError(`tool "${schema.name}" is already registered ${where}`)
    }
    const entry: RegisteredTool = Object.freeze({ definition, scope, schema, outputSchema })
    layer.set(schema.name, entry)
    return entry
  }

  /** Remove exactly `entry`; false when it was already removed. */
  unregister(entry: RegisteredTool): boolean {
    const layer = this.#layers.get(entry.scope)
    if (layer?.get(entry.schema.name) !== entry) return false
    layer.delete(entry.schema.name)
    return true
  }

  /** Install the Code Mode transport (one per deployment). */
  setTransport(tool: CodeModeTool): void {
    if (this.#transport !== undefined) throw new ToolDefinitionError('a Code Mode transport is already installed')
    if (tool.name !== RUN_CODE) throw new ToolDefinitionError(`the Code Mode transport tool must be named "${RUN_CODE}"`)
    if (!isFunction(tool.describe)) throw new ToolDefinitionError('the Code Mode transport tool needs describe(tools)')
    this.#transport = { tool, ...checkDefinition(tool, true) }
  }

  get transport(): CodeModeTool | undefined {
    return this.#transport?.tool
  }

  /** The transport as a registered tool (its output schema captured at install). */
  transportEntry(scope: ScopeNode): RegisteredTool | undefined {
    const transport = this.#transport
    if (transport === undefined) return undefined
    return { definition: transport.tool, scope, schema: transport.schema, outputSchema: transport.outputSchema }
  }

  /** Validate and add a restriction on `scope`; returns the exact remover. */
  restrict(scope: ScopeNode, filter: ToolRestriction): () => void {
    if (scope.parent === undefined) {
      throw new ToolDefinitionError('restrict() filters what a scope inherits; the deployment root inherits nothing (restrict from a scope or agent context)')
    }
    if (typeof filter !== 'object' || filter === null) throw new ToolDefinitionError('a restriction must be { allow?, deny? }')
    const problems: string[] = []
    // A misspelt key (`denny`) would otherwise be a filter that silently filters nothing.
    for (const key of Object.keys(filter)) {
      if (key !== 'allow' && key !== 'deny') problems.push(`unknown key ${JSON.stringify(key)}: a restriction has only "allow" and "deny"`)
    }
    const read = (key: 'allow' | 'deny'): Set<string> | undefined => {
      const list: unknown = filter[key]
      if (list === undefined) return undefined
      if (!Array.isArray(list)) {
        problems.push(`${key} must be an array of tool names`)
        return undefined
      }
      if (list.length === 0) {
        // An empty deny denies nothing, as if absent (a list built from config may be empty). An
        // empty allow is ambiguous, everything hidden or nothing said: refused, with either.
        if (key === 'allow') problems.push('allow is empty: list at least one tool name to keep, or leave "allow" out')
        return undefined
      }
      const names = new Set<string>()
      for (let index = 0; index < list.length; index++) {
        if (!(index in list)) {
          problems.push(`${key}[${index}] is a hole; use a dense array`)
          continue
        }
        const name: unknown = list[index]
        if (typeof name !== 'string') {
          problems.push(`${key}[${index}] must be a string`)
          continue
        }
        if (name === RUN_CODE) problems.push(`"${RUN_CODE}" is the reserved Code Mode transport and cannot be restricted`)
        else if (this.#layers.get(scope)?.has(name) === true) {
          problems.push(`"${name}" is registered in this scope itself; restrictions only filter inherited tools`)
        } else if (!this.#inherited(scope).has(name)) {
          const known = [...this.#inherited(scope)].sort()
          problems.push(`"${name}" is not an inherited tool (inherited: ${known.length > 0 ? known.join(', ') : 'none'})`)
        }
        names.add(name)
      }
      return names
    }
    const allow = read('allow')
    const deny = read('deny')
    if (allow === undefined && deny === undefined && problems.length === 0) {
      problems.push('the filter names no tools: give a non-empty allow and/or deny list')
    }
    if (problems.length > 0) throw new ToolDefinitionError(`Invalid restriction for scope "${scope.path}": ${problems.join('; ')}`)
    const compiled: CompiledRestriction = Object.freeze({ allow, deny })
    this.#restrictions.set(scope, [...(this.#restrictions.get(scope) ?? []), compiled])
    return () => {
      const list = this.#restrictions.get(scope)
      if (list === undefined || !list.includes(compiled)) return
      this.#restrictions.set(scope, list.filter((entry) => entry !== compiled))
    }
  }

  /** Names registered in the layers `scope` inherits from (root and ancestors, not itself). */
  #inherited(scope: ScopeNode): Set<string> {
    const names = new Set<string>()
    for (const node of scope.chain) {
      if (node === scope) break
      for (const name of this.#layers.get(node)?.keys() ?? []) names.add(name)
    }
    return names
  }

  /** Declare `mode` for `scope`; one declaration per scope. Returns the exact remover. */
  presentAs(scope: ScopeNode, mode: ToolPresentationMode): () => void {
    if (mode !== 'native' && mode !== 'code') {
      throw new ToolDefinitionError(`presentAs() takes 'native' or 'code', got ${JSON.stringify(mode)}`)
    }
    if (scope.parent === undefined) {
      throw new ToolDefinitionError("presentAs() is scoped only; set the deployment default with createContext({ tools: { mode } })")
    }
    if (this.#presentation.has(scope)) {
      throw new ToolDefinitionError(`scope "${scope.path}" already declared a presentation mode; dispose it first`)
    }
    if (mode === 'code' && this.#transport === undefined) {
      throw new ToolDefinitionError("presentAs('code') needs a Code Mode transport: createContext({ tools: { codeMode } })")
    }
    this.#presentation.set(scope, mode)
    let active = true
    return () => {
      if (!active) return
      active = false
      this.#presentation.delete(scope)
    }
  }

  /** The mode `scope` presents in: the nearest declaration on its chain, else the deployment's. */
  modeOf(scope: ScopeNode): ToolPresentationMode {
    for (let index = scope.chain.length - 1; index >= 0; index--) {
      const mode = this.#presentation.get(scope.chain[index] as ScopeNode)
      if (mode !== undefined) return mode
    }
    return this.#mode
  }

  /**
   * The native tool `scope` sees under `name`: the nearest layer on its chain that has it, kept
   * only if every restriction declared strictly below that layer (down to `scope`) lets it pass.
   */
  resolve(name: string, scope: ScopeNode): RegisteredTool | undefined {
    const chain = scope.chain
    for (let depth = chain.length - 1; depth >= 0; depth--) {
      const entry = this.#layers.get(chain[depth] as ScopeNode)?.get(name)
      if (entry === undefined) continue
      for (let below = depth + 1; below < chain.length; below++) {
        const restrictions = this.#restrictions.get(chain[below] as ScopeNode)
        if (restrictions === undefined) continue
        for (const restriction of restrictions) {
          if (restriction.allow !== undefined && !restriction.allow.has(name)) return undefined
          if (restriction.deny?.has(name) === true) return undefined
        }
      }
      return entry
    }
    return undefined
  }

  /** Every native tool `scope` sees, in first-registration order of their names. */
  visible(scope: ScopeNode): RegisteredTool[] {
    const names = new Set<string>()
    for (const node of scope.chain) for (const name of this.#layers.get(node)?.keys() ?? []) names.add(name)
    const out: RegisteredTool[] = []
    for (const name of names) {
      const entry = this.resolve(name, scope)
      if (entry !== undefined) out.push(entry)
    }
    return out
  }

  /** Add a guard on `scope`; returns the exact remover. */
  addGuard(scope: ScopeNode, guard: ToolGuard): () => void {
    if (!isFunction(guard)) throw new ToolDefinitionError(`a guard must be a function, got ${typeof guard}`)
    const entry: GuardEntry = { scope, guard }
    this.#guards.push(entry)
    return () => {
      const index = this.#guards.indexOf(entry)
      if (index >= 0) this.#guards.splice(index, 1)
    }
  }

  /** Guards that apply to a call at `caller`: global ones first, then down the caller's chain. */
  guardsFor(caller: ScopeNode): ToolGuard[] {
    if (this.#guards.length === 0) return []
    const out: ToolGuard[] = []
    for (const node of caller.chain) {
      for (const entry of this.#guards) if (entry.scope === node) out.push(entry.guard)
    }
    return out
  }
}
