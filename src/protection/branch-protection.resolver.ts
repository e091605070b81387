import { Arg, Ctx, FieldResolver, ID, Mutation, Resolver, Root } from 'type-graphql';
import type { ResolverContext } from '../graphql/context.js';
import { Repository } from '../repositories/repository.entity.js';
import { BranchProtection } from './branch-protection.entity.js';
import { SetBranchProtectionInput } from './branch-protection.inputs.js';
import type { BranchProtections } from './branch-protection.service.js';

type Context = ResolverContext<{ protections: BranchProtections }>;

@Resolver(() => BranchProtection)
export class BranchProtectionResolver {
  @Mutation(() => BranchProtection, {
    description: 'Creates or replaces the rule of a branch name or pattern (fields left out take their defaults). Needs admin.',
  })
  setBranchProtection(@Arg('input', () => SetBranchProtectionInput) input: SetBranchProtectionInput, @Ctx() ctx: Context) {
    return ctx.services.protections.set(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => Boolean, { description: 'Removes the rule of a branch name or pattern; NOT_FOUND when there is none. Needs admin.' })
  deleteBranchProtection(@Arg('repositoryId', () => ID) repositoryId: string, @Arg('branch') branch: string, @Ctx() ctx: Context) {
    return ctx.services.protections.remove(ctx.em, ctx.viewer, repositoryId, branch);
  }
}

/** Branch rules as fields of a repository; they need admin on it. */
@Resolver(() => Repository)
export class RepositoryProtectionResolver {
  @FieldResolver(() => [BranchProtection], { description: 'Every branch rule, by pattern. Needs admin.' })
  branchProtections(@Root() repo: Repository, @Ctx() ctx: Context) {
    return ctx.services.protections.list(ctx.em, ctx.viewer, repo.id);
  }

  @FieldResolver(() => BranchProtection, {
    nullable: true,
    description: 'The rule set for exactly this branch name or pattern; NOT_FOUND when there is none. Needs admin.',
  })
  branchProtection(@Root() repo: Repository, @Arg('branch') branch: string, @Ctx() ctx: Context) {
    return ctx.services.protections.get(ctx.em, ctx.viewer, repo.id, branch);
  }
}
