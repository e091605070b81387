import { Arg, Args, Ctx, Extensions, FieldResolver, Resolver, Root } from 'type-graphql';
import type { ResolverContext } from '../graphql/context.js';
import { PageArgs, resolvePage } from '../graphql/pagination.js';
import { Repository } from '../repositories/repository.entity.js';
import { BLOB_FIELD_COST, GIT_FIELD_COST } from '../graphql/limits.js';
import { listBranches, listCommits, listTags, listTree, readBlob } from './browse.js';
import { limited } from './concurrency.js';
import { Blob, BranchConnection, CommitConnection, TagConnection, TreeEntryConnection } from './git.types.js';
import type { GitStorage } from './storage.js';

type Context = ResolverContext<{ git: GitStorage }>;

/**
 * Browsing a repository's git data (read-only), for frontends. These are
 * fields of `Repository`, so the repository was already found and its read
 * permission checked by the query that returned it. Each runs git, so each
 * costs GIT_FIELD_COST in the query cost limit (a blob, whose text may be a
 * MiB, BLOB_FIELD_COST), lists are paged, and each waits for a slot.
 */
@Resolver(() => Repository)
export class GitResolver {
  @Extensions({ cost: GIT_FIELD_COST })
  @FieldResolver(() => BranchConnection, { description: 'Branches in name order.' })
  branches(@Root() repo: Repository, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context) {
    return limited(ctx.viewer.userId, async () =>
      listBranches(await ctx.services.git.servedPath(repo.id), repo.defaultBranch, resolvePage(page)),
    );
  }

  @Extensions({ cost: GIT_FIELD_COST })
  @FieldResolver(() => TagConnection, { description: 'Tags, newest first.' })
  tags(@Root() repo: Repository, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context) {
    return limited(ctx.viewer.userId, async () => listTags(await ctx.services.git.servedPath(repo.id), resolvePage(page)));
  }

  @Extensions({ cost: GIT_FIELD_COST })
  @FieldResolver(() => CommitConnection, {
    description: 'History reachable from `ref` (a branch, tag or commit sha; default: the default branch), newest first.',
  })
  async commits(
    @Root() repo: Repository,
    @Arg('ref', () => String, { nullable: true }) ref: string | null,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: Context,
  ) {
    const resolved = resolvePage(page);
    if (repo.empty && ref == null) return { nodes: [], totalCount: 0, limit: resolved.limit, offset: resolved.offset, hasMore: false };
    return limited(ctx.viewer.userId, async () =>
      listCommits(await ctx.services.git.servedPath(repo.id), ref ?? repo.defaultBranch, resolved),
    );
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
    const resolved = resolvePage(page);
    return limited(ctx.viewer.userId, async () =>
      listTree(await ctx.services.git.servedPath(repo.id), ref ?? repo.defaultBranch, path, resolved),
    );
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
    return limited(ctx.viewer.userId, async () => readBlob(await ctx.services.git.servedPath(repo.id), ref ?? repo.defaultBranch, path));
  }
}
