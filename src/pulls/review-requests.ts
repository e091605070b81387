import type { EntityManager } from '@mikro-orm/postgresql';
import { holds, Permission } from '../auth/permissions.js';
import { loginKeys, usersByLogin } from '../conversations/assignees/users-by-login.js';
import { Problems } from '../errors/domain-error.js';
import type { ActorRef } from '../events/payloads.js';
import type { Principal } from '../principal.js';
import type { Repository } from '../repositories/repository.entity.js';
import type { PullDeps } from './pull-request.deps.js';
import type { PullRequest } from './pull-request.entity.js';
import { pullRequestRecord } from './pull-request.payload.js';
import { findPullRequest } from './pull-request.reads.js';
import { lockPullRequest } from './pull-request.writes.js';
import type { ReviewRequestsInput } from './review-request.inputs.js';

/** A bound on the logins of one request (GitHub takes at most 15 reviewers at once). */
const MOST_AT_ONCE = 15;

/**
 * Requesting reviews: writers do it (GitHub: push access); each reviewer must be able to read the
 * repository and must not be the author. One `review_requested` event per reviewer actually
 * added, decided on the pull request's locked row. Answers the repository, whose pull request the
 * caller reads back.
 */
export async function requestReviewers(
  deps: PullDeps,
  em: EntityManager,
  viewer: Principal,
  input: ReviewRequestsInput,
): Promise<Repository> {
  const { repo, loaded, keys, users } = await reviewersOf(deps, em, viewer, input);
  const problems = new Problems();
  for (const key of keys) {
    const user = users.get(key);
    if (!user) problems.add('reviewers', 'invalid', `no user ${JSON.stringify(key.slice(0, 40))}`);
    else if (user.id === loaded.user.id) problems.add('reviewers', 'invalid', 'the author of a pull request cannot review it');
    else if (repo.private && !holds(user.permission, Permission.READ)) {
      problems.add('reviewers', 'invalid', `${user.login} cannot be a reviewer: reviewers need read access to the repository`);
    }
  }
  problems.throwIfAny();
  await changeRequests(deps, em, viewer, repo, loaded, refsOf(users), 'review_requested');
  return repo;
}

/** Removing review requests; logins whose review is not requested change nothing. */
export async function removeReviewRequests(
  deps: PullDeps,
  em: EntityManager,
  viewer: Principal,
  input: ReviewRequestsInput,
): Promise<Repository> {
  const { repo, loaded, users } = await reviewersOf(deps, em, viewer, input);
  await changeRequests(deps, em, viewer, repo, loaded, refsOf(users), 'review_request_removed');
  return repo;
}

/** What both changes start from: the repository (write access), the pull request, the named users (at most MOST_AT_ONCE logins, once each). */
async function reviewersOf(deps: PullDeps, em: EntityManager, viewer: Principal, input: ReviewRequestsInput) {
  const repo = await deps.repositories.find(em, viewer, input.repositoryId, Permission.WRITE, 'repo');
  const keys = loginKeys(input.reviewers, 'reviewers', MOST_AT_ONCE);
  const loaded = await findPullRequest(em, repo, input.number);
  return { repo, loaded, keys, users: await usersByLogin(em, repo.id, keys) };
}

const refsOf = (users: Map<string, { id: string; login: string }>): ActorRef[] =>
  [...users.values()].map(({ id, login }) => ({ id, login }));

/**
 * A review by a user whose review was requested fulfils the request: it goes within the review's
 * transaction, and shows in the record its `pull_request_review` event carries, with no event of
 * its own (as on GitHub).
 */
export async function fulfilReviewRequest(tx: EntityManager, pullRequestId: string, reviewerId: string): Promise<void> {
  await tx.execute('delete from review_requests where pull_request_id = ? and user_id = ?', [pullRequestId, reviewerId]);
}

async function changeRequests(
  deps: PullDeps,
  em: EntityManager,
  viewer: Principal,
  repo: Repository,
  loaded: PullRequest,
  users: ActorRef[],
  action: 'review_requested' | 'review_request_removed',
): Promise<void> {
  if (users.length === 0) return;
  const { events } = deps;
  await events.transaction(em, async (tx) => {
    const pr = await lockPullRequest(tx, loaded);
    const ids = JSON.stringify(users.map((user) => user.id));
    const changed = await tx.execute<Array<{ user_id: string }>>(
      action === 'review_requested'
        ? `insert into review_requests (pull_request_id, user_id, created_at)
           select ?, id, now() from jsonb_array_elements_text(?::jsonb) as id on conflict do nothing returning user_id`
        : `delete from review_requests where pull_request_id = ? and user_id in (select jsonb_array_elements_text(?::jsonb)) returning user_id`,
      [pr.id, ids],
    );
    const done = new Set(changed.map((row) => row.user_id));
    if (done.size === 0) return;
    pr.updatedAt = new Date();
    await tx.flush();
    const record = await pullRequestRecord(deps, tx, pr);
    const actor = { id: viewer.userId, login: viewer.login };
    await events.recordAll(
      tx,
      users
        .filter((user) => done.has(user.id))
        .map((user) => ({
          type: 'pull_request' as const,
          action,
          repository: repo,
          actor,
          fields: { number: pr.number, pull_request: record, requested_reviewer: user },
        })),
    );
  });
}
