import { Arg, Args, Ctx, FieldResolver, ID, Int, Mutation, Resolver, Root, UseMiddleware } from 'type-graphql';
import type { ResolverContext } from '../../graphql/context.js';
import { PageArgs, resolvePage } from '../../graphql/pagination.js';
import { CreatesContent } from '../../ratelimit/creates-content.js';
import { Repository } from '../../repositories/repository.entity.js';
import type { Comments } from './comments.service.js';
import { AddCommentInput, CommentConnection, CommentRecord, DeleteCommentInput, UpdateCommentInput } from './comment.types.js';

type Context = ResolverContext<{ comments: Comments }>;

@Resolver(() => CommentRecord)
export class CommentResolver {
  @UseMiddleware(CreatesContent)
  @Mutation(() => CommentRecord, {
    description: 'Comments on an issue or a pull request. Needs read access to the repository and the repo scope.',
  })
  addComment(@Arg('input', () => AddCommentInput) input: AddCommentInput, @Ctx() ctx: Context): Promise<CommentRecord> {
    return ctx.services.comments.add(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => CommentRecord, { description: 'Replaces the body. The author or a writer may edit a comment.' })
  updateComment(@Arg('input', () => UpdateCommentInput) input: UpdateCommentInput, @Ctx() ctx: Context): Promise<CommentRecord> {
    return ctx.services.comments.update(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => Boolean, { description: 'The author, a writer or an admin may delete a comment.' })
  deleteComment(@Arg('input', () => DeleteCommentInput) input: DeleteCommentInput, @Ctx() ctx: Context): Promise<boolean> {
    return ctx.services.comments.remove(ctx.em, ctx.viewer, input);
  }
}

/** Comments as fields of a repository (read permission was checked by the query that returned it). */
@Resolver(() => Repository)
export class RepositoryCommentsResolver {
  @FieldResolver(() => CommentConnection, {
    description: 'The comments of the issue or pull request `number`, oldest first; NOT_FOUND when it is neither.',
  })
  issueComments(
    @Root() repo: Repository,
    @Arg('number', () => Int) number: number,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: Context,
  ) {
    return ctx.services.comments.list(ctx.em, repo, number, resolvePage(page));
  }

  @FieldResolver(() => CommentRecord, {
    nullable: true,
    description: 'One comment of an issue or pull request; NOT_FOUND when there is none.',
  })
  issueComment(@Root() repo: Repository, @Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<CommentRecord> {
    return ctx.services.comments.find(ctx.em, repo, id);
  }
}
