import type { Changes } from '../events/event-map.js';
import { actorRef, iso } from '../events/payloads.js';
import type { Issue } from './issue.entity.js';

/** An issue as it appears in webhook payloads (the REST facade yields the same shape). */
export function issuePayload(issue: Issue) {
  return {
    id: issue.id,
    number: issue.number,
    title: issue.title,
    body: issue.body,
    state: issue.state,
    state_reason: issue.stateReason,
    user: actorRef(issue.user),
    comments: issue.comments,
    created_at: iso(issue.createdAt),
    updated_at: iso(issue.updatedAt),
    closed_at: iso(issue.closedAt),
    repository_id: issue.repository.id,
  };
}

type IssueRecord = ReturnType<typeof issuePayload>;

declare module '../events/event-map.js' {
  interface ActionEvents {
    /** `issues`: the issue as it is after the change. */
    issues: {
      opened: { issue: IssueRecord };
      updated: { issue: IssueRecord; changes: Changes };
      closed: { issue: IssueRecord };
      reopened: { issue: IssueRecord };
    };
  }
}
