import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import type { RequestContext } from '../context.js';
import { Issue } from './issue.entity.js';
import { createIssue, CreateIssueInput, updateIssue, UpdateIssueInput } from './issue.service.js';

@Resolver(() => Issue)
export class IssueResolver {
  @Mutation(() => Issue, { description: 'Needs read access to the repository and the repo scope.' })
  createIssue(@Arg('input', () => CreateIssueInput) input: CreateIssueInput, @Ctx() ctx: RequestContext): Promise<Issue> {
    return createIssue(ctx, input);
  }

  @Mutation(() => Issue, { description: 'Title, body, state and state reason. The author or a writer may change an issue.' })
  updateIssue(@Arg('input', () => UpdateIssueInput) input: UpdateIssueInput, @Ctx() ctx: RequestContext): Promise<Issue> {
    return updateIssue(ctx, input);
  }
}
