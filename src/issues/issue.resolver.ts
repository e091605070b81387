import { Arg, Args, Ctx, FieldResolver, Int, Mutation, Resolver, Root, UseMiddleware } from 'type-graphql';
import { ConversationFilterArgs } from '../conversations/conversation-filter.js';
import { openedNow } from '../conversations/new-conversation.js';
import { CreatesContent } from '../ratelimit/creates-content.js';
import type { ResolverContext } from '../graphql/context.js';
import { ConnectionType, PageArgs, resolvePage } from '../graphql/pagination.js';
import { Repository } from '../repositories/repository.entity.js';
import { Issue } from './issue.entity.js';
import { CreateIssueInput, IssueStateFilter, UpdateIssueInput } from './issue.inputs.js';
import type { Issues } from './issue.service.js';

type Context = ResolverContext<{ issues: Issues }>;

const IssueConnection = ConnectionType(Issue, 'IssueConnection');

@Resolver(() => Issue)
export class IssueResolver {
  @UseMiddleware(CreatesContent)
  @Mutation(() => Issue, { description: 'Needs read access to the repository and the repo scope.' })
  async createIssue(@Arg('input', () => CreateIssueInput) input: CreateIssueInput, @Ctx() ctx: Context): Promise<Issue> {
    const issue = await ctx.services.issues.create(ctx.em, ctx.viewer, input);
    openedNow(ctx, ctx.em, issue.repository.id, issue.number);
    return issue;
  }

  @Mutation(() => Issue, { description: 'Title, body, state and state reason. The author or a writer may change an issue.' })
  updateIssue(@Arg('input', () => UpdateIssueInput) input: UpdateIssueInput, @Ctx() ctx: Context): Promise<Issue> {
    return ctx.services.issues.update(ctx.em, ctx.viewer, input);
  }
}

/** Issues as fields of a repository (read permission was checked by the query that returned it). */
@Resolver(() => Repository)
export class RepositoryIssuesResolver {
  @FieldResolver(() => IssueConnection, { description: 'Newest first unless `sort` and `direction` say otherwise.' })
  issues(
    @Root() repo: Repository,
    @Args(() => PageArgs) page: PageArgs,
    @Arg('state', () => IssueStateFilter, { defaultValue: IssueStateFilter.OPEN }) state: IssueStateFilter,
    @Args(() => ConversationFilterArgs) filter: ConversationFilterArgs,
    @Ctx() ctx: Context,
  ) {
    return ctx.services.issues.list(ctx.em, repo, state, filter, resolvePage(page));
  }

  @FieldResolver(() => Issue, { nullable: true, description: 'NOT_FOUND when there is no such issue.' })
  issue(@Root() repo: Repository, @Arg('number', () => Int) number: number, @Ctx() ctx: Context): Promise<Issue> {
    return ctx.services.issues.find(ctx.em, repo, number);
  }
}
