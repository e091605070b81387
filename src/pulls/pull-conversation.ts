import type { EntityManager } from '@mikro-orm/postgresql';
import type { ConversationRecords } from '../conversations/conversation-changes.js';
import { ConversationKind, ConversationRecord } from '../conversations/conversation-record.js';
import type { PullDeps } from './pull-request.deps.js';
import { PullRequestState } from './pull-request.entity.js';
import { pullRequestRecord } from './pull-request.payload.js';
import { findPullRequest, readPullRequest } from './pull-request.reads.js';
import { lockPullRequest } from './pull-request.writes.js';

/**
 * What labels and assignees need of a pull request (conversation-changes.ts): its record as the
 * issue endpoints answer it, and its `pull_request` events.
 */
export function pullConversations(deps: Pick<PullDeps, 'events' | 'headStatuses' | 'requirements'>): ConversationRecords {
  return {
    async read(em, target) {
      const view = await readPullRequest(em, target.repository, target.number);
      return Object.assign(new ConversationRecord(), {
        id: view.id,
        number: view.number,
        kind: ConversationKind.PULL_REQUEST,
        title: view.title,
        body: view.body,
        state: view.state === PullRequestState.OPEN ? 'open' : 'closed',
        stateReason: null,
        comments: view.commentCount,
        user: view.user,
        createdAt: view.createdAt,
        updatedAt: view.updatedAt,
        closedAt: view.closedAt,
        repositoryId: view.repositoryId,
        pullRequest: { number: view.number },
      });
    },

    async changed(tx: EntityManager, target, actor, changes) {
      // Under the row lock, as every change of a pull request: its record is the one the change committed.
      const pr = await lockPullRequest(tx, await findPullRequest(tx, target.repository, target.number));
      pr.updatedAt = new Date();
      await tx.flush();
      const fields = { number: pr.number, pull_request: await pullRequestRecord(deps, tx, pr) };
      const repository = target.repository;
      await deps.events.recordAll(
        tx,
        changes.map((change) =>
          'label' in change
            ? { type: 'pull_request', action: change.action, repository, actor, fields: { ...fields, label: change.label } }
            : { type: 'pull_request', action: change.action, repository, actor, fields: { ...fields, assignee: change.assignee } },
        ),
      );
    },
  };
}
