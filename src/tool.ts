import type { JsonValue } from './json-boundary.ts'
import type { ContentBlock } from './messages.ts'
import type { JsonSchemaNode, ToolSchema } from './schema/types.ts'
import type { ToolExecution, ToolExecutionResult, ToolResult, ToolRunContext } from './execution.ts'
import type { ToolCallView, ToolResultView } from './presentation.ts'
import { ToolDefinitionError } from './errors.ts'
import { compileParameterSpec, compileValueSpec, SchemaSpecError } from './schema/dsl.ts'
import type { InferArgs, InferValue, ParameterSchemaSpec, ValueSchemaSpec } from './schema/dsl.ts'
import type { SchemaDefinitionIssue } from './schema/json-schema.ts'
import { isValidAgainst, validateArgs } from './schema/validate.ts'
import { isStrayPromise } from './results.ts'

/** Tool-owned canonical output contract, applied after the body returns a JSON value. */
export interface ToolOutputDefinition {
  /** Raw supported JSON Schema enforced against every successful canonical value. */
  readonly schema: JsonSchemaNode
  /** Pure projection from validated arguments and value to model content. */
  render(args: unknown, value: JsonValue): ContentBlock[]
  /** Pure replayable presentation projection, computed only for top-level calls. */
  presentationMeta?(args: unknown, value: JsonValue): JsonValue
}

/**
 * A registered tool: its model-facing schema plus the execution function. Only `name`,
 * `description` and `parameters` ever reach a model (`schemas()` is an allowlist).
 */
export interface ToolDefinition extends ToolSchema {
  readonly output: ToolOutputDefinition
  /** Run one accepted call; return only its canonical value. Must observe `exec.signal`. */
  execute(args: unknown, exec: ToolRunContext): Promise<unknown>
  /** Called exactly once per outcome, with the materialized result; `undefined` keeps the content, a replacement is materialized again. */
  finalizeContent?(exec: Readonly<ToolExecution>, result: Readonly<ToolExecutionResult>): ContentBlock[] | undefined
  /** Cooperative timeout budget in ms, enforced by the timeout policy. Positive and finite. */
  timeoutMs?: number
  /** Only an exact `true` lets the call overlap with siblings. */
  isConcurrencySafe?(args: unknown): boolean
  /** Pending-state presentation; pure, depends only on `args`. */
  presentCall?(args: unknown): ToolCallView | undefined
  /** Completed-state presentation from `args` and the durable result; pure. */
  presentResult?(args: unknown, result: ToolResult): ToolResultView | undefined
}

/** The typed output declaration `defineTool` takes: a value spec and projections typed by it. */
export interface TypedToolOutput<Args, O extends ValueSchemaSpec> {
  /** Author-facing spec of the canonical value; compiled to `output.schema`. */
  readonly schema: O
  /** Pure projection from validated arguments and value to model content. */
  readonly render: (args: Args, value: InferValue<O>) => ContentBlock[]
  /** Pure replayable presentation projection, computed only for top-level calls. */
  readonly presentationMeta?: (args: Args, value: InferValue<O>) => JsonValue
}

/**
 * What an author writes for {@link defineTool}. Argument types come from `parameters`
 * ({@link InferArgs}); the body's result and the projections' value type from `output.schema`
 * ({@link InferValue}).
 */
export interface TypedToolSpec<P extends ParameterSchemaSpec, O extends ValueSchemaSpec> {
  readonly name: string
  readonly description: string
  /** Implicit object parameter map; compiled to the model-facing `parameters` schema. */
  readonly parameters: P
  /**
   * `false` closes the parameter root: an undeclared argument key (a misspelled `stauts`) is
   * refused as `INVALID_ARGS` before any policy sees the call. Absent or `true`, the root stays
   * open (undeclared keys pass at run time, as JSON Schema's default says); the generated SDK
   * lists only the declared keys either way, so the program's type check catches a misspelling.
   */
  readonly additionalParameters?: boolean
  readonly output: TypedToolOutput<InferArgs<P>, O>
  /** Runs with arguments already validated against `parameters` (a frozen lossless copy). */
  readonly execute: (args: InferArgs<P>, exec: ToolRunContext) => Promise<InferValue<O>> | InferValue<O>
  /** Last-mile content transform; sees every outcome, including invalid arguments, so it is untyped. */
  readonly finalizeContent?: (exec: Readonly<ToolExecution>, result: Readonly<ToolExecutionResult>) => ContentBlock[] | undefined
  /** Cooperative timeout budget in ms; positive and finite. */
  readonly timeoutMs?: number
  /** Called only with valid arguments; only an exact `true` opts in to parallel execution. */
  readonly isConcurrencySafe?: (args: InferArgs<P>) => boolean
  /** Receives unvalidated arguments (it may run while a call streams in). */
  readonly presentCall?: (args: unknown) => ToolCallView | undefined
  /** Receives unvalidated arguments and the durable result projection. */
  readonly presentResult?: (args: unknown, result: ToolResult) => ToolResultView | undefined
}

function optionalFunctionProblem(spec: object, key: string): string | undefined {
  const value: unknown = (spec as Record<string, unknown>)[key]
  return value === undefined || typeof value === 'function' ? undefined : `${key} must be a function when given`
}

/**
 * Builds a plain, frozen {@link ToolDefinition} from a typed spec. The spec's schemas are checked
 * and compiled here, so a malformed spec fails at definition time, with every bad path at once.
 *
 * The result's `parameters` is the compiled object-rooted JSON Schema and `output.schema` the
 * compiled output schema. Its `execute` validates arguments before the author's body runs and
 * throws `ToolArgsError` (`INVALID_ARGS`) otherwise; the pipeline turns that throw into an error
 * result. Its `isConcurrencySafe` (present only when the author gave one) answers `false` for
 * invalid arguments or a throwing classifier, and `true` only for an exact `true`. Output values
 * are not validated here: the pipeline checks them against `output.schema`.
 * @throws ToolDefinitionError (`INVALID_DEFINITION`) for a bad name, description, callback or `timeoutMs`.
 * @throws SchemaSpecError (`UNSUPPORTED_SCHEMA`) listing every malformed path of both schemas
 *   (`parameters.mode.enum[0]`, `output.schema.items.type`, ...).
 */
export function defineTool<const P extends ParameterSchemaSpec, const O extends ValueSchemaSpec>(spec: TypedToolSpec<P, O>): ToolDefinition {
  const problems: string[] = []
  if (typeof spec.name !== 'string' || spec.name === '') problems.push('name must be a non-empty string')
  if (typeof spec.description !== 'string') problems.push('description must be a string')
  if (typeof spec.execute !== 'function') problems.push('execute must be a function')
  const output: unknown = spec.output
  if (typeof output !== 'object' || output === null) {
    problems.push('output must be an object { schema, render, presentationMeta? }')
  } else {
    if (typeof (output as { render?: unknown }).render !== 'function') problems.push('output.render must be a function')
    const meta = optionalFunctionProblem(output, 'presentationMeta')
    if (meta !== undefined) problems.push(`output.${meta}`)
  }
  for (const key of ['finalizeContent', 'isConcurrencySafe', 'presentCall', 'presentResult']) {
    const problem = optionalFunctionProblem(spec, key)
    if (problem !== undefined) problems.push(problem)
  }
  const { timeoutMs, additionalParameters } = spec
  if (additionalParameters !== undefined && typeof additionalParameters !== 'boolean') {
    problems.push('additionalParameters must be true or false when given')
  }
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    problems.push('timeoutMs must be a positive finite number of milliseconds when given')
  }
  const label = typeof spec.name === 'string' ? JSON.stringify(spec.name) : '(unnamed)'
  if (problems.length > 0) throw new ToolDefinitionError(`Invalid tool definition ${label}: ${problems.join('; ')}`)

  const issues: SchemaDefinitionIssue[] = []
  const parameters = compileParameterSpec(spec.parameters, 'parameters', issues, additionalParameters === false ? { additionalParameters } : {})
  const outputSchema = compileValueSpec(spec.output.schema, 'output.schema', issues)
  if (parameters === undefined || outputSchema === undefined) throw new SchemaSpecError(issues, `schema of tool ${label}`)

  const { name, execute, isConcurrencySafe, finalizeContent, presentCall, presentResult } = spec
  const { render, presentationMeta } = spec.output
  type Args = InferArgs<P>
  type Value = InferValue<O>

  const definition: ToolDefinition = {
    name,
    description: spec.description,
    parameters,
    output: Object.freeze({
      schema: outputSchema,
      // The pipeline calls the projections only with arguments `execute` accepted and a value that
      // passed `output.schema`, which is what makes these casts true.
      render: (args: unknown, value: JsonValue) => render(args as Args, value as Value),
      ...(presentationMeta === undefined
        ? {}
        : { presentationMeta: (args: unknown, value: JsonValue) => presentationMeta(args as Args, value as Value) }),
    }),
    execute: async (args: unknown, exec: ToolRunContext) => execute(validateArgs(parameters, args, name) as Args, exec),
    ...(finalizeContent === undefined ? {} : { finalizeContent }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(isConcurrencySafe === undefined
      ? {}
      : {
          isConcurrencySafe: (args: unknown): boolean => {
            try {
              if (!isValidAgainst(parameters, args)) return false
              const answer: unknown = isConcurrencySafe(args as Args)
              isStrayPromise(answer)
              return answer === true
            } catch {
              return false
            }
          },
        }),
    ...(presentCall === undefined ? {} : { presentCall }),
    ...(presentResult === undefined ? {} : { presentResult }),
  }
  return Object.freeze(definition)
}
