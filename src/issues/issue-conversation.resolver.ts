import { Ctx, Extensions, FieldResolver, Resolver, Root } from 'type-graphql';
import { SHORT_LIST_SIZE } from '../graphql/limits.js';
import { Actor } from '../auth/user.entity.js';
import { assigneesOfConversation } from '../conversations/assignees/assignee.reads.js';
import { Label } from '../conversations/labels/label.entity.js';
import { labelsOfConversation } from '../conversations/labels/label.reads.js';
import type { ActorRef } from '../events/payloads.js';
import type { ResolverContext } from '../graphql/context.js';
import { Issue } from './issue.entity.js';

/** An issue's labels and assignees: those of a whole page of issues load in one statement each. */
@Resolver(() => Issue)
export class IssueConversationResolver {
  @Extensions({ listSize: SHORT_LIST_SIZE })
  @FieldResolver(() => [Label], { description: 'By name.' })
  labels(@Root() issue: Issue, @Ctx() ctx: ResolverContext<unknown>): Promise<Label[]> {
    return labelsOfConversation(ctx, ctx.em, issue.repository.id, issue.number);
  }

  @Extensions({ listSize: SHORT_LIST_SIZE })
  @FieldResolver(() => [Actor], { description: 'By login.' })
  assignees(@Root() issue: Issue, @Ctx() ctx: ResolverContext<unknown>): Promise<ActorRef[]> {
    return assigneesOfConversation(ctx, ctx.em, issue.repository.id, issue.number);
  }
}
