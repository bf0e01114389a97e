/**
 * The core: schema DSL, JSON boundary, registry and execution pipeline, events, scopes, the agent
 * turn scheduler, the timeout policy, presentation types and the session log. Listed one by one:
 * this surface grows only on purpose. Engines live in `./sandbox`, SDK generation in `./sdk-gen`.
 */

// Deployment, scopes and the tool runtime
export { Context, createContext, ToolRuntime } from './context.ts'
export type { Agent, CodeModeHost, CodeModeTransport, ContextOptions, ScopeKey, ToolsConfig } from './context.ts'
export { RUN_CODE } from './registry.ts'
export type { CodeModeTool, ToolPresentationMode, ToolRestriction } from './registry.ts'
export type { ApprovalAnswer, ApprovalService } from './pipeline.ts'
export type { CodeProgress, ToolEventName, ToolEvents } from './events.ts'

// Tools and their execution
export { defineTool } from './tool.ts'
export type { ToolDefinition, ToolOutputDefinition, TypedToolOutput, TypedToolSpec } from './tool.ts'
export type {
  CallId,
  CodeDispatchLog,
  PostToolDecision,
  PreToolDecision,
  ToolDispatchExecution,
  ToolExecution,
  ToolExecutionFailure,
  ToolExecutionInput,
  ToolExecutionMode,
  ToolExecutionResult,
  ToolExecutionSuccess,
  ToolExecutionToken,
  ToolFailure,
  ToolGuard,
  ToolResult,
  ToolRunContext,
} from './execution.ts'
export { CallScheduler, createToolCallRunner, TurnLogError, runToolCalls } from './scheduler.ts'
export type { RunToolCallsOptions, ToolCallRunner, ToolCallRunnerOptions, TurnCall } from './scheduler.ts'
export { installTimeoutPolicy } from './timeout-policy.ts'

// Errors
export {
  DisposedError,
  isToolError,
  ToolArgsError,
  ToolDefinitionError,
  ToolError,
  ToolNotFoundError,
  ToolErrorCode,
  ToolOutputError,
} from './errors.ts'
export type { SchemaIssue, ToolErrorInfo } from './errors.ts'

// Schemas
export {
  assertObjectJsonSchema,
  assertSupportedJsonSchema,
  ENFORCED_FORMATS,
  JsonSchemaError,
  MAX_REFERENCED_DEPTH,
  MAX_SCHEMA_DEPTH,
  parameterSchemaSpecToJsonSchema,
  SchemaSpecError,
  validateArgs,
  validateJsonSchemaValue,
  valueSchemaSpecToJsonSchema,
} from './schema/index.ts'
export type {
  ArrayValueSchemaSpec,
  BooleanValueSchemaSpec,
  InferArgs,
  InferValue,
  IntegerValueSchemaSpec,
  JsonSchemaNode,
  JsonSchemaScalar,
  JsonSchemaType,
  JsonValueSchemaSpec,
  NullValueSchemaSpec,
  NumberValueSchemaSpec,
  ObjectJsonSchema,
  ObjectValueSchemaSpec,
  OneOfValueSchemaSpec,
  ParameterPropertySpec,
  ParameterRootOptions,
  ParameterSchemaSpec,
  SchemaDefinitionIssue,
  StringValueSchemaSpec,
  ToolSchema,
  ValueSchemaSpec,
} from './schema/index.ts'

// The JSON boundary
export {
  JsonBoundaryError,
  parseDurableJson,
  parseJsonText,
  snapshotJson,
  // The issue's name for the same operation: copy into fresh frozen JSON.
  snapshotJson as snapshot,
  stringifyJson,
} from './json-boundary.ts'
export type { JsonObject, JsonValue } from './json-boundary.ts'

// Messages, presentation and the session log
export { text } from './messages.ts'
export type {
  AudioContent,
  ContentBlock,
  EmbeddedResourceContent,
  ImageContent,
  ResourceContents,
  ResourceLinkContent,
  TextContent,
  UserMessage,
} from './messages.ts'
export { presentToolCall, presentToolResult } from './presentation.ts'
export type {
  FileDiff,
  FileLocation,
  ReadFileLine,
  ToolCallKind,
  ToolCallView,
  ToolResultView,
} from './presentation.ts'
export {
  createMemorySessionLog,
  openJsonlSessionLog,
  replaySession,
  SessionLogError,
  toolCallEvent,
  toolResultEvent,
} from './session-log.ts'
export type {
  CodeDispatchEvent,
  CodeDispatchStartEvent,
  OpenedSessionLog,
  ReplayCard,
  ReplaySubCall,
  SessionEvent,
  SessionLog,
  ToolCallEvent,
  ToolResultEvent,
} from './session-log.ts'
