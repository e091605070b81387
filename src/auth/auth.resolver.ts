import { Arg, Args, Ctx, ID, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import { CreatesContent } from '../ratelimit/creates-content.js';
import type { ResolverContext } from '../graphql/context.js';
import { tokenEnded } from '../graphql/ended-tokens.js';
import { ConnectionType, PageArgs, resolvePage } from '../graphql/pagination.js';
import { AccessToken } from './access-token.entity.js';
import { CreateAccessTokenInput, CreatedAccessToken, CreateUserInput, UpdateViewerInput } from './auth.inputs.js';
import { User } from './user.entity.js';
import type { Accounts } from './accounts.service.js';
import { MAX_ACTIVE_TOKENS } from './token-limits.js';

type Context = ResolverContext<{ accounts: Accounts }>;

const UserConnection = ConnectionType(User, 'UserConnection');
const AccessTokenConnection = ConnectionType(AccessToken, 'AccessTokenConnection');

@Resolver()
export class AuthResolver {
  @Query(() => User, { description: 'The user whose token made this request.' })
  viewer(@Ctx() ctx: Context): Promise<User> {
    return ctx.services.accounts.viewer(ctx.em, ctx.viewer);
  }

  @Query(() => [AccessToken], { description: "The caller's own tokens, newest first (secrets are never shown again)." })
  accessTokens(@Ctx() ctx: Context): Promise<AccessToken[]> {
    return ctx.services.accounts.tokens(ctx.em, ctx.viewer);
  }

  @Query(() => UserConnection, { description: 'Every account, oldest first. Needs a site admin token with the admin scope.' })
  users(@Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context) {
    return ctx.services.accounts.users(ctx.em, ctx.viewer, resolvePage(page));
  }

  @Query(() => AccessTokenConnection, {
    description: "A user's tokens, revoked and expired ones included, newest first (secrets are never shown again).",
  })
  userAccessTokens(
    @Args(() => PageArgs) page: PageArgs,
    @Arg('login', () => String, {
      nullable: true,
      description: "Whose tokens; defaults to the caller. Another user's needs the admin scope.",
    })
    login: string | null,
    @Ctx() ctx: Context,
  ) {
    return ctx.services.accounts.tokensOf(ctx.em, ctx.viewer, login, resolvePage(page));
  }

  @Mutation(() => User, { description: 'Needs a site admin token with the admin scope.' })
  createUser(@Arg('input', () => CreateUserInput) input: CreateUserInput, @Ctx() ctx: Context): Promise<User> {
    return ctx.services.accounts.createUser(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => User, {
    description: 'Changes your own account: commitEmail, the public email of the commits Cairn makes for you. Needs the repo scope.',
  })
  updateViewer(@Arg('input', () => UpdateViewerInput) input: UpdateViewerInput, @Ctx() ctx: Context): Promise<User> {
    return ctx.services.accounts.updateViewer(ctx.em, ctx.viewer, input);
  }

  @UseMiddleware(CreatesContent)
  @Mutation(() => CreatedAccessToken, {
    description:
      `A token for yourself (a site admin: for anyone). A user holds at most ${MAX_ACTIVE_TOKENS} active tokens (neither revoked nor expired); ` +
      "a token never outlives the token that mints it (see expiresAt). Counts against the user's creation budget.",
  })
  createAccessToken(
    @Arg('input', () => CreateAccessTokenInput) input: CreateAccessTokenInput,
    @Ctx() ctx: Context,
  ): Promise<CreatedAccessToken> {
    return ctx.services.accounts.createAccessToken(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => Boolean, { description: 'Revokes one of your tokens (site admins: anyone’s).' })
  async revokeAccessToken(@Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<boolean> {
    const revoked = await ctx.services.accounts.revokeAccessToken(ctx.em, ctx.viewer, id);
    if (id === ctx.viewer.tokenId) tokenEnded(ctx); // the rest of this mutation runs as nobody
    return revoked;
  }
}
