import type { JsonValue } from './json-boundary.ts'
import type { ContentBlock } from './messages.ts'
import type { JsonSchemaNode, ToolSchema } from './schema/types.ts'
import type { ToolExecution, ToolExecutionResult, ToolResult, ToolRunContext } from './execution.ts'
import type { ToolCallView, ToolResultView } from './presentation.ts'

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
  /** Called exactly once per outcome, before materialization; `undefined` keeps the content. */
  finalizeContent?(exec: Readonly<ToolExecution>, result: Readonly<ToolExecutionResult>): ContentBlock[] | undefined
  /** Cooperative timeout budget in ms, enforced by the timeout policy. Positive and finite. */
  readonly timeoutMs?: number
  /** Only an exact `true` lets the call overlap with siblings. */
  isConcurrencySafe?(args: unknown): boolean
  /** Pending-state presentation; pure, depends only on `args`. */
  presentCall?(args: unknown): ToolCallView | undefined
  /** Completed-state presentation from `args` and the durable result; pure. */
  presentResult?(args: unknown, result: ToolResult): ToolResultView | undefined
}
