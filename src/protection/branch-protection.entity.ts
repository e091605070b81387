import { OptionalProps } from '@mikro-orm/core';
import { Entity, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/decorators/legacy';
import { Field, ID, Int, ObjectType } from 'type-graphql';
import { newId } from '../ids.js';
import { Repository } from '../repositories/repository.entity.js';

/** Status contexts a branch needs before it moves, and whether a pull request's head must contain the base tip. */
@ObjectType('RequiredStatusChecks')
export class RequiredStatusChecks {
  @Field({ description: "The pull request's head must contain the base tip (be up to date) before it merges." })
  strict!: boolean;

  @Field(() => [String], { description: 'Contexts whose latest status on the commit must be success.' })
  contexts!: string[];
}

/**
 * A rule protecting the branches its pattern names: an exact branch name or a pattern where `*`
 * stands for any characters within one path segment (`release/*`). Enforced wherever refs move
 * (branch-rules.ts): pushes are refused per ref, merges through the API answer NOT_MERGEABLE.
 */
@ObjectType('BranchProtection')
@Entity({ tableName: 'branch_protections' })
@Unique({ properties: ['repository', 'pattern'] })
export class BranchProtection {
  [OptionalProps]?: 'id' | 'createdAt' | 'updatedAt';

  @Field(() => ID)
  @PrimaryKey({ type: 'text' })
  id: string = newId('bp');

  @ManyToOne(() => Repository, { deleteRule: 'cascade' })
  repository!: Repository;

  @Field({ description: 'The branch name or pattern (`*` within one path segment) the rule protects.' })
  @Property({ type: 'text' })
  pattern!: string;

  @Field({ description: 'Changes reach the branch only by merging a pull request: direct pushes are refused.' })
  @Property({ type: 'boolean' })
  requiredPullRequest!: boolean;

  @Field(() => Int, { description: 'Approvals (from users who can write) a pull request needs, 0 to 6.' })
  @Property({ type: 'integer' })
  requiredApprovingReviewCount!: number;

  @Field({ description: 'A push to the head of a pull request dismisses its approvals.' })
  @Property({ type: 'boolean' })
  dismissStaleReviews!: boolean;

  @Field(() => RequiredStatusChecks, { nullable: true })
  @Property({ type: 'json', nullable: true })
  requiredStatusChecks!: RequiredStatusChecks | null;

  @Field({ description: 'The rule binds repository admins too (otherwise they bypass it).' })
  @Property({ type: 'boolean' })
  enforceAdmins!: boolean;

  @Field({ description: 'Pushes may rewrite the branch history.' })
  @Property({ type: 'boolean' })
  allowForcePushes!: boolean;

  @Field({ description: 'The branch may be deleted.' })
  @Property({ type: 'boolean' })
  allowDeletions!: boolean;

  @Field({ description: 'No merge commits: pull requests merge by squash or rebase, pushes bring no merges.' })
  @Property({ type: 'boolean' })
  requiredLinearHistory!: boolean;

  @Field()
  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Field()
  @Property({ type: 'datetime' })
  updatedAt: Date = new Date();
}
