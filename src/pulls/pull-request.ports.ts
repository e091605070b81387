import type { EntityManager } from '@mikro-orm/postgresql';
import type { PullRequestView } from './pull-request.view.js';

/**
 * What pull requests need of branch protection, declared here and given at start-up (the
 * protection capability builds on pull requests, so nothing here imports it).
 */
/**
 * The combined state of the statuses of head commits (`pending` for one without any): a pull
 * request record's `status`, given by the statuses capability.
 */
export type HeadStatuses = (em: EntityManager, repositoryId: string, shas: string[]) => Promise<Map<string, string>>;

export interface MergeRequirements {
  /**
   * Refines the `mergeable_state` of views that merge cleanly where their base branch's rule says
   * more: `blocked` (a requirement unmet), `behind` (strict checks and the head lacks the base tip),
   * `unstable` (a status that is not required is failing).
   */
  refine(em: EntityManager, repositoryId: string, views: PullRequestView[]): Promise<void>;
  /** Why the base branch's rule would never take a merge by `method` (linear history and `merge`), or null. */
  methodRefusal(em: EntityManager, repositoryId: string, baseRef: string, method: string): Promise<string | null>;
}

/** What a pull request's record in an event reads besides the pull request: its head's combined status and its base branch's rule. */
export interface PullRecordFacts {
  headStatuses: HeadStatuses;
  requirements: Pick<MergeRequirements, 'refine'>;
}
