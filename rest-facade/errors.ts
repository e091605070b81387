import type { Response } from 'express';
import type { GraphQLError } from 'graphql';
import type { FieldProblem } from '../src/graphql/errors.js';
import { locals } from '../src/http/request-context.js';
import { snakeCase } from './convert.js';

/** GraphQL error code → REST status and snake_case code. */
const BY_CODE: Record<string, [number, string]> = {
  BAD_REQUEST: [400, 'bad_request'],
  INVALID_PAGINATION: [400, 'invalid_pagination'],
  UNAUTHENTICATED: [401, 'unauthorized'],
  FORBIDDEN: [403, 'forbidden'],
  NOT_FOUND: [404, 'not_found'],
  METHOD_NOT_ALLOWED: [405, 'method_not_allowed'],
  NOT_MERGEABLE: [405, 'not_mergeable'],
  CONFLICT: [409, 'conflict'],
  VALIDATION_FAILED: [422, 'validation_failed'],
  RATE_LIMITED: [429, 'rate_limited'],
};

export class RestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldProblem[] = [],
  ) {
    super(message);
  }
}

export const badRequest = (code: string, message: string) => new RestError(400, code, message);

/**
 * A GraphQL error as a RestError, or null when it is not the client's fault
 * (then the caller answers 500 and logs it). Variable coercion errors — a
 * string where a number belongs, an unknown enum value, a missing required
 * field — are the REST client's wrong types: 422 with the field named.
 */
export function fromGraphQLError(error: GraphQLError): RestError | null {
  const code = error.extensions?.code;
  if (typeof code === 'string' && BY_CODE[code]) {
    const [status, restCode] = BY_CODE[code];
    const details = ((error.extensions.details as FieldProblem[] | undefined) ?? []).map((d) => ({ ...d, field: snakeCase(d.field) }));
    return new RestError(status, restCode, error.message, details);
  }
  const coercion = /^Variable "\$(\w+)" (?:got invalid value|of required type|of non-null type)/.exec(error.message);
  if (coercion && !error.path) {
    const field = fieldOfCoercionError(coercion[1]!, error.message);
    const message = error.message.replace(/^Variable "\$\w+" got invalid value .*?; /, '');
    return new RestError(422, 'validation_failed', `Validation failed: ${message}`, [{ field, code: 'invalid', message }]);
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

/** Writes the REST error body. */
export function sendError(res: Response, error: RestError): void {
  res.status(error.status).json({
    error: { code: error.code, message: error.message, details: error.details },
    request_id: locals(res).requestId,
  });
}

/** 405 with `Allow`: a known path asked with a method it does not answer. */
export function sendMethodNotAllowed(res: Response, method: string, allowed: string[]): void {
  res.setHeader('Allow', allowed.join(', '));
  sendError(res, new RestError(405, 'method_not_allowed', `${method} is not allowed here (allowed: ${allowed.join(', ')})`));
}

export function sendInternalError(res: Response): void {
  sendError(res, new RestError(500, 'internal', 'Internal server error'));
}
