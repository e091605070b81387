import { Field, InputType, ObjectType } from 'type-graphql';
import { SCOPES } from '../principal.js';
import { AccessToken } from './access-token.entity.js';

@InputType()
export class CreateUserInput {
  @Field()
  login!: string;

  @Field()
  email!: string;

  @Field(() => Boolean, { nullable: true, defaultValue: false })
  admin?: boolean | null;
}

@InputType({ description: 'Changes to your own account; a field left out is left as it is.' })
export class UpdateViewerInput {
  @Field(() => String, {
    nullable: true,
    description: 'The public commit email: written into the commits Cairn makes for you instead of your no-reply address. Null clears it.',
  })
  commitEmail?: string | null;
}

@InputType()
export class CreateAccessTokenInput {
  @Field(() => String, { nullable: true, description: "Whose token; defaults to the caller. Another user's needs the admin scope." })
  login?: string | null;

  @Field()
  name!: string;

  @Field(() => [String], { description: `Any of: ${SCOPES.join(', ')}.` })
  scopes!: string[];

  @Field(() => Date, {
    nullable: true,
    description:
      "When the token stops working. Never later than the calling token's own expiry: omitted, a token minted by an expiring token gets that expiry (by one that never expires, none).",
  })
  expiresAt?: Date | null;
}

@ObjectType()
export class CreatedAccessToken {
  @Field({ description: 'The secret. Shown only in this response.' })
  token!: string;

  @Field(() => AccessToken)
  accessToken!: AccessToken;
}
