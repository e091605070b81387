import type { EntityManager } from '@mikro-orm/postgresql';
import { asDate, fastRead } from '../../db/fast-read.js';
import type { DiffSide } from '../../git/diff-positions.js';
import { connection, type Connection, type Page } from '../../graphql/pagination.js';
import { ReviewCommentView, ReviewThreadView } from './review-comment.view.js';

/**
 * Reading comments on lines and their threads as views, never hydrated: a comment is read with its
 * thread's place and its author's login in one statement. The nested lists of a page (the comments
 * of 30 threads, the threads of 30 pull requests) are read for all their parents in ONE statement,
 * each parent's page cut by a window (`pagesOf`).
 */

interface CommentRow {
  id: string;
  review_id: string | null;
  thread_id: string;
  in_reply_to_id: string | null;
  body: string;
  user_id: string;
  user_login: string;
  created_at: string | Date;
  updated_at: string | Date;
  pull_request_id: string;
  repository_id: string;
  path: string;
  side: DiffSide;
  line: number | null;
  start_line: number | null;
  start_side: DiffSide | null;
  commit_id: string;
  original_commit_id: string;
  original_line: number;
  original_start_line: number | null;
  diff_hunk: string;
  outdated: boolean;
}

const COMMENT_COLUMNS = `c.id, c.review_id, c.thread_id, c.in_reply_to_id, c.body, c.user_id, u.login as user_login,
  c.created_at, c.updated_at, c.pull_request_id, c.repository_id, t.path, t.side, t.line, t.start_line, t.start_side,
  t.commit_id, t.original_commit_id, t.original_line, t.original_start_line, t.diff_hunk, t.outdated`;
const COMMENT_FROM = `pull_request_review_comments c join review_threads t on t.id = c.thread_id join users u on u.id = c.user_id`;

function commentOf(row: CommentRow): ReviewCommentView {
  return Object.assign(new ReviewCommentView(), {
    id: row.id,
    reviewId: row.review_id,
    threadId: row.thread_id,
    path: row.path,
    line: row.line,
    side: row.side,
    startLine: row.start_line,
    startSide: row.start_side,
    commitId: row.commit_id,
    originalCommitId: row.original_commit_id,
    originalLine: row.original_line,
    originalStartLine: row.original_start_line,
    diffHunk: row.diff_hunk,
    body: row.body,
    user: { id: row.user_id, login: row.user_login },
    inReplyToId: row.in_reply_to_id,
    createdAt: asDate(row.created_at),
    updatedAt: asDate(row.updated_at),
    outdated: row.outdated,
    pullRequestId: row.pull_request_id,
    repositoryId: row.repository_id,
  });
}

interface ThreadRow {
  id: string;
  path: string;
  line: number | null;
  side: DiffSide;
  start_line: number | null;
  start_side: DiffSide | null;
  commit_id: string;
  original_commit_id: string;
  original_line: number;
  diff_hunk: string;
  resolved: boolean;
  outdated: boolean;
  resolved_by_id: string | null;
  resolved_by_login: string | null;
  created_at: string | Date;
  pull_request_id: string;
  repository_id: string;
}

const THREAD_COLUMNS = `t.id, t.path, t.line, t.side, t.start_line, t.start_side, t.commit_id, t.original_commit_id, t.original_line,
  t.diff_hunk, t.resolved, t.outdated, t.resolved_by_id, r.login as resolved_by_login, t.created_at, t.pull_request_id, t.repository_id`;
const THREAD_FROM = `review_threads t left join users r on r.id = t.resolved_by_id`;

function threadOf(row: ThreadRow): ReviewThreadView {
  return Object.assign(new ReviewThreadView(), {
    id: row.id,
    path: row.path,
    line: row.line,
    side: row.side,
    startLine: row.start_line,
    startSide: row.start_side,
    commitId: row.commit_id,
    originalCommitId: row.original_commit_id,
    originalLine: row.original_line,
    diffHunk: row.diff_hunk,
    isResolved: row.resolved,
    isOutdated: row.outdated,
    resolvedBy: row.resolved && row.resolved_by_id ? { id: row.resolved_by_id, login: row.resolved_by_login! } : null,
    createdAt: asDate(row.created_at),
    pullRequestId: row.pull_request_id,
    repositoryId: row.repository_id,
  });
}

/** One comment of a repository; null when there is none. */
export async function readComment(em: EntityManager, repositoryId: string, id: string): Promise<ReviewCommentView | null> {
  const [row] = await em.execute<CommentRow[]>(`select ${COMMENT_COLUMNS} from ${COMMENT_FROM} where c.id = ? and c.repository_id = ?`, [
    id,
    repositoryId,
  ]);
  return row ? commentOf(row) : null;
}

/** One thread; null when there is none. */
export async function readThread(em: EntityManager, id: string): Promise<ReviewThreadView | null> {
  const [row] = await em.execute<ThreadRow[]>(`select ${THREAD_COLUMNS} from ${THREAD_FROM} where t.id = ?`, [id]);
  return row ? threadOf(row) : null;
}

/** The parents whose children a page lists: comments by pull request, thread or review; threads by pull request. */
export type CommentParent = 'pull_request_id' | 'thread_id' | 'review_id';

/**
 * A page of each parent's rows, oldest first, and each parent's total, in ONE statement: the rows
 * of all the parents numbered within their parent by a window, the page's cut out of each.
 */
async function pagesOf<R extends { parent: string; total: string | number }, V>(
  em: EntityManager,
  select: string,
  from: string,
  parentColumn: string,
  order: string,
  parents: readonly string[],
  page: Page,
  view: (row: R) => V,
): Promise<Array<Connection<V>>> {
  const rows = await fastRead<R & { rn: string | number }>(
    em,
    `select * from (
       select ${select}, ${parentColumn} as parent,
              row_number() over (partition by ${parentColumn} order by ${order}) as rn,
              count(*) over (partition by ${parentColumn}) as total
         from ${from} where ${parentColumn} = any(array(select jsonb_array_elements_text(cast(? as text)::jsonb)))) x
      where x.rn > ? and x.rn <= ?
      order by x.parent, x.rn`,
    [JSON.stringify(parents), page.offset, page.offset + page.limit],
  );
  const byParent = new Map<string, { nodes: V[]; total: number }>();
  for (const row of rows) {
    const entry = byParent.get(row.parent) ?? { nodes: [], total: Number(row.total) };
    entry.nodes.push(view(row));
    byParent.set(row.parent, entry);
  }
  // A parent whose page is past its rows has none read: its total comes from a count of its own.
  const missing = parents.filter((parent) => !byParent.has(parent));
  if (missing.length && (page.offset > 0 || page.limit === 0)) {
    const counted = await fastRead<{ parent: string; total: number }>(
      em,
      `select ${parentColumn} as parent, count(*)::int as total from ${from} where ${parentColumn} = any(array(select jsonb_array_elements_text(cast(? as text)::jsonb))) group by ${parentColumn}`,
      [JSON.stringify(missing)],
    );
    for (const row of counted) byParent.set(row.parent, { nodes: [], total: row.total });
  }
  return parents.map((parent) => {
    const entry = byParent.get(parent) ?? { nodes: [], total: 0 };
    return connection(entry.nodes, entry.total, page);
  });
}

/** The comments of each parent, a page each, oldest first. */
export function commentPages(em: EntityManager, parent: CommentParent, parents: readonly string[], page: Page) {
  return pagesOf<CommentRow & { parent: string; total: number }, ReviewCommentView>(
    em,
    COMMENT_COLUMNS,
    COMMENT_FROM,
    `c.${parent}`,
    'c.created_at, c.id',
    parents,
    page,
    commentOf,
  );
}

/** The threads of each pull request, a page each, oldest first. */
export function threadPages(em: EntityManager, pullRequestIds: readonly string[], page: Page) {
  return pagesOf<ThreadRow & { parent: string; total: number }, ReviewThreadView>(
    em,
    THREAD_COLUMNS,
    THREAD_FROM,
    't.pull_request_id',
    't.created_at, t.id',
    pullRequestIds,
    page,
    threadOf,
  );
}
