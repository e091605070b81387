import { Args, Ctx, FieldResolver, Resolver, Root } from 'type-graphql';
import { commentsOf } from '../conversations/comments/comment-reads.js';
import { CommentConnection } from '../conversations/comments/comment.types.js';
import type { ResolverContext } from '../graphql/context.js';
import { PageArgs, resolvePage } from '../graphql/pagination.js';
import { PullRequestView } from './pull-request.view.js';

/** A pull request's comments (a pull request is an issue too): as an issue's, batched over a list, the total its count. */
@Resolver(() => PullRequestView)
export class PullRequestCommentsResolver {
  @FieldResolver(() => CommentConnection, { description: 'Its comments, oldest first (the conversation, not the reviews).' })
  comments(@Root() pr: PullRequestView, @Args(() => PageArgs) page: PageArgs, @Ctx() ctx: ResolverContext<unknown>) {
    return commentsOf(ctx, ctx.em, { repositoryId: pr.repositoryId, number: pr.number, total: pr.commentCount }, resolvePage(page));
  }
}
