import type { Services } from '../context.js';
import { mapLimit } from './concurrency.js';
import type { GitHosting } from './hosting.js';
import { interruptedPush } from './journal.js';
import { recordRefChanges } from './record-push.js';

/**
 * Start-up reconciliation (§6): for every repository, compares the recorded
 * refs with the refs on disk and records the events of any difference, so a
 * process killed between a ref update and its event write loses nothing.
 * The changes are credited to the user of the interrupted push when the
 * journal names one, otherwise to the repository owner.
 *
 * Each repository is checked under its push lock; one that is locked is
 * being pushed to by another process, whose push records everything
 * outstanding itself (step 2 of `receivePack`).
 */
export async function reconcileAll(services: Services, hosting: GitHosting): Promise<void> {
  const started = performance.now();
  const rows = await services.orm.em.fork().execute<{ id: string }[]>('select id from repositories order by id');
  let changed = 0;
  await mapLimit(rows, 4, async ({ id }) => {
    try {
      if (await reconcileRepository(services, hosting, id)) changed++;
    } catch (error) {
      services.log.error({ err: error, repositoryId: id }, 'could not reconcile repository refs');
    }
  });
  services.log.info({ repositories: rows.length, changed, ms: Math.round(performance.now() - started) }, 'repository refs reconciled');
}

/** Returns whether anything was recorded. */
export async function reconcileRepository(services: Services, hosting: GitHosting, repositoryId: string): Promise<boolean> {
  const lock = await hosting.locks.acquire('push', repositoryId, { waitMs: 0 });
  if (!lock) return false;
  try {
    const interrupted = await interruptedPush(lock.client, repositoryId);
    const outcome = await recordRefChanges(services, {
      repositoryId,
      reported: [],
      pusher: null,
      interruptedUserId: interrupted?.userId ?? null,
    });
    return outcome.updates.length > 0;
  } finally {
    await lock.release();
  }
}
