import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../logger.js';
import type { Principal } from './principal.js';
import { isScope, type Scope } from './scopes.js';
import { hashToken, plausibleToken } from './tokens.js';

interface TokenRow {
  token_id: string;
  scopes: string[];
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  user_id: string;
  login: string;
  email: string;
  admin: boolean;
}

const LAST_USED_PRECISION_MS = 60_000;

/**
 * Resolves a bearer token to a Principal, or null when it is missing,
 * malformed, unknown, revoked or expired (all of which are a 401).
 *
 * One indexed query per request. `last_used_at` is written at most once a
 * minute per token and off the request path, so reads never wait on a write.
 */
export class TokenAuthenticator {
  constructor(
    private readonly em: EntityManager,
    private readonly log: Logger,
  ) {}

  /** Accepts `Bearer <token>` (any case for the scheme). */
  async fromAuthorizationHeader(header: string | undefined): Promise<Principal | null> {
    const match = header ? /^Bearer +(\S+) *$/i.exec(header) : null;
    return match ? this.fromToken(match[1]!) : null;
  }

  async fromToken(token: string): Promise<Principal | null> {
    if (!plausibleToken(token)) return null;
    const rows = await this.em.execute<TokenRow[]>(
      `select t.id as token_id, t.scopes, t.expires_at, t.revoked_at, t.last_used_at,
              u.id as user_id, u.login, u.email, u.admin
         from access_tokens t join users u on u.id = t.user_id
        where t.token_hash = ?`,
      [hashToken(token)],
    );
    const row = rows[0];
    const now = Date.now();
    if (!row || row.revoked_at || (row.expires_at && new Date(row.expires_at).getTime() <= now)) return null;

    if (!row.last_used_at || now - new Date(row.last_used_at).getTime() > LAST_USED_PRECISION_MS) {
      this.em
        .execute('update access_tokens set last_used_at = ? where id = ?', [new Date(now), row.token_id])
        .catch((error: unknown) => this.log.warn({ err: error }, 'could not record token use'));
    }
    return {
      userId: row.user_id,
      login: row.login,
      email: row.email,
      admin: row.admin,
      tokenId: row.token_id,
      scopes: new Set(row.scopes.filter(isScope) as Scope[]),
    };
  }
}
