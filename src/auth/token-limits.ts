import type { EntityManager } from '@mikro-orm/postgresql';
import { invalid, type Problems } from '../errors/domain-error.js';
import type { Principal } from '../principal.js';
import { AccessToken } from './access-token.entity.js';

/*
 * What bounds the tokens a caller may mint. Rate limits bind the user, so more tokens buy no more
 * budget; these rules keep tokens from being a resource of their own: a user holds a bounded number,
 * and a token cannot hand out more time than it has (a leaked short-lived token must not be able to
 * mint a permanent one).
 */

/** Tokens a user may hold at once that still work (neither revoked nor expired). */
export const MAX_ACTIVE_TOKENS = 100;

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

/**
 * VALIDATION_FAILED when the user already holds MAX_ACTIVE_TOKENS working tokens. Counted inside
 * the creating transaction after the user's row was locked, so concurrent creations for one user
 * (through any process) count one after the other and cannot pass the limit together.
 */
export async function requireRoomForToken(tx: EntityManager, user: { id: string; login: string }): Promise<void> {
  const active = await tx.count(AccessToken, {
    user: user.id,
    revokedAt: null,
    $or: [{ expiresAt: null }, { expiresAt: { $gt: new Date() } }],
  });
  if (active >= MAX_ACTIVE_TOKENS) {
    throw invalid(
      'login',
      'too_many_tokens',
      `${user.login} already holds ${MAX_ACTIVE_TOKENS} active tokens, the most a user may hold: revoke one (or let one expire) first`,
    );
  }
}
