import type { EntityManager } from '@mikro-orm/postgresql';
import type { CommentSubject } from '../conversations/comments/comment-subject.js';
import type { Repository } from '../repositories/repository.entity.js';
import { Issue } from './issue.entity.js';
import { issueRecord } from './issue.payload.js';

/** The issue `number` as the subject of a comment's event (its record), or null when `number` is not an issue. */
export async function issueSubject(em: EntityManager, repo: Repository, number: number): Promise<CommentSubject | null> {
  const issue = await em.findOne(Issue, { repository: repo, number }, { populate: ['user'] });
  if (!issue) return null;
  return {
    target: { kind: 'issue', id: issue.id, number, authorId: issue.user.id, repository: repo },
    issue: await issueRecord(em, issue),
    pullRequest: null,
  };
}
