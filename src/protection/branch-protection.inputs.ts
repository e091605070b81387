import { Field, ID, InputType, Int } from 'type-graphql';

@InputType()
export class RequiredStatusChecksInput {
  @Field(() => Boolean, { nullable: true, defaultValue: false, description: "The pull request's head must contain the base tip." })
  strict?: boolean | null;

  @Field(() => [String], { description: 'Contexts whose latest status must be success (at most 100).' })
  contexts!: string[];
}

/** A whole rule: what is left out takes its default (nothing required, nothing allowed beyond a push). */
@InputType()
export class SetBranchProtectionInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field({ description: 'A branch name, or a pattern where `*` matches within one path segment (`release/*`).' })
  branch!: string;

  @Field(() => Boolean, { nullable: true, defaultValue: false })
  requiredPullRequest?: boolean | null;

  @Field(() => Int, { nullable: true, defaultValue: 0, description: '0 to 6.' })
  requiredApprovingReviewCount?: number | null;

  @Field(() => Boolean, { nullable: true, defaultValue: false })
  dismissStaleReviews?: boolean | null;

  @Field(() => RequiredStatusChecksInput, { nullable: true, description: 'null: no status checks.' })
  requiredStatusChecks?: RequiredStatusChecksInput | null;

  @Field(() => Boolean, { nullable: true, defaultValue: false })
  enforceAdmins?: boolean | null;

  @Field(() => Boolean, { nullable: true, defaultValue: false })
  allowForcePushes?: boolean | null;

  @Field(() => Boolean, { nullable: true, defaultValue: false })
  allowDeletions?: boolean | null;

  @Field(() => Boolean, { nullable: true, defaultValue: false })
  requiredLinearHistory?: boolean | null;
}
