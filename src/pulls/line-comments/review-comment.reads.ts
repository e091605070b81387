import type { EntityManager } from '@mikro-orm/postgresql';
import { asDate, fastRead } from '../../db/fast-read.js';
import type { DiffSide } from '../../git/diff-positions.js';
import { connection, type Connection, type Page } from '../../graphql/pagination.js';
import { ReviewCommentView, ReviewThreadView } from './review-comment.view.js';

/**
 * Reading comments on lines and their threads as views, never hydrated: a comment is read with its
 * thread's place and its author's login in one statement. The nested lists of a page (the comments
 * of 30 threads, the threads of 30 pull requests) are read for all their parents in ONE statement,
 * a lateral page per parent (`pagesOf`).
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

/** Where the rows of a list are: the columns read, the joined tables, the table counted, the parent column, the order. */
interface Listed {
  select: string;
  from: string;
  /** `from`'s first table, with its alias: the total is counted on it alone. */
  table: string;
  /** The parent column, qualified by `table`'s alias. */
  parent: string;
  /** The order of an index that starts with `parent`, qualified. */
  order: string;
}

/**
 * A page of each parent's rows, oldest first, and each parent's total, in ONE statement: per parent,
 * a lateral `limit/offset` read in its index's order (a page costs its offset and limit, whatever
 * the number of rows the parent has) and a count on the bare table (an index-only count).
 * `childPages` (db/child-pages.ts) has the same shape but pages `select *` of one table: a comment's
 * view needs its thread's place and its author's login, read here in the same lateral.
 */
async function pagesOf<R extends object, V>(
  em: EntityManager,
  listed: Listed,
  parents: readonly string[],
  page: Page,
  view: (row: R) => V,
): Promise<Array<Connection<V>>> {
  const { select, from, table, parent, order } = listed;
  const rows = await fastRead<R & { parent_key: string; parent_total: number; child_present: boolean }>(
    em,
    `select p.key as parent_key, n.total as parent_total, r.id is not null as child_present, r.*
       from jsonb_array_elements_text(cast(? as text)::jsonb) with ordinality as p(key, position)
       cross join lateral (select count(*)::int as total from ${table} where ${parent} = p.key) n
       left join lateral (
         select ${select}, row_number() over (order by ${order}) as position_in_parent
           from ${from} where ${parent} = p.key order by ${order} limit ? offset ?) r on true
      order by p.position, r.position_in_parent`,
    [JSON.stringify(parents), page.limit, page.offset],
  );
  const byParent = new Map(parents.map((key) => [key, { nodes: [] as V[], total: 0 }]));
  for (const row of rows) {
    const entry = byParent.get(row.parent_key)!;
    entry.total = row.parent_total;
    if (row.child_present) entry.nodes.push(view(row));
  }
  return parents.map((key) => {
    const entry = byParent.get(key)!;
    return connection(entry.nodes, entry.total, page);
  });
}

/** The comments of each parent, a page each, oldest first. */
export function commentPages(em: EntityManager, parent: CommentParent, parents: readonly string[], page: Page) {
  const listed = {
    select: COMMENT_COLUMNS,
    from: COMMENT_FROM,
    table: 'pull_request_review_comments c',
    parent: `c.${parent}`,
    order: 'c.created_at, c.id',
  };
  return pagesOf<CommentRow, ReviewCommentView>(em, listed, parents, page, commentOf);
}

/** The threads of each pull request, a page each, oldest first. */
export function threadPages(em: EntityManager, pullRequestIds: readonly string[], page: Page) {
  const listed = {
    select: THREAD_COLUMNS,
    from: THREAD_FROM,
    table: 'review_threads t',
    parent: 't.pull_request_id',
    order: 't.created_at, t.id',
  };
  return pagesOf<ThreadRow, ReviewThreadView>(em, listed, pullRequestIds, page, threadOf);
}
