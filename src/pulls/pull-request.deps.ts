import type { EventRecorder } from '../events/event-recorder.js';
import type { RefTransactions } from '../git/refs/ref-transaction.js';
import type { GitStorage } from '../git/storage.js';
import type { Logger } from '../logger.js';
import type { Repositories } from '../repositories/repository.service.js';
import type { Mergeability } from './mergeability.js';
import type { HeadStatuses, MergeRequirements } from './pull-request.ports.js';

/** The collaborators of the pull request use cases, given once at start-up. */
export interface PullDeps {
  events: EventRecorder;
  repositories: Repositories;
  git: GitStorage;
  refs: RefTransactions;
  mergeability: Mergeability;
  /** Branch protection's say on `mergeable_state` (blocked, behind, unstable). */
  requirements: MergeRequirements;
  /** The combined status of heads, for the records in pull request events. */
  headStatuses: HeadStatuses;
  log: Logger;
  /** CAIRN_BASE_URL, whose host the no-reply addresses of merge commits name. */
  baseUrl: string;
}
