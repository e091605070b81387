import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { User } from '../auth/user.entity.js';
import { newId } from '../ids.js';
import { Repository } from '../repositories/repository.entity.js';
import type { StatusState } from './combined-status.js';

/**
 * One status a CI system (or anyone with write access) reported for a commit: the history of
 * `(sha, context)`, never changed once written. Which of them is the latest of its context is kept
 * in `commit_status_contexts` (one row per context, with the count that caps its history), written
 * in the same statement as the status (commit-status.service.ts).
 */
@Entity({ tableName: 'commit_statuses' })
@Index({ properties: ['repository', 'sha', 'createdAt', 'id'] })
export class CommitStatus {
  @PrimaryKey({ type: 'text' })
  id: string = newId('sts');

  @ManyToOne(() => Repository, { deleteRule: 'cascade' })
  repository!: Repository;

  /** The commit, as 40 lowercase hex digits. */
  @Property({ type: 'text' })
  sha!: string;

  @Property({ type: 'text' })
  state!: StatusState;

  @Property({ type: 'text' })
  context!: string;

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Property({ type: 'text', nullable: true })
  targetUrl: string | null = null;

  @ManyToOne(() => User)
  creator!: User;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Property({ type: 'datetime' })
  updatedAt: Date = new Date();
}
