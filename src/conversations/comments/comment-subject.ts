import type { EntityManager } from '@mikro-orm/postgresql';
import type { Repository } from '../../repositories/repository.entity.js';
import type { ConversationTarget } from '../conversation-target.js';

/**
 * The `issue` of an `issue_comment` event: the issue's record or, for a pull request, an
 * issue-shaped record of it (with `pull_request: {number}`). `comments` is its comment count, which
 * the change being recorded sets.
 */
export type IssueShapedRecord = Record<string, unknown> & { comments: number };

/** What a comment's event says of the issue or pull request it belongs to. */
export interface CommentSubject {
  target: ConversationTarget;
  issue: IssueShapedRecord;
  /** The pull request's record when the number is a pull request (as its own events carry it), else null. */
  pullRequest: Record<string, unknown> | null;
}

/**
 * The subject of a comment on `number`, read in `em` (the change's transaction, when there is
 * one). Issues and pull requests each give theirs at start-up (null when `number` is not one of
 * theirs); composed, a number that is neither is a NOT_FOUND.
 */
export type DescribeSubject = (em: EntityManager, repo: Repository, number: number) => Promise<CommentSubject>;
