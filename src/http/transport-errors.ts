import type { ErrorRequestHandler } from 'express';
import { DomainError } from '../errors/domain-error.js';
import { knownError } from '../errors/known-error.js';
import type { Logger } from '../logger.js';
import { tooLarge } from './body-limit.js';
import { internalError, sendGraphQLError, sendRestError } from './error-answers.js';

/**
 * What went wrong before any route ran — Express's JSON body parser (for
 * /graphql) or the decoding of a path parameter — as a DomainError. These
 * are the client's mistakes; anything else is ours (INTERNAL).
 */
function transportError(error: unknown): DomainError {
  const known = knownError(error); // the body reader's own refusals (request-body.ts), a database away
  if (known) return known;
  if (error instanceof URIError) return new DomainError('BAD_REQUEST', 'the URL is not validly percent-encoded');
  const e = error as { type?: string; status?: number; statusCode?: number };
  switch (e?.type) {
    case 'entity.parse.failed':
      return new DomainError('INVALID_JSON', 'the request body is not valid JSON');
    case 'entity.too.large':
      return tooLarge();
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return new DomainError('UNSUPPORTED_MEDIA_TYPE', 'unsupported charset or content encoding of the request body');
  }
  const status = e?.status ?? e?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return new DomainError('BAD_REQUEST', 'the request could not be read');
  return internalError();
}

/**
 * The last middleware: an error nothing else handled is answered in JSON,
 * in the shape of the surface it came from (GraphQL or REST) — never as
 * Express's HTML page with a stack trace.
 */
export function transportErrorHandler(log: Logger): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    const answer = transportError(error);
    if (answer.code === 'INTERNAL') log.error({ err: error, path: req.path }, 'request failed');
    if (req.originalUrl.split('?')[0] === '/graphql') return sendGraphQLError(res, answer);
    sendRestError(res, answer);
  };
}
