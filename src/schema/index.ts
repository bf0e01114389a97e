/**
 * The schema surface: the author-facing DSL and its inference, the enforced raw JSON Schema
 * subset, and value validation.
 */
export type { JsonSchemaNode, JsonSchemaScalar, JsonSchemaType, ObjectJsonSchema, ToolSchema } from './types.ts'
export type {
  ArrayValueSchemaSpec,
  BooleanValueSchemaSpec,
  InferArgs,
  InferValue,
  IntegerValueSchemaSpec,
  JsonValueSchemaSpec,
  NullValueSchemaSpec,
  NumberValueSchemaSpec,
  ObjectValueSchemaSpec,
  OneOfValueSchemaSpec,
  ParameterPropertySpec,
  ParameterRootOptions,
  ParameterSchemaSpec,
  ReadonlyJsonValue,
  SchemaAnnotationSpec,
  StringValueSchemaSpec,
  ValueSchemaSpec,
} from './dsl.ts'
export { parameterSchemaSpecToJsonSchema, SchemaSpecError, valueSchemaSpecToJsonSchema } from './dsl.ts'
export type { SchemaDefinitionIssue } from './json-schema.ts'
export { assertObjectJsonSchema, assertSupportedJsonSchema, ENFORCED_FORMATS, JsonSchemaError, MAX_REFERENCED_DEPTH, MAX_SCHEMA_DEPTH } from './json-schema.ts'
export { validateArgs, validateJsonSchemaValue } from './validate.ts'
