import fs from 'node:fs/promises';
import type { Agenda } from 'agenda';
import { GIT_MAINTENANCE_MAX_WAIT } from '../config.js';
import type { GitStorage } from './storage.js';
import { defineJob, type JobDefinitions } from '../jobs/agenda.js';
import type { Logger } from '../logger.js';
import type { RepositoryLocks } from './refs/repository-lock.js';
import { gitBounds, LONG_WORK_FACTOR } from './git-bounds.js';
import { runGit } from './run-git.js';

const MAINTENANCE_JOB = 'git-maintenance';

interface MaintenanceData {
  repositoryId: string;
}

/**
 * Housekeeping after pushes, in an Agenda job (never inside a request), so
 * that fetches stay fast as repositories grow:
 * - `gc --auto`: git's own thresholds decide whether to pack loose objects,
 *   consolidate packs and prune garbage (in the foreground of the job);
 * - a geometric repack with a multi-pack index and its reachability bitmap:
 *   keeps the number of packs logarithmic and gives upload-pack bitmaps,
 *   without rewriting the big pack after every push;
 * - an incremental commit-graph (with changed-path filters), for history walks.
 * git's locking makes all of it safe beside concurrent pushes and clones.
 */
/** What maintenance works with. */
interface MaintenanceDeps {
  git: GitStorage;
  log: Logger;
}

async function maintainRepository(services: MaintenanceDeps, locks: RepositoryLocks, repositoryId: string): Promise<void> {
  const dir = services.git.pathFor(repositoryId);
  if (!(await fs.stat(dir).catch(() => null))) return; // deleted since
  const lock = await locks.acquire('maintenance', repositoryId, { waitMs: 0 });
  if (!lock) return; // another process is maintaining it right now
  const started = performance.now();
  const long = { cwd: dir, timeoutMs: gitBounds().timeoutMs * LONG_WORK_FACTOR }; // repacking a large repository takes a while
  try {
    await runGit(['-c', 'gc.autoDetach=false', 'gc', '--auto', '--quiet'], long);
    await runGit(['repack', '-d', '--geometric=2', '--write-midx', '--write-bitmap-index', '--quiet'], long);
    await runGit(['commit-graph', 'write', '--reachable', '--split', '--changed-paths'], long);
    services.log.info({ repositoryId, ms: Math.round(performance.now() - started) }, 'repository maintained');
  } finally {
    await lock.release();
  }
}

export function maintenanceJobs(services: MaintenanceDeps, locks: RepositoryLocks): JobDefinitions {
  return (agenda) => {
    defineJob<MaintenanceData>(
      agenda,
      services.log,
      MAINTENANCE_JOB,
      (job) => maintainRepository(services, locks, job.attrs.data.repositoryId),
      { concurrency: 2, backlog: true }, // a burst of pushes to many repositories queues one job each
    );
  };
}

/**
 * Queues maintenance of a repository: one job per repository (debounced on
 * its id), pushed back by each push, so a burst of pushes costs one run
 * `delayMs` (CAIRN_GIT_MAINTENANCE_DELAY) after its last push.
 */
export function maintenanceScheduler(agenda: Agenda, log: Logger, delayMs: number): (repositoryId: string) => void {
  return (repositoryId) => {
    agenda
      .nowDebounced<MaintenanceData>(MAINTENANCE_JOB, { repositoryId }, { 'data.repositoryId': repositoryId }, delayMs, {
        maxWait: GIT_MAINTENANCE_MAX_WAIT[0], // at least this often while the pushes keep coming
      })
      .catch((error: unknown) => log.warn({ err: error, repositoryId }, 'could not schedule repository maintenance'));
  };
}
