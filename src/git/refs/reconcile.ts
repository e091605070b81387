import type { MikroORM } from '@mikro-orm/postgresql';
import type { Agenda } from 'agenda';
import { defineJob, type JobDefinitions } from '../../jobs/agenda.js';
import type { Logger } from '../../logger.js';
import { mapLimit } from '../../concurrency/slots.js';
import type { RefTransactions } from './ref-transaction.js';
import { refsFingerprint } from './refs-fingerprint.js';
import type { GitStorage } from '../storage.js';

type ReconcileDeps = { orm: MikroORM; refs: RefTransactions; git: GitStorage; log: Logger };

const RECONCILE_JOB = 'git:reconcile-journal';
/** How often any process looks for ref changes a dead process left unrecorded. */
const RECONCILE_EVERY = '30 seconds';
/** A journal entry younger than this belongs to a change still being made (its lock held anyway). */
const JOURNAL_GRACE_SECONDS = 10;

/**
 * Start-up reconciliation, before anything is served. Every ref change Cairn makes leaves a journal
 * entry, committed before any ref moves, until its events are recorded: the changes a process
 * killed mid-change left unrecorded are the journal's. Refs changed by hand on the server (while the
 * service was down, say) are found by their storage's fingerprint differing from the one recorded
 * with the refs (refs-fingerprint.ts): a few stat calls per repository, no git. Only those
 * repositories are compared with the disk. One whose lock is held is being changed by another
 * process, which records everything outstanding itself: skipped.
 */
export async function reconcileAtStart(services: ReconcileDeps): Promise<void> {
  const started = performance.now();
  const journal = await journalEntries(services, 0);
  const repositories = await services.orm.em
    .fork()
    .execute<Array<{ id: string; refs_fingerprint: string | null }>>('select id, refs_fingerprint from repositories order by id');
  const touched: string[] = [];
  await mapLimit(repositories, 16, async (repository) => {
    const now = await refsFingerprint(services.git.pathFor(repository.id));
    if (now !== null && now !== repository.refs_fingerprint) touched.push(repository.id);
  });
  const ids = [...new Set([...journal, ...touched])];
  const changed = await reconcileEach(services, ids);
  const ms = Math.round(performance.now() - started);
  services.log.info(
    { repositories: repositories.length, journal: journal.length, compared: ids.length, changed, ms },
    'repository refs reconciled',
  );
}

/**
 * While the site runs: ref changes whose process died before recording them (a journal entry
 * left behind, its repository's lock free) are recorded by whichever process runs this job next —
 * within RECONCILE_EVERY plus a poll — credited to the journal's user, with its note and the push's
 * options and certificate, instead of waiting for the repository's next push or a restart.
 */
export function reconcileJobs(services: ReconcileDeps): JobDefinitions {
  return (agenda: Agenda) => {
    defineJob(agenda, services.log, RECONCILE_JOB, async () => {
      const changed = await reconcileEach(services, await journalEntries(services, JOURNAL_GRACE_SECONDS));
      if (changed > 0) services.log.warn({ changed }, 'recorded ref changes a process left unrecorded');
    });
  };
}

/** The repositories of journal entries older than `graceSeconds`, oldest first. */
async function journalEntries(services: ReconcileDeps, graceSeconds: number): Promise<string[]> {
  const rows = await services.orm.em
    .fork()
    .execute<{ repository_id: string }[]>(
      `select repository_id from git_push_journal where started_at <= now() - make_interval(secs => ?) order by started_at`,
      [graceSeconds],
    );
  return rows.map((row) => row.repository_id);
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
