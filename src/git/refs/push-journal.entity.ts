import { OptionalProps } from '@mikro-orm/core';
import { Entity, ManyToOne, Property } from '@mikro-orm/decorators/legacy';
import { Repository } from '../../repositories/repository.entity.js';

/**
 * A push in flight: written (and committed) before `receive-pack` may touch a
 * repository's refs, deleted in the transaction that records the push's events.
 * A row that outlives its push marks an interrupted push, and names the user
 * that reconciliation credits with the changes it finds. Ref changes of one
 * repository (pushes, merges) are serialised, so there is at most one row per repository.
 */
@Entity({ tableName: 'git_push_journal' })
export class PushJournal {
  [OptionalProps]?: 'startedAt' | 'note' | 'commitsNewTo' | 'pushDetails' | 'describeAttempts';

  @ManyToOne(() => Repository, { primary: true, deleteRule: 'cascade' })
  repository!: Repository;

  /** Not a foreign key: the record must survive anything that happens to the account meanwhile. */
  @Property({ type: 'text' })
  userId!: string;

  /** What the change means beyond its refs (a merge names its pull request), for the listeners of a replay. */
  @Property({ type: 'json', nullable: true })
  note: unknown = null;

  /** What the `push` events of the change list: `repository` (pushes) or `branch` (merges); null is `repository`. */
  @Property({ type: 'text', nullable: true })
  commitsNewTo: string | null = null;

  /**
   * A push's options and certificate: the name of the file in the repository's directory that its
   * pre-receive hook writes before any ref moves, read by whichever process records the push.
   */
  @Property({ type: 'text', nullable: true })
  pushDetails: string | null = null;

  @Property({ type: 'datetime' })
  startedAt: Date = new Date();

  /**
   * Attempts to describe the change as events that began (journal.ts): one that began and did not
   * finish took the process down with it, and is not repeated the same way.
   */
  @Property({ type: 'integer', default: 0 })
  describeAttempts = 0;
}
