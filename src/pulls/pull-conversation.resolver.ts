import { Arg, Ctx, Extensions, FieldResolver, Mutation, Resolver, Root } from 'type-graphql';
import { SHORT_LIST_SIZE } from '../graphql/limits.js';
import { Actor } from '../auth/user.entity.js';
import { assigneesOfConversation } from '../conversations/assignees/assignee.reads.js';
import { Label } from '../conversations/labels/label.entity.js';
import { labelsOfConversation } from '../conversations/labels/label.reads.js';
import type { ActorRef } from '../events/payloads.js';
import type { ResolverContext } from '../graphql/context.js';
import type { PullRequests } from './pull-request.service.js';
import { PullRequestView } from './pull-request.view.js';
import { ReviewRequestsInput } from './review-request.inputs.js';
import { requestedReviewersOfListed } from './review-request.reads.js';

type Context = ResolverContext<{ pulls: PullRequests }>;

/**
 * A pull request's labels, assignees and requested reviewers, and the review requests' mutations:
 * the nested lists of a whole page of pull requests load in one statement each.
 */
@Resolver(() => PullRequestView)
export class PullConversationResolver {
  @Extensions({ listSize: SHORT_LIST_SIZE })
  @FieldResolver(() => [Label], { description: 'By name.' })
  labels(@Root() pr: PullRequestView, @Ctx() ctx: Context): Promise<Label[]> {
    return labelsOfConversation(ctx, ctx.em, pr.repositoryId, pr.number);
  }

  @Extensions({ listSize: SHORT_LIST_SIZE })
  @FieldResolver(() => [Actor], { description: 'By login.' })
  assignees(@Root() pr: PullRequestView, @Ctx() ctx: Context): Promise<ActorRef[]> {
    return assigneesOfConversation(ctx, ctx.em, pr.repositoryId, pr.number);
  }

  @Extensions({ listSize: SHORT_LIST_SIZE })
  @FieldResolver(() => [Actor], { description: 'Users whose review is requested and who have not reviewed since, by login.' })
  requestedReviewers(@Root() pr: PullRequestView, @Ctx() ctx: Context): Promise<ActorRef[]> {
    return requestedReviewersOfListed(ctx, ctx.em, pr.id);
  }

  @Mutation(() => PullRequestView, {
    description: 'Requests reviews (each reviewer able to read the repository, not the author). Needs write. Records `review_requested`.',
  })
  requestReviewers(@Arg('input', () => ReviewRequestsInput) input: ReviewRequestsInput, @Ctx() ctx: Context): Promise<PullRequestView> {
    return ctx.services.pulls.requestReviewers(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => PullRequestView, { description: 'Removes review requests. Needs write. Records `review_request_removed`.' })
  removeReviewRequests(@Arg('input', () => ReviewRequestsInput) input: ReviewRequestsInput, @Ctx() ctx: Context): Promise<PullRequestView> {
    return ctx.services.pulls.removeReviewRequests(ctx.em, ctx.viewer, input);
  }
}
