/**
 * The one error type of the service. Use cases throw it with a code; each
 * transport (GraphQL, the REST facade, git over HTTP) answers it by the one
 * table in answers.ts, and only writes that answer. It is not a GraphQL error:
 * nothing below a transport knows which transport is asking.
 */
export type ErrorCode =
  | 'BAD_REQUEST'
  | 'INVALID_JSON'
  | 'INVALID_PAGINATION'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'NOT_MERGEABLE'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'REQUEST_TIMEOUT'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'VALIDATION_FAILED'
  | 'RATE_LIMITED'
  | 'INTERNAL'
  | 'BUSY'
  | 'UNAVAILABLE'
  | 'INSUFFICIENT_STORAGE'
  | 'GIT_LIMIT_EXCEEDED'
  | 'SMART_HTTP_ONLY';

/** One invalid input field: its name (as the API spells it in camelCase), a code and a sentence. */
export interface FieldProblem {
  field: string;
  code: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: FieldProblem[] = [],
    /** RATE_LIMITED, BUSY, UNAVAILABLE and INSUFFICIENT_STORAGE: when trying again may succeed (`Retry-After`). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const notFound = (what: string) => new DomainError('NOT_FOUND', `${what} not found`);
export const conflict = (message: string) => new DomainError('CONFLICT', message);
/** A pull request that cannot be merged as it is: closed, merged, a draft or conflicting (405 in REST, as GitHub answers). */
export const notMergeable = (message: string) => new DomainError('NOT_MERGEABLE', message);

/** One invalid input field (422 in REST). */
export function invalid(field: string, code: string, message: string): DomainError {
  return new DomainError('VALIDATION_FAILED', message, [{ field, code, message }]);
}

/** Collects field problems and throws them together, so a client sees every mistake at once. */
export class Problems {
  private readonly list: FieldProblem[] = [];
  add(field: string, code: string, message: string): void {
    this.list.push({ field, code, message });
  }
  throwIfAny(): void {
    if (this.list.length) {
      const summary = this.list.map((p) => p.message).join('; ');
      throw new DomainError('VALIDATION_FAILED', `Validation failed: ${summary}`, this.list);
    }
  }
}
