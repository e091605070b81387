import type { EntityManager } from '@mikro-orm/postgresql';
import { conversationParts, type ConversationParts } from '../conversations/conversation-parts.js';
import type { LabelPayload } from '../conversations/labels/label.payload.js';
import type { Changes } from '../events/event-map.js';
import { actorRef, iso, type ActorRef } from '../events/payloads.js';
import type { Issue } from './issue.entity.js';

/**
 * An issue as it appears in webhook payloads (the REST facade yields the same shape), with its
 * labels and assignees (`parts`: NO_PARTS for a new issue, else read with `issueRecord`).
 */
export function issuePayload(issue: IssueFacts, parts: ConversationParts) {
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
    labels: parts.labels,
    assignees: parts.assignees,
  };
}

/** What an issue's record is made of: the issue's own fields, its author and its repository's id. */
export type IssueFacts = Pick<
  Issue,
  'id' | 'number' | 'title' | 'body' | 'state' | 'stateReason' | 'comments' | 'createdAt' | 'updatedAt' | 'closedAt'
> & { user: ActorRef; repository: { id: string } };

/** The issue's record for an event recorded in `tx`: its labels and assignees read there. */
export async function issueRecord(tx: EntityManager, issue: Issue) {
  return issuePayload(issue, await conversationParts(tx, issue.repository.id, issue.number));
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
      labeled: { issue: IssueRecord; label: LabelPayload };
      unlabeled: { issue: IssueRecord; label: LabelPayload };
      assigned: { issue: IssueRecord; assignee: ActorRef };
      unassigned: { issue: IssueRecord; assignee: ActorRef };
    };
  }
}
