import type { EntityManager } from '@mikro-orm/postgresql';
import type { DiffSide, HunksByDigest } from '../../git/diff-positions.js';
import { pullFileDiffs, type FileDiff } from '../../git/file-diff.js';
import type { RefListener } from '../../git/refs/ref-transaction.js';
import type { GitStorage } from '../../git/storage.js';
import type { Logger } from '../../logger.js';
import { atHead, digestedFiles } from './line-placement.js';

const BRANCH = 'refs/heads/';

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
 * paths its threads are on (file-diff.ts), and one statement writes every thread's outcome. A diff
 * git cannot make within its bounds leaves the threads as they were (logged): the push is recorded
 * all the same.
 */
export function carryThreads(git: GitStorage, log: Logger): RefListener {
  return async (tx, change) => {
    const heads = change.changes.filter((update) => update.ref.startsWith(BRANCH)).map((update) => update.ref.slice(BRANCH.length));
    if (!heads.length) return;
    const rows = await tx.execute<ThreadRow[]>(
      `select t.id, t.pull_request_id, p.head_ref, p.base_ref, p.base_sha, t.path, t.side, t.start_side, t.line,
              t.hunk_digest, t.hunk_index, t.hunk_start_index, t.commit_id
         from pull_requests p join review_threads t on t.pull_request_id = p.id
        where p.repository_id = ? and p.state = 'open' and p.head_ref = any(array(select jsonb_array_elements_text(cast(? as text)::jsonb))) and not t.outdated`,
      [change.repository.id, JSON.stringify(heads)],
    );
    if (!rows.length) return;
    const dir = git.pathFor(change.repository.id);
    const byPull = new Map<string, ThreadRow[]>();
    for (const row of rows) byPull.set(row.pull_request_id, [...(byPull.get(row.pull_request_id) ?? []), row]);
    const carried: Carried[] = [];
    for (const threads of byPull.values()) {
      const { head_ref: headRef, base_ref: baseRef, base_sha: storedBase } = threads[0]!;
      const head = change.refs.get(`${BRANCH}${headRef}`);
      if (!head) continue; // the head branch is gone: the pull request closes, its threads stay as they were
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
