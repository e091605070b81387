import type { DomainError, ErrorCode } from './domain-error.js';

/** How each transport answers an error code. */
export interface Answer {
  /** `extensions.code` of a GraphQL error. */
  graphql: string;
  /** HTTP status of a REST answer, and of git over HTTP. */
  status: number;
  /** `error.code` of a REST answer. */
  rest: string;
  /** What git prints (`remote: ...`), `{message}` standing for the error's own; fixed where a message must not leak. */
  git: string;
}

const OWN = '{message}';

/**
 * The one table from an error code to what every transport answers: GraphQL
 * clients read `extensions.code`, REST clients the status and `error.code`,
 * git clients the status (and the message git prints). Nothing else maps these codes; GraphQL's own
 * errors (a query that does not parse or validate, a variable of the wrong type) keep GraphQL's.
 * BUSY, REQUEST_TIMEOUT and SMART_HTTP_ONLY are git's alone today.
 */
export const ANSWERS: Record<ErrorCode, Answer> = {
  BAD_REQUEST: { graphql: 'BAD_REQUEST', status: 400, rest: 'bad_request', git: OWN },
  INVALID_JSON: { graphql: 'BAD_REQUEST', status: 400, rest: 'invalid_json', git: OWN },
  INVALID_PAGINATION: { graphql: 'INVALID_PAGINATION', status: 400, rest: 'invalid_pagination', git: OWN },
  UNAUTHENTICATED: { graphql: 'UNAUTHENTICATED', status: 401, rest: 'unauthorized', git: OWN },
  FORBIDDEN: { graphql: 'FORBIDDEN', status: 403, rest: 'forbidden', git: 'Permission denied: {message}.' },
  NOT_FOUND: { graphql: 'NOT_FOUND', status: 404, rest: 'not_found', git: 'Repository not found.' },
  METHOD_NOT_ALLOWED: { graphql: 'METHOD_NOT_ALLOWED', status: 405, rest: 'method_not_allowed', git: OWN },
  NOT_MERGEABLE: { graphql: 'NOT_MERGEABLE', status: 405, rest: 'not_mergeable', git: OWN },
  CONFLICT: { graphql: 'CONFLICT', status: 409, rest: 'conflict', git: OWN },
  PAYLOAD_TOO_LARGE: { graphql: 'PAYLOAD_TOO_LARGE', status: 413, rest: 'payload_too_large', git: OWN },
  /** A request body that came in too slowly (git over HTTP) and was cut off. */
  REQUEST_TIMEOUT: { graphql: 'REQUEST_TIMEOUT', status: 408, rest: 'request_timeout', git: OWN },
  UNSUPPORTED_MEDIA_TYPE: { graphql: 'UNSUPPORTED_MEDIA_TYPE', status: 415, rest: 'unsupported_media_type', git: OWN },
  VALIDATION_FAILED: { graphql: 'VALIDATION_FAILED', status: 422, rest: 'validation_failed', git: OWN },
  RATE_LIMITED: { graphql: 'RATE_LIMITED', status: 429, rest: 'rate_limited', git: OWN },
  INTERNAL: { graphql: 'INTERNAL', status: 500, rest: 'internal', git: OWN },
  /** The resource is held by other work for longer than the request may wait. */
  BUSY: { graphql: 'BUSY', status: 503, rest: 'busy', git: OWN },
  /** The database is away for the moment (restarting, failing over, unreachable): unavailableOf. */
  UNAVAILABLE: { graphql: 'SERVICE_UNAVAILABLE', status: 503, rest: 'service_unavailable', git: OWN },
  /** A disk the write needed is full (the database's or the repositories'): noSpaceOf. Nothing was changed. */
  INSUFFICIENT_STORAGE: { graphql: 'INSUFFICIENT_STORAGE', status: 507, rest: 'insufficient_storage', git: OWN },
  /**
   * git needed more time or memory than one of its processes may take (CAIRN_GIT_TIMEOUT,
   * CAIRN_GIT_MEMORY_LIMIT) for what was asked of this repository: asking again the same way meets
   * the same bound, so it is not a 5xx to retry.
   */
  GIT_LIMIT_EXCEEDED: { graphql: 'GIT_LIMIT_EXCEEDED', status: 422, rest: 'git_limit_exceeded', git: OWN },
  /** Git's dumb HTTP protocol, or a service other than upload-pack and receive-pack, asked for. */
  SMART_HTTP_ONLY: { graphql: 'SMART_HTTP_ONLY', status: 403, rest: 'smart_http_only', git: OWN },
};

/** Headers every transport sends with an error beside its status (`Retry-After` of a refusal that ends). */
export function answerHeaders(error: DomainError): Array<[name: string, value: string]> {
  return error.retryAfterSeconds === undefined ? [] : [['Retry-After', String(Math.max(1, Math.ceil(error.retryAfterSeconds)))]];
}
