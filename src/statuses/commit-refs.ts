import type { EntityManager } from '@mikro-orm/postgresql';
import { fastRead } from '../db/fast-read.js';
import { notFound } from '../errors/domain-error.js';
import { peelToCommits } from '../git/commits.js';
import type { GitStorage } from '../git/storage.js';

/**
 * Which commit a status names, answered from the database whenever it can be: a posting CI system
 * sends the same sha again and again, and a git process per request would cost more than the rest
 * of the request. Git is asked only about a sha no status and no branch names yet.
 */

export const FULL_SHA = /^[0-9a-f]{40}$/;

/** What the database knows of a sha: the branches whose recorded tip it is, and whether it already has statuses. */
export interface ShaFacts {
  branches: string[];
  hasStatuses: boolean;
}

/** Commits git confirmed, by repository and sha: a commit never stops being one, so no entry goes stale. */
const confirmed = new Set<string>();
const MOST_CONFIRMED = 10_000;

export async function shaFacts(em: EntityManager, repositoryId: string, sha: string): Promise<ShaFacts> {
  const [row] = await fastRead<{ branches: string[] | string; has_statuses: boolean }>(
    em,
    `select (select coalesce(json_agg(substr(g.name, 12) order by g.name), '[]'::json)
               from git_refs g where g.repository_id = ? and g.sha = ? and g.name like 'refs/heads/%') as branches,
            exists (select 1 from commit_status_contexts c where c.repository_id = ? and c.sha = ?) as has_statuses`,
    [repositoryId, sha, repositoryId, sha],
  );
  const branches = typeof row!.branches === 'string' ? (JSON.parse(row!.branches) as string[]) : row!.branches;
  return { branches, hasStatuses: row!.has_statuses };
}

/** Whether `sha` (full, lowercase) is a commit of the repository; `facts` first, then git. */
export async function isCommit(git: GitStorage, repositoryId: string, sha: string, facts: ShaFacts): Promise<boolean> {
  if (facts.branches.length || facts.hasStatuses) return true;
  const key = `${repositoryId}:${sha}`;
  if (confirmed.has(key)) return true;
  const peeled = await peelToCommits(await git.servedPath(repositoryId), [sha]);
  if (peeled.get(sha) !== sha) return false;
  if (confirmed.size >= MOST_CONFIRMED) confirmed.clear();
  confirmed.add(key);
  return true;
}

/**
 * The commit `ref` names: a full sha (which must be a commit of the repository), else a branch,
 * else a tag (peeled to its commit). NOT_FOUND when it names none.
 */
export async function resolveCommit(em: EntityManager, git: GitStorage, repositoryId: string, ref: string): Promise<string> {
  const lower = ref.toLowerCase();
  if (FULL_SHA.test(lower)) {
    if (await isCommit(git, repositoryId, lower, await shaFacts(em, repositoryId, lower))) return lower;
    throw notFound('commit');
  }
  const rows = await fastRead<{ name: string; sha: string }>(
    em,
    `select name, sha from git_refs where repository_id = ? and name in (?, ?) order by name`,
    [repositoryId, `refs/heads/${ref}`, `refs/tags/${ref}`],
  );
  const branch = rows.find((row) => row.name.startsWith('refs/heads/'));
  if (branch) return branch.sha;
  const tag = rows[0];
  if (!tag) throw notFound('commit');
  const peeled = (await peelToCommits(await git.servedPath(repositoryId), [tag.sha])).get(tag.sha);
  if (!peeled) throw notFound('commit');
  return peeled;
}
