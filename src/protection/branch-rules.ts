import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { DomainError } from '../errors/domain-error.js';
import { isAncestor } from '../git/commits.js';
import type { GitActor } from '../git/refs/push-events.js';
import type { PolicySession, RefPolicy } from '../git/refs/ref-transaction.js';
import type { GitStorage } from '../git/storage.js';
import { ZERO_SHA } from '../ids.js';
import type { Logger } from '../logger.js';
import { mergeNoteOf } from '../pulls/follow-refs.js';
import { MergeMethod } from '../pulls/merge-commits.js';
import { administers, contextStates, reviewVerdicts, rulesOf } from './protection-facts.js';
import { openQuestions, type RefQuestion, type LearnHistory } from './push-questions.js';
import { historyNeeded, mergeProblems, pushRefusal } from './requirements.js';
import { ruleFor } from './rule-match.js';
import type { BranchProtection } from './branch-protection.entity.js';

const BRANCH = 'refs/heads/';
const NO_SESSION: PolicySession = { env: {}, close: async () => undefined };

/**
 * Branch protection where refs move (the ref transaction's policy): a push is asked about ref by
 * ref from git's `update` hook and refused per ref with the reason git prints; a merge through the
 * API is judged inside its recording transaction, and refused (NOT_MERGEABLE) with every unmet
 * requirement named. Admins of the repository bypass a rule unless it enforces admins.
 */
export class BranchRules implements RefPolicy {
  constructor(
    private readonly orm: MikroORM,
    private readonly git: GitStorage,
    private readonly log: Logger,
  ) {}

  async open(repositoryId: string, actor: GitActor): Promise<PolicySession> {
    const em = this.orm.em.fork();
    const rules = await rulesOf(em, repositoryId);
    if (!rules.length) return NO_SESSION; // git is not even asked: an unprotected repository pays nothing
    const admin = await administers(em, repositoryId, actor.id);
    if (admin && rules.every((rule) => !rule.enforceAdmins)) return NO_SESSION;
    return openQuestions((question, learn) => this.decidePush(em, repositoryId, rules, admin, question, learn), this.log);
  }

  private async decidePush(
    em: EntityManager,
    repositoryId: string,
    rules: BranchProtection[],
    admin: boolean,
    question: RefQuestion,
    learn: LearnHistory,
  ): Promise<string | null> {
    const rule = question.ref.startsWith(BRANCH) ? ruleFor(rules, question.ref.slice(BRANCH.length)) : null;
    if (!rule || (admin && !rule.enforceAdmins)) return null;
    const needed = historyNeeded(rule, question.before, question.after, ZERO_SHA);
    const history = needed.length ? await learn(needed) : { forced: null, merges: null };
    const statuses =
      rule.requiredStatusChecks?.contexts.length && question.after !== ZERO_SHA
        ? await contextStates(em, repositoryId, question.after)
        : new Map<string, string>();
    return pushRefusal(rule, question, ZERO_SHA, history, statuses);
  }

  async check(tx: EntityManager, change: Parameters<RefPolicy['check']>[1]): Promise<void> {
    const rules = await rulesOf(tx, change.repositoryId);
    if (!rules.length) return;
    const admin = await administers(tx, change.repositoryId, change.actor.id);
    const merge = mergeNoteOf(change.note);
    const dir = this.git.pathFor(change.repositoryId);
    for (const update of change.updates) {
      const rule = update.ref.startsWith(BRANCH) ? ruleFor(rules, update.ref.slice(BRANCH.length)) : null;
      // An auto-merge waits for the rule whoever enabled it: it never lands past it, an admin's neither.
      if (!rule || (admin && !rule.enforceAdmins && !merge?.auto)) continue;
      // Cairn decides refs itself only to merge pull requests (a repository's first commit is not a change).
      if (!merge) throw new DomainError('FORBIDDEN', `protected branch: ${update.ref} moves only by a push or a merge`);
      const [pr] = await tx.execute<Array<{ head_sha: string }>>('select head_sha from pull_requests where id = ?', [merge.pullRequestId]);
      if (!pr) continue;
      const onHead = rule.dismissStaleReviews ? pr.head_sha : null;
      const verdict = (await reviewVerdicts(tx, change.repositoryId, [{ id: merge.pullRequestId, onHead }])).get(merge.pullRequestId)!;
      const problems = mergeProblems(rule, {
        ...verdict,
        statuses: await contextStates(tx, change.repositoryId, pr.head_sha),
        upToDate: rule.requiredStatusChecks?.strict ? await isAncestor(dir, update.before, pr.head_sha) : null,
        mergeCommit: merge.method === MergeMethod.MERGE,
      });
      if (problems.length) {
        const summary = problems.map((problem) => problem.message).join('; ');
        throw new DomainError('NOT_MERGEABLE', `the base branch is protected: ${summary}`, problems);
      }
    }
  }
}
