import type { EntityManager } from '@mikro-orm/postgresql';
import type { Repository } from '../repositories/repository.entity.js';
import type { PullDeps } from './pull-request.deps.js';
import type { PullRecordFacts } from './pull-request.ports.js';
import type { PullRequest } from './pull-request.entity.js';
import { pullRequestRecord } from './pull-request.payload.js';

// Where auto-merge stops: disabled by hand, its merger's right gone, a foreign push, or the pull request closed.

/**
 * Why auto-merge stops when a pull request closes (as on GitHub): reopened, it waits until someone
 * enables auto-merge again. Recorded before `closed`, so the closed record shows no auto-merge.
 */
export const CLOSED = 'the pull request was closed';

/** Clears auto-merge of a locked pull request, if it has it, and records `auto_merge_disabled` with why. */
export async function stopAutoMerge(
  deps: Pick<PullDeps, 'events'> & PullRecordFacts,
  tx: EntityManager,
  repository: Repository,
  pr: PullRequest,
  actor: { id: string; login: string },
  reason: string,
): Promise<void> {
  if (!pr.autoMergeMethod) return;
  pr.autoMergeMethod = null;
  pr.autoMergeEnabledBy = null;
  pr.updatedAt = new Date();
  await deps.events.record(tx, {
    type: 'pull_request',
    action: 'auto_merge_disabled',
    repository,
    actor,
    fields: { number: pr.number, pull_request: await pullRequestRecord(deps, tx, pr), reason },
  });
}
