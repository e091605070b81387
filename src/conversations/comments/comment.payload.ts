import { actorRef, iso } from '../../events/payloads.js';
import type { CommentSubject, IssueShapedRecord } from './comment-subject.js';
import type { CommentRecord } from './comment.types.js';

/** A comment as webhook payloads carry it (the REST facade yields the same shape). */
function commentPayload(comment: CommentRecord) {
  return {
    id: comment.id,
    body: comment.body,
    user: actorRef(comment.user),
    created_at: iso(comment.createdAt)!,
    updated_at: iso(comment.updatedAt)!,
    issue_number: comment.issueNumber,
  };
}

type CommentFields = {
  comment: ReturnType<typeof commentPayload>;
  issue: IssueShapedRecord;
  /** Present only when the number is a pull request. */
  pull_request?: Record<string, unknown>;
};

/** The fields of an `issue_comment` event; `comments` is the subject's comment count after the change. */
export function commentFields(comment: CommentRecord, subject: CommentSubject, comments: number): CommentFields {
  return {
    comment: commentPayload(comment),
    issue: { ...subject.issue, comments },
    ...(subject.pullRequest ? { pull_request: subject.pullRequest } : {}),
  };
}

declare module '../../events/event-map.js' {
  interface ActionEvents {
    /** `issue_comment`: a comment on an issue or a pull request; `edited` says what the body was. */
    issue_comment: {
      created: CommentFields;
      edited: CommentFields & { changes: { body: { from: string } } };
      deleted: CommentFields;
    };
  }
}
