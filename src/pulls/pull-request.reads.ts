import type { EntityManager } from '@mikro-orm/postgresql';
import { asDate, fastRead } from '../db/fast-read.js';
import { notFound } from '../errors/domain-error.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';
import type { Repository } from '../repositories/repository.entity.js';
import type { Principal } from '../principal.js';
import { limited } from '../git/concurrency.js';
import { GitCommandError } from '../git/run-git.js';
import type { GitStorage } from '../git/storage.js';
import { filterSql, type ConversationFilterArgs } from '../conversations/conversation-filter.js';
import { listPullCommits, listPullFiles } from './pull-request.git.js';
import { PullRequestStateFilter } from './pull-request.inputs.js';
import { PullRequest, PullRequestState } from './pull-request.entity.js';
import { pullRequestView, type PullRequestFacts, type PullRequestView } from './pull-request.view.js';

/**
 * Reading pull requests: lists and single ones as the views clients see, each in one statement
 * (their users' logins joined), never hydrated into entities; and `findPullRequest`, the entity a
 * change starts from. The changes themselves are in pull-request.writes.ts.
 */
/** A pull request as read for a view: its row with its users' logins. */
interface PullRequestRow {
  id: string;
  number: number;
  title: string;
  body: string | null;
  state: PullRequestState;
  draft: boolean;
  head_ref: string;
  head_sha: string;
  base_ref: string;
  base_sha: string;
  user_id: string;
  user_login: string;
  merged_at: string | Date | null;
  merged_by_id: string | null;
  merged_by_login: string | null;
  merge_commit_sha: string | null;
  commits_count: number;
  mergeable: boolean | null;
  mergeable_base_sha: string | null;
  mergeable_head_sha: string | null;
  conflicts: string[] | string;
  base_in_head: boolean | null;
  created_at: string | Date;
  updated_at: string | Date;
  closed_at: string | Date | null;
  auto_merge_method: string | null;
  auto_merge_enabled_by_id: string | null;
  auto_merge_login: string | null;
  repository_id: string;
  comments: number;
}

const date = asDate;

function factsOf(row: PullRequestRow): PullRequestFacts {
  return {
    id: row.id,
    number: row.number,
    title: row.title,
    body: row.body,
    state: row.state,
    draft: row.draft,
    headRef: row.head_ref,
    headSha: row.head_sha,
    baseRef: row.base_ref,
    baseSha: row.base_sha,
    user: { id: row.user_id, login: row.user_login },
    mergedAt: row.merged_at === null ? null : date(row.merged_at),
    mergedBy: row.merged_by_id === null ? null : { id: row.merged_by_id, login: row.merged_by_login! },
    mergeCommitSha: row.merge_commit_sha,
    commitsCount: row.commits_count,
    storedMergeable: row.mergeable,
    mergeableBaseSha: row.mergeable_base_sha,
    mergeableHeadSha: row.mergeable_head_sha,
    storedConflicts: typeof row.conflicts === 'string' ? (JSON.parse(row.conflicts) as string[]) : row.conflicts,
    baseInHead: row.base_in_head,
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
    closedAt: row.closed_at === null ? null : date(row.closed_at),
    autoMerge:
      row.auto_merge_method && row.auto_merge_enabled_by_id
        ? { enabledBy: { id: row.auto_merge_enabled_by_id, login: row.auto_merge_login! }, method: row.auto_merge_method }
        : null,
    repositoryId: row.repository_id,
    commentCount: row.comments,
  };
}

/**
 * Pull requests as views, read with one statement: their rows in the given order joined with their
 * users' logins. `ids` is a subquery selecting the wanted ids (a page, or one number).
 */
async function readViews(em: EntityManager, ids: string, params: unknown[], order: string): Promise<PullRequestView[]> {
  const rows = await fastRead<PullRequestRow>(
    em,
    `select p.*, u.login as user_login, m.login as merged_by_login, a.login as auto_merge_login
       from (${ids}) as wanted
       join pull_requests p on p.id = wanted.id
       join users u on u.id = p.user_id
       left join users m on m.id = p.merged_by_id
       left join users a on a.id = p.auto_merge_enabled_by_id
      order by ${order}`,
    params,
  );
  return rows.map((row) => pullRequestView(factsOf(row)));
}

/**
 * A page of a repository's pull requests, filtered and ordered (newest first by default,
 * conversation-filter.ts). A list is only read, so it is not hydrated into entities: one statement
 * for the page (its ids chosen first, so a deep offset walks the index only, not the joins), one
 * for the total.
 */
export async function listPullRequests(
  em: EntityManager,
  repo: Repository,
  state: PullRequestStateFilter,
  filter: Partial<ConversationFilterArgs>,
  page: Page,
): Promise<Connection<PullRequestView>> {
  const { where, params: filterParams, order, column } = filterSql(filter, repo.id);
  const stateSql = state === PullRequestStateFilter.ALL ? '' : ' and a.state = ?';
  const params = [...(state === PullRequestStateFilter.ALL ? [repo.id] : [repo.id, state]), ...filterParams];
  const from = `from pull_requests a where a.repository_id = ?${stateSql}${where}`;
  const [counted, views] = await Promise.all([
    fastRead<{ total: number }>(em, `select count(*)::int as total ${from}`, params),
    page.limit === 0
      ? Promise.resolve([])
      : readViews(
          em,
          `select a.id, a.${column} ${from} order by ${order('a')} limit ? offset ?`,
          [...params, page.limit, page.offset],
          order('wanted'),
        ),
  ]);
  return connection(views, counted[0]!.total, page);
}

/** Open pull requests with auto-merge enabled numbered after `after`, oldest first, as views (one statement). */
export function readAutoMergeable(em: EntityManager, repo: Repository, after: number, limit: number): Promise<PullRequestView[]> {
  return readViews(
    em,
    `select id, number from pull_requests
      where repository_id = ? and state = 'open' and auto_merge_method is not null and number > ? order by number limit ?`,
    [repo.id, after, limit],
    'wanted.number',
  );
}

/** One pull request as its view; NOT_FOUND when there is none. */
export async function readPullRequest(em: EntityManager, repo: Repository, number: number): Promise<PullRequestView> {
  const [view] = await readViews(em, 'select id from pull_requests where repository_id = ? and number = ?', [repo.id, number], 'p.id');
  if (!view) throw notFound('pull request');
  return view;
}

export async function findPullRequest(em: EntityManager, repo: Repository, number: number): Promise<PullRequest> {
  const pr = await em.findOne(PullRequest, { repository: repo, number }, { populate: ['user', 'mergedBy'] });
  if (!pr) throw notFound('pull request');
  return pr;
}

/**
 * Git reads of a pull request, in one of the browsing slots within the viewer's share. The commits
 * of a pull request whose head branch was deleted stay readable until gc prunes them; after that
 * they are gone, which is a NOT_FOUND, not a failure of the service.
 */
async function readPullGit<T>(viewer: Principal, pr: PullRequestView, work: () => Promise<T>): Promise<T> {
  try {
    return await limited(viewer.userId, work);
  } catch (error) {
    // git's words for a commit that is gone: "bad object", "Invalid symmetric difference expression", ...
    if (
      error instanceof GitCommandError &&
      /bad object|bad revision|unknown revision|invalid revision|invalid symmetric difference|no merge base|not a valid/i.test(error.stderr)
    ) {
      throw notFound(`the commits of pull request #${pr.number}`);
    }
    throw error;
  }
}

/** Commits on head that base lacks, oldest first. */
export function pullRequestCommits(git: GitStorage, viewer: Principal, pr: PullRequestView, page: Page) {
  return readPullGit(viewer, pr, () => listPullCommits(git.pathFor(pr.repositoryId), pr.base.sha, pr.head.sha, page));
}

/** Files changed against the merge base of base and head, in path order. */
export function pullRequestFiles(git: GitStorage, viewer: Principal, pr: PullRequestView, page: Page) {
  return readPullGit(viewer, pr, () => listPullFiles(git.pathFor(pr.repositoryId), pr.base.sha, pr.head.sha, page));
}
