import { Arg, Args, Ctx, Extensions, FieldResolver, Info, Int, Mutation, Resolver, Root, UseMiddleware } from 'type-graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { ConversationFilterArgs } from '../conversations/conversation-filter.js';
import { openedNow } from '../conversations/new-conversation.js';
import { CreatesContent } from '../ratelimit/creates-content.js';
import type { ResolverContext } from '../graphql/context.js';
import { CommitConnection } from '../git/git.types.js';
import { pageOf } from '../graphql/batch-loader.js';
import { GIT_FIELD_COST } from '../graphql/limits.js';
import { ConnectionType, PageArgs, resolvePage } from '../graphql/pagination.js';
import { Repository } from '../repositories/repository.entity.js';
import { PullRequestFile } from './pull-request.git.js';
import {
  AutoMergeInput,
  CreatePullRequestInput,
  MergePullRequestInput,
  MergeResult,
  PullRequestStateFilter,
  SubmitReviewInput,
  UpdatePullRequestInput,
} from './pull-request.inputs.js';
import type { PullRequests } from './pull-request.service.js';
import { PullRequestView } from './pull-request.view.js';
import { Review } from './review.entity.js';

type Context = ResolverContext<{ pulls: PullRequests }>;

const PullRequestConnection = ConnectionType(PullRequestView, 'PullRequestConnection');
const ReviewConnection = ConnectionType(Review, 'ReviewConnection');
const PullRequestFileConnection = ConnectionType(PullRequestFile, 'PullRequestFileConnection');

@Resolver(() => PullRequestView)
export class PullRequestResolver {
  @UseMiddleware(CreatesContent)
  @Mutation(() => PullRequestView, { description: 'Opens a pull request from head into base. Needs read access and the repo scope.' })
  async createPullRequest(
    @Arg('input', () => CreatePullRequestInput) input: CreatePullRequestInput,
    @Ctx() ctx: Context,
  ): Promise<PullRequestView> {
    const pull = await ctx.services.pulls.create(ctx.em, ctx.viewer, input);
    openedNow(ctx, ctx.em, pull.repositoryId, pull.number);
    return pull;
  }

  @Mutation(() => PullRequestView, { description: 'Title, body, base, draft; close or reopen. The author or a writer may change it.' })
  updatePullRequest(
    @Arg('input', () => UpdatePullRequestInput) input: UpdatePullRequestInput,
    @Ctx() ctx: Context,
  ): Promise<PullRequestView> {
    return ctx.services.pulls.update(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => MergeResult, {
    description:
      'Merges into base (merge, squash or rebase). Needs write. NOT_MERGEABLE when closed, merged, a draft or conflicting; CONFLICT when `sha` is not the head or a branch moved meanwhile.',
  })
  mergePullRequest(@Arg('input', () => MergePullRequestInput) input: MergePullRequestInput, @Ctx() ctx: Context): Promise<MergeResult> {
    return ctx.services.pulls.merge(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => PullRequestView, {
    description:
      'Enables auto-merge: the pull request merges itself, as you, once every requirement of its base branch holds. Needs write.',
  })
  enablePullRequestAutoMerge(@Arg('input', () => AutoMergeInput) input: AutoMergeInput, @Ctx() ctx: Context): Promise<PullRequestView> {
    return ctx.services.pulls.enableAutoMerge(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => PullRequestView, { description: 'Disables auto-merge. Needs write.' })
  disablePullRequestAutoMerge(@Arg('input', () => AutoMergeInput) input: AutoMergeInput, @Ctx() ctx: Context): Promise<PullRequestView> {
    return ctx.services.pulls.disableAutoMerge(ctx.em, ctx.viewer, input);
  }

  @UseMiddleware(CreatesContent)
  @Mutation(() => Review, { description: 'Approve, request changes or comment; anyone who can read may review an open pull request.' })
  submitReview(@Arg('input', () => SubmitReviewInput) input: SubmitReviewInput, @Ctx() ctx: Context): Promise<Review> {
    return ctx.services.pulls.review(ctx.em, ctx.viewer, input);
  }

  @Extensions({ cost: GIT_FIELD_COST })
  @FieldResolver(() => CommitConnection, { description: 'Commits on head that base lacks, oldest first.' })
  commits(@Root() pr: PullRequestView, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context) {
    return ctx.services.pulls.commits(ctx.viewer, pr, resolvePage(page));
  }

  @Extensions({ cost: GIT_FIELD_COST })
  @FieldResolver(() => PullRequestFileConnection, { description: 'Files changed against the merge base of base and head, in path order.' })
  files(@Root() pr: PullRequestView, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context) {
    return ctx.services.pulls.files(ctx.viewer, pr, resolvePage(page));
  }

  @FieldResolver(() => ReviewConnection, { description: 'Reviews, newest first. The reviews of a page of pull requests load together.' })
  reviews(@Root() pr: PullRequestView, @Args(() => PageArgs) args: PageArgs, @Ctx() ctx: Context, @Info() info: GraphQLResolveInfo) {
    return pageOf(ctx, 'reviews', pr.id, resolvePage(args), info, (ids, page) => ctx.services.pulls.reviews(ctx.em, ids, page));
  }
}

/** Pull requests as fields of a repository (read permission was checked by the query that returned it). */
@Resolver(() => Repository)
export class RepositoryPullsResolver {
  @FieldResolver(() => PullRequestConnection, { description: 'Newest first unless `sort` and `direction` say otherwise.' })
  pullRequests(
    @Root() repo: Repository,
    @Args(() => PageArgs) page: PageArgs,
    @Arg('state', () => PullRequestStateFilter, { defaultValue: PullRequestStateFilter.OPEN }) state: PullRequestStateFilter,
    @Args(() => ConversationFilterArgs) filter: ConversationFilterArgs,
    @Ctx() ctx: Context,
  ) {
    return ctx.services.pulls.list(ctx.em, repo, state, filter, resolvePage(page));
  }

  @FieldResolver(() => PullRequestView, { nullable: true, description: 'NOT_FOUND when there is no such pull request.' })
  pullRequest(@Root() repo: Repository, @Arg('number', () => Int) number: number, @Ctx() ctx: Context): Promise<PullRequestView> {
    return ctx.services.pulls.read(ctx.em, repo, number);
  }

  @FieldResolver(() => Int, { description: 'Open pull requests.' })
  openPullsCount(@Root() repo: Repository): number {
    return repo.openPullsCount;
  }
}
