import type { EntityManager } from '@mikro-orm/postgresql';
import type { CommentSubject } from '../conversations/comments/comment-subject.js';
import { partsColumns, type ConversationParts } from '../conversations/conversation-parts.js';
import { asDate, fastRead } from '../db/fast-read.js';
import type { Repository } from '../repositories/repository.entity.js';
import type { IssueState, IssueStateReason } from './issue.entity.js';
import { issuePayload } from './issue.payload.js';

interface SubjectRow extends ConversationParts {
  id: string;
  title: string;
  body: string | null;
  state: IssueState;
  state_reason: IssueStateReason | null;
  user_id: string;
  user_login: string;
  comments: number;
  created_at: Date | string;
  updated_at: Date | string;
  closed_at: Date | string | null;
}

/**
 * The issue `number` as the subject of a comment's event (its record, labels and assignees with it),
 * or null when `number` is not an issue: one statement, as every comment added reads it.
 */
export async function issueSubject(em: EntityManager, repo: Repository, number: number): Promise<CommentSubject | null> {
  const [row] = await fastRead<SubjectRow>(
    em,
    `select i.id, i.title, i.body, i.state, i.state_reason, i.user_id, u.login as user_login, i.comments,
            i.created_at, i.updated_at, i.closed_at, ${partsColumns('i.repository_id', 'i.number')}
       from issues i join users u on u.id = i.user_id
      where i.repository_id = ? and i.number = ?`,
    [repo.id, number],
  );
  if (!row) return null;
  const issue = {
    id: row.id,
    number,
    title: row.title,
    body: row.body,
    state: row.state,
    stateReason: row.state_reason,
    user: { id: row.user_id, login: row.user_login },
    comments: row.comments,
    createdAt: asDate(row.created_at),
    updatedAt: asDate(row.updated_at),
    closedAt: row.closed_at === null ? null : asDate(row.closed_at),
    repository: repo,
  };
  return {
    target: { kind: 'issue', id: row.id, number, authorId: row.user_id, commentCount: row.comments, repository: repo },
    issue: issuePayload(issue, { labels: row.labels, assignees: row.assignees }),
    pullRequest: null,
  };
}
