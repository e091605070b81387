import { Field, ID, InputType, Int } from 'type-graphql';

@InputType()
export class AssigneesInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field(() => Int, { description: 'The issue or pull request.' })
  number!: number;

  @Field(() => [String], { description: 'Logins.' })
  assignees!: string[];
}
