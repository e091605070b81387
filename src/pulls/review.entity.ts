import { OptionalProps } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Extensions, Field, ID, ObjectType, registerEnumType } from 'type-graphql';
import { TEXT_FIELD_COST } from '../graphql/limits.js';
import { Actor, User } from '../auth/user.entity.js';
import { newId } from '../ids.js';
import { PullRequest } from './pull-request.entity.js';

/** What a reviewer asks for when submitting (GitHub's review events). */
export enum ReviewEvent {
  APPROVE = 'APPROVE',
  REQUEST_CHANGES = 'REQUEST_CHANGES',
  COMMENT = 'COMMENT',
}
registerEnumType(ReviewEvent, { name: 'ReviewEvent' });

export enum ReviewState {
  APPROVED = 'approved',
  CHANGES_REQUESTED = 'changes_requested',
  COMMENTED = 'commented',
  /** An approval a push to the head made stale, where the branch rule dismisses stale reviews. */
  DISMISSED = 'dismissed',
}
registerEnumType(ReviewState, { name: 'ReviewState' });

export const STATE_OF_EVENT: Record<ReviewEvent, ReviewState> = {
  [ReviewEvent.APPROVE]: ReviewState.APPROVED,
  [ReviewEvent.REQUEST_CHANGES]: ReviewState.CHANGES_REQUESTED,
  [ReviewEvent.COMMENT]: ReviewState.COMMENTED,
};

/** A review of a pull request, pinned to the head commit it was submitted on. */
@ObjectType('Review')
@Entity({ tableName: 'pull_request_reviews' })
@Index({ properties: ['pullRequest', 'submittedAt', 'id'] })
export class Review {
  [OptionalProps]?: 'id' | 'body' | 'submittedAt';

  @Field(() => ID)
  @PrimaryKey({ type: 'text' })
  id: string = newId('rev');

  @ManyToOne(() => PullRequest, { deleteRule: 'cascade' })
  pullRequest!: PullRequest;

  @Field(() => ReviewState)
  @Property({ type: 'text' })
  state!: ReviewState;

  @Extensions({ cost: TEXT_FIELD_COST })
  @Field(() => String, { nullable: true })
  @Property({ type: 'text', nullable: true })
  body: string | null = null;

  @Field(() => Actor)
  @ManyToOne(() => User)
  user!: User;

  @Field({ description: 'The head commit the review was submitted on.' })
  @Property({ type: 'text' })
  commitId!: string;

  @Field()
  @Property({ type: 'datetime' })
  submittedAt: Date = new Date();
}
