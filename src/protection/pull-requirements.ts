import type { EntityManager } from '@mikro-orm/postgresql';
import { MergeableState } from '../pulls/pull-request.entity.js';
import type { MergeRequirements } from '../pulls/pull-request.ports.js';
import type { PullRequestView } from '../pulls/pull-request.view.js';
import { combinedStates } from '../statuses/combined-status.js';
import { contextStatesOf, reviewVerdicts, rulesOf } from './protection-facts.js';
import { mergeProblems } from './requirements.js';
import { ruleFor } from './rule-match.js';

/**
 * The `mergeable_state` of pull requests as their base branch's rule sees them, for a page at once:
 * the rules, the reviews and the statuses of every clean pull request are read with one query each.
 * Admins may merge past a rule that does not enforce admins, but the state says what the rule asks.
 */
export class PullRequirements implements MergeRequirements {
  async methodRefusal(em: EntityManager, repositoryId: string, baseRef: string, method: string): Promise<string | null> {
    const rule = ruleFor(await rulesOf(em, repositoryId), baseRef);
    const problems = rule
      ? mergeProblems(rule, {
          approvals: Infinity,
          changesRequestedBy: [],
          statuses: new Map(),
          upToDate: null,
          mergeCommit: method === 'merge',
        })
      : [];
    const refused = problems.find((problem) => problem.code === 'merge_commit_not_allowed');
    return refused ? refused.message : null;
  }

  async refine(em: EntityManager, repositoryId: string, views: PullRequestView[]): Promise<void> {
    const clean = views.filter((view) => view.mergeableState === MergeableState.CLEAN);
    if (!clean.length) return;
    const rules = await rulesOf(em, repositoryId);
    const judged = clean.map((view) => ({ view, rule: rules.length ? ruleFor(rules, view.base.ref) : null }));
    const heads = clean.map((view) => view.head.sha);
    const [verdicts, combined, contexts] = await Promise.all([
      reviewVerdicts(
        em,
        repositoryId,
        judged
          .filter(({ rule }) => rule?.requiredApprovingReviewCount)
          .map(({ view, rule }) => ({ id: view.id, onHead: rule!.dismissStaleReviews ? view.head.sha : null })),
      ),
      combinedStates(em, repositoryId, heads),
      contextStatesOf(
        em,
        repositoryId,
        judged.filter(({ rule }) => rule?.requiredStatusChecks?.contexts.length).map(({ view }) => view.head.sha),
      ),
    ]);
    for (const { view, rule } of judged) {
      if (rule) {
        const problems = mergeProblems(rule, {
          ...(verdicts.get(view.id) ?? { approvals: 0, changesRequestedBy: [] }),
          statuses: contexts.get(view.head.sha) ?? new Map(),
          upToDate: view.baseInHead,
          mergeCommit: null,
        });
        const behind = problems.length > 0 && problems.every((problem) => problem.code === 'behind');
        if (problems.length) {
          view.mergeableState = behind ? MergeableState.BEHIND : MergeableState.BLOCKED;
          continue;
        }
      }
      if (combined.get(view.head.sha) === 'failure') view.mergeableState = MergeableState.UNSTABLE;
    }
  }
}
