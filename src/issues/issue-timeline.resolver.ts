import { Args, Ctx, FieldResolver, Resolver, Root } from 'type-graphql';
import { timelineOf, TimelineItemConnection } from '../conversations/timeline/timeline.js';
import type { ResolverContext } from '../graphql/context.js';
import { PageArgs } from '../graphql/pagination.js';
import { Issue } from './issue.entity.js';

@Resolver(() => Issue)
export class IssueTimelineResolver {
  @FieldResolver(() => TimelineItemConnection, {
    description: 'What happened to the issue, oldest first: comments, label and assignee changes, closes and reopens.',
  })
  timeline(@Root() issue: Issue, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: ResolverContext<unknown>) {
    return timelineOf(ctx, issue.id, page);
  }
}
