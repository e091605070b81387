import type { ErrorRequestHandler } from 'express';
import { tooLarge } from '../../rest-facade/body.js';
import { RestError, sendError } from '../../rest-facade/errors.js';
import type { Logger } from '../logger.js';

/** REST code → the GraphQL `extensions.code` of the same failure. */
const GRAPHQL_CODES: Record<string, string> = {
  invalid_json: 'BAD_REQUEST',
  bad_request: 'BAD_REQUEST',
  payload_too_large: 'PAYLOAD_TOO_LARGE',
  unsupported_media_type: 'UNSUPPORTED_MEDIA_TYPE',
  internal: 'INTERNAL',
};

/**
 * What went wrong before any route ran — Express's JSON body parser (for
 * /graphql) or the decoding of a path parameter — as a REST error. These are
 * the client's mistakes; anything else is ours (500).
 */
export function transportError(error: unknown): RestError {
  if (error instanceof URIError) return new RestError(400, 'bad_request', 'the URL is not validly percent-encoded');
  const e = error as { type?: string; status?: number; statusCode?: number };
  switch (e?.type) {
    case 'entity.parse.failed':
      return new RestError(400, 'invalid_json', 'the request body is not valid JSON');
    case 'entity.too.large':
      return tooLarge();
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return new RestError(415, 'unsupported_media_type', 'unsupported charset or content encoding of the request body');
  }
  const status = e?.status ?? e?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500)
    return new RestError(400, 'bad_request', 'the request could not be read');
  return new RestError(500, 'internal', 'Internal server error');
}

/**
 * The last middleware: an error nothing else handled is answered in JSON,
 * in the shape of the surface it came from (GraphQL or REST) — never as
 * Express's HTML page with a stack trace.
 */
export function transportErrorHandler(log: Logger): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    const restError = transportError(error);
    if (restError.status >= 500) log.error({ err: error, path: req.path }, 'request failed');
    if (restError.status === 413) res.setHeader('Connection', 'close'); // the rest of the body is not read
    if (req.originalUrl.split('?')[0] === '/graphql') {
      res.status(restError.status).json({ errors: [{ message: restError.message, extensions: { code: GRAPHQL_CODES[restError.code] } }] });
      return;
    }
    sendError(res, restError);
  };
}
