import type { EntityManager } from '@mikro-orm/postgresql';
import { Permission } from '../auth/permissions.js';
import { notFound, Problems } from '../errors/domain-error.js';
import type { Principal } from '../principal.js';
import type { Repositories } from '../repositories/repository.service.js';
import { BranchProtection } from './branch-protection.entity.js';
import type { SetBranchProtectionInput } from './branch-protection.inputs.js';
import { patternProblem } from './rule-match.js';

const MAX_CONTEXTS = 100;
const MAX_CONTEXT_LENGTH = 255;
/** Rules per repository: each is matched against every pushed branch. */
const MAX_RULES = 100;

/**
 * Managing a repository's branch rules: reading, setting (the whole rule, created or replaced) and
 * removing the rule of one branch name or pattern. Needs admin on the repository and the `repo` scope.
 */
export class BranchProtections {
  constructor(private readonly deps: { repositories: Repositories }) {}

  async list(em: EntityManager, viewer: Principal, repositoryId: string): Promise<BranchProtection[]> {
    await this.deps.repositories.find(em, viewer, repositoryId, Permission.ADMIN);
    return em.find(BranchProtection, { repository: repositoryId }, { orderBy: { pattern: 'asc' } });
  }

  /** The rule named exactly `branch` (a name or pattern, as it was set); NOT_FOUND when there is none. */
  async get(em: EntityManager, viewer: Principal, repositoryId: string, branch: string): Promise<BranchProtection> {
    await this.deps.repositories.find(em, viewer, repositoryId, Permission.ADMIN);
    const rule = await em.findOne(BranchProtection, { repository: repositoryId, pattern: branch });
    if (!rule) throw notFound('branch protection');
    return rule;
  }

  async set(em: EntityManager, viewer: Principal, input: SetBranchProtectionInput): Promise<BranchProtection> {
    const repo = await this.deps.repositories.find(em, viewer, input.repositoryId, Permission.ADMIN);
    const fields = checked(input);
    return em.transactional(async (tx) => {
      // The repository's row first: two rules set at once for one repository queue, so the count holds.
      await tx.execute('select 1 from repositories where id = ? for no key update', [repo.id]);
      let rule = await tx.findOne(BranchProtection, { repository: repo.id, pattern: input.branch });
      if (!rule) {
        if ((await tx.count(BranchProtection, { repository: repo.id })) >= MAX_RULES) {
          const problems = new Problems();
          problems.add('branch', 'too_many', `a repository has at most ${MAX_RULES} branch rules`);
          problems.throwIfAny();
        }
        rule = tx.create(BranchProtection, { repository: repo, pattern: input.branch, ...fields });
      } else {
        Object.assign(rule, fields, { updatedAt: new Date() });
      }
      await tx.flush();
      return rule;
    });
  }

  /** Removes the rule named exactly `branch`; NOT_FOUND when there is none. */
  async remove(em: EntityManager, viewer: Principal, repositoryId: string, branch: string): Promise<boolean> {
    await this.deps.repositories.find(em, viewer, repositoryId, Permission.ADMIN);
    const removed = await em.nativeDelete(BranchProtection, { repository: repositoryId, pattern: branch });
    if (!removed) throw notFound('branch protection');
    return true;
  }
}

/** The rule's fields from the input, every mistake reported at once (422). */
function checked(input: SetBranchProtectionInput) {
  const problems = new Problems();
  const pattern = patternProblem(input.branch);
  if (pattern) problems.add('branch', 'invalid', pattern);
  const count = input.requiredApprovingReviewCount ?? 0;
  if (!Number.isInteger(count) || count < 0 || count > 6) {
    problems.add('requiredApprovingReviewCount', 'out_of_range', 'required_approving_review_count is 0 to 6');
  }
  const checks = input.requiredStatusChecks ?? null;
  const contexts = [...new Set(checks?.contexts ?? [])];
  if (contexts.length > MAX_CONTEXTS) problems.add('requiredStatusChecks.contexts', 'too_many', `at most ${MAX_CONTEXTS} contexts`);
  if (contexts.some((context) => !context.trim() || context.length > MAX_CONTEXT_LENGTH)) {
    problems.add('requiredStatusChecks.contexts', 'invalid', `a context is 1 to ${MAX_CONTEXT_LENGTH} characters`);
  }
  problems.throwIfAny();
  return {
    requiredPullRequest: input.requiredPullRequest ?? false,
    requiredApprovingReviewCount: count,
    dismissStaleReviews: input.dismissStaleReviews ?? false,
    requiredStatusChecks: checks ? { strict: checks.strict ?? false, contexts } : null,
    enforceAdmins: input.enforceAdmins ?? false,
    allowForcePushes: input.allowForcePushes ?? false,
    allowDeletions: input.allowDeletions ?? false,
    requiredLinearHistory: input.requiredLinearHistory ?? false,
  };
}
