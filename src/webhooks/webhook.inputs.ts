import { Field, ID, InputType, ObjectType } from 'type-graphql';
import { Webhook } from './webhook.entity.js';

@InputType()
export class CreateWebhookInput {
  @Field(() => ID, { nullable: true, description: 'Omit for an owner-level webhook on all your repositories.' })
  repositoryId?: string | null;

  @Field({ description: 'Absolute http(s) URL without credentials.' })
  url!: string;

  @Field(() => String, { nullable: true, description: 'Signing secret; one is generated (and returned once) when omitted.' })
  secret?: string | null;

  @Field(() => [String], { nullable: true, description: 'Event types, or ["*"]. Default ["push"].' })
  events?: string[] | null;

  @Field(() => Boolean, { nullable: true, description: 'Default true.' })
  active?: boolean | null;
}

@InputType()
export class UpdateWebhookInput {
  @Field(() => String, { nullable: true })
  url?: string | null;

  @Field(() => String, { nullable: true, description: 'A new secret (rotation).' })
  secret?: string | null;

  @Field(() => [String], { nullable: true })
  events?: string[] | null;

  @Field(() => Boolean, {
    nullable: true,
    description: 'true re-activates and clears the failure streak; false cancels pending deliveries.',
  })
  active?: boolean | null;
}

@ObjectType()
export class CreatedWebhook {
  @Field(() => Webhook)
  webhook!: Webhook;

  @Field(() => String, { nullable: true, description: 'The generated secret, shown only here; null when you chose one.' })
  secret!: string | null;
}
