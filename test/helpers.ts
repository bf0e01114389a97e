import type { ToolDefinition } from '../src/tool.ts'
import type { ToolExecutionInput } from '../src/execution.ts'
import type { JsonSchemaNode } from '../src/schema/types.ts'

/** A raw tool definition for tests: echoes its arguments unless `execute` says otherwise. */
export function rawTool(
  name: string,
  overrides: Partial<Omit<ToolDefinition, 'name'>> & { outputSchema?: JsonSchemaNode } = {},
): ToolDefinition {
  const { outputSchema, ...rest } = overrides
  return {
    name,
    description: `the ${name} tool`,
    parameters: { type: 'object', properties: {}, additionalProperties: true },
    output: {
      schema: outputSchema ?? {},
      render: (_args, value) => [{ type: 'text', text: JSON.stringify(value) }],
    },
    execute: async (args) => args,
    ...rest,
  }
}

let counter = 0

/** A call input with a fresh id and a live signal. */
export function call(name: string, args: unknown = {}, extra: Partial<ToolExecutionInput> = {}): ToolExecutionInput {
  counter += 1
  return { callId: `call-${counter}`, name, arguments: args, signal: new AbortController().signal, ...extra }
}

/** A promise with its resolve/reject exposed. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Recursively check that a value and everything in it is frozen. */
export function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true
  if (!Object.isFrozen(value)) return false
  return Object.values(value).every(isDeepFrozen)
}
