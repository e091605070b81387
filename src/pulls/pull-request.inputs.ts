import { Field, InputType, ObjectType, registerEnumType } from 'type-graphql';
import { ItemEditInput, NewItemInput, NumberedItemInput } from '../repositories/repository-item.inputs.js';
import { DraftReviewCommentInput } from './line-comments/review-comment.inputs.js';
import { MergeMethod } from './merge-commits.js';
import { ReviewEvent } from './review.entity.js';

export enum PullRequestStateFilter {
  OPEN = 'open',
  CLOSED = 'closed',
  MERGED = 'merged',
  ALL = 'all',
}
registerEnumType(PullRequestStateFilter, {
  name: 'PullRequestStateFilter',
  valuesConfig: { CLOSED: { description: 'Closed without being merged.' } },
});

/** The states an edit may set: merging is its own operation. */
export enum PullRequestEditState {
  OPEN = 'open',
  /** @public what a client sends to close; no server code names it */
  CLOSED = 'closed',
}
registerEnumType(PullRequestEditState, { name: 'PullRequestEditState' });

@InputType()
export class CreatePullRequestInput extends NewItemInput {
  @Field({ description: 'The branch with the changes (`owner:branch`, as GitHub clients send it, works too).' })
  head!: string;

  @Field(() => String, { nullable: true, description: "The branch to merge into; default: the repository's default branch." })
  base?: string | null;

  @Field(() => Boolean, { nullable: true, defaultValue: false })
  draft?: boolean | null;
}

@InputType()
export class UpdatePullRequestInput extends ItemEditInput {
  @Field(() => String, { nullable: true, description: 'Another branch to merge into.' })
  base?: string | null;

  @Field(() => PullRequestEditState, { nullable: true, description: 'Close, or reopen (the head branch must exist).' })
  state?: PullRequestEditState | null;

  @Field(() => Boolean, { nullable: true })
  draft?: boolean | null;
}

@InputType()
export class MergePullRequestInput extends NumberedItemInput {
  @Field(() => MergeMethod, { nullable: true, description: 'How to merge; merge when neither this nor mergeMethod is given.' })
  method?: MergeMethod | null;

  @Field(() => MergeMethod, { nullable: true, description: "GitHub's name for method: the same field (give one, or both the same)." })
  mergeMethod?: MergeMethod | null;

  @Field(() => String, { nullable: true, description: 'Merge only if the head is still at this commit (else CONFLICT).' })
  sha?: string | null;

  @Field(() => String, { nullable: true, description: 'First line of the merge or squash commit message.' })
  commitTitle?: string | null;

  @Field(() => String, { nullable: true, description: 'The rest of the merge or squash commit message.' })
  commitMessage?: string | null;
}

@ObjectType('MergeResult')
export class MergeResult {
  @Field()
  merged!: boolean;

  @Field({ description: 'The new tip of the base branch.' })
  sha!: string;

  @Field()
  message!: string;
}

@InputType()
export class SubmitReviewInput extends NumberedItemInput {
  @Field(() => ReviewEvent)
  event!: ReviewEvent;

  @Field(() => String, { nullable: true, description: 'Required to request changes or comment.' })
  body?: string | null;

  @Field(() => [DraftReviewCommentInput], {
    nullable: true,
    description: "Comments on lines of the diff at the review's commit (the head).",
  })
  comments?: DraftReviewCommentInput[] | null;
}

@InputType()
export class AutoMergeInput extends NumberedItemInput {
  @Field(() => MergeMethod, { nullable: true, description: 'How it will merge; merge when neither this nor mergeMethod is given.' })
  method?: MergeMethod | null;

  @Field(() => MergeMethod, { nullable: true, description: "GitHub's name for method: the same field." })
  mergeMethod?: MergeMethod | null;
}
