import type { EntityManager } from '@mikro-orm/postgresql';
import { authorize, Permission } from '../auth/permissions.js';
import type { Principal } from '../auth/principal.js';
import { plausibleToken } from '../auth/tokens.js';
import type { Services } from '../context.js';
import { DomainError } from '../errors/domain-error.js';
import type { Repository } from '../repositories/repository.entity.js';
import { findRepositoryByName } from '../repositories/repository.service.js';

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
const refused = (code: 'UNAUTHENTICATED' | 'NOT_FOUND', message: string): GitAccess => ({
  ok: false,
  error: new DomainError(code, message),
});

/**
 * Git's access rules, as GitHub applies them over HTTP:
 * - bad credentials: 401, so git asks again;
 * - no credentials: public repositories may be fetched (CAIRN_GIT_ANONYMOUS_READ);
 *   everything else is a 401 challenge, the same for a private repository and
 *   a missing one, so an anonymous caller learns nothing about either;
 * - credentials: 404 for what the user cannot see (private or missing, alike),
 *   403 for a visible repository they may not push to or a token without
 *   the `repo` scope (a `repo:read` token fetches only).
 */
export async function gitAccess(
  services: Services,
  em: EntityManager,
  credentials: string | null | undefined,
  owner: string,
  name: string,
  write: boolean,
): Promise<GitAccess> {
  let viewer: Principal | null = null;
  if (credentials !== undefined) {
    viewer = credentials === null ? null : await services.auth.fromToken(credentials);
    if (!viewer) return refused('UNAUTHENTICATED', 'Invalid credentials: the token is unknown, revoked or expired.');
  }
  const repo = await findRepositoryByName(em, owner, name);

  if (!viewer) {
    const anonymousFetch = !write && services.config.gitAnonymousRead && repo && !repo.private;
    return anonymousFetch ? { ok: true, repo, viewer } : refused('UNAUTHENTICATED', UNAUTHORIZED);
  }
  if (!repo) return refused('NOT_FOUND', 'repository not found');
  try {
    await authorize(em, viewer, repo, write ? Permission.WRITE : Permission.READ);
  } catch (error) {
    if (error instanceof DomainError) return { ok: false, error };
    throw error;
  }
  return { ok: true, repo, viewer };
}
