import type { Response } from 'express';
import { ANSWERS, answerHeaders } from '../errors/answers.js';
import { DomainError } from '../errors/domain-error.js';
import { locals } from './request-context.js';

/** snake_case, the REST spelling of a field name (`defaultBranch` → `default_branch`). */
export const snakeCase = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export const internalError = () => new DomainError('INTERNAL', 'Internal server error');

/**
 * Writes an error as REST answers it: the table's status and `{"error":
 * {code, message, details}, "request_id"}`, detail fields in snake_case.
 */
export function sendRestError(res: Response, error: DomainError): void {
  const answer = ANSWERS[error.code];
  if (answer.status === 413) res.setHeader('Connection', 'close'); // the rest of the body is not read
  for (const [name, value] of answerHeaders(error)) res.setHeader(name, value);
  res.status(answer.status).json({
    error: {
      code: answer.rest,
      message: error.message,
      details: error.details.map((detail) => ({ ...detail, field: snakeCase(detail.field) })),
    },
    request_id: locals(res).requestId,
  });
}

/** Writes an error as GraphQL over HTTP answers one that stopped a request before execution. */
export function sendGraphQLError(res: Response, error: DomainError): void {
  const answer = ANSWERS[error.code];
  if (answer.status === 413) res.setHeader('Connection', 'close');
  for (const [name, value] of answerHeaders(error)) res.setHeader(name, value);
  res.status(answer.status).json({ errors: [{ message: error.message, extensions: { code: answer.graphql } }] });
}

/** 405 with `Allow`: a known path asked with a method it does not answer. */
export function sendMethodNotAllowed(res: Response, method: string, allowed: string[]): void {
  res.setHeader('Allow', allowed.join(', '));
  sendRestError(res, new DomainError('METHOD_NOT_ALLOWED', `${method} is not allowed here (allowed: ${allowed.join(', ')})`));
}
