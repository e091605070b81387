import type { Changes } from '../events/event-map.js';
import { actorRef, iso } from '../events/payloads.js';
import type { PullRequest } from './pull-request.entity.js';
import type { Review } from './review.entity.js';

/** The §5 pull request record, as it appears in webhook payloads (the REST facade yields the same shape). */
export function pullRequestRecord(pr: PullRequest) {
  return {
    id: pr.id,
    number: pr.number,
    title: pr.title,
    body: pr.body,
    state: pr.state,
    draft: pr.draft,
    head: pr.head,
    base: pr.base,
    user: actorRef(pr.user),
    merged: pr.merged,
    merged_at: iso(pr.mergedAt),
    merged_by: pr.mergedBy ? actorRef(pr.mergedBy) : null,
    merge_commit_sha: pr.mergeCommitSha,
    mergeable: pr.mergeable,
    mergeable_state: pr.mergeableState,
    conflicts: pr.conflicts,
    commits: pr.commitsCount,
    created_at: iso(pr.createdAt),
    updated_at: iso(pr.updatedAt),
    closed_at: iso(pr.closedAt),
    repository_id: pr.repository.id,
  };
}

/** The §5 review record. */
export function reviewRecord(review: Review) {
  return {
    id: review.id,
    state: review.state,
    body: review.body,
    user: actorRef(review.user),
    commit_id: review.commitId,
    submitted_at: iso(review.submittedAt),
  };
}

export type PullRequestRecord = ReturnType<typeof pullRequestRecord>;
export type ReviewRecord = ReturnType<typeof reviewRecord>;

/** The payload fields of every `pull_request` event: the number and the record as it is after the change. */
export interface PullRequestFields {
  number: number;
  pull_request: PullRequestRecord;
}

declare module '../events/event-map.js' {
  interface ActionEvents {
    /** §7 `pull_request`. `updated` carries `changes` (title, body, base, draft, head) and, for a head push, `forced`. */
    pull_request: {
      opened: PullRequestFields;
      updated: PullRequestFields & { changes: Changes; forced?: boolean };
      closed: PullRequestFields;
      reopened: PullRequestFields;
      merged: PullRequestFields;
    };
    /** §7 `pull_request_review`. */
    pull_request_review: { submitted: { review: ReviewRecord; pull_request: PullRequestRecord } };
  }
}
