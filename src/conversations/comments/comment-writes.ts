import type { EntityManager } from '@mikro-orm/postgresql';
import { GroupCommit } from '../../db/group-commit.js';
import type { EventRecorder, StatementEvent } from '../../events/event-recorder.js';
import { TABLE_OF, type ConversationTarget } from '../conversation-target.js';
import type { CommentRow } from './comment-reads.js';
import type { CommentRecord } from './comment.types.js';

/** A comment to write with its event, whose stand-in is the conversation's comment count. */
export interface Posting {
  em: EntityManager;
  events: EventRecorder;
  target: ConversationTarget;
  comment: CommentRecord;
  event: StatementEvent;
}

/** At most this many comments share one statement (its text carries their payloads). */
const MOST_AT_ONCE = 50;

/**
 * Comments on one conversation that arrive while a statement for it runs go together in the next
 * (GroupCommit): one round trip, one lock of the row and one commit for all of them.
 * Answers whether each was made.
 */
const together = new GroupCommit<Posting, boolean>(async (batch) => {
  const made = await insertComments(batch);
  return batch.map((posting) => made.has(posting.comment.id));
}, MOST_AT_ONCE);

/** Writes the comment, the count and the event; false when the repository is gone. Inside a caller's transaction it goes alone, at once. */
export async function insertComment(posting: Posting): Promise<boolean> {
  if (posting.em.isInTransaction()) return (await insertComments([posting])).has(posting.comment.id);
  return together.add(`${posting.target.kind}:${posting.target.id}`, posting);
}

/**
 * ONE statement, its own transaction: the (or pull request's) count goes up by the batch,
 * the comments are inserted, and their events recorded, each with the count as it was after its
 * own comment (the stand-in's value). Locks come in the order a repository's deletion takes them
 * (its pull requests' rows, then its own row, then its issues' rows by cascade): an issue's comment
 * takes the repository's KEY SHARE lock first, as the foreign key takes it anyway; a pull
 * request's takes its row first, and the repository's lock only with the foreign key at the end of
 * the statement. A repository deleted meanwhile makes nothing.
 */
function insertComments(batch: Posting[]) {
  const first = batch[0]!;
  const rows = batch.map(({ comment }, i) => ({
    id: comment.id,
    position: i + 1,
    user_id: comment.user.id,
    body: comment.body,
    created_at: comment.createdAt.toISOString(),
    updated_at: comment.updatedAt.toISOString(),
  }));
  return first.events.recordInStatement(
    first.em,
    {
      ctes: `posted as (
               select * from jsonb_to_recordset(?::jsonb)
                 as t(id text, position int, user_id text, body text, created_at timestamptz, updated_at timestamptz)),
             counted as (
               update ${TABLE_OF[first.target.kind]} set comments = comments + (select count(*)::int from posted)
                where id = ?${first.target.kind === 'issue' ? ' and repository_id = (select r.id from repositories r where r.id = ? for key share)' : ''}
               returning repository_id, number, comments),
             created as (
               insert into issue_comments (id, repository_id, number, user_id, body, created_at, updated_at)
               select p.id, c.repository_id, c.number, p.user_id, p.body, p.created_at, p.updated_at from posted p, counted c
               returning id),
             made as (
               select p.id, c.comments - (select count(*)::int from posted) + p.position as comment_count
                 from created m join posted p on p.id = m.id, counted c)`,
      params: [JSON.stringify(rows), first.target.id, ...(first.target.kind === 'issue' ? [first.target.repository.id] : [])],
      made: 'made',
      key: 'id',
      value: 'comment_count',
    },
    batch.map((posting) => posting.event),
  );
}

/** The body of a comment replaced, on its locked row: the row after, with the body before; null when there is no such comment. */
export async function replaceBody(
  tx: EntityManager,
  repositoryId: string,
  id: string,
  body: string,
  at: Date,
): Promise<(CommentRow & { old_body: string }) | null> {
  const [row] = await tx.execute<Array<CommentRow & { old_body: string }>>(
    `update issue_comments c set body = ?, updated_at = ?
       from (select id, body from issue_comments where id = ? and repository_id = ? for update) old
      where c.id = old.id
     returning c.id, c.body, c.user_id, (select login from users where id = c.user_id) as user_login,
               c.number, c.created_at, c.updated_at, old.body as old_body`,
    [body, at.toISOString(), id, repositoryId],
  );
  return row ?? null;
}

/** Deletes a comment; its row as it was, or null when there is no such comment (a concurrent delete took it). */
export async function deleteRow(tx: EntityManager, repositoryId: string, id: string): Promise<CommentRow | null> {
  const [row] = await tx.execute<CommentRow[]>(
    `delete from issue_comments c where c.id = ? and c.repository_id = ?
     returning c.id, c.body, c.user_id, (select login from users where id = c.user_id) as user_login, c.number, c.created_at, c.updated_at`,
    [id, repositoryId],
  );
  return row ?? null;
}

/** Counts a comment removed from its conversation, in the transaction that removes it; the count after. */
export async function countRemoved(tx: EntityManager, target: ConversationTarget): Promise<number> {
  const [row] = await tx.execute<Array<{ comments: number }>>(
    `update ${TABLE_OF[target.kind]} set comments = comments - 1 where id = ? returning comments`,
    [target.id],
  );
  return row?.comments ?? 0;
}
