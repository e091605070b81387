import type { EntityManager } from '@mikro-orm/postgresql';
import type { ConversationRecords } from '../conversations/conversation-changes.js';
import { ConversationKind, ConversationRecord } from '../conversations/conversation-record.js';
import { notFound } from '../errors/domain-error.js';
import type { EventRecorder } from '../events/event-recorder.js';
import { actorRef } from '../events/payloads.js';
import { Issue } from './issue.entity.js';
import { issueRecord } from './issue.payload.js';

/** An issue as the record the conversation endpoints answer with. */
function conversationOf(issue: Issue): ConversationRecord {
  return Object.assign(new ConversationRecord(), {
    id: issue.id,
    number: issue.number,
    kind: ConversationKind.ISSUE,
    title: issue.title,
    body: issue.body,
    state: issue.state,
    stateReason: issue.stateReason,
    comments: issue.comments,
    user: actorRef(issue.user),
    createdAt: issue.createdAt,
    updatedAt: issue.updatedAt,
    closedAt: issue.closedAt,
    repositoryId: issue.repository.id,
    pullRequest: null,
  });
}

/** What labels and assignees need of an issue (conversation-changes.ts): its record, and its `issues` events. */
export function issueConversations(events: EventRecorder): ConversationRecords {
  return {
    async read(em, target) {
      return conversationOf(await em.findOneOrFail(Issue, { id: target.id }, { populate: ['user'] }));
    },

    async changed(tx: EntityManager, target, actor, changes) {
      const [row] = await tx.execute<Array<{ id: string }>>('update issues set updated_at = ? where id = ? returning id', [
        new Date(),
        target.id,
      ]);
      // The row is locked by lockConversation, so it is there; were it not, the change rolls back rather than go without its events.
      if (!row) throw notFound('issue');
      const issue = await tx.findOneOrFail(Issue, { id: target.id }, { populate: ['user'], refresh: true });
      const record = await issueRecord(tx, issue);
      const repository = target.repository;
      await events.recordAll(
        tx,
        changes.map((change) =>
          'label' in change
            ? { type: 'issues', action: change.action, repository, actor, fields: { issue: record, label: change.label } }
            : { type: 'issues', action: change.action, repository, actor, fields: { issue: record, assignee: change.assignee } },
        ),
      );
    },
  };
}
