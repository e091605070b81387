import { Args, Ctx, FieldResolver, Info, Resolver, Root } from 'type-graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { timelineOf, TimelineItemConnection } from '../conversations/timeline/timeline.js';
import type { ResolverContext } from '../graphql/context.js';
import { PageArgs } from '../graphql/pagination.js';
import { Issue } from './issue.entity.js';

@Resolver(() => Issue)
export class IssueTimelineResolver {
  @FieldResolver(() => TimelineItemConnection, {
    description: 'What happened to the issue, oldest first: comments, label and assignee changes, closes and reopens.',
  })
  timeline(
    @Root() issue: Issue,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: ResolverContext<unknown>,
    @Info() info: GraphQLResolveInfo,
  ) {
    return timelineOf(ctx, issue.id, page, info);
  }
}
