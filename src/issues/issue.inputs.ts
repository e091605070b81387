import { Field, ID, InputType, Int, registerEnumType } from 'type-graphql';
import { IssueState, IssueStateReason } from './issue.entity.js';

export enum IssueStateFilter {
  OPEN = 'open',
  CLOSED = 'closed',
  ALL = 'all',
}
registerEnumType(IssueStateFilter, { name: 'IssueStateFilter' });

@InputType()
export class CreateIssueInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field()
  title!: string;

  @Field(() => String, { nullable: true })
  body?: string | null;
}

@InputType()
export class UpdateIssueInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field(() => Int)
  number!: number;

  @Field(() => String, { nullable: true })
  title?: string | null;

  @Field(() => String, { nullable: true, description: 'null clears it.' })
  body?: string | null;

  @Field(() => IssueState, { nullable: true })
  state?: IssueState | null;

  @Field(() => IssueStateReason, { nullable: true })
  stateReason?: IssueStateReason | null;
}
