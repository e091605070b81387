import type { MikroORM } from '@mikro-orm/postgresql';
import type { Agenda } from 'agenda';
import { defineJob, type JobDefinitions } from '../jobs/agenda.js';
import type { Logger } from '../logger.js';
import { mapLimit } from './concurrency.js';
import type { RefTransactions } from './ref-transaction.js';

type ReconcileDeps = { orm: MikroORM; refs: RefTransactions; log: Logger };

const RECONCILE_JOB = 'git:reconcile-journal';
/** How often any process looks for ref changes a dead process left unrecorded. */
const RECONCILE_EVERY = '30 seconds';
/** A journal entry younger than this belongs to a change still being made (its lock held anyway). */
const JOURNAL_GRACE_SECONDS = 10;

/**
 * Start-up reconciliation: for every repository, compares the recorded
 * refs with the refs on disk and records the events of any difference, so a
 * process killed between a ref update and its event write loses nothing
 * (see RefTransactions.reconcile).
 */
export async function reconcileAll(services: ReconcileDeps): Promise<void> {
  const started = performance.now();
  const rows = await services.orm.em.fork().execute<{ id: string }[]>('select id from repositories order by id');
  const changed = await reconcileEach(
    services,
    rows.map((row) => row.id),
  );
  services.log.info({ repositories: rows.length, changed, ms: Math.round(performance.now() - started) }, 'repository refs reconciled');
}

/**
 * While the site runs: ref changes whose process died before recording them (a journal entry
 * left behind, its repository's lock free) are recorded by whichever process runs this job next —
 * within RECONCILE_EVERY plus a poll — credited to the journal's user, with its note, instead of
 * waiting for the repository's next push or a restart.
 */
export function reconcileJobs(services: ReconcileDeps): JobDefinitions {
  return (agenda: Agenda) => {
    defineJob(agenda, services.log, RECONCILE_JOB, async () => {
      const rows = await services.orm.em
        .fork()
        .execute<{ repository_id: string }[]>(
          `select repository_id from git_push_journal where started_at < now() - make_interval(secs => ?) order by started_at`,
          [JOURNAL_GRACE_SECONDS],
        );
      const changed = await reconcileEach(
        services,
        rows.map((row) => row.repository_id),
      );
      if (changed > 0) services.log.warn({ changed }, 'recorded ref changes a process left unrecorded');
    });
  };
}

/** Once Agenda runs (idempotent when several processes start). */
export async function scheduleReconcile(agenda: Agenda): Promise<void> {
  await agenda.every(RECONCILE_EVERY, RECONCILE_JOB, undefined, { skipImmediate: true });
}

/** Reconciles each repository (its lock free, else skipped: its holder records what it changes); how many had changes. */
async function reconcileEach(services: ReconcileDeps, ids: string[]): Promise<number> {
  let changed = 0;
  await mapLimit(ids, 4, async (id) => {
    try {
      if (await services.refs.reconcile(id)) changed++;
    } catch (error) {
      services.log.error({ err: error, repositoryId: id }, 'could not reconcile repository refs');
    }
  });
  return changed;
}
