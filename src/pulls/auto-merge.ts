import type { EntityManager } from '@mikro-orm/postgresql';
import { holds, Permission, userPermission } from '../auth/permissions.js';
import { User } from '../auth/user.entity.js';
import { invalid, Problems } from '../errors/domain-error.js';
import type { RefListener } from '../git/refs/ref-transaction.js';
import type { Principal } from '../principal.js';
import { chosenMethod } from './merge.js';
import type { PullDeps } from './pull-request.deps.js';
import type { PullRecordFacts } from './pull-request.ports.js';
import { PullRequest, PullRequestState } from './pull-request.entity.js';
import type { AutoMergeInput } from './pull-request.inputs.js';
import { pullRequestRecord } from './pull-request.payload.js';
import { findPullRequest } from './pull-request.reads.js';
import { lockPullRequest } from './pull-request.writes.js';
import { stopAutoMerge } from './auto-merge-stop.js';

/**
 * Enabling auto-merge (write access): the pull request then merges itself, by `method`, as soon as
 * every requirement of its base branch holds (auto-merger.ts), with the one who enabled it as the
 * merger. Enabling again changes the method (and the merger) and records the event again.
 */
export async function enableAutoMerge(deps: PullDeps, em: EntityManager, viewer: Principal, input: AutoMergeInput): Promise<PullRequest> {
  const repo = await deps.repositories.find(em, viewer, input.repositoryId, Permission.WRITE);
  const loaded = await findPullRequest(em, repo, input.number);
  const problems = new Problems();
  const method = chosenMethod(input, problems);
  problems.throwIfAny();
  // Enabled by a method its base branch's rule refuses, it would wait for ever.
  const refused = await deps.requirements.methodRefusal(em, repo.id, loaded.baseRef, method);
  if (refused) throw invalid('method', 'not_allowed', `${refused}: choose squash or rebase`);
  const changed = await deps.events.transaction(em, async (tx) => {
    const pr = await lockPullRequest(tx, loaded);
    if (pr.state !== PullRequestState.OPEN) {
      throw invalid('state', 'not_open', `the pull request is ${pr.state}: only an open pull request merges itself`);
    }
    pr.autoMergeMethod = method;
    pr.autoMergeEnabledBy = await tx.findOneOrFail(User, { id: viewer.userId });
    pr.updatedAt = new Date();
    await deps.events.record(tx, {
      type: 'pull_request',
      action: 'auto_merge_enabled',
      repository: repo,
      actor: pr.autoMergeEnabledBy,
      fields: { number: pr.number, pull_request: await pullRequestRecord(deps, tx, pr) },
    });
    return pr;
  });
  return changed;
}

/** Disabling auto-merge (write access); a pull request without it is answered as it is, with no event. */
export async function disableAutoMerge(deps: PullDeps, em: EntityManager, viewer: Principal, input: AutoMergeInput): Promise<PullRequest> {
  const repo = await deps.repositories.find(em, viewer, input.repositoryId, Permission.WRITE);
  const loaded = await findPullRequest(em, repo, input.number);
  return deps.events.transaction(em, async (tx) => {
    const pr = await lockPullRequest(tx, loaded);
    if (!pr.autoMergeMethod) return pr; // nothing to disable: no event, and no user to load
    const actor = await tx.findOneOrFail(User, { id: viewer.userId });
    await stopAutoMerge(deps, tx, repo, pr, actor, 'disabled');
    return pr;
  });
}

const BRANCH = 'refs/heads/';

/**
 * Auto-merge stops when someone who cannot write the repository moves the head (as on GitHub, so
 * a change nobody with write has seen is not merged by another's auto-merge): in the transaction
 * that records the push, after the pull requests followed it. Pushes need write today, so this
 * holds for a permission taken away while the push ran.
 */
export function stopAutoMergeOnForeignPush(deps: Pick<PullDeps, 'events'> & PullRecordFacts): RefListener {
  return async (tx, change) => {
    const heads = change.changes
      .filter((update) => update.cause === 'push' && update.ref.startsWith(BRANCH) && change.refs.has(update.ref))
      .map((update) => update.ref.slice(BRANCH.length));
    if (!heads.length) return;
    const pulls = await tx.find(
      PullRequest,
      { repository: change.repository.id, state: PullRequestState.OPEN, headRef: { $in: heads }, autoMergeMethod: { $ne: null } },
      { populate: ['user', 'mergedBy', 'autoMergeEnabledBy'], orderBy: { number: 'asc' } },
    );
    if (!pulls.length) return;
    const pusher = change.actors.push;
    if (holds(await userPermission(tx, pusher.id, change.repository.id), Permission.WRITE)) return;
    for (const pr of pulls) {
      await stopAutoMerge(deps, tx, change.repository, pr, pusher, `a push by ${pusher.login}, who cannot write the repository`);
    }
  };
}
