import { Field, InputType, registerEnumType } from 'type-graphql';
import { ItemEditInput, NewItemInput } from '../repositories/repository-item.inputs.js';
import { IssueState, IssueStateReason } from './issue.entity.js';

export enum IssueStateFilter {
  OPEN = 'open',
  CLOSED = 'closed',
  ALL = 'all',
}
registerEnumType(IssueStateFilter, { name: 'IssueStateFilter' });

@InputType()
export class CreateIssueInput extends NewItemInput {}

@InputType()
export class UpdateIssueInput extends ItemEditInput {
  @Field(() => IssueState, { nullable: true })
  state?: IssueState | null;

  @Field(() => IssueStateReason, { nullable: true })
  stateReason?: IssueStateReason | null;
}
