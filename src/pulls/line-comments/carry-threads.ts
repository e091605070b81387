import type { EntityManager } from '@mikro-orm/postgresql';
import type { DiffSide, HunksByDigest } from '../../git/diff-positions.js';
import { pullFileDiffs, type FileDiff } from '../../git/file-diff.js';
import type { RefListener } from '../../git/refs/ref-transaction.js';
import type { GitStorage } from '../../git/storage.js';
import type { Logger } from '../../logger.js';
import { atHead, digestedFiles } from './line-placement.js';

const BRANCH = 'refs/heads/';

/**
 * The most pull requests one push re-checks: each is one `git diff` inside the push's transaction.
 * More open pull requests sharing a pushed head branch (each with another base) than this, the
 * newest are re-checked; the others keep their threads as they were until a later push (logged).
 */
const MAX_PULLS_PER_PUSH = 20;

/** A current (not outdated) thread of an open pull request whose head moved, with where it is now. */
interface ThreadRow {
  id: string;
  pull_request_id: string;
  head_ref: string;
  base_ref: string;
  base_sha: string;
  path: string;
  side: DiffSide;
  start_side: DiffSide | null;
  line: number | null;
  hunk_digest: string;
  hunk_index: number;
  hunk_start_index: number;
  commit_id: string;
  /** How many pull requests had threads behind their new head (of which at most MAX_PULLS_PER_PUSH are read). */
  behind: number;
}

/** What a push does to a thread: carried to the new head (its lines where its hunk is now), or outdated. */
interface Carried {
  id: string;
  commit_id: string;
  line: number | null;
  start_line: number | null;
  outdated: boolean;
}

/**
 * Threads on lines follow their pull request's head, in the transaction that records the push
 * (registered after the pull requests followed their branches): when the head moves, each current
 * thread is looked for in the diff at the new head. Its hunk unchanged (the same lines, wherever
 * other changes moved them), the thread is carried there — `commit_id` the new head, `line` (and
 * `start_line`) where its lines are now. Its hunk changed or gone, it is outdated: `line` null, its
 * `original_*` kept. Bounded whatever the number of comments: per pull request, one diff of the
 * paths its threads are on (file-diff.ts), for at most MAX_PULLS_PER_PUSH pull requests, and one
 * statement writes every thread's outcome. A diff git cannot make within its bounds leaves the
 * threads as they were (logged): the push is recorded all the same.
 */
export function carryThreads(git: GitStorage, log: Logger): RefListener {
  return async (tx, change) => {
    const heads = change.changes.flatMap((update) => {
      const sha = update.ref.startsWith(BRANCH) ? change.refs.get(update.ref) : undefined;
      return sha ? [{ ref: update.ref.slice(BRANCH.length), sha }] : []; // a deleted head: the pull request closes
    });
    if (!heads.length) return;
    const rows = await tx.execute<ThreadRow[]>(
      `with heads as (select distinct ref, sha from jsonb_to_recordset(cast(? as text)::jsonb) as h(ref text, sha text)),
            behind as (
              select p.id, p.number, count(*) over () as behind
                from pull_requests p join heads h on h.ref = p.head_ref
               where p.repository_id = ? and p.state = 'open'
                 and exists (select 1 from review_threads t where t.pull_request_id = p.id and not t.outdated and t.commit_id <> h.sha)
               order by p.number desc
               limit ?)
       select t.id, t.pull_request_id, p.head_ref, p.base_ref, p.base_sha, t.path, t.side, t.start_side, t.line,
              t.hunk_digest, t.hunk_index, t.hunk_start_index, t.commit_id, b.behind::int as behind
         from behind b join pull_requests p on p.id = b.id join review_threads t on t.pull_request_id = p.id
        where not t.outdated
        order by b.number desc`,
      [JSON.stringify(heads), change.repository.id, MAX_PULLS_PER_PUSH],
    );
    if (!rows.length) return;
    if (rows[0]!.behind > MAX_PULLS_PER_PUSH) {
      log.warn(
        { repositoryId: change.repository.id, pullRequests: rows[0]!.behind, rechecked: MAX_PULLS_PER_PUSH },
        'review threads of the oldest pull requests on the pushed heads not carried: too many; they stay as they were until a later push',
      );
    }
    const dir = git.pathFor(change.repository.id);
    const byPull = new Map<string, ThreadRow[]>();
    for (const row of rows) byPull.set(row.pull_request_id, [...(byPull.get(row.pull_request_id) ?? []), row]);
    const carried: Carried[] = [];
    for (const threads of byPull.values()) {
      const { head_ref: headRef, base_ref: baseRef, base_sha: storedBase } = threads[0]!;
      const head = change.refs.get(`${BRANCH}${headRef}`)!;
      const moving = threads.filter((thread) => thread.commit_id !== head);
      if (!moving.length) continue;
      let files: Map<string, FileDiff>;
      try {
        const base = change.refs.get(`${BRANCH}${baseRef}`) ?? storedBase;
        files = await pullFileDiffs(dir, base, head, [...new Set(moving.map((thread) => thread.path))]);
      } catch (error) {
        log.warn(
          { err: error, repositoryId: change.repository.id, pullRequestId: threads[0]!.pull_request_id },
          'review threads not carried to the new head',
        );
        continue;
      }
      const hunksOf = digestedFiles(files);
      for (const thread of moving) carried.push(carry(thread, head, hunksOf(thread.path)));
    }
    await writeCarried(tx, carried);
  };
}

function carry(thread: ThreadRow, head: string, hunks: HunksByDigest | undefined): Carried {
  const anchor = {
    digest: thread.hunk_digest,
    index: thread.hunk_index,
    startIndex: thread.hunk_start_index,
    side: thread.side,
    startSide: thread.start_side,
    near: thread.line ?? 0,
  };
  const now = atHead(anchor, thread.commit_id, head, hunks);
  return { id: thread.id, commit_id: now.commitId, line: now.line, start_line: now.startLine, outdated: now.outdated };
}

/** Every thread's outcome in one statement. An outdated thread keeps the commit it was last current on (atHead). */
async function writeCarried(tx: EntityManager, carried: Carried[]): Promise<void> {
  if (!carried.length) return;
  await tx.execute(
    `update review_threads t
        set line = c.line, start_line = c.start_line, outdated = c.outdated, commit_id = c.commit_id
       from jsonb_to_recordset(?::jsonb) as c(id text, commit_id text, line integer, start_line integer, outdated boolean)
      where t.id = c.id`,
    [JSON.stringify(carried)],
  );
}
