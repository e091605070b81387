import {
  coerceInputValue,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  typeFromAST,
  type GraphQLError,
  type GraphQLInputType,
  type GraphQLSchema,
  type VariableDefinitionNode,
} from 'graphql';
import { DomainError, type FieldProblem } from '../src/errors/domain-error.js';
import { knownError } from '../src/errors/known-error.js';
import { snakeCase } from '../src/http/error-answers.js';

/** The DomainError behind a GraphQL error, or null when it is not the client's fault (then the caller answers 500 and logs it). */
export function fromGraphQLError(error: GraphQLError): DomainError | null {
  return knownError(error.originalError);
}

/**
 * Judges an operation's variables as graphql-js coerces them, before it runs: a string where a
 * number belongs, an unknown enum value, a missing required field — the REST client's wrong types —
 * is VALIDATION_FAILED with one detail per wrong field, in the REST client's words: the field's
 * snake_case name, what it takes (enum values in lower case, as REST sends them), `missing` or
 * `invalid`. Built from what graphql-js reports structurally (the path, the type there, the value),
 * never from its message, which speaks GraphQL. A whole-body input object names its fields from the
 * top, as the request body does; any other variable is named itself. Null when every value is
 * acceptable.
 */
export function judgeVariables(
  schema: GraphQLSchema,
  definitions: readonly VariableDefinitionNode[],
  values: Record<string, unknown>,
): DomainError | null {
  const problems = new Map<string, FieldProblem>();
  for (const definition of definitions) {
    const name = definition.variable.name.value;
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    if (!type) continue; // the operation was validated against the schema at start-up
    const value = values[name];
    if (value === undefined) {
      if (isNonNullType(type) && !definition.defaultValue) problems.set(name, missing(snakeCase(name)));
      continue;
    }
    coerceInputValue(value, type, (path, invalidValue) => {
      // A whole-body input object's fields are the body's own; any other variable is a field itself.
      const top = isInputObjectType(getNullableType(type)) ? '' : snakeCase(name);
      const prefix = path.reduce<string>(
        (at, step) => (typeof step === 'number' ? `${at}[${step}]` : at ? `${at}.${snakeCase(step)}` : snakeCase(step)),
        top,
      );
      const at = typeAt(type, path);
      const absent = missingFields(at, invalidValue);
      if (absent.length) {
        for (const field of absent) {
          const restName = prefix ? `${prefix}.${snakeCase(field)}` : snakeCase(field);
          problems.set(restName, missing(restName));
        }
        return;
      }
      const field = prefix || snakeCase(name);
      if (!problems.has(field)) problems.set(field, wrong(field, at));
    });
  }
  if (!problems.size) return null;
  const details = [...problems.values()];
  return new DomainError('VALIDATION_FAILED', `Validation failed: ${details.map((d) => d.message).join('; ')}`, details);
}

function missing(field: string): FieldProblem {
  return { field, code: 'missing', message: `${field} is required` };
}

function wrong(field: string, type: GraphQLInputType): FieldProblem {
  return { field, code: 'invalid', message: `${field} must be ${expected(type)}` };
}

/** What a value of `type` is, in the words of a JSON API. */
function expected(type: GraphQLInputType): string {
  const inner = getNullableType(type);
  if (isEnumType(inner))
    return `one of: ${inner
      .getValues()
      .map((value) => value.name.toLowerCase())
      .join(', ')}`;
  if (isListType(inner)) return `an array of ${plural(expected(inner.ofType as GraphQLInputType))}`;
  if (isInputObjectType(inner)) return 'an object';
  if (isScalarType(inner)) return SCALAR_WORDS[inner.name] ?? `a valid ${inner.name}`;
  return 'a valid value';
}

const SCALAR_WORDS: Record<string, string> = {
  String: 'a string',
  ID: 'a string',
  Boolean: 'true or false',
  Int: 'an integer from -2147483648 to 2147483647',
  Float: 'a number',
  DateTime: 'an ISO 8601 date-time such as 2030-01-31T12:00:00Z',
  JSONObject: 'a JSON object',
};

/** "a string" → "strings", "one of: a, b" → "values that are one of: a, b": an array's items. */
function plural(item: string): string {
  const article = /^an? (\S+)(.*)$/.exec(item);
  return article ? `${article[1]}s${article[2]}` : `values that are ${item}`;
}

/** The input type at `path` within `type` (fields by name, list items by index). */
function typeAt(type: GraphQLInputType, path: ReadonlyArray<string | number>): GraphQLInputType {
  let current = type;
  for (const step of path) {
    const nullable = getNullableType(current);
    if (typeof step === 'number' && isListType(nullable)) current = nullable.ofType as GraphQLInputType;
    else if (typeof step === 'string' && isInputObjectType(nullable)) {
      const field = nullable.getFields()[step];
      if (!field) return current;
      current = field.type;
    }
  }
  return current;
}

/** The required fields (non-null, without a default) an object value lacks, when `type` is an input object. */
function missingFields(type: GraphQLInputType, value: unknown): string[] {
  const nullable = getNullableType(type);
  if (!isInputObjectType(nullable) || typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  return Object.values(nullable.getFields())
    .filter((field) => isNonNullType(field.type) && field.defaultValue === undefined)
    .filter((field) => (value as Record<string, unknown>)[field.name] === undefined)
    .map((field) => field.name);
}
