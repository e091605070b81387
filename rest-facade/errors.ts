import type { GraphQLError } from 'graphql';
import { DomainError } from '../src/errors/domain-error.js';
import { knownError } from '../src/errors/known-error.js';
import { snakeCase } from '../src/http/error-answers.js';

/**
 * The DomainError behind a GraphQL error, or null when it is not the client's
 * fault (then the caller answers 500 and logs it). Variable coercion errors — a
 * string where a number belongs, an unknown enum value, a missing required
 * field — are the REST client's wrong types: VALIDATION_FAILED with the field named.
 */
export function fromGraphQLError(error: GraphQLError): DomainError | null {
  const known = knownError(error.originalError);
  if (known) return known;
  const coercion = /^Variable "\$(\w+)" (?:got invalid value|of required type|of non-null type)/.exec(error.message);
  if (coercion && !error.path) {
    const field = fieldOfCoercionError(coercion[1]!, error.message);
    const message = error.message.replace(/^Variable "\$\w+" got invalid value .*?; /, '');
    return new DomainError('VALIDATION_FAILED', `Validation failed: ${message}`, [{ field, code: 'invalid', message }]);
  }
  return null;
}

/** `at "input.name"` → name; `Field "title" of required type` → title; otherwise the variable. */
function fieldOfCoercionError(variable: string, message: string): string {
  const at = /at "([^"]+)"/.exec(message);
  const required = /Field "(\w+)" of required type/.exec(message);
  const path = at ? at[1]!.split('.').slice(1) : [];
  if (required) path.push(required[1]!);
  const field = path.length ? path.join('.') : variable;
  return snakeCase(field.replace(/\[\d+\]/g, ''));
}
