import { Ctx, FieldResolver, Resolver, Root } from 'type-graphql';
import type { ResolverContext } from '../graphql/context.js';
import type { Accounts } from './accounts.service.js';
import { User } from './user.entity.js';

type Context = ResolverContext<{ accounts: Accounts }>;

/** The fields of `User` that are not columns. `User` is only ever shown to itself and site admins, as its email is. */
@Resolver(() => User)
export class UserFieldsResolver {
  @FieldResolver(() => String, {
    description: 'The no-reply address written into the commits Cairn makes for this user while commitEmail is null.',
  })
  noreplyEmail(@Root() user: User, @Ctx() ctx: Context): string {
    return ctx.services.accounts.noreplyEmail(user);
  }
}
