import { OptionalProps } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/decorators/legacy';
import { Extensions, Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { TEXT_FIELD_COST } from '../graphql/limits.js';
import { Actor, User } from '../auth/user.entity.js';
import { newId } from '../ids.js';
import { Repository } from '../repositories/repository.entity.js';

export enum IssueState {
  OPEN = 'open',
  CLOSED = 'closed',
}
registerEnumType(IssueState, { name: 'IssueState' });

export enum IssueStateReason {
  COMPLETED = 'completed',
  NOT_PLANNED = 'not_planned',
  REOPENED = 'reopened',
}
registerEnumType(IssueStateReason, { name: 'IssueStateReason' });

@ObjectType('Issue')
@Entity({ tableName: 'issues' })
@Unique({ properties: ['repository', 'number'] })
@Index({ properties: ['repository', 'state', 'createdAt', 'id'] })
@Index({ properties: ['repository', 'createdAt', 'id'] })
export class Issue {
  [OptionalProps]?:
    'id' | 'body' | 'state' | 'stateReason' | 'comments' | 'createdAt' | 'updatedAt' | 'closedAt' | 'repositoryId' | 'commentCount';

  @Field(() => ID)
  @PrimaryKey({ type: 'text' })
  id: string = newId('iss');

  @ManyToOne(() => Repository, { deleteRule: 'cascade' })
  repository!: Repository;

  @Field(() => Int, { description: 'Per repository, from the sequence shared with pull requests.' })
  @Property({ type: 'integer' })
  number!: number;

  @Field()
  @Property({ type: 'text' })
  title!: string;

  @Extensions({ cost: TEXT_FIELD_COST })
  @Field(() => String, { nullable: true })
  @Property({ type: 'text', nullable: true })
  body: string | null = null;

  @Field(() => IssueState)
  @Property({ type: 'text' })
  state: IssueState = IssueState.OPEN;

  @Field(() => IssueStateReason, { nullable: true })
  @Property({ type: 'text', nullable: true })
  stateReason: IssueStateReason | null = null;

  @Field(() => Actor)
  @ManyToOne(() => User)
  user!: User;

  /** Its comments, counted with each one added or deleted (GraphQL: `commentCount`; `comments` is the list). */
  @Property({ type: 'integer' })
  comments: number = 0;

  @Field(() => Int, { description: 'Number of comments.' })
  get commentCount(): number {
    return this.comments;
  }

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
}
