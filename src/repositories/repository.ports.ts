import type { EntityManager } from '@mikro-orm/postgresql';
import type { Repository } from './repository.entity.js';

/**
 * What repositories need of git, declared here and given at start-up (the git
 * capability's GitStorage and RefTransactions provide them): repositories
 * come first, git builds on them, and nothing here imports git.
 */

interface InitialFile {
  path: string;
  content: string;
}

/** A repository's data on disk, one directory per repository id. */
export interface RepositoryStorage {
  create(repositoryId: string, defaultBranch: string): Promise<void>;
  remove(repositoryId: string): Promise<void>;
  setDefaultBranch(repositoryId: string, branch: string): Promise<void>;
  hasBranch(repositoryId: string, branch: string): Promise<boolean>;
  /** The objects of a first commit made of `files`; returns its sha (no ref points at it yet). */
  writeInitialCommit(repositoryId: string, author: { name: string; email: string }, message: string, files: InitialFile[]): Promise<string>;
}

/** The one path that moves refs, as far as repositories use it. */
export interface RefGuard {
  /** Sets a new repository's first refs inside the transaction that creates it (recorded, not announced). */
  initialize(tx: EntityManager, repository: Repository, updates: Array<{ ref: string; before: string; after: string }>): Promise<void>;
  /** Runs `work` while no ref of the repository can change; null when that moment did not come within `waitMs`. */
  exclusive<T>(repositoryId: string, waitMs: number, work: () => Promise<T>): Promise<T | null>;
}
