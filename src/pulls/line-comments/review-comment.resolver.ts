import { Arg, Args, Ctx, FieldResolver, ID, Info, Mutation, Resolver, Root, UseMiddleware } from 'type-graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { pageOf } from '../../graphql/batch-loader.js';
import type { ResolverContext } from '../../graphql/context.js';
import { ConnectionType, PageArgs, resolvePage } from '../../graphql/pagination.js';
import { CreatesContent } from '../../ratelimit/creates-content.js';
import { Repository } from '../../repositories/repository.entity.js';
import { PullRequestView } from '../pull-request.view.js';
import { Review } from '../review.entity.js';
import {
  CreateReviewCommentInput,
  DeleteReviewCommentInput,
  ReplyToReviewThreadInput,
  ReviewThreadInput,
  UpdateReviewCommentInput,
} from './review-comment.inputs.js';
import { commentPages, threadPages, type CommentParent } from './review-comment.reads.js';
import { ReviewCommentView, ReviewThreadView } from './review-comment.view.js';
import type { ReviewComments } from './review-comments.service.js';

type Context = ResolverContext<{ reviewComments: ReviewComments }>;

const ReviewCommentConnection = ConnectionType(ReviewCommentView, 'ReviewCommentConnection');
const ReviewThreadConnection = ConnectionType(ReviewThreadView, 'ReviewThreadConnection');

/** The comments of `parent` (a pull request, a thread, a review): loaded for every parent of the page at once. */
function commentsOf(ctx: Context, parent: CommentParent, id: string, args: PageArgs, info: GraphQLResolveInfo) {
  return pageOf(ctx, `review-comments:${parent}`, id, resolvePage(args), info, (ids, page) => commentPages(ctx.em, parent, ids, page));
}

@Resolver(() => ReviewCommentView)
export class ReviewCommentResolver {
  @UseMiddleware(CreatesContent)
  @Mutation(() => ReviewCommentView, {
    description:
      'Comments on a line (or a range) of the pull request’s diff, starting a thread; with inReplyTo, replies in that comment’s thread. Needs read access and the repo scope. A line outside the hunks is VALIDATION_FAILED (line_not_in_diff).',
  })
  createReviewComment(@Arg('input', () => CreateReviewCommentInput) input: CreateReviewCommentInput, @Ctx() ctx: Context) {
    return ctx.services.reviewComments.create(ctx.em, ctx.viewer, input);
  }

  @UseMiddleware(CreatesContent)
  @Mutation(() => ReviewCommentView, { description: 'Replies in a thread. Needs read access and the repo scope.' })
  replyToReviewThread(@Arg('input', () => ReplyToReviewThreadInput) input: ReplyToReviewThreadInput, @Ctx() ctx: Context) {
    return ctx.services.reviewComments.reply(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => ReviewCommentView, { description: 'A new body: its author or a writer.' })
  updateReviewComment(@Arg('input', () => UpdateReviewCommentInput) input: UpdateReviewCommentInput, @Ctx() ctx: Context) {
    return ctx.services.reviewComments.update(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => Boolean, { description: 'Its author, a writer or an admin.' })
  deleteReviewComment(@Arg('input', () => DeleteReviewCommentInput) input: DeleteReviewCommentInput, @Ctx() ctx: Context) {
    return ctx.services.reviewComments.delete(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => ReviewThreadView, { description: 'The pull request’s author or a writer.' })
  resolveReviewThread(@Arg('input', () => ReviewThreadInput) input: ReviewThreadInput, @Ctx() ctx: Context) {
    return ctx.services.reviewComments.resolve(ctx.em, ctx.viewer, input.threadId, true);
  }

  @Mutation(() => ReviewThreadView, { description: 'The pull request’s author or a writer.' })
  unresolveReviewThread(@Arg('input', () => ReviewThreadInput) input: ReviewThreadInput, @Ctx() ctx: Context) {
    return ctx.services.reviewComments.resolve(ctx.em, ctx.viewer, input.threadId, false);
  }
}

@Resolver(() => ReviewThreadView)
export class ReviewThreadResolver {
  @FieldResolver(() => ReviewCommentConnection, { description: 'Oldest first: the first one started the thread.' })
  comments(@Root() thread: ReviewThreadView, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context, @Info() info: GraphQLResolveInfo) {
    return commentsOf(ctx, 'thread_id', thread.id, page, info);
  }
}

/** Comments on lines as fields of pull requests and reviews (read permission was checked by the query that returned them). */
@Resolver(() => PullRequestView)
export class PullRequestReviewCommentsResolver {
  @FieldResolver(() => ReviewThreadConnection, { description: 'Threads of comments on lines, oldest first.' })
  reviewThreads(@Root() pr: PullRequestView, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context, @Info() info: GraphQLResolveInfo) {
    return pageOf(ctx, 'review-threads', pr.id, resolvePage(page), info, (ids, resolved) => threadPages(ctx.em, ids, resolved));
  }

  @FieldResolver(() => ReviewCommentConnection, { description: 'Comments on lines, of every thread, oldest first.' })
  reviewComments(@Root() pr: PullRequestView, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context, @Info() info: GraphQLResolveInfo) {
    return commentsOf(ctx, 'pull_request_id', pr.id, page, info);
  }
}

@Resolver(() => Review)
export class ReviewCommentsOfReviewResolver {
  @FieldResolver(() => ReviewCommentConnection, { description: 'The comments on lines submitted with the review, oldest first.' })
  comments(@Root() review: Review, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: Context, @Info() info: GraphQLResolveInfo) {
    return commentsOf(ctx, 'review_id', review.id, page, info);
  }
}

@Resolver(() => Repository)
export class RepositoryReviewCommentResolver {
  @FieldResolver(() => ReviewCommentView, {
    nullable: true,
    description: 'A comment on lines; NOT_FOUND when the repository has none by that id.',
  })
  reviewComment(@Root() repo: Repository, @Arg('id', () => ID) id: string, @Ctx() ctx: Context) {
    return ctx.services.reviewComments.read(ctx.em, repo, id);
  }
}
