import type { EventRecorder } from '../events/event-recorder.js';
import type { RefListener } from '../git/refs/ref-transaction.js';
import { PullRequest, PullRequestState } from '../pulls/pull-request.entity.js';
import { pullRequestRecord, reviewPayload } from '../pulls/pull-request.payload.js';
import type { PullRecordFacts } from '../pulls/pull-request.ports.js';
import { Review, ReviewState } from '../pulls/review.entity.js';
import { rulesOf } from './protection-facts.js';
import { ruleFor } from './rule-match.js';

const BRANCH = 'refs/heads/';

/**
 * Where a branch rule dismisses stale reviews, a push that moves the head of a pull request into
 * that branch dismisses its approvals given on an earlier head, in the transaction that records
 * the push (after the pull requests followed it): each becomes `dismissed`, with a
 * `pull_request_review` `dismissed` event.
 */
export function dismissStaleReviews(events: EventRecorder, facts: PullRecordFacts): RefListener {
  return async (tx, change) => {
    const moved = change.changes.filter((update) => update.ref.startsWith(BRANCH) && change.refs.has(update.ref));
    if (!moved.length) return;
    const rules = await rulesOf(tx, change.repository.id);
    if (!rules.some((rule) => rule.dismissStaleReviews)) return;
    const heads = moved.map((update) => update.ref.slice(BRANCH.length));
    const pulls = await tx.find(
      PullRequest,
      { repository: change.repository.id, state: PullRequestState.OPEN, headRef: { $in: heads } },
      { populate: ['user', 'mergedBy'], orderBy: { number: 'asc' } },
    );
    const dismissing = pulls.filter((candidate) => ruleFor(rules, candidate.baseRef)?.dismissStaleReviews);
    if (!dismissing.length) return;
    // Every stale approval of these pull requests with one query: given on another commit than the head.
    const stale = await tx.find(
      Review,
      { pullRequest: { $in: dismissing.map((pr) => pr.id) }, state: ReviewState.APPROVED },
      { populate: ['user'], orderBy: { submittedAt: 'asc', id: 'asc' } },
    );
    for (const pr of dismissing) {
      for (const review of stale.filter((candidate) => candidate.pullRequest.id === pr.id && candidate.commitId !== pr.headSha)) {
        review.state = ReviewState.DISMISSED;
        await events.record(tx, {
          type: 'pull_request_review',
          action: 'dismissed',
          repository: change.repository,
          actor: change.actors[change.changes.find((update) => update.ref === `${BRANCH}${pr.headRef}`)?.cause ?? 'push'],
          fields: { review: reviewPayload(review), pull_request: await pullRequestRecord(facts, tx, pr) },
        });
      }
    }
    await tx.flush();
  };
}
