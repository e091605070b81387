import { GraphQLError } from 'graphql';

/**
 * The error vocabulary of the whole service. Resolvers and services throw
 * `AppError`s; GraphQL clients read `extensions.code`, and the REST facade
 * maps the same code to an HTTP status, so both surfaces agree.
 */
export type ErrorCode =
  | 'BAD_REQUEST'
  | 'INVALID_PAGINATION'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'NOT_MERGEABLE'
  | 'CONFLICT'
  | 'VALIDATION_FAILED'
  | 'RATE_LIMITED'
  | 'INTERNAL';

export interface FieldProblem {
  field: string;
  code: string;
  message: string;
}

export class AppError extends GraphQLError {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: FieldProblem[] = [],
  ) {
    super(message, { extensions: details.length ? { code, details } : { code } });
  }
}

export const notFound = (what: string) => new AppError('NOT_FOUND', `${what} not found`);
export const forbidden = (message: string) => new AppError('FORBIDDEN', message);
export const conflict = (message: string) => new AppError('CONFLICT', message);
/** A pull request that cannot be merged as it is: closed, merged, a draft or conflicting (405 in REST, as GitHub answers). */
export const notMergeable = (message: string) => new AppError('NOT_MERGEABLE', message);

/** One or more invalid input fields (422 in REST). */
export function invalid(field: string, code: string, message: string): AppError {
  return new AppError('VALIDATION_FAILED', message, [{ field, code, message }]);
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
      throw new AppError('VALIDATION_FAILED', `Validation failed: ${summary}`, this.list);
    }
  }
}
