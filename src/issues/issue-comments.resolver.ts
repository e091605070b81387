import { Args, Ctx, FieldResolver, Resolver, Root } from 'type-graphql';
import { commentsOf } from '../conversations/comments/comment-reads.js';
import { CommentConnection } from '../conversations/comments/comment.types.js';
import type { ResolverContext } from '../graphql/context.js';
import { PageArgs, resolvePage } from '../graphql/pagination.js';
import { Issue } from './issue.entity.js';

/** An issue's comments: the same page of every issue of a list is read in one statement; the total is the issue's count. */
@Resolver(() => Issue)
export class IssueCommentsResolver {
  @FieldResolver(() => CommentConnection, { description: 'Its comments, oldest first.' })
  comments(@Root() issue: Issue, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: ResolverContext<unknown>) {
    return commentsOf(ctx, ctx.em, { repositoryId: issue.repository.id, number: issue.number, total: issue.comments }, resolvePage(page));
  }
}
