import type { FieldProblem } from '../errors/domain-error.js';
import type { BranchProtection } from './branch-protection.entity.js';

/** The latest status state of each context on one commit (context → state). */
export type ContextStates = ReadonlyMap<string, string>;

/** What git says about one pushed ref update, asked only when its rule needs it. */
export interface PushedHistory {
  /** The old tip is not in the new one's history (null: not asked). */
  forced: boolean | null;
  /** The update brings merge commits (null: not asked). */
  merges: boolean | null;
}

/** What a push must find out with git before its rule can decide (branch-rules.ts asks the hook). */
export function historyNeeded(rule: BranchProtection, before: string, after: string, zero: string): Array<keyof PushedHistory> {
  if (before === zero || after === zero) return [];
  const needed: Array<keyof PushedHistory> = [];
  if (!rule.allowForcePushes) needed.push('forced');
  if (rule.requiredLinearHistory) needed.push('merges');
  return needed;
}

/**
 * Why a push may not move a protected branch, as git prints it (`protected branch: …`), or null.
 * Creating the branch is allowed: the rule guards what is already there.
 */
export function pushRefusal(
  rule: BranchProtection,
  update: { before: string; after: string },
  zero: string,
  history: PushedHistory,
  statuses: ContextStates,
): string | null {
  if (update.after === zero) return rule.allowDeletions ? null : 'protected branch: deletion is not allowed';
  if (update.before === zero) return null;
  const reasons: string[] = [];
  if (rule.requiredPullRequest) reasons.push('changes must be made through a pull request');
  if (history.forced && !rule.allowForcePushes) reasons.push('force-push is not allowed');
  if (history.merges && rule.requiredLinearHistory) reasons.push('merge commits are not allowed (linear history is required)');
  for (const problem of statusProblems(rule, statuses)) reasons.push(problem.message);
  return reasons.length ? `protected branch: ${reasons.join('; ')}` : null;
}

/** What a pull request's merge is judged on beside its rule. */
export interface PullFacts {
  /** Approving reviews that count (latest review of a writer, on any head, not dismissed). */
  approvals: number;
  /** Writers whose latest review requests changes. */
  changesRequestedBy: string[];
  /** Latest status per context of the head commit. */
  statuses: ContextStates;
  /** The head contains the base tip (null: not known yet). */
  upToDate: boolean | null;
  /** The merge would make a merge commit (the merge method; null when judging the pull request, not one merge). */
  mergeCommit: boolean | null;
}

/** Every requirement of the rule a pull request's merge does not meet, as 405 `details` name them. */
export function mergeProblems(rule: BranchProtection, facts: PullFacts): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (facts.approvals < rule.requiredApprovingReviewCount) {
    const needed = rule.requiredApprovingReviewCount;
    problems.push({
      field: 'required_approving_review_count',
      code: 'approvals_required',
      message: `${needed} approving review${needed === 1 ? ' is' : 's are'} required (${facts.approvals} given)`,
    });
  }
  if (rule.requiredApprovingReviewCount > 0) {
    for (const login of facts.changesRequestedBy) {
      problems.push({ field: 'required_approving_review_count', code: 'changes_requested', message: `${login} requested changes` });
    }
  }
  problems.push(...statusProblems(rule, facts.statuses));
  if (rule.requiredStatusChecks?.strict && facts.upToDate === false) {
    problems.push({
      field: 'required_status_checks',
      code: 'behind',
      message: 'the head branch must contain the latest commit of the base branch (update it first)',
    });
  }
  if (rule.requiredLinearHistory && facts.mergeCommit) {
    problems.push({
      field: 'required_linear_history',
      code: 'merge_commit_not_allowed',
      message: 'merge commits are not allowed: merge by squash or rebase',
    });
  }
  return problems;
}

/** Required contexts whose latest status on the commit is not success. */
function statusProblems(rule: BranchProtection, statuses: ContextStates): FieldProblem[] {
  return (rule.requiredStatusChecks?.contexts ?? []).flatMap((context) => {
    const state = statuses.get(context);
    if (state === 'success') return [];
    const code = state === undefined ? 'status_check_missing' : state === 'pending' ? 'status_check_pending' : 'status_check_failing';
    const message = `status check "${context}" is required${state === undefined ? '' : ` (its latest status is ${state})`}`;
    return [{ field: 'required_status_checks', code, message }];
  });
}
