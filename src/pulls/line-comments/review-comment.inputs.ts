import { Field, ID, InputType, Int } from 'type-graphql';
import { NumberedItemInput } from '../../repositories/repository-item.inputs.js';
import { DiffSideValue } from './review-comment.view.js';

/** A comment on lines submitted with a review, on the review's commit. */
@InputType('DraftReviewComment')
export class DraftReviewCommentInput {
  @Field({ description: 'The file (its new path when renamed).' })
  path!: string;

  @Field(() => Int, { description: 'A line of `side` inside a hunk of the diff; the last line of a range.' })
  line!: number;

  @Field(() => DiffSideValue, { nullable: true, description: 'Default RIGHT.' })
  side?: DiffSideValue | null;

  @Field(() => Int, { nullable: true, description: 'The first line of a range: in the same hunk, before `line`.' })
  startLine?: number | null;

  @Field(() => DiffSideValue, { nullable: true, description: 'The side of `startLine`; default `side`.' })
  startSide?: DiffSideValue | null;

  @Field()
  body!: string;
}

@InputType()
export class CreateReviewCommentInput extends NumberedItemInput {
  @Field()
  body!: string;

  @Field(() => String, { nullable: true, description: 'A commit of the pull request whose diff `line` refers to; default its head.' })
  commitId?: string | null;

  @Field(() => String, { nullable: true })
  path?: string | null;

  @Field(() => Int, { nullable: true })
  line?: number | null;

  @Field(() => DiffSideValue, { nullable: true, description: 'Default RIGHT.' })
  side?: DiffSideValue | null;

  @Field(() => Int, { nullable: true })
  startLine?: number | null;

  @Field(() => DiffSideValue, { nullable: true })
  startSide?: DiffSideValue | null;

  @Field(() => ID, {
    nullable: true,
    description: "Any comment of the pull request: this one joins its thread (its place is the thread's; path and line are ignored).",
  })
  inReplyTo?: string | null;
}

@InputType()
export class ReplyToReviewThreadInput {
  @Field(() => ID)
  threadId!: string;

  @Field()
  body!: string;
}

@InputType()
export class UpdateReviewCommentInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field(() => ID)
  commentId!: string;

  @Field()
  body!: string;
}

@InputType()
export class DeleteReviewCommentInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field(() => ID)
  commentId!: string;
}

@InputType()
export class ReviewThreadInput {
  @Field(() => ID)
  threadId!: string;
}
