import { Arg, Ctx, Extensions, FieldResolver, ID, Int, Mutation, Resolver, Root } from 'type-graphql';
import { SHORT_LIST_SIZE } from '../../graphql/limits.js';
import type { ResolverContext } from '../../graphql/context.js';
import { Repository } from '../../repositories/repository.entity.js';
import { ConversationRecord } from '../conversation-record.js';
import { Label } from './label.entity.js';
import { ConversationLabelsInput, CreateLabelInput, UpdateLabelInput } from './label.inputs.js';
import { labelsOfConversation } from './label.reads.js';
import type { Labels } from './label.service.js';

type Context = ResolverContext<{ labels: Labels }>;

@Resolver(() => Label)
export class LabelResolver {
  @Mutation(() => Label, {
    description: 'Needs write. Names are unique without regard to case (VALIDATION_FAILED, already_exists). Records `label` `created`.',
  })
  createLabel(@Arg('input', () => CreateLabelInput) input: CreateLabelInput, @Ctx() ctx: Context): Promise<Label> {
    return ctx.services.labels.create(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => Label, {
    description: 'Renames, recolors or describes a label. Needs write. Records `label` `edited` when anything changed.',
  })
  updateLabel(@Arg('input', () => UpdateLabelInput) input: UpdateLabelInput, @Ctx() ctx: Context): Promise<Label> {
    return ctx.services.labels.update(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => Boolean, { description: 'Deletes a label and takes it off every issue and pull request. Needs write.' })
  deleteLabel(
    @Arg('repositoryId', () => ID) repositoryId: string,
    @Arg('name', () => String) name: string,
    @Ctx() ctx: Context,
  ): Promise<boolean> {
    return ctx.services.labels.delete(ctx.em, ctx.viewer, repositoryId, name);
  }

  @Mutation(() => [Label], {
    description: 'Adds labels to an issue or pull request (those it has already change nothing); answers its labels. Needs write.',
  })
  addLabels(@Arg('input', () => ConversationLabelsInput) input: ConversationLabelsInput, @Ctx() ctx: Context): Promise<Label[]> {
    return ctx.services.labels.add(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => [Label], { description: 'Makes the labels of an issue or pull request exactly these; answers them. Needs write.' })
  setLabels(@Arg('input', () => ConversationLabelsInput) input: ConversationLabelsInput, @Ctx() ctx: Context): Promise<Label[]> {
    return ctx.services.labels.replace(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => Boolean, { description: 'Takes a label off an issue or pull request; NOT_FOUND when it does not have it. Needs write.' })
  removeLabel(
    @Arg('repositoryId', () => ID) repositoryId: string,
    @Arg('number', () => Int) number: number,
    @Arg('name', () => String) name: string,
    @Ctx() ctx: Context,
  ): Promise<boolean> {
    return ctx.services.labels.remove(ctx.em, ctx.viewer, repositoryId, number, name);
  }
}

/** Labels as fields of a repository (read permission was checked by the query that returned it). */
@Resolver(() => Repository)
export class RepositoryLabelsResolver {
  @FieldResolver(() => [Label], { description: 'Every label, by name.' })
  labels(@Root() repo: Repository, @Ctx() ctx: Context): Promise<Label[]> {
    return ctx.services.labels.list(ctx.em, repo);
  }

  @FieldResolver(() => Label, { nullable: true, description: 'A label by name (any case); NOT_FOUND when there is none.' })
  label(@Root() repo: Repository, @Arg('name', () => String) name: string, @Ctx() ctx: Context): Promise<Label> {
    return ctx.services.labels.get(ctx.em, repo, name);
  }

  @FieldResolver(() => [Label], {
    nullable: true,
    description: 'The labels of the issue or pull request `number`, by name; NOT_FOUND when there is none.',
  })
  conversationLabels(@Root() repo: Repository, @Arg('number', () => Int) number: number, @Ctx() ctx: Context): Promise<Label[]> {
    return ctx.services.labels.ofConversation(ctx.em, repo, number);
  }
}

@Resolver(() => ConversationRecord)
export class ConversationLabelsResolver {
  @Extensions({ listSize: SHORT_LIST_SIZE })
  @FieldResolver(() => [Label], { description: 'By name.' })
  labels(@Root() record: ConversationRecord, @Ctx() ctx: Context): Promise<Label[]> {
    return labelsOfConversation(ctx, ctx.em, record.repositoryId, record.number);
  }
}
