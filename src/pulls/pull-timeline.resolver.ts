import { Args, Ctx, FieldResolver, Info, Resolver, Root } from 'type-graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { TimelineItem } from '../conversations/timeline/timeline-item.js';
import { timelineOf, TimelineItemConnection } from '../conversations/timeline/timeline.js';
import { batchLoader } from '../graphql/batch-loader.js';
import type { ResolverContext } from '../graphql/context.js';
import type { PullRequests } from './pull-request.service.js';
import { PageArgs } from '../graphql/pagination.js';
import { PullRequestView } from './pull-request.view.js';
import { Review } from './review.entity.js';

@Resolver(() => PullRequestView)
export class PullRequestTimelineResolver {
  @FieldResolver(() => TimelineItemConnection, {
    description:
      'What happened to the pull request, oldest first: comments, reviews, commits pushed, title, label, assignee and review request changes, closes, reopens and the merge.',
  })
  timeline(
    @Root() pr: PullRequestView,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: ResolverContext<unknown>,
    @Info() info: GraphQLResolveInfo,
  ) {
    return timelineOf(ctx, pr.id, page, info);
  }
}

/** The review a `reviewed` timeline item shows: the reviews of a page of items load in one statement. */
@Resolver(() => TimelineItem)
export class TimelineReviewResolver {
  @FieldResolver(() => Review, { nullable: true, description: 'The review, for a `reviewed` item.' })
  review(@Root() item: TimelineItem, @Ctx() ctx: ResolverContext<{ pulls: PullRequests }>): Promise<Review | null> | null {
    if (!item.reviewId) return null;
    return batchLoader(ctx, 'reviews-by-id', (ids: readonly string[]) => ctx.services.pulls.reviewsById(ctx.em, ids)).load(item.reviewId);
  }
}
