import { OptionalProps } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/decorators/legacy';
import { registerEnumType } from 'type-graphql';
import { User } from '../auth/user.entity.js';
import { newId } from '../ids.js';
import { Repository } from '../repositories/repository.entity.js';

export enum PullRequestState {
  OPEN = 'open',
  CLOSED = 'closed',
  MERGED = 'merged',
}
registerEnumType(PullRequestState, { name: 'PullRequestState' });

export enum MergeableState {
  CLEAN = 'clean',
  CONFLICTING = 'conflicting',
  DRAFT = 'draft',
  UNKNOWN = 'unknown',
  BLOCKED = 'blocked',
  BEHIND = 'behind',
  UNSTABLE = 'unstable',
}
registerEnumType(MergeableState, {
  name: 'MergeableState',
  valuesConfig: {
    BLOCKED: { description: "Merges cleanly, but the base branch's rule is not met (approvals, required statuses)." },
    BEHIND: { description: "The base branch's rule wants the head to contain the base tip, and it does not." },
    UNSTABLE: { description: 'Merges cleanly and meets the rule, but a status that is not required is failing.' },
    CLEAN: { description: 'Merges without conflicts.' },
    CONFLICTING: { description: 'The branches conflict (see `conflicts`).' },
    DRAFT: { description: 'A draft: not mergeable until it is marked ready.' },
    UNKNOWN: { description: 'Not computed yet for the current head and base, or not open.' },
  },
});

/**
 * A request to merge `head` into `base`, two branches of one repository
 *. Its number comes from the sequence it shares with issues. While it
 * is open, its shas follow the branches (the ref listener keeps them current
 * in the transaction that records each push), and mergeability is stored
 * together with the (base, head) pair it was computed for, so a result for
 * an older pair is never reported. What clients see of it is its view
 * (pull-request.view.ts); the entity is what is stored and changed.
 */
@Entity({ tableName: 'pull_requests' })
@Unique({ properties: ['repository', 'number'] })
@Index({ properties: ['repository', 'state', 'createdAt', 'id'] })
@Index({ properties: ['repository', 'createdAt', 'id'] })
@Index({
  name: 'pull_requests_one_open_per_branch_pair',
  expression: `create unique index "pull_requests_one_open_per_branch_pair" on "pull_requests" ("repository_id", "head_ref", "base_ref") where "state" = 'open'`,
})
@Index({
  name: 'pull_requests_open_by_base',
  expression: `create index "pull_requests_open_by_base" on "pull_requests" ("repository_id", "base_ref") where "state" = 'open'`,
})
@Index({
  name: 'pull_requests_auto_merge',
  expression: `create index "pull_requests_auto_merge" on "pull_requests" ("repository_id") where "state" = 'open' and "auto_merge_method" is not null`,
})
export class PullRequest {
  [OptionalProps]?:
    | 'id'
    | 'body'
    | 'state'
    | 'draft'
    | 'mergedAt'
    | 'mergedBy'
    | 'mergeCommitSha'
    | 'commitsCount'
    | 'storedMergeable'
    | 'mergeableBaseSha'
    | 'mergeableHeadSha'
    | 'storedConflicts'
    | 'baseInHead'
    | 'createdAt'
    | 'updatedAt'
    | 'closedAt'
    | 'autoMergeMethod'
    | 'autoMergeEnabledBy'
    | 'autoMerge'
    | 'repositoryId'
    | 'commentCount';

  @PrimaryKey({ type: 'text' })
  id: string = newId('pr');

  @ManyToOne(() => Repository, { deleteRule: 'cascade' })
  repository!: Repository;

  @Property({ type: 'integer' })
  number!: number;

  @Property({ type: 'text' })
  title!: string;

  @Property({ type: 'text', nullable: true })
  body: string | null = null;

  @Property({ type: 'text' })
  state: PullRequestState = PullRequestState.OPEN;

  @Property({ type: 'boolean' })
  draft: boolean = false;

  @Property({ type: 'text' })
  headRef!: string;

  @Property({ type: 'text' })
  headSha!: string;

  @Property({ type: 'text' })
  baseRef!: string;

  @Property({ type: 'text' })
  baseSha!: string;

  @ManyToOne(() => User)
  user!: User;

  @Property({ type: 'datetime', nullable: true })
  mergedAt: Date | null = null;

  @ManyToOne(() => User, { nullable: true })
  mergedBy: User | null = null;

  @Property({ type: 'text', nullable: true })
  mergeCommitSha: string | null = null;

  @Property({ type: 'integer' })
  commitsCount: number = 0;

  /** The last mergeability result, valid only for the pair below. */
  @Property({ type: 'boolean', nullable: true, fieldName: 'mergeable' })
  storedMergeable: boolean | null = null;

  @Property({ type: 'text', nullable: true })
  mergeableBaseSha: string | null = null;

  @Property({ type: 'text', nullable: true })
  mergeableHeadSha: string | null = null;

  @Property({ type: 'json', fieldName: 'conflicts' })
  storedConflicts: string[] = [];

  /** Whether the head contains the base tip, for the pair above (null: unknown). */
  @Property({ type: 'boolean', nullable: true })
  baseInHead: boolean | null = null;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Property({ type: 'datetime' })
  updatedAt: Date = new Date();

  @Property({ type: 'datetime', nullable: true })
  closedAt: Date | null = null;

  /** Set while auto-merge is enabled: how it will merge (auto-merge.ts). */
  @Property({ type: 'text', nullable: true })
  autoMergeMethod: string | null = null;

  /** Who enabled auto-merge: the merger once every requirement holds. */
  @ManyToOne(() => User, { nullable: true, deleteRule: 'set null' })
  autoMergeEnabledBy: User | null = null;

  /** Its comments, counted with each one added or deleted (conversations/comments). */
  @Property({ type: 'integer', fieldName: 'comments' })
  commentCount: number = 0;

  /** Auto-merge as the view names it. */
  get autoMerge(): { enabledBy: User; method: string } | null {
    return this.autoMergeMethod && this.autoMergeEnabledBy ? { enabledBy: this.autoMergeEnabledBy, method: this.autoMergeMethod } : null;
  }

  /** The repository's id (without loading it), as the view of a pull request names it. */
  get repositoryId(): string {
    return this.repository.id;
  }
}
