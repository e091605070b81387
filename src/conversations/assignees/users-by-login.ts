import type { EntityManager } from '@mikro-orm/postgresql';
import type { Permission } from '../../auth/permissions.js';
import { invalid } from '../../errors/domain-error.js';

/** A user named in a list of logins, with what they may do in the repository. */
export interface NamedUser {
  id: string;
  login: string;
  permission: Permission | null;
}

/**
 * The distinct lowercase logins of a list (assignees, reviewers), at most `most` of them, else a
 * 422 `too_many` on `field` before anything is looked up: a body repeating one login a hundred
 * thousand times costs one pass over it, never a statement per entry.
 */
export function loginKeys(logins: string[], field: string, most: number): string[] {
  const keys = [...new Set(logins.map((login) => login.toLowerCase()))];
  if (keys.length > most) throw invalid(field, 'too_many', `at most ${most} ${field}`);
  return keys;
}

/**
 * The users with these logins (`keys`: from `loginKeys`), by lowercase login, each with their
 * permission on the repository as `userPermission` decides it (an admin or the owner: admin; else
 * their collaboration): ONE statement for all.
 */
export async function usersByLogin(em: EntityManager, repositoryId: string, keys: string[]): Promise<Map<string, NamedUser>> {
  if (keys.length === 0) return new Map();
  const rows = await em.execute<Array<NamedUser & { login_key: string }>>(
    `select u.id, u.login, u.login_key,
            case when u.admin or r.owner_id = u.id then 'admin'
                 else (select c.permission from collaborators c where c.repository_id = r.id and c.user_id = u.id) end as permission
       from users u, repositories r
      where r.id = ? and u.login_key in (select jsonb_array_elements_text(?::jsonb))`,
    [repositoryId, JSON.stringify(keys)],
  );
  return new Map(rows.map((row) => [row.login_key, { id: row.id, login: row.login, permission: row.permission }]));
}
