import { Arg, Ctx, Extensions, FieldResolver, Mutation, Resolver, Root } from 'type-graphql';
import { SHORT_LIST_SIZE } from '../../graphql/limits.js';
import { Actor } from '../../auth/user.entity.js';
import type { ActorRef } from '../../events/payloads.js';
import type { ResolverContext } from '../../graphql/context.js';
import { ConversationRecord } from '../conversation-record.js';
import { AssigneesInput } from './assignee.inputs.js';
import { assigneesOfConversation } from './assignee.reads.js';
import type { Assignees } from './assignee.service.js';

type Context = ResolverContext<{ assignees: Assignees }>;

@Resolver(() => ConversationRecord)
export class AssigneeResolver {
  @Mutation(() => ConversationRecord, {
    description:
      'Assigns users (at most 10 per issue; each must be able to write the repository) to an issue or pull request. Needs write.',
  })
  addAssignees(@Arg('input', () => AssigneesInput) input: AssigneesInput, @Ctx() ctx: Context): Promise<ConversationRecord> {
    return ctx.services.assignees.add(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => ConversationRecord, { description: 'Unassigns users from an issue or pull request. Needs write.' })
  removeAssignees(@Arg('input', () => AssigneesInput) input: AssigneesInput, @Ctx() ctx: Context): Promise<ConversationRecord> {
    return ctx.services.assignees.remove(ctx.em, ctx.viewer, input);
  }

  @Extensions({ listSize: SHORT_LIST_SIZE })
  @FieldResolver(() => [Actor], { description: 'By login.' })
  assignees(@Root() record: ConversationRecord, @Ctx() ctx: Context): Promise<ActorRef[]> {
    return assigneesOfConversation(ctx, ctx.em, record.repositoryId, record.number);
  }
}
