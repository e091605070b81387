import {
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  type GraphQLInputType,
  type GraphQLOutputType,
} from 'graphql';
import type { FieldShape } from '../convert.js';
import { snakeCase } from '../../src/http/error-answers.js';

/** A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1). */
export type JsonSchema = Record<string, unknown>;

/** GraphQL scalars as JSON: what the facade writes for each. */
const SCALARS: Record<string, JsonSchema> = {
  ID: { type: 'string' },
  String: { type: 'string' },
  Int: { type: 'integer' },
  Float: { type: 'number' },
  Boolean: { type: 'boolean' },
  DateTime: { type: 'string', format: 'date-time' },
  JSONObject: { type: 'object' },
};

/** `x` or null: `type: [x, 'null']` (and null among an enum's values). */
function nullable(schema: JsonSchema): JsonSchema {
  const result: JsonSchema = { ...schema, type: [schema.type, 'null'] };
  if (Array.isArray(schema.enum)) result.enum = [...(schema.enum as unknown[]), null];
  return result;
}

/** The schema without its null: a value that is left out rather than null, or a query parameter. */
export function notNull(schema: JsonSchema): JsonSchema {
  const result: JsonSchema = { ...schema };
  if (Array.isArray(schema.type)) result.type = (schema.type as unknown[]).filter((t) => t !== 'null')[0];
  if (Array.isArray(schema.enum)) result.enum = (schema.enum as unknown[]).filter((v) => v !== null);
  return result;
}

function described(schema: JsonSchema, description: string | null | undefined): JsonSchema {
  return description ? { ...schema, description } : schema;
}

/** The REST value of a type whose leaves and objects are described by `leafOrObject`. */
function wrapped<T extends GraphQLOutputType | GraphQLInputType>(type: T, leafOrObject: (named: T) => JsonSchema): JsonSchema {
  const inner = getNullableType(type) as T;
  const schema = isListType(inner) ? { type: 'array', items: wrapped(inner.ofType as T, leafOrObject) } : leafOrObject(inner);
  return isNonNullType(type) ? schema : nullable(schema);
}

/**
 * A scalar or enum as JSON. Enum values are answered in lower case (convert.ts); `taken` (a value the
 * client sends) lists the upper case too, GraphQL's spelling, which the facade accepts as well
 * (`APPROVE` or `approve`).
 */
function leaf(type: GraphQLOutputType | GraphQLInputType, taken = false): JsonSchema {
  if (isEnumType(type)) {
    const names = type.getValues().map((v) => v.name);
    const lower = names.map((name) => name.toLowerCase());
    return { type: 'string', enum: taken ? [...lower, ...names.filter((name) => !lower.includes(name))] : lower };
  }
  if (isScalarType(type)) {
    const scalar = SCALARS[type.name];
    if (!scalar) throw new Error(`no JSON type for the scalar ${type.name}: add it to SCALARS`);
    return scalar; // its GraphQL description is generic; the field's says what it holds
  }
  throw new Error(`not a leaf type: ${String(type)}`);
}

/** The REST shape of a selection (convert.ts's `resultShape`) as a JSON Schema: every selected field, always present. */
export function objectSchema(fields: FieldShape[]): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const field of fields) {
    if (properties[field.restKey]) continue; // selected twice (a fragment and beside it): one key in the answer
    if (!field.type) throw new Error(`a selected field without a type: ${field.key}`);
    const children = field.children;
    const schema = wrapped(field.type, (named) => (children ? objectSchema(children) : leaf(named)));
    properties[field.restKey] = described(schema, field.description);
  }
  return { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
}

/** A GraphQL input value as REST takes it: snake_case fields, enum values in either case; unknown fields are ignored. */
export function inputSchema(type: GraphQLInputType, omit: readonly string[] = []): JsonSchema {
  return wrapped(type, (named) => {
    if (!isInputObjectType(named)) return leaf(named, true);
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const field of Object.values(named.getFields())) {
      const name = snakeCase(field.name);
      if (omit.includes(name)) continue;
      properties[name] = described(inputSchema(field.type), field.description);
      if (isNonNullType(field.type) && field.defaultValue === undefined) required.push(name);
    }
    return { type: 'object', properties, required };
  });
}

/** A request body: the input object itself, never null. */
export function bodySchema(type: GraphQLInputType, omit: readonly string[]): JsonSchema {
  return { ...inputSchema(type, omit), type: 'object' };
}
