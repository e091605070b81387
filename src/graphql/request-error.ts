import { HeaderMap } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError } from 'graphql';
import { ANSWERS, answerHeaders } from '../errors/answers.js';
import { DomainError } from '../errors/domain-error.js';
import { knownError } from '../errors/known-error.js';

/**
 * A DomainError that stops a request before execution (a limit, a plugin): a GraphQLError with
 * the table's HTTP status, carrying the DomainError so that the answer (its `extensions.code`)
 * comes from the table too (`domainErrorOf`).
 */
export function requestError(error: DomainError): GraphQLError {
  const http = { status: ANSWERS[error.code].status, headers: new HeaderMap(answerHeaders(error)) };
  return new GraphQLError(error.message, { originalError: error, extensions: { http } });
}

/** A request refused by one of the limits: 400 BAD_REQUEST, the message naming the limit. */
export const limitError = (message: string) => requestError(new DomainError('BAD_REQUEST', message));

/**
 * The DomainError behind an error Apollo formats, or null: thrown by a resolver, or carried by a
 * request error — as it is, or as the original error of the validation error Apollo wraps it in —
 * or the one a lost database connection stands for (unavailableOf).
 */
export function domainErrorOf(error: unknown): DomainError | null {
  const original = unwrapResolverError(error);
  // GraphQL's own errors (a document that does not parse or validate) quote the client's input:
  // only what one carries is read, never its words.
  if (original instanceof GraphQLError) return original.originalError ? knownError(original.originalError) : null;
  return knownError(original);
}
