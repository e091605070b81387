import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../logger.js';
import { mapLimit } from './concurrency.js';
import type { RefTransactions } from './ref-transaction.js';

/**
 * Start-up reconciliation: for every repository, compares the recorded
 * refs with the refs on disk and records the events of any difference, so a
 * process killed between a ref update and its event write loses nothing
 * (see RefTransactions.reconcile).
 */
export async function reconcileAll(services: { orm: MikroORM; refs: RefTransactions; log: Logger }): Promise<void> {
  const started = performance.now();
  const rows = await services.orm.em.fork().execute<{ id: string }[]>('select id from repositories order by id');
  let changed = 0;
  await mapLimit(rows, 4, async ({ id }) => {
    try {
      if (await services.refs.reconcile(id)) changed++;
    } catch (error) {
      services.log.error({ err: error, repositoryId: id }, 'could not reconcile repository refs');
    }
  });
  services.log.info({ repositories: rows.length, changed, ms: Math.round(performance.now() - started) }, 'repository refs reconciled');
}
