import { OptionalProps } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/decorators/legacy';
import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Actor, User } from '../auth/user.entity.js';
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
}
registerEnumType(MergeableState, {
  name: 'MergeableState',
  valuesConfig: {
    CLEAN: { description: 'Merges without conflicts.' },
    CONFLICTING: { description: 'The branches conflict (see `conflicts`).' },
    DRAFT: { description: 'A draft: not mergeable until it is marked ready.' },
    UNKNOWN: { description: 'Not computed yet for the current head and base, or not open.' },
  },
});

/** One side of a pull request: a branch and the commit it pointed at. */
@ObjectType('PullRequestBranch')
export class PullRequestBranch {
  @Field({ description: 'Branch name.' })
  ref!: string;

  @Field({ description: 'While open, the branch tip; once closed or merged, as it was then.' })
  sha!: string;
}

/**
 * A request to merge `head` into `base`, two branches of one repository
 * (§10). Its number comes from the sequence it shares with issues. While it
 * is open, its shas follow the branches (the ref listener keeps them current
 * in the transaction that records each push), and mergeability is stored
 * together with the (base, head) pair it was computed for, so a result for
 * an older pair is never reported.
 */
@ObjectType('PullRequest')
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
    | 'createdAt'
    | 'updatedAt'
    | 'closedAt'
    | 'repositoryId'
    | 'head'
    | 'base'
    | 'merged'
    | 'mergeable'
    | 'mergeableState'
    | 'conflicts';

  @Field(() => ID)
  @PrimaryKey({ type: 'text' })
  id: string = newId('pr');

  @ManyToOne(() => Repository, { deleteRule: 'cascade' })
  repository!: Repository;

  @Field(() => Int, { description: 'Per repository, from the sequence shared with issues.' })
  @Property({ type: 'integer' })
  number!: number;

  @Field()
  @Property({ type: 'text' })
  title!: string;

  @Field(() => String, { nullable: true })
  @Property({ type: 'text', nullable: true })
  body: string | null = null;

  @Field(() => PullRequestState)
  @Property({ type: 'text' })
  state: PullRequestState = PullRequestState.OPEN;

  @Field()
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

  @Field(() => Actor)
  @ManyToOne(() => User)
  user!: User;

  @Field(() => Date, { nullable: true })
  @Property({ type: 'datetime', nullable: true })
  mergedAt: Date | null = null;

  @Field(() => Actor, { nullable: true })
  @ManyToOne(() => User, { nullable: true })
  mergedBy: User | null = null;

  @Field(() => String, { nullable: true, description: 'The commit the merge left on the base branch (for rebase, the last one).' })
  @Property({ type: 'text', nullable: true })
  mergeCommitSha: string | null = null;

  @Field(() => Int, { description: 'Commits on head that base lacks.' })
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

  @Field()
  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Field()
  @Property({ type: 'datetime' })
  updatedAt: Date = new Date();

  @Field(() => Date, { nullable: true })
  @Property({ type: 'datetime', nullable: true })
  closedAt: Date | null = null;

  @Field(() => ID)
  get repositoryId(): string {
    return this.repository.id;
  }

  @Field(() => PullRequestBranch)
  get head(): PullRequestBranch {
    return { ref: this.headRef, sha: this.headSha };
  }

  @Field(() => PullRequestBranch)
  get base(): PullRequestBranch {
    return { ref: this.baseRef, sha: this.baseSha };
  }

  @Field()
  get merged(): boolean {
    return this.state === PullRequestState.MERGED;
  }

  /** Whether the stored result is for the branches as they are now (and the pull request is open). */
  private get mergeabilityIsCurrent(): boolean {
    return this.state === PullRequestState.OPEN && this.mergeableBaseSha === this.baseSha && this.mergeableHeadSha === this.headSha;
  }

  @Field(() => Boolean, { nullable: true, description: 'null while unknown for the current head and base (computed in the background).' })
  get mergeable(): boolean | null {
    return this.mergeabilityIsCurrent ? this.storedMergeable : null;
  }

  @Field(() => MergeableState)
  get mergeableState(): MergeableState {
    if (this.state === PullRequestState.OPEN && this.draft) return MergeableState.DRAFT;
    const mergeable = this.mergeable;
    if (mergeable === null) return MergeableState.UNKNOWN;
    return mergeable ? MergeableState.CLEAN : MergeableState.CONFLICTING;
  }

  @Field(() => [String], { description: 'Paths that conflict between head and base; empty when clean or unknown.' })
  get conflicts(): string[] {
    return this.mergeabilityIsCurrent ? this.storedConflicts : [];
  }
}
