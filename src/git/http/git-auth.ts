import type { EntityManager } from '@mikro-orm/postgresql';
import { Permission } from '../../auth/permissions.js';
import type { Principal } from '../../principal.js';
import { plausibleToken } from '../../auth/tokens.js';
import { DomainError } from '../../errors/domain-error.js';
import type { Repository } from '../../repositories/repository.entity.js';
import type { GitHttp } from './git-http.js';

export type GitAccess = { ok: true; repo: Repository; viewer: Principal | null } | { ok: false; error: DomainError };

/**
 * The token of a git request: HTTP Basic with the token as password (any
 * user name; a token given as the user name with no or a dummy password works
 * too, as `https://<token>@host/...` URLs send it), or `Bearer <token>`.
 * `undefined`: no credentials; `null`: an Authorization header we cannot read.
 */
export function tokenFrom(header: string | undefined): string | null | undefined {
  if (!header) return undefined;
  const bearer = /^Bearer +(\S+) *$/i.exec(header);
  if (bearer) return bearer[1]!;
  const basic = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header);
  if (!basic) return null;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  // `<token>:x-oauth-basic` (GitHub's form) puts the token in the user name.
  if (!plausibleToken(password) && plausibleToken(user)) return user;
  return password || user || null;
}

const UNAUTHORIZED = 'Authentication required: use a Cairn access token as the password.';
const refused = (code: 'UNAUTHENTICATED', message: string): GitAccess => ({
  ok: false,
  error: new DomainError(code, message),
});

/**
 * Git's access rules, as GitHub applies them over HTTP, on top of the same
 * use case the GraphQL `repositoryByName` query calls (Repositories.byName):
 * - bad credentials: 401, so git asks again;
 * - no credentials: public repositories may be fetched (CAIRN_GIT_ANONYMOUS_READ);
 *   everything else is a 401 challenge, the same for a private repository and
 *   a missing one, so an anonymous caller learns nothing about either;
 * - credentials: the use case's answer — NOT_FOUND for what the user cannot
 *   see (private or missing, alike), FORBIDDEN for a visible repository they
 *   may not push to or a token without the `repo` scope (a `repo:read` token
 *   fetches only).
 */
export async function gitAccess(
  deps: Pick<GitHttp, 'auth' | 'repositories' | 'config'>,
  em: EntityManager,
  credentials: string | null | undefined,
  owner: string,
  name: string,
  write: boolean,
): Promise<GitAccess> {
  const needed = write ? Permission.WRITE : Permission.READ;
  if (credentials === undefined) {
    if (write || !deps.config.gitAnonymousRead) return refused('UNAUTHENTICATED', UNAUTHORIZED);
    try {
      return { ok: true, repo: await deps.repositories.byName(em, null, owner, name, needed), viewer: null };
    } catch (error) {
      if (error instanceof DomainError) return refused('UNAUTHENTICATED', UNAUTHORIZED);
      throw error;
    }
  }
  const viewer = credentials === null ? null : await deps.auth.fromToken(credentials);
  if (!viewer) return refused('UNAUTHENTICATED', 'Invalid credentials: the token is unknown, revoked or expired.');
  try {
    return { ok: true, repo: await deps.repositories.byName(em, viewer, owner, name, needed), viewer };
  } catch (error) {
    if (error instanceof DomainError) return { ok: false, error };
    throw error;
  }
}
