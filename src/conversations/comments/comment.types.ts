import { Extensions, Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { TEXT_FIELD_COST } from '../../graphql/limits.js';
import { Actor } from '../../auth/user.entity.js';
import type { ActorRef } from '../../events/payloads.js';
import { ConnectionType } from '../../graphql/pagination.js';

/** A comment as clients see it, a plain object read with SQL. */
@ObjectType('IssueComment', {
  description: 'A comment in the conversation of an issue or a pull request (a pull request is an issue too).',
})
export class CommentRecord {
  @Field(() => ID)
  id!: string;

  @Extensions({ cost: TEXT_FIELD_COST })
  @Field()
  body!: string;

  @Field(() => Actor)
  user!: ActorRef;

  @Field()
  createdAt!: Date;

  @Field()
  updatedAt!: Date;

  @Field(() => Int, { description: 'The number of the issue or pull request it belongs to.' })
  issueNumber!: number;
}

export const CommentConnection = ConnectionType(CommentRecord, 'IssueCommentConnection');

@InputType()
export class AddCommentInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field(() => Int, { description: 'The issue or pull request.' })
  number!: number;

  @Field({ description: 'Not blank; at most 65,536 characters.' })
  body!: string;
}

@InputType()
export class UpdateCommentInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field(() => ID)
  commentId!: string;

  @Field({ description: 'Not blank; at most 65,536 characters.' })
  body!: string;
}

@InputType()
export class DeleteCommentInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field(() => ID)
  commentId!: string;
}
