import { Field, ID, InputType, Int } from 'type-graphql';

@InputType()
export class CreateLabelInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field({ description: 'Unique in the repository without regard to case; at most 50 characters, no commas.' })
  name!: string;

  @Field({ description: 'Six hex digits (a leading # is dropped).' })
  color!: string;

  @Field(() => String, { nullable: true, description: 'At most 100 characters.' })
  description?: string | null;
}

@InputType()
export class UpdateLabelInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field({ description: 'The label to change, by its current name (any case).' })
  currentName!: string;

  @Field(() => String, { nullable: true, description: 'A new name.' })
  name?: string | null;

  @Field(() => String, { nullable: true, description: "GitHub's name for a new name: the same field (give one, or both the same)." })
  newName?: string | null;

  @Field(() => String, { nullable: true })
  color?: string | null;

  @Field(() => String, { nullable: true, description: 'null clears it.' })
  description?: string | null;
}

@InputType()
export class ConversationLabelsInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field(() => Int, { description: 'The issue or pull request.' })
  number!: number;

  @Field(() => [String], { description: 'Label names (any case); each must be a label of the repository.' })
  labels!: string[];
}
