import { Field, ID, InputType, Int } from 'type-graphql';

/*
 * Issues and pull requests are both items of a repository, numbered from one sequence: they are
 * written with the same fields and named the same way. Base input types: the inputs that extend them
 * get their fields, and as no operation takes a base itself, the schema does not show them.
 */

/** A new issue or pull request: its repository, a title, and a body. */
@InputType()
export abstract class NewItemInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field()
  title!: string;

  @Field(() => String, { nullable: true })
  body?: string | null;
}

/** An issue or pull request, named by its repository and number. */
@InputType()
export abstract class NumberedItemInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field(() => Int)
  number!: number;
}

/** An edit of an issue or pull request: the title and body given change. */
@InputType()
export abstract class ItemEditInput extends NumberedItemInput {
  @Field(() => String, { nullable: true })
  title?: string | null;

  @Field(() => String, { nullable: true, description: 'null clears it.' })
  body?: string | null;
}
