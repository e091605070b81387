import { conversationParts, type ConversationParts } from '../conversations/conversation-parts.js';
import type { LabelPayload } from '../conversations/labels/label.payload.js';
import type { Changes } from '../events/event-map.js';
import { actorRef, iso, type ActorRef } from '../events/payloads.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { PullRecordFacts } from './pull-request.ports.js';
import { pullRequestView, type PullRequestFacts, type PullRequestView } from './pull-request.view.js';
import type { Review } from './review.entity.js';
import { requestedReviewersOf } from './review-request.reads.js';

/**
 * A pull request as it appears in webhook payloads: its view (the one GraphQL and the REST
 * facade serve) in the REST spelling.
 */
function pullRequestPayload(view: PullRequestView, status: string, parts: PullRequestParts) {
  return {
    id: view.id,
    number: view.number,
    title: view.title,
    body: view.body,
    state: view.state,
    draft: view.draft,
    head: view.head,
    base: view.base,
    user: view.user,
    merged: view.merged,
    merged_at: iso(view.mergedAt),
    merged_by: view.mergedBy,
    merge_commit_sha: view.mergeCommitSha,
    mergeable: view.mergeable,
    mergeable_state: view.mergeableState,
    conflicts: view.conflicts,
    commits: view.commitsCount,
    status,
    created_at: iso(view.createdAt),
    updated_at: iso(view.updatedAt),
    closed_at: iso(view.closedAt),
    auto_merge: view.autoMerge ? { enabled_by: view.autoMerge.enabledBy, method: view.autoMerge.method } : null,
    repository_id: view.repositoryId,
    labels: parts.labels,
    assignees: parts.assignees,
    requested_reviewers: parts.requestedReviewers,
  };
}

/** What a pull request's record carries of its conversation and review requests. */
type PullRequestParts = ConversationParts & { requestedReviewers: ActorRef[] };

/**
 * The record of a pull request for an event recorded in `tx`, as the API answers it at that point:
 * its head's combined status, and its `mergeable_state` as its base branch's rule refines it
 * (`blocked`, `behind`, `unstable`), both read in `tx`.
 */
export async function pullRequestRecord(facts: PullRecordFacts, tx: EntityManager, pr: PullRequestFacts) {
  const view = pullRequestView(pr);
  const [statuses, , parts, requestedReviewers] = await Promise.all([
    facts.headStatuses(tx, pr.repositoryId, [pr.headSha]),
    facts.requirements.refine(tx, pr.repositoryId, [view]),
    conversationParts(tx, pr.repositoryId, pr.number),
    requestedReviewersOf(tx, pr.id),
  ]);
  return pullRequestPayload(view, statuses.get(pr.headSha) ?? 'pending', { ...parts, requestedReviewers });
}

/** The review record. */
export function reviewPayload(review: Review) {
  return {
    id: review.id,
    state: review.state,
    body: review.body,
    user: actorRef(review.user),
    commit_id: review.commitId,
    submitted_at: iso(review.submittedAt),
  };
}

type PullRequestRecord = ReturnType<typeof pullRequestPayload>;
type ReviewRecord = ReturnType<typeof reviewPayload>;

/** The payload fields of every `pull_request` event: the number and the pull request as it is after the change. */
interface PullRequestFields {
  number: number;
  pull_request: PullRequestRecord;
}

declare module '../events/event-map.js' {
  interface ActionEvents {
    /** `pull_request`. `updated` carries `changes` (title, body, base, draft, head) and, for a head push, `forced`. */
    pull_request: {
      opened: PullRequestFields;
      updated: PullRequestFields & { changes: Changes; forced?: boolean };
      closed: PullRequestFields;
      reopened: PullRequestFields;
      merged: PullRequestFields;
      auto_merge_enabled: PullRequestFields;
      /** `reason`: why it stopped (asked, or a push by someone who cannot write). */
      auto_merge_disabled: PullRequestFields & { reason: string };
      labeled: PullRequestFields & { label: LabelPayload };
      unlabeled: PullRequestFields & { label: LabelPayload };
      assigned: PullRequestFields & { assignee: ActorRef };
      unassigned: PullRequestFields & { assignee: ActorRef };
      review_requested: PullRequestFields & { requested_reviewer: ActorRef };
      review_request_removed: PullRequestFields & { requested_reviewer: ActorRef };
    };
    /** `pull_request_review`: `dismissed` when a push to the head dismissed an approval (branch protection). */
    pull_request_review: {
      submitted: { review: ReviewRecord; pull_request: PullRequestRecord };
      dismissed: { review: ReviewRecord; pull_request: PullRequestRecord };
    };
  }
}
