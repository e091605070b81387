import type { EntityManager } from '@mikro-orm/postgresql';
import { registerEnumType } from 'type-graphql';
import { DomainError, notFound } from '../errors/domain-error.js';
import { grants, type Principal, type Scope } from '../principal.js';

/** What a user may do on a repository; stored lowercase, `READ`/`WRITE`/`ADMIN` in GraphQL. */
export enum Permission {
  READ = 'read',
  WRITE = 'write',
  ADMIN = 'admin',
}
registerEnumType(Permission, { name: 'RepositoryPermission' });

const RANK: Record<Permission, number> = { read: 1, write: 2, admin: 3 };

function atLeast(held: Permission | null, needed: Permission): boolean {
  return held !== null && RANK[held] >= RANK[needed];
}

/** The fields of a repository that access decisions depend on. */
export interface Guarded {
  id: string;
  private: boolean;
  owner: { id: string };
}

/** The scopes that make private repositories visible, unless an operation names others (commit statuses add `repo:status`). */
const READING: readonly Scope[] = ['repo:read'];

/**
 * The permission model, in one place:
 * - site admins and the owner have `admin`;
 * - collaborators have the permission they were given;
 * - everyone (anonymous git readers included) may read a public repository;
 * - a private repository is visible only with a permission *and* a token
 *   that may read repositories (`repo:read`), otherwise it does not exist (404).
 */
async function permissionOn(
  em: EntityManager,
  viewer: Principal | null,
  repo: Guarded,
  seenWith: readonly Scope[] = READING,
): Promise<Permission | null> {
  let held: Permission | null = null;
  if (viewer) {
    if (viewer.admin || viewer.userId === repo.owner.id) {
      held = Permission.ADMIN;
    } else {
      const rows = await em.execute<{ permission: Permission }[]>(
        'select permission from collaborators where repository_id = ? and user_id = ?',
        [repo.id, viewer.userId],
      );
      held = rows[0]?.permission ?? null;
    }
  }
  if (repo.private) {
    return viewer && seenWith.some((scope) => grants(viewer.scopes, scope)) ? held : null;
  }
  return held ?? Permission.READ;
}

/**
 * Throws unless the viewer may act on the repository with `needed`:
 * 404 when the repository is invisible to them, 403 when it is visible but
 * the token lacks `scope` or the user lacks the permission.
 * Writes need the `repo` scope unless another scope is named; `seenWith`
 * names the scopes that show a private repository (default `repo:read`).
 */
export async function authorize(
  em: EntityManager,
  viewer: Principal | null,
  repo: Guarded,
  needed: Permission,
  scope: Scope | null = needed === Permission.READ ? null : 'repo',
  seenWith: readonly Scope[] = READING,
): Promise<Permission> {
  const held = await permissionOn(em, viewer, repo, seenWith);
  if (held === null) throw notFound('repository');
  if (scope) requireScope(viewer, scope);
  if (!atLeast(held, needed)) {
    throw new DomainError('FORBIDDEN', `${needed} permission on this repository is required`);
  }
  return held;
}

/** FORBIDDEN unless the caller's token holds `scope` (anonymous callers hold none). */
export function requireScope(viewer: Principal | null, scope: Scope): void {
  if (!viewer || !grants(viewer.scopes, scope)) throw new DomainError('FORBIDDEN', `this token lacks the ${scope} scope`);
}

/**
 * What a user holds on a repository by who they are (site admin or owner: admin; else their
 * collaborator permission), whatever token they use: what a push or a review they made counts for.
 */
export async function userPermission(em: EntityManager, userId: string, repositoryId: string): Promise<Permission | null> {
  const [row] = await em.execute<Array<{ permission: Permission | null }>>(
    `select case when u.admin or r.owner_id = u.id then 'admin'
                 else (select c.permission from collaborators c where c.repository_id = r.id and c.user_id = u.id) end as permission
       from users u, repositories r where u.id = ? and r.id = ?`,
    [userId, repositoryId],
  );
  return row?.permission ?? null;
}

/** Whether a permission is at least `needed`. */
export function holds(held: Permission | null, needed: Permission): boolean {
  return atLeast(held, needed);
}

/** Whether the viewer may change a record authored by `authorId` (an issue, a pull request): its author may, as may anyone with write. */
export async function mayChangeAuthored(em: EntityManager, viewer: Principal, repo: Guarded, authorId: string): Promise<boolean> {
  return authorId === viewer.userId || atLeast(await permissionOn(em, viewer, repo), Permission.WRITE);
}

/** SQL condition (and its parameters) selecting the repositories `r` a viewer can read. */
export function readableRepositoriesCondition(viewer: Principal): { sql: string; params: unknown[] } {
  if (viewer.admin && grants(viewer.scopes, 'repo:read')) return { sql: 'true', params: [] };
  if (!grants(viewer.scopes, 'repo:read')) return { sql: 'r.private = false', params: [] };
  return {
    sql: `(r.private = false or r.owner_id = ? or exists (
            select 1 from collaborators c where c.repository_id = r.id and c.user_id = ?))`,
    params: [viewer.userId, viewer.userId],
  };
}
