import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { ResolverContext } from '../graphql/context.js';
import { ConnectionType, PageArgs, resolvePage } from '../graphql/pagination.js';
import { CreateRepositoryInput, DeleteRepositoryPayload, UpdateRepositoryInput } from './repository.inputs.js';
import { Repository } from './repository.entity.js';
import type { Repositories } from './repository.service.js';

type Context = ResolverContext<{ repositories: Repositories }>;

const RepositoryConnection = ConnectionType(Repository, 'RepositoryConnection');

/** Repositories themselves; other capabilities add their own fields to `Repository` from their folders. */
@Resolver(() => Repository)
export class RepositoryResolver {
  @Query(() => Repository, { nullable: true, description: 'NOT_FOUND when it does not exist or is not visible to you.' })
  repository(@Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<Repository> {
    return ctx.services.repositories.find(ctx.em, ctx.viewer, id);
  }

  @Query(() => Repository, { nullable: true, description: 'Looks a repository up by owner login and name (case-insensitive).' })
  repositoryByName(
    @Arg('owner', () => String) owner: string,
    @Arg('name', () => String) name: string,
    @Ctx() ctx: Context,
  ): Promise<Repository> {
    return ctx.services.repositories.byName(ctx.em, ctx.viewer, owner, name);
  }

  @Query(() => RepositoryConnection, { description: 'Repositories you can read, newest first.' })
  repositories(
    @Args(() => PageArgs) page: PageArgs,
    @Arg('owner', () => String, { nullable: true }) owner: string | null,
    @Ctx() ctx: Context,
  ) {
    return ctx.services.repositories.list(ctx.em, ctx.viewer, resolvePage(page), owner);
  }

  @Mutation(() => Repository)
  createRepository(@Arg('input', () => CreateRepositoryInput) input: CreateRepositoryInput, @Ctx() ctx: Context): Promise<Repository> {
    return ctx.services.repositories.create(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => Repository, { description: 'Needs admin permission on the repository.' })
  updateRepository(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => UpdateRepositoryInput) input: UpdateRepositoryInput,
    @Ctx() ctx: Context,
  ): Promise<Repository> {
    return ctx.services.repositories.update(ctx.em, ctx.viewer, id, input);
  }

  @Mutation(() => DeleteRepositoryPayload, { description: 'Deletes the record and the git data. Needs admin permission.' })
  deleteRepository(@Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<DeleteRepositoryPayload> {
    return ctx.services.repositories.delete(ctx.em, ctx.viewer, id);
  }

  @FieldResolver(() => String, { description: '<owner>/<name>' })
  fullName(@Root() repo: Repository): string {
    return repo.fullName;
  }

  @FieldResolver(() => String)
  cloneUrl(@Root() repo: Repository, @Ctx() ctx: Context): string {
    return ctx.services.repositories.cloneUrl(repo);
  }
}
