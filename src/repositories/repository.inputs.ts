import { Field, InputType, ObjectType, ID } from 'type-graphql';

@InputType()
export class CreateRepositoryInput {
  @Field()
  name!: string;

  @Field(() => String, { nullable: true })
  description?: string | null;

  @Field(() => Boolean, { nullable: true, defaultValue: false })
  private?: boolean | null;

  @Field(() => String, { nullable: true, description: 'Default "main".' })
  defaultBranch?: string | null;

  @Field(() => Boolean, { nullable: true, description: 'Make a first commit with a README.', defaultValue: false })
  autoInit?: boolean | null;
}

@InputType()
export class UpdateRepositoryInput {
  @Field(() => String, { nullable: true })
  name?: string | null;

  @Field(() => String, { nullable: true, description: 'null clears it.' })
  description?: string | null;

  @Field(() => Boolean, { nullable: true })
  private?: boolean | null;

  @Field(() => String, { nullable: true })
  defaultBranch?: string | null;
}

@ObjectType()
export class DeleteRepositoryPayload {
  @Field(() => ID)
  id!: string;

  @Field()
  deleted!: boolean;
}
