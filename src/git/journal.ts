import type pg from 'pg';

/**
 * The push journal (`git_push_journal`, see push-journal.entity.ts), written
 * through the session that holds the repository's push lock, so each
 * statement commits at once: the row is durable before any ref may move.
 */

/** What `push` events list: commits new to the repository (pushes), or new to the branch each update moves (merges). */
export type CommitsNewTo = 'repository' | 'branch';

export interface JournalEntry {
  userId: string;
  /** What the writer said the change means (a merge names its pull request), handed to ref listeners on replay. */
  note: unknown;
  commitsNewTo: CommitsNewTo;
}

export async function interruptedPush(client: pg.ClientBase, repositoryId: string): Promise<JournalEntry | null> {
  const { rows } = await client.query<{ user_id: string; note: unknown; commits_new_to: CommitsNewTo | null }>(
    'select user_id, note, commits_new_to from git_push_journal where repository_id = $1',
    [repositoryId],
  );
  const row = rows[0];
  return row ? { userId: row.user_id, note: row.note ?? null, commitsNewTo: row.commits_new_to ?? 'repository' } : null;
}

export async function beginPush(client: pg.ClientBase, repositoryId: string, entry: JournalEntry): Promise<void> {
  await client.query(
    `insert into git_push_journal (repository_id, user_id, note, commits_new_to, started_at) values ($1, $2, $3, $4, now())
     on conflict (repository_id) do update
       set user_id = excluded.user_id, note = excluded.note, commits_new_to = excluded.commits_new_to, started_at = excluded.started_at`,
    [repositoryId, entry.userId, entry.note === null || entry.note === undefined ? null : JSON.stringify(entry.note), entry.commitsNewTo],
  );
}

/** Drops the entry of this change when it moved nothing (refused before any ref could move). */
export async function abandonPush(client: pg.ClientBase, repositoryId: string): Promise<void> {
  await client.query('delete from git_push_journal where repository_id = $1', [repositoryId]);
}
