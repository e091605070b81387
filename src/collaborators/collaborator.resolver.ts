import { Arg, Ctx, FieldResolver, ID, Mutation, Resolver, Root } from 'type-graphql';
import { Permission } from '../auth/permissions.js';
import type { ResolverContext } from '../graphql/context.js';
import { Repository } from '../repositories/repository.entity.js';
import { Collaborator } from './collaborator.entity.js';
import type { Collaborators } from './collaborator.service.js';

type Context = ResolverContext<{ collaborators: Collaborators }>;

/** Collaborators as a field of a repository, and the mutations that manage them. */
@Resolver(() => Repository)
export class CollaboratorResolver {
  @FieldResolver(() => [Collaborator], { description: 'Needs write permission.' })
  collaborators(@Root() repo: Repository, @Ctx() ctx: Context): Promise<Collaborator[]> {
    return ctx.services.collaborators.list(ctx.em, ctx.viewer, repo);
  }

  @Mutation(() => Collaborator, { description: 'Adds a collaborator or changes their permission. Needs admin permission.' })
  setCollaborator(
    @Arg('repositoryId', () => ID) repositoryId: string,
    @Arg('login', () => String) login: string,
    @Arg('permission', () => Permission) permission: Permission,
    @Ctx() ctx: Context,
  ): Promise<Collaborator> {
    return ctx.services.collaborators.set(ctx.em, ctx.viewer, repositoryId, login, permission);
  }

  @Mutation(() => Boolean, { description: 'Needs admin permission.' })
  removeCollaborator(
    @Arg('repositoryId', () => ID) repositoryId: string,
    @Arg('login', () => String) login: string,
    @Ctx() ctx: Context,
  ): Promise<boolean> {
    return ctx.services.collaborators.remove(ctx.em, ctx.viewer, repositoryId, login);
  }
}
