import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root, UseMiddleware } from 'type-graphql';
import { Commit } from '../git/git.types.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ResolverContext } from '../graphql/context.js';
import { PageArgs, resolvePage } from '../graphql/pagination.js';
import { PullRequestView } from '../pulls/pull-request.view.js';
import { CreatesContent } from '../ratelimit/creates-content.js';
import { Repository } from '../repositories/repository.entity.js';
import { combinedOf, type CombinedState, type LatestStatus } from './combined-status.js';
import type { CommitStatuses } from './commit-status.service.js';
import {
  CombinedStatusRecord,
  CombinedStatusState,
  CommitStatusConnection,
  CommitStatusRecord,
  CreateCommitStatusInput,
  StatusRepository,
} from './commit-status.types.js';
import { combinedStateOf, latestStatusesOfCommit } from './head-states.js';

type Context = ResolverContext<{ statuses: CommitStatuses }>;

@Resolver(() => CommitStatusRecord)
export class CommitStatusResolver {
  @UseMiddleware(CreatesContent)
  @Mutation(() => CommitStatusRecord, {
    description: 'Needs write access to the repository and a token with repo or repo:status. Records a `status` event.',
  })
  createCommitStatus(
    @Arg('input', () => CreateCommitStatusInput) input: CreateCommitStatusInput,
    @Ctx() ctx: Context,
  ): Promise<LatestStatus> {
    return ctx.services.statuses.create(ctx.em, ctx.viewer, input);
  }

  @Query(() => CommitStatusConnection, {
    description:
      'The statuses of the commit `ref` names (a full sha, a branch or a tag), newest first. Readable with repo:read, repo or repo:status; NOT_FOUND for an unknown ref.',
  })
  async commitStatuses(
    @Arg('repositoryId', () => ID) repositoryId: string,
    @Arg('ref', () => String) ref: string,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: Context,
  ) {
    const repo = await ctx.services.statuses.readable(ctx.em, ctx.viewer, repositoryId);
    return ctx.services.statuses.list(ctx.em, repo, ref, resolvePage(page));
  }

  @Query(() => CombinedStatusRecord, {
    description:
      'The latest status of each context of the commit `ref` names (a full sha, a branch or a tag) and their combined state. Readable with repo:read, repo or repo:status.',
  })
  async combinedStatus(
    @Arg('repositoryId', () => ID) repositoryId: string,
    @Arg('ref', () => String) ref: string,
    @Ctx() ctx: Context,
  ): Promise<CombinedStatusRecord> {
    const repo = await ctx.services.statuses.readable(ctx.em, ctx.viewer, repositoryId);
    return ctx.services.statuses.combined(ctx.em, repo, ref);
  }

  @Query(() => String, {
    description:
      'An opaque value naming what `combinedStatus` with the same arguments answers: it changes whenever that answer would show anything else, and never comes back once changed. Poll it to learn, cheaply, when to read the combined status again. Readable as `combinedStatus`.',
  })
  async combinedStatusVersion(
    @Arg('repositoryId', () => ID) repositoryId: string,
    @Arg('ref', () => String) ref: string,
    @Ctx() ctx: Context,
  ): Promise<string> {
    return ctx.services.statuses.combinedVersion(ctx.em, ctx.viewer, repositoryId, ref);
  }
}

/** Statuses as fields of a commit read from a repository (which the query that returned it found readable). */
@Resolver(() => Commit)
export class CommitStatusFieldsResolver {
  @FieldResolver(() => CombinedStatusRecord, {
    nullable: true,
    description: 'The combined status; null for a commit not read from a repository’s branches, tags or history.',
  })
  async status(@Root() commit: Commit, @Ctx() ctx: Context): Promise<CombinedStatusRecord | null> {
    if (!commit.repositoryId) return null;
    const [repository, statuses] = await Promise.all([
      repositoryOf(ctx.em, commit.repositoryId),
      latestStatusesOfCommit(ctx.em, commit.repositoryId, commit.sha),
    ]);
    return { ...combinedOf(commit.sha, statuses), repository: StatusRepository.of(repository) };
  }

  @FieldResolver(() => CommitStatusConnection, {
    nullable: true,
    description: 'Every status of the commit, newest first; null as for `status`.',
  })
  async statuses(@Root() commit: Commit, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context) {
    if (!commit.repositoryId) return null;
    return ctx.services.statuses.list(ctx.em, await repositoryOf(ctx.em, commit.repositoryId), commit.sha, resolvePage(page));
  }
}

/** The repository of a request's commits, loaded once per request (a page of commits shares it). */
const repositories = new WeakMap<EntityManager, Map<string, Promise<Repository>>>();
function repositoryOf(em: EntityManager, id: string): Promise<Repository> {
  let loaded = repositories.get(em);
  if (!loaded) repositories.set(em, (loaded = new Map()));
  let repository = loaded.get(id);
  if (!repository) loaded.set(id, (repository = em.findOneOrFail(Repository, { id }, { populate: ['owner'] })));
  return repository;
}

/** A pull request's combined status: its head's, read for a whole page at once (head-states.ts). */
@Resolver(() => PullRequestView)
export class PullRequestStatusResolver {
  @FieldResolver(() => CombinedStatusState, { description: 'The combined state of the head commit’s statuses; PENDING when it has none.' })
  status(@Root() pull: PullRequestView, @Ctx() ctx: Context): Promise<CombinedState> {
    return combinedStateOf(ctx.em, pull.repositoryId, pull.head.sha);
  }
}
