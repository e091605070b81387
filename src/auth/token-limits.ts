import type { Problems } from '../errors/domain-error.js';
import type { Principal } from '../principal.js';

/*
 * What bounds the tokens a caller may mint: a token cannot hand out more time than it has (a leaked
 * short-lived token must not be able to mint a permanent one).
 */

/**
 * The expiry of a token `viewer` mints: no later than the caller's own token. Asked for none, a
 * token minted by an expiring token gets the caller's expiry; asked for a later one, `expiresAt` is
 * a problem. A caller whose token never expires may mint anything.
 */
export function boundedExpiry(viewer: Principal, requested: Date | null, problems: Problems): Date | null {
  const limit = viewer.tokenExpiresAt;
  if (!limit) return requested;
  if (!requested) return limit;
  if (requested.getTime() > limit.getTime()) {
    problems.add(
      'expiresAt',
      'outlives_caller_token',
      `expiresAt must not be later than the calling token's own expiry, ${limit.toISOString()}: a token never mints one that outlives it`,
    );
  }
  return requested;
}
