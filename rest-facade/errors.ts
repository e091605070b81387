import {
  coerceInputValue,
  getNullableType,
  isInputObjectType,
  isListType,
  isNonNullType,
  typeFromAST,
  type GraphQLError,
  type GraphQLInputType,
  type GraphQLSchema,
  type VariableDefinitionNode,
} from 'graphql';
import { DomainError } from '../src/errors/domain-error.js';
import { knownError } from '../src/errors/known-error.js';
import { snakeCase } from '../src/http/error-answers.js';

/** The DomainError behind a GraphQL error, or null when it is not the client's fault (then the caller answers 500 and logs it). */
export function fromGraphQLError(error: GraphQLError): DomainError | null {
  return knownError(error.originalError);
}

/**
 * Judges an operation's variables as graphql-js coerces them, before it runs: a string where a
 * number belongs, an unknown enum value, a missing required field — the REST client's wrong types —
 * is VALIDATION_FAILED naming the field, from the path graphql-js reports (`coerceInputValue`),
 * never from its message. A whole-body input object names its fields from the top, as the request
 * body does; any other variable is named itself. Null when every value is acceptable.
 */
export function judgeVariables(
  schema: GraphQLSchema,
  definitions: readonly VariableDefinitionNode[],
  values: Record<string, unknown>,
): DomainError | null {
  for (const definition of definitions) {
    const name = definition.variable.name.value;
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    if (!type) continue; // the operation was validated against the schema at start-up
    const value = values[name];
    if (value === undefined) {
      if (isNonNullType(type) && !definition.defaultValue) {
        return invalid(name, `Variable "$${name}" of required type "${String(type)}" was not provided.`);
      }
      continue;
    }
    let problem: DomainError | null = null;
    coerceInputValue(value, type, (path, invalidValue, error) => {
      if (problem) return;
      const fields = path.filter((step): step is string => typeof step === 'string');
      const missing = missingField(typeAt(type, path), invalidValue);
      if (missing) fields.push(missing);
      problem = invalid(fields.length ? fields.join('.') : name, error.message);
    });
    if (problem) return problem;
  }
  return null;
}

function invalid(field: string, message: string): DomainError {
  return new DomainError('VALIDATION_FAILED', `Validation failed: ${message}`, [{ field: snakeCase(field), code: 'invalid', message }]);
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

/** The first required field (non-null, without a default) an object value lacks, when `type` is an input object. */
function missingField(type: GraphQLInputType, value: unknown): string | null {
  const nullable = getNullableType(type);
  if (!isInputObjectType(nullable) || typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  for (const field of Object.values(nullable.getFields())) {
    if (isNonNullType(field.type) && field.defaultValue === undefined && (value as Record<string, unknown>)[field.name] === undefined) {
      return field.name;
    }
  }
  return null;
}
