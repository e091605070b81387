import { Arg, Args, Ctx, Extensions, FieldResolver, Resolver, Root } from 'type-graphql';
import type { ResolverContext } from '../graphql/context.js';
import { PageArgs } from '../graphql/pagination.js';
import { Repository } from '../repositories/repository.entity.js';
import { BLOB_FIELD_COST, GIT_FIELD_COST } from '../graphql/limits.js';
import type { RepositoryBrowser } from './browse.service.js';
import { Blob, BranchConnection, CommitConnection, TagConnection, TreeEntryConnection } from './git.types.js';

type Context = ResolverContext<{ browse: RepositoryBrowser }>;

/**
 * Browsing a repository's git data (read-only), for frontends: fields of `Repository`, so the
 * repository was already found and its read permission checked by the query that returned it. The
 * use cases are RepositoryBrowser's (browse.service.ts). Each runs git, so each costs
 * GIT_FIELD_COST in the query cost limit (a blob, whose text may be a MiB, BLOB_FIELD_COST).
 */
@Resolver(() => Repository)
export class GitResolver {
  @Extensions({ cost: GIT_FIELD_COST })
  @FieldResolver(() => BranchConnection, { description: 'Branches in name order.' })
  branches(@Root() repo: Repository, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context) {
    return ctx.services.browse.branches(ctx.viewer, repo, page);
  }

  @Extensions({ cost: GIT_FIELD_COST })
  @FieldResolver(() => TagConnection, { description: 'Tags, newest first.' })
  tags(@Root() repo: Repository, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context) {
    return ctx.services.browse.tags(ctx.viewer, repo, page);
  }

  @Extensions({ cost: GIT_FIELD_COST })
  @FieldResolver(() => CommitConnection, {
    description: 'History reachable from `ref` (a branch, tag or commit sha; default: the default branch), newest first.',
  })
  commits(
    @Root() repo: Repository,
    @Arg('ref', () => String, { nullable: true }) ref: string | null,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: Context,
  ) {
    return ctx.services.browse.commits(ctx.viewer, repo, ref, page);
  }

  @Extensions({ cost: GIT_FIELD_COST })
  @FieldResolver(() => TreeEntryConnection, {
    description:
      'A page of the directory at `path` (default: the root) at `ref` (default: the default branch). NOT_FOUND when it does not exist.',
  })
  tree(
    @Root() repo: Repository,
    @Arg('ref', () => String, { nullable: true }) ref: string | null,
    @Arg('path', () => String, { defaultValue: '' }) path: string,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: Context,
  ): Promise<TreeEntryConnection> {
    return ctx.services.browse.tree(ctx.viewer, repo, ref, path, page);
  }

  @Extensions({ cost: BLOB_FIELD_COST })
  @FieldResolver(() => Blob, {
    nullable: true,
    description: 'The file at `path` and `ref` (default: the default branch). NOT_FOUND when it does not exist or is not a file.',
  })
  blob(
    @Root() repo: Repository,
    @Arg('path', () => String) path: string,
    @Arg('ref', () => String, { nullable: true }) ref: string | null,
    @Ctx() ctx: Context,
  ): Promise<Blob> {
    return ctx.services.browse.blob(ctx.viewer, repo, ref, path);
  }
}
