import type { EntityManager } from '@mikro-orm/postgresql';
import { fastRead } from '../db/fast-read.js';
import { notFound } from '../errors/domain-error.js';
import type { Repository } from '../repositories/repository.entity.js';

/**
 * The issue or pull request behind a number. Issues and pull requests share one number sequence per
 * repository, and what this capability keeps (comments, labels, assignees, the timeline) belongs to
 * either alike, keyed by (repository, number). Issues and pull requests come later in the order of
 * capabilities: what a use case here needs of one beyond this (its record for an event) it reaches
 * through a port given at start-up, declared beside it.
 */
export interface ConversationTarget {
  kind: 'issue' | 'pull';
  /** The issue's or pull request's id. */
  id: string;
  number: number;
  authorId: string;
  /** How many comments it has (the count its row keeps with each comment added or deleted). */
  commentCount: number;
  repository: Repository;
}

/** The table each kind of conversation is a row of. */
export const TABLE_OF: Record<ConversationTarget['kind'], string> = { issue: 'issues', pull: 'pull_requests' };

/**
 * The issue or pull request `number` of `repo`, in one statement over both (at most one of them has
 * the number); a NOT_FOUND (`issue`, as GitHub calls either) when it is neither.
 */
export async function findConversation(em: EntityManager, repo: Repository, number: number): Promise<ConversationTarget> {
  const [row] = await fastRead<{ kind: ConversationTarget['kind']; id: string; user_id: string; comments: number }>(
    em,
    `select 'issue' as kind, id, user_id, comments from issues where repository_id = ? and number = ?
     union all
     select 'pull' as kind, id, user_id, comments from pull_requests where repository_id = ? and number = ?`,
    [repo.id, number, repo.id, number],
  );
  if (!row) throw notFound('issue');
  return { kind: row.kind, id: row.id, number, authorId: row.user_id, commentCount: row.comments, repository: repo };
}
