import type { JsonValue } from '../json-boundary.ts'

/** Scalar JSON values supported by `enum` and `const`. */
export type JsonSchemaScalar = string | number | boolean | null

/** Type names accepted by the enforced subset, alone or in a `type` array. */
export type JsonSchemaType = 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null'

/**
 * One raw JSON Schema node in the enforced subset (JSON Schema 2020-12 semantics; the draft-07
 * spellings of tuples and definitions are accepted too). The optional fields express the external
 * wire schema; `assertSupportedJsonSchema` rejects invalid combinations before a caller trusts the
 * node. Every keyword here is enforced by the validator except the annotations, and a keyword that
 * applies to one kind of value (`minLength`, `items`, `properties`, ...) is allowed only where
 * `type` names that kind.
 */
export interface JsonSchemaNode {
  /** One type, or a non-empty array of distinct types (`["string", "null"]`); omit for any JSON value. */
  type?: JsonSchemaType | JsonSchemaType[]
  /** Exactly one branch must validate; at least two branches are required. */
  oneOf?: JsonSchemaNode[]
  /** At least one branch must validate. */
  anyOf?: JsonSchemaNode[]
  /** Every branch must validate. */
  allOf?: JsonSchemaNode[]
  /**
   * A local reference (`#`, `#/$defs/Name`, `#/definitions/Name`, or any JSON Pointer to a schema
   * of this document); recursion is allowed when it goes through a property or an item. Sibling
   * keywords are enforced too, as in JSON Schema 2020-12.
   */
  $ref?: string
  /** Named schemas for `$ref`. */
  $defs?: Record<string, JsonSchemaNode>
  /** Named schemas for `$ref` (the draft-07 spelling). */
  definitions?: Record<string, JsonSchemaNode>
  /** Nested property schemas (`type` includes `"object"`). */
  properties?: Record<string, JsonSchemaNode>
  /**
   * Required property names; each must appear in `properties` unless `additionalProperties` is a
   * schema, which then describes it.
   */
  required?: string[]
  /** `false` rejects undeclared keys, a schema constrains their values; absent/`true` follows JSON Schema's open default. */
  additionalProperties?: boolean | JsonSchemaNode
  /** A schema every key (a string) must satisfy. */
  propertyNames?: JsonSchemaNode
  minProperties?: number
  maxProperties?: number
  /**
   * Item schema (`type` includes `"array"`); absent accepts any JSON item. Beside `prefixItems`, the
   * schema (or `false`: no more items) of the items after the tuple; an array of schemas is the
   * draft-07 tuple, followed by `additionalItems`.
   */
  items?: JsonSchemaNode | JsonSchemaNode[] | boolean
  /** Tuple: the schema of each leading item, by position. */
  prefixItems?: JsonSchemaNode[]
  /** Draft-07 tuples: the schema (or `false`) of items after an `items` array. */
  additionalItems?: JsonSchemaNode | boolean
  minItems?: number
  maxItems?: number
  uniqueItems?: boolean
  /** Allowed values for a scalar node. */
  enum?: JsonSchemaScalar[]
  /** The single allowed value for a scalar node. */
  const?: JsonSchemaScalar
  /** A regular expression (with the `u` flag, unanchored) every string must match. */
  pattern?: string
  minLength?: number
  maxLength?: number
  /**
   * A JSON Schema 2020-12 format (`date-time`, `email`, `uri`, `uuid`, ...) is enforced; any other
   * name (`int32`, `json`) is an annotation only, as the 2020-12 default says.
   */
  format?: string
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  /** A positive number every value must be a multiple of. */
  multipleOf?: number
  /** Annotation (the dialect); the subset's own semantics apply whatever it names. */
  $schema?: string
  /** Annotation; allowed on the root only (embedded schema resources are not supported). */
  $id?: string
  /** Annotation. */
  $comment?: string
  /** Annotation, ignored for validation. */
  description?: string
  /** Annotation, ignored for validation. */
  title?: string
  /** Annotation, ignored for validation but required to be lossless JSON. */
  default?: JsonValue
  /** Annotation, ignored for validation but required to be lossless JSON. */
  examples?: JsonValue
  /** Annotation. */
  deprecated?: boolean
  /** Annotation. */
  readOnly?: boolean
  /** Annotation. */
  writeOnly?: boolean
}

/** A consumer-constrained object-rooted schema. */
export type ObjectJsonSchema = JsonSchemaNode & { type: 'object' }

/** The model-facing projection of a tool: the only fields that ever reach a model. */
export interface ToolSchema {
  readonly name: string
  readonly description: string
  readonly parameters: ObjectJsonSchema
}
