import type pg from 'pg';

/**
 * The push journal (`git_push_journal`, see push-journal.entity.ts), written
 * through the session that holds the repository's push lock, so each
 * statement commits at once: the row is durable before git may move a ref.
 */
export async function interruptedPush(client: pg.ClientBase, repositoryId: string): Promise<{ userId: string } | null> {
  const { rows } = await client.query<{ user_id: string }>('select user_id from git_push_journal where repository_id = $1', [repositoryId]);
  return rows[0] ? { userId: rows[0].user_id } : null;
}

export async function beginPush(client: pg.ClientBase, repositoryId: string, userId: string): Promise<void> {
  await client.query(
    `insert into git_push_journal (repository_id, user_id, started_at) values ($1, $2, now())
     on conflict (repository_id) do update set user_id = excluded.user_id, started_at = excluded.started_at`,
    [repositoryId, userId],
  );
}
