import type { EntityManager } from '@mikro-orm/postgresql';
import { Permission, userPermission } from '../auth/permissions.js';
import { fastRead } from '../db/fast-read.js';
import { combinedStatus } from '../statuses/combined-status.js';
import { BranchProtection } from './branch-protection.entity.js';
import type { ContextStates } from './requirements.js';

/**
 * What the branch rules are judged on, read from the database: a repository's rules, whether a
 * user administers it (admins bypass rules that do not enforce admins), the reviews that count
 * for a pull request, and the statuses of a commit.
 */

/** Every rule of a repository (a handful): matched in memory (rule-match.ts). */
export function rulesOf(em: EntityManager, repositoryId: string): Promise<BranchProtection[]> {
  return em.find(BranchProtection, { repository: repositoryId }, { orderBy: { pattern: 'asc' } });
}

/** Whether the user administers the repository: a site admin, its owner, or an admin collaborator. */
export async function administers(em: EntityManager, repositoryId: string, userId: string): Promise<boolean> {
  return (await userPermission(em, userId, repositoryId)) === Permission.ADMIN;
}

/** The reviews of a pull request that count toward its rule. */
export interface ReviewVerdict {
  approvals: number;
  changesRequestedBy: string[];
}

/**
 * Per pull request: the latest approving or change-requesting review of each reviewer who can
 * write the repository (as on GitHub, a reader's approval does not count), unless dismissed since.
 * Where `onHead` is given (the rule dismisses stale reviews), an approval counts only if it was
 * given on that head: one given before the head moved does not, however the head moved (a push
 * while the pull request was closed, or before the rule existed).
 */
export async function reviewVerdicts(
  em: EntityManager,
  repositoryId: string,
  pulls: Array<{ id: string; onHead: string | null }>,
): Promise<Map<string, ReviewVerdict>> {
  const verdicts = new Map<string, ReviewVerdict>(pulls.map(({ id }) => [id, { approvals: 0, changesRequestedBy: [] }]));
  if (!pulls.length) return verdicts;
  const heads = new Map(pulls.map(({ id, onHead }) => [id, onHead]));
  const rows = await fastRead<{ pull_request_id: string; state: string; commit_id: string; login: string }>(
    em,
    `select latest.pull_request_id, latest.state, latest.commit_id, u.login
       from (select distinct on (pull_request_id, user_id) pull_request_id, user_id, state, commit_id
               from pull_request_reviews
              where pull_request_id = any(string_to_array(?, ',')) and state in ('approved', 'changes_requested', 'dismissed')
              order by pull_request_id, user_id, submitted_at desc, id desc) latest
       join users u on u.id = latest.user_id
       join repositories r on r.id = ?
      where latest.state <> 'dismissed'
        and (u.admin or r.owner_id = u.id or exists (
              select 1 from collaborators c where c.repository_id = r.id and c.user_id = u.id and c.permission in ('write', 'admin')))
      order by u.login`,
    [pulls.map(({ id }) => id).join(','), repositoryId],
  );
  for (const row of rows) {
    const verdict = verdicts.get(row.pull_request_id)!;
    const onHead = heads.get(row.pull_request_id);
    if (row.state !== 'approved') verdict.changesRequestedBy.push(row.login);
    else if (!onHead || row.commit_id === onHead) verdict.approvals++;
  }
  return verdicts;
}

/** The latest status state of each context on one commit. */
export async function contextStates(em: EntityManager, repositoryId: string, sha: string): Promise<ContextStates> {
  const combined = await combinedStatus(em, repositoryId, sha);
  return new Map(combined.statuses.map((status) => [status.context, status.state]));
}

/** The latest status state of each context on each of many commits: one query (a page of pull requests). */
export async function contextStatesOf(em: EntityManager, repositoryId: string, shas: string[]): Promise<Map<string, ContextStates>> {
  const states = new Map<string, Map<string, string>>(shas.map((sha) => [sha, new Map()]));
  if (!shas.length) return states;
  const rows = await fastRead<{ sha: string; context: string; state: string }>(
    em,
    "select sha, context, state from commit_status_contexts where repository_id = ? and sha = any(string_to_array(?, ','))",
    [repositoryId, [...new Set(shas)].join(',')],
  );
  for (const row of rows) states.get(row.sha)?.set(row.context, row.state);
  return states;
}
