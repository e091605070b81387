import { Permission } from '../auth/permissions.js';
import { User } from '../auth/user.entity.js';
import { invalid, Problems } from '../errors/domain-error.js';
import { childPages } from '../db/child-pages.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';
import { checkTitleAndBody } from '../repositories/names.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { PullDeps } from './pull-request.deps.js';
import type { Principal } from '../principal.js';
import { PullRequestState } from './pull-request.entity.js';
import type { SubmitReviewInput } from './pull-request.inputs.js';
import { pullRequestRecord, reviewPayload } from './pull-request.payload.js';
import { findPullRequest } from './pull-request.reads.js';
import { lockPullRequest } from './pull-request.writes.js';
import { planReviewComments, startThreads } from './line-comments/review-comments.writes.js';
import { Review, ReviewEvent, STATE_OF_EVENT } from './review.entity.js';
import { fulfilReviewRequest } from './review-requests.js';

/** The reviews of pull requests, a page of each, newest first: one statement for the pages, one for their users. */
export async function reviewPages(em: EntityManager, pullRequestIds: readonly string[], page: Page): Promise<Array<Connection<Review>>> {
  const pages = await childPages<Record<string, unknown>>(em, REVIEWS, pullRequestIds, page);
  const reviews = pages.map(({ rows }) => rows.map((row) => em.map(Review, row)));
  await em.populate(reviews.flat(), ['user']);
  return pages.map(({ total }, i) => connection(reviews[i]!, total, page));
}

/** Reviews by id, in the order of `ids` (null for none): the reviews a page of timeline items shows, in one statement with their users. */
export async function reviewsById(em: EntityManager, ids: readonly string[]): Promise<Array<Review | null>> {
  const reviews = await em.find(Review, { id: { $in: [...ids] } }, { populate: ['user'] });
  const byId = new Map(reviews.map((review) => [review.id, review]));
  return ids.map((id) => byId.get(id) ?? null);
}

const REVIEWS = { table: 'pull_request_reviews', parent: 'pull_request_id', order: 'submitted_at desc, id desc' };

/**
 * Submitting a review: anyone who can read the repository, with the
 * repo scope; a body is required to request changes or comment; the author
 * may only comment on their own pull request; only an open pull request
 * takes reviews (decided on its locked row, so a review cannot land on a
 * pull request that a concurrent merge or close has just ended). The review
 * keeps the head sha it was submitted on, and its comments on lines (each
 * checked against the diff at that head with the rest) start threads there.
 */
export async function submitReview(deps: PullDeps, em: EntityManager, viewer: Principal, input: SubmitReviewInput): Promise<Review> {
  const repo = await deps.repositories.find(em, viewer, input.repositoryId, Permission.READ, 'repo');
  const loaded = await findPullRequest(em, repo, input.number);
  const problems = new Problems();
  checkTitleAndBody(problems, undefined, input.body);
  if (input.event !== ReviewEvent.APPROVE && !input.body?.trim()) {
    problems.add('body', 'missing', 'a body is required to request changes or comment');
  }
  if (input.event !== ReviewEvent.COMMENT && loaded.user.id === viewer.userId) {
    problems.add('event', 'own_pull_request', 'you cannot approve or request changes on your own pull request');
  }
  const threads = await planReviewComments(deps, viewer, loaded, input.comments, problems);
  problems.throwIfAny();

  const { events } = deps;
  return events.transaction(em, async (tx) => {
    const pr = await lockPullRequest(tx, loaded);
    if (pr.state !== PullRequestState.OPEN)
      throw invalid('state', 'not_open', `the pull request is ${pr.state}: only open pull requests take reviews`);
    const reviewer = await tx.findOneOrFail(User, { id: viewer.userId });
    const review = tx.create(Review, {
      pullRequest: pr,
      state: STATE_OF_EVENT[input.event],
      body: input.body?.trim() ? input.body : null,
      user: reviewer,
      commitId: pr.headSha,
    });
    await fulfilReviewRequest(tx, pr.id, reviewer.id);
    await events.record(tx, {
      type: 'pull_request_review',
      action: 'submitted',
      repository: repo,
      actor: reviewer,
      fields: { review: reviewPayload(review), pull_request: await pullRequestRecord(deps, tx, pr) },
    });
    await startThreads(deps, tx, { repo, pr, user: reviewer, review }, threads);
    return review;
  });
}
