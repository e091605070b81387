import { Ctx, FieldResolver, Resolver, Root } from 'type-graphql';
import { batchLoader } from '../../graphql/batch-loader.js';
import type { ResolverContext } from '../../graphql/context.js';
import { commentsById } from '../comments/comment-reads.js';
import { CommentRecord } from '../comments/comment.types.js';
import { TimelineItem } from './timeline-item.js';

/** The comment a `commented` timeline item shows: the comments of a page of items load in one statement. */
@Resolver(() => TimelineItem)
export class TimelineCommentResolver {
  @FieldResolver(() => CommentRecord, { nullable: true, description: 'The comment, for a `commented` item.' })
  comment(@Root() item: TimelineItem, @Ctx() ctx: ResolverContext<unknown>): Promise<CommentRecord | null> | null {
    if (!item.commentId) return null;
    return batchLoader(ctx, 'comments-by-id', (ids: readonly string[]) => commentsById(ctx.em, ids)).load(item.commentId);
  }
}
