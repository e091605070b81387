import type { EntityManager } from '@mikro-orm/postgresql';
import type { Repository } from '../repositories/repository.entity.js';

/**
 * The issue or pull request behind a number. Issues and pull requests share one number sequence per
 * repository, and what this capability keeps (comments, labels, assignees, the timeline) belongs to
 * either alike, keyed by (repository, number). Issues and pull requests come later in the order of
 * capabilities, so they are reached through ports given at start-up: this one finds them, and each
 * part that records an event about one declares its own port beside it.
 */
export interface ConversationTarget {
  kind: 'issue' | 'pull';
  /** The or pull request's id. */
  id: string;
  number: number;
  authorId: string;
  repository: Repository;
}

/** The issue or pull request `number` of `repo`; a NOT_FOUND (`issue`) when it is neither. */
export type FindConversation = (em: EntityManager, repo: Repository, number: number) => Promise<ConversationTarget>;
