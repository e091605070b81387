import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../context.js';
import { AccessToken } from './access-token.entity.js';
import { User } from './user.entity.js';
import {
  createAccessToken,
  CreateAccessTokenInput,
  CreatedAccessToken,
  createUser,
  CreateUserInput,
  revokeAccessToken,
} from './users.service.js';

@Resolver()
export class AuthResolver {
  @Query(() => User, { description: 'The user whose token made this request.' })
  viewer(@Ctx() ctx: RequestContext): Promise<User> {
    return ctx.em.findOneOrFail(User, { id: ctx.viewer.userId });
  }

  @Query(() => [AccessToken], { description: "The caller's own tokens, newest first (secrets are never shown again)." })
  accessTokens(@Ctx() ctx: RequestContext): Promise<AccessToken[]> {
    return ctx.em.find(AccessToken, { user: ctx.viewer.userId }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  }

  @Mutation(() => User, { description: 'Needs a site admin token with the admin scope.' })
  createUser(@Arg('input', () => CreateUserInput) input: CreateUserInput, @Ctx() ctx: RequestContext): Promise<User> {
    return createUser(ctx, input);
  }

  @Mutation(() => CreatedAccessToken)
  createAccessToken(
    @Arg('input', () => CreateAccessTokenInput) input: CreateAccessTokenInput,
    @Ctx() ctx: RequestContext,
  ): Promise<CreatedAccessToken> {
    return createAccessToken(ctx, input);
  }

  @Mutation(() => Boolean, { description: 'Revokes one of your tokens (site admins: anyone’s).' })
  revokeAccessToken(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<boolean> {
    return revokeAccessToken(ctx, id);
  }
}
