import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Actor } from '../auth/user.entity.js';
import type { ActorRef } from '../events/payloads.js';

export enum ConversationKind {
  ISSUE = 'issue',
  PULL_REQUEST = 'pull_request',
}
registerEnumType(ConversationKind, { name: 'ConversationKind' });

/** What marks the issue record of a pull request (as GitHub's issue endpoints answer one). */
@ObjectType('ConversationPullRequest', { description: 'Present when the issue record is that of a pull request.' })
export class ConversationPullRequest {
  @Field(() => Int)
  number!: number;
}

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

  @Field(() => ConversationKind, { description: 'Which it is (`pull_request` also says so).' })
  kind!: ConversationKind;

  @Field()
  title!: string;

  @Field(() => String, { nullable: true })
  body!: string | null;

  @Field({ description: 'open or closed (a merged pull request is closed).' })
  state!: 'open' | 'closed';

  @Field(() => String, {
    nullable: true,
    description: 'Why an issue is closed (completed, not_planned) or reopened; null for a pull request.',
  })
  stateReason!: string | null;

  @Field(() => Int, { description: 'How many comments it has.' })
  comments!: number;

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

  @Field(() => ConversationPullRequest, { nullable: true, description: 'Only for a pull request: its number.' })
  pullRequest!: ConversationPullRequest | null;
}
