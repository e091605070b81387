import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../logger.js';
import { isScope, type Principal, type Scope } from '../principal.js';
import { commitEmail } from './commit-identity.js';
import { hashToken, plausibleToken } from './tokens.js';

interface TokenRow {
  token_id: string;
  scopes: string[];
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  user_id: string;
  login: string;
  commit_email: string | null;
  admin: boolean;
}

const LAST_USED_PRECISION_MS = 60_000;
/** How long a verified token is trusted without asking the database again. */
const TOKEN_CACHE_MS = 2_000;
const TOKEN_CACHE_SIZE = 10_000;

interface CachedPrincipal {
  principal: Principal;
  expiresAt: number | null;
  verifiedAt: number;
}

/**
 * Resolves a bearer token to a Principal, or null when it is missing,
 * malformed, unknown, revoked or expired (all of which are a 401).
 *
 * One indexed query, at most every TOKEN_CACHE_MS per token: a verified
 * token is remembered that long (expiry is still checked on every use), so
 * a revocation made through another service process takes effect within
 * that time; one made through this process at once (`forget`). The same
 * holds for the commit email a principal carries (`forgetUser`). Unknown
 * tokens are never remembered. `last_used_at` is written at most once a
 * minute per token and off the request path.
 */
export class TokenAuthenticator {
  private readonly cache = new Map<string, CachedPrincipal>();

  constructor(
    private readonly em: EntityManager,
    private readonly log: Logger,
    /** CAIRN_BASE_URL, whose host the no-reply addresses of principals name. */
    private readonly baseUrl: string,
  ) {}

  /** Drops a token from the cache (after revoking it). */
  forget(tokenId: string): void {
    for (const [hash, entry] of this.cache) if (entry.principal.tokenId === tokenId) this.cache.delete(hash);
  }

  /** Drops every token of a user from the cache (after a change to the account that principals carry). */
  forgetUser(userId: string): void {
    for (const [hash, entry] of this.cache) if (entry.principal.userId === userId) this.cache.delete(hash);
  }

  /** Accepts `Bearer <token>` (any case for the scheme). */
  fromAuthorizationHeader(header: string | undefined): Principal | null | Promise<Principal | null> {
    const match = header ? /^Bearer +(\S+) *$/i.exec(header) : null;
    return match ? this.fromToken(match[1]!) : null;
  }

  /** A token verified within TOKEN_CACHE_MS is answered at once, with no promise to wait on. */
  fromToken(token: string): Principal | null | Promise<Principal | null> {
    if (!plausibleToken(token)) return null;
    const hash = hashToken(token);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached && now - cached.verifiedAt < TOKEN_CACHE_MS) {
      return cached.expiresAt !== null && cached.expiresAt <= now ? null : cached.principal;
    }
    return this.verify(hash, now);
  }

  private async verify(hash: string, now: number): Promise<Principal | null> {
    const principal = await this.lookUp(hash, now);
    if (principal) {
      if (this.cache.size >= TOKEN_CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(hash, principal);
      return principal.principal;
    }
    this.cache.delete(hash);
    return null;
  }

  private async lookUp(hash: string, now: number): Promise<CachedPrincipal | null> {
    const rows = await this.em.execute<TokenRow[]>(
      `select t.id as token_id, t.scopes, t.expires_at, t.revoked_at, t.last_used_at,
              u.id as user_id, u.login, u.commit_email, u.admin
         from access_tokens t join users u on u.id = t.user_id
        where t.token_hash = ?`,
      [hash],
    );
    const row = rows[0];
    if (!row || row.revoked_at || (row.expires_at && new Date(row.expires_at).getTime() <= now)) return null;

    if (!row.last_used_at || now - new Date(row.last_used_at).getTime() > LAST_USED_PRECISION_MS) {
      this.em
        .execute('update access_tokens set last_used_at = ? where id = ?', [new Date(now), row.token_id])
        .catch((error: unknown) => this.log.warn({ err: error }, 'could not record token use'));
    }
    const tokenExpiresAt = row.expires_at ? new Date(row.expires_at) : null;
    const principal: Principal = {
      userId: row.user_id,
      login: row.login,
      gitEmail: commitEmail({ id: row.user_id, login: row.login, commitEmail: row.commit_email }, this.baseUrl),
      admin: row.admin,
      tokenId: row.token_id,
      tokenExpiresAt,
      scopes: new Set(row.scopes.filter(isScope) as Scope[]),
    };
    return { principal, expiresAt: tokenExpiresAt?.getTime() ?? null, verifiedAt: now };
  }
}
