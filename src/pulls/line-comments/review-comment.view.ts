import { Extensions, Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { TEXT_FIELD_COST } from '../../graphql/limits.js';
import { Actor } from '../../auth/user.entity.js';
import type { ActorRef } from '../../events/payloads.js';
import type { DiffSide } from '../../git/diff-positions.js';

/** The side of a diff a line is on: LEFT, the file before the change; RIGHT, after it (`left`/`right` in REST). */
export enum DiffSideValue {
  LEFT = 'LEFT',
  RIGHT = 'RIGHT',
}
registerEnumType(DiffSideValue, {
  name: 'DiffSide',
  valuesConfig: {
    LEFT: { description: 'The file before the change: removed and context lines.' },
    RIGHT: { description: 'The file after the change: added and context lines.' },
  },
});

/** A comment on lines of a pull request's diff, with its thread's place in the diff. */
@ObjectType('ReviewComment')
export class ReviewCommentView {
  @Field(() => ID)
  id!: string;

  @Field(() => ID, { nullable: true, description: 'The review it was submitted with; null for a comment made on its own.' })
  reviewId!: string | null;

  @Field(() => ID, { description: 'Its thread (resolveReviewThread takes this).' })
  threadId!: string;

  @Field()
  path!: string;

  @Field(() => Int, { nullable: true, description: 'The line on `side` in the diff at `commitId`; null once outdated.' })
  line!: number | null;

  @Field(() => DiffSideValue)
  side!: DiffSide;

  @Field(() => Int, { nullable: true, description: 'The first line of a range; null for one line.' })
  startLine!: number | null;

  @Field(() => DiffSideValue, { nullable: true })
  startSide!: DiffSide | null;

  @Field({ description: 'The commit whose diff `line` refers to (the head the thread was last carried to).' })
  commitId!: string;

  @Field({ description: 'The commit the thread was started on.' })
  originalCommitId!: string;

  @Field(() => Int)
  originalLine!: number;

  @Field(() => Int, { nullable: true })
  originalStartLine!: number | null;

  @Field({ description: 'The hunk header through the commented line (its last 20 lines at most), as the thread started.' })
  diffHunk!: string;

  @Extensions({ cost: TEXT_FIELD_COST })
  @Field()
  body!: string;

  @Field(() => Actor)
  user!: ActorRef;

  @Field(() => ID, { nullable: true, description: "The thread's first comment; null for that comment." })
  inReplyToId!: string | null;

  @Field()
  createdAt!: Date;

  @Field()
  updatedAt!: Date;

  @Field({ description: 'The head moved and the commented hunk changed: `line` is null, `original*` say where it was.' })
  outdated!: boolean;

  pullRequestId!: string;
  repositoryId!: string;
}

/** A thread of comments on the same lines. */
@ObjectType('ReviewThread')
export class ReviewThreadView {
  @Field(() => ID)
  id!: string;

  @Field()
  path!: string;

  @Field(() => Int, { nullable: true, description: 'null once outdated.' })
  line!: number | null;

  @Field(() => DiffSideValue)
  side!: DiffSide;

  @Field(() => Int, { nullable: true })
  startLine!: number | null;

  @Field(() => DiffSideValue, { nullable: true })
  startSide!: DiffSide | null;

  @Field()
  commitId!: string;

  @Field()
  originalCommitId!: string;

  @Field(() => Int)
  originalLine!: number;

  @Field()
  diffHunk!: string;

  @Field()
  isResolved!: boolean;

  @Field()
  isOutdated!: boolean;

  @Field(() => Actor, { nullable: true, description: 'Who resolved it, while it is resolved.' })
  resolvedBy!: ActorRef | null;

  @Field()
  createdAt!: Date;

  pullRequestId!: string;
  repositoryId!: string;
}
