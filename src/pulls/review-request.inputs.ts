import { Field, InputType } from 'type-graphql';
import { NumberedItemInput } from '../repositories/repository-item.inputs.js';

@InputType()
export class ReviewRequestsInput extends NumberedItemInput {
  @Field(() => [String], { description: 'Logins.' })
  reviewers!: string[];
}
