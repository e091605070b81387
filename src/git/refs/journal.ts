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
  /** A push's options and certificate: the name of the file in the repository's directory its pre-receive hook writes. */
  pushDetails: string | null;
}

export interface InterruptedEntry extends JournalEntry {
  /** Attempts to describe the change that began and never finished: each took its process down. */
  describeAttempts: number;
}

export async function interruptedPush(client: pg.ClientBase, repositoryId: string): Promise<InterruptedEntry | null> {
  const { rows } = await client.query<{
    user_id: string;
    note: unknown;
    commits_new_to: CommitsNewTo | null;
    push_details: string | null;
    describe_attempts: number;
  }>('select user_id, note, commits_new_to, push_details, describe_attempts from git_push_journal where repository_id = $1', [
    repositoryId,
  ]);
  const row = rows[0];
  if (!row) return null;
  return {
    userId: row.user_id,
    note: row.note ?? null,
    commitsNewTo: row.commits_new_to ?? 'repository',
    pushDetails: row.push_details,
    describeAttempts: row.describe_attempts,
  };
}

/**
 * Counts an attempt to describe the repository's ref changes, committed before it begins: if the
 * process dies in it (a description past every bound of memory), the next attempt knows. A change
 * found without a journal entry (refs moved outside the service) gets one, crediting `userId`.
 * The entry goes when the changes are recorded.
 */
async function beginDescribing(client: pg.ClientBase, repositoryId: string, userId: string): Promise<void> {
  await client.query(
    `insert into git_push_journal (repository_id, user_id, started_at, describe_attempts) values ($1, $2, now(), 1)
     on conflict (repository_id) do update set describe_attempts = git_push_journal.describe_attempts + 1`,
    [repositoryId, userId],
  );
}

export async function beginPush(client: pg.ClientBase, repositoryId: string, entry: JournalEntry): Promise<void> {
  await client.query(
    `insert into git_push_journal (repository_id, user_id, note, commits_new_to, push_details, started_at) values ($1, $2, $3, $4, $5, now())
     on conflict (repository_id) do update
       set user_id = excluded.user_id, note = excluded.note, commits_new_to = excluded.commits_new_to,
           push_details = excluded.push_details, started_at = excluded.started_at, describe_attempts = 0`,
    [
      repositoryId,
      entry.userId,
      entry.note === null || entry.note === undefined ? null : JSON.stringify(entry.note),
      entry.commitsNewTo,
      entry.pushDetails,
    ],
  );
}

/** An attempt to describe the changes failed in a way the process survived: not the kind the count is for. */
async function endDescribing(client: pg.ClientBase, repositoryId: string): Promise<void> {
  await client.query('update git_push_journal set describe_attempts = greatest(describe_attempts - 1, 0) where repository_id = $1', [
    repositoryId,
  ]);
}

/**
 * One attempt to record a repository's ref changes, counted in the journal (through the session
 * holding the repository's lock, so each count commits at once) from the moment it starts on what a
 * push's content drives — describing the changes, serialising and writing their events — until it
 * commits, which drops the entry, or fails in a way the process survives, which takes it off the
 * count. An attempt the process died in stays counted, for the next one to see.
 */
export class RecordingAttempt {
  private counted = false;

  constructor(
    private readonly client: pg.ClientBase | null,
    private readonly repositoryId: string,
  ) {}

  /** Counts the attempt (once), crediting `userId` if the changes have no entry yet. */
  async describing(userId: string): Promise<void> {
    if (!this.client || this.counted) return;
    await beginDescribing(this.client, this.repositoryId, userId);
    this.counted = true;
  }

  async failed(): Promise<void> {
    if (this.client && this.counted) await endDescribing(this.client, this.repositoryId).catch(() => undefined);
  }
}

/** Drops the entry of this change when it moved nothing (refused before any ref could move). */
export async function abandonPush(client: pg.ClientBase, repositoryId: string): Promise<void> {
  await client.query('delete from git_push_journal where repository_id = $1', [repositoryId]);
}
