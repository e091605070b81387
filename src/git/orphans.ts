import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../logger.js';
import { Repository } from '../repositories/repository.entity.js';
import type { RepositoryLocks } from './refs/repository-lock.js';
import type { GitStorage } from './storage.js';

/**
 * A directory without a record younger than this is left alone: its repository may be being
 * created by another process (the directory is made inside the transaction that inserts the row),
 * and no creation runs this long.
 */
const ORPHAN_GRACE_MS = 10 * 60_000;
/** More directories without a record than this (and a tenth of all) are not removed, but reported. */
const ORPHANS_AT_MOST = 10;

/**
 * A crash between deleting a repository's record and its directory, or during a creation, leaves a
 * directory without a record: removed at start-up once it is older than ORPHAN_GRACE_MS, under the
 * repository's lock, and only if the record is still missing then. Another process sharing the
 * repositories may be creating one right now: its directory is younger, and its row commits.
 */
export async function removeOrphanRepositories(orm: MikroORM, git: GitStorage, locks: RepositoryLocks, log: Logger): Promise<void> {
  await git.removeLeftovers();
  const onDisk = await git.listIds();
  if (onDisk.length === 0) return;
  const known = async (ids: string[]) =>
    new Set((await orm.em.fork().find(Repository, { id: { $in: ids } }, { fields: ['id'] })).map((repo) => repo.id));
  const recorded = await known(onDisk);
  const orphans: string[] = [];
  for (const id of onDisk.filter((id) => !recorded.has(id))) if (await git.untouchedFor(id, ORPHAN_GRACE_MS)) orphans.push(id);
  // A crash leaves one or two; many at once say the database is not the one these repositories belong to.
  if (orphans.length > Math.max(ORPHANS_AT_MOST, onDisk.length / 10)) {
    log.error(
      { orphans: orphans.length, repositories: onDisk.length },
      'not removing repository data without records: too many for a crash to leave (is DATABASE_URL right?)',
    );
    return;
  }
  for (const id of orphans) {
    const lock = await locks.acquire('push', id, { waitMs: 0 });
    if (!lock) continue; // someone is working on it: not for a start-up to decide
    try {
      if ((await known([id])).has(id)) continue;
      log.warn({ repositoryId: id }, 'removing repository data without a record');
      await git.remove(id);
    } finally {
      await lock.release();
    }
  }
}
