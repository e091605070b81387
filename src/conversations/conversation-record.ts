import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Actor } from '../auth/user.entity.js';
import type { ActorRef } from '../events/payloads.js';

export enum ConversationKind {
  ISSUE = 'issue',
  PULL_REQUEST = 'pull_request',
}
registerEnumType(ConversationKind, { name: 'ConversationKind' });

/**
 * An issue or a pull request as one record (what GitHub's issue endpoints answer for either): what
 * a change made through the number answers with, whichever it is. Its labels and assignees are
 * fields of their own (label.resolver.ts, assignee.resolver.ts).
 */
@ObjectType('Conversation', { description: 'An issue or a pull request, as the issue endpoints answer for either.' })
export class ConversationRecord {
  @Field(() => ID)
  id!: string;

  @Field(() => Int)
  number!: number;

  @Field(() => ConversationKind)
  kind!: ConversationKind;

  @Field()
  title!: string;

  @Field(() => String, { nullable: true })
  body!: string | null;

  @Field({ description: 'open or closed; merged for a merged pull request.' })
  state!: string;

  @Field(() => Actor)
  user!: ActorRef;

  @Field()
  createdAt!: Date;

  @Field()
  updatedAt!: Date;

  @Field(() => Date, { nullable: true })
  closedAt!: Date | null;

  @Field(() => ID)
  repositoryId!: string;
}
