import type { Changes } from '../../events/event-map.js';
import { iso } from '../../events/payloads.js';
import type { pullRequestRecord } from '../pull-request.payload.js';
import type { ReviewCommentView } from './review-comment.view.js';

/** A comment on lines as the REST API answers it (sides in lowercase, as REST spells every enum). */
export function reviewCommentRecord(comment: ReviewCommentView) {
  return {
    id: comment.id,
    review_id: comment.reviewId,
    path: comment.path,
    line: comment.line,
    side: comment.side.toLowerCase(),
    start_line: comment.startLine,
    start_side: comment.startSide?.toLowerCase() ?? null,
    commit_id: comment.commitId,
    original_commit_id: comment.originalCommitId,
    original_line: comment.originalLine,
    original_start_line: comment.originalStartLine,
    diff_hunk: comment.diffHunk,
    body: comment.body,
    user: comment.user,
    in_reply_to_id: comment.inReplyToId,
    created_at: iso(comment.createdAt)!,
    updated_at: iso(comment.updatedAt)!,
    outdated: comment.outdated,
  };
}

type CommentRecord = ReturnType<typeof reviewCommentRecord>;
type PullRequestRecord = Awaited<ReturnType<typeof pullRequestRecord>>;

interface CommentFields {
  comment: CommentRecord;
  pull_request: PullRequestRecord;
}

declare module '../../events/event-map.js' {
  interface ActionEvents {
    /** `pull_request_review_comment`: a comment on lines made (alone or with a review), edited (`changes.body.from`) or deleted. */
    pull_request_review_comment: {
      created: CommentFields;
      edited: CommentFields & { changes: Changes };
      deleted: CommentFields;
    };
  }
}
