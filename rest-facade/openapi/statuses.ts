import { ANSWERS } from '../../src/errors/answers.js';
import type { ErrorCode } from '../../src/errors/domain-error.js';
import type { RestRoute } from '../route.js';

/**
 * The one rule for which errors a REST route can answer, from its shape and the codes its route
 * declares (`answers`), so the document lists what the route really answers and nothing by habit:
 *
 * - every route: a token is required (401), the hourly budget charged (429), a query parameter the
 *   route does not read refused (400), the database may be away (503), and a bug is a 500;
 * - a write: the token's scope or the caller's permission (403), a full disk (507);
 * - path parameters: what they name may not exist or not be visible (404), a segment not validly
 *   percent-encoded (400), text no column can hold (422);
 * - query parameters: wrong values (422), and `limit`/`offset` that are no integers (400);
 * - a body: not JSON or not an object (400), too slow (408), too large (413), not JSON at all (415),
 *   wrong fields (422);
 * - the route's own `answers`: FORBIDDEN on a read that needs more than read, CONFLICT, NOT_MERGEABLE.
 */
function errorCodes(route: RestRoute): ErrorCode[] {
  const codes = new Set<ErrorCode>(['UNAUTHENTICATED', 'RATE_LIMITED', 'BAD_REQUEST', 'UNAVAILABLE', 'INTERNAL']);
  const add = (...more: ErrorCode[]) => more.forEach((code) => codes.add(code));
  if (route.method !== 'get') add('FORBIDDEN', 'INSUFFICIENT_STORAGE');
  if (route.path.includes(':')) add('NOT_FOUND', 'VALIDATION_FAILED');
  if (route.query.length) add('VALIDATION_FAILED');
  if (route.query.some(({ name }) => name === 'limit' || name === 'offset')) add('INVALID_PAGINATION');
  if (route.body) add('INVALID_JSON', 'REQUEST_TIMEOUT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'VALIDATION_FAILED');
  add(...route.answers);
  return [...codes];
}

/** The REST `error.code`s a route can answer, by HTTP status (src/errors/answers.ts), statuses ascending. */
export function errorStatuses(route: RestRoute): Map<number, string[]> {
  const byStatus = new Map<number, Set<string>>();
  for (const code of errorCodes(route)) {
    const { status, rest } = ANSWERS[code];
    byStatus.set(status, (byStatus.get(status) ?? new Set()).add(rest));
  }
  return new Map([...byStatus].sort(([a], [b]) => a - b).map(([status, rest]) => [status, [...rest].sort()]));
}

/** The `error.code`s any of `routes` answers, by status. */
export function allErrorStatuses(routes: RestRoute[]): Map<number, string[]> {
  const all = new Map<number, Set<string>>();
  for (const route of routes) {
    for (const [status, codes] of errorStatuses(route)) all.set(status, new Set([...(all.get(status) ?? []), ...codes]));
  }
  return new Map([...all].map(([status, codes]) => [status, [...codes].sort()]));
}
