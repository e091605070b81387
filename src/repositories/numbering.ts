import { randomInt } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { GroupCommit } from '../db/group-commit.js';
import { notFound } from '../errors/domain-error.js';
import type { EventRecorder, RecordedChange } from '../events/event-recorder.js';

/*
 * A repository's counters live in a row of their own, `repository_counters`: the number sequence
 * that issues and pull requests share, its open issues and its open pull requests. Only numbering
 * and state changes lock it, so they never queue behind writers of the repository row (a push, an edit) nor those
 * behind them. Numbering first takes the repository row's weakest lock (KEY SHARE, which the
 * numbered record's foreign key takes anyway, and which only deleting the repository or locking it
 * whole conflicts with): locks are then always taken repository first, counters after, as deleting
 * a repository takes them, so the two cannot deadlock.
 */

/** The counters row of repository `?`, after its KEY SHARE lock (see above). */
const COUNTERS_OF = 'repository_id = (select r.id from repositories r where r.id = ? for key share)';

/** A new repository's counters, in the transaction that creates it. */
export async function createCounters(em: EntityManager, repositoryId: string): Promise<void> {
  await em.execute('insert into repository_counters (repository_id) values (?)', [repositoryId]);
}

/** The counters of open records, one per numbered kind. */
export type OpenCounter = 'open_issues' | 'open_pulls';

/**
 * Next number of the sequence that issues and pull requests share, for a record created open (it
 * counts in `opened`). Must run inside the transaction that inserts the numbered record: the
 * UPDATE takes the counters row's lock until commit, so concurrent creators queue up (no
 * duplicates) and a rolled-back insert gives its number back (no gaps).
 */
export async function allocateNumber(em: EntityManager, repositoryId: string, opened: OpenCounter): Promise<number> {
  const rows = await em.execute<{ last_number: number }[]>(
    `update repository_counters set last_number = last_number + 1, ${opened} = ${opened} + 1 where ${COUNTERS_OF} returning last_number`,
    [repositoryId],
  );
  if (!rows[0]) throw notFound('repository'); // deleted while this request ran
  return rows[0].last_number;
}

/**
 * Counts records closed or merged (negative) or reopened (positive), in the transaction that
 * changes them. It locks the counters row until commit, as numbering does: run it as the
 * transaction's last statement.
 */
export async function countOpen(em: EntityManager, repositoryId: string, counter: OpenCounter, delta: number): Promise<void> {
  if (delta === 0) return;
  await em.execute(`update repository_counters set ${counter} = ${counter} + ? where repository_id = ?`, [delta, repositoryId]);
}

/** Tables of records numbered from the shared sequence, and what creating one adds to the other counters. */
type NumberedTable = 'issues';
const OPENS: Record<NumberedTable, string> = { issues: 'open_issues = open_issues + k.n' };

/** A record to number, insert and record; `row` holds every column of its table but `number`. */
interface Creation {
  em: EntityManager;
  row: { id: string } & Record<string, unknown>;
  change: (number: number) => RecordedChange;
}

/** At most this many creations share one statement (its text carries their payloads). */
const MOST_AT_ONCE = 50;

/** One creation as the group commit queues it: the statement for a batch needs its table, repository and recorder. */
interface Queued {
  events: EventRecorder;
  table: NumberedTable;
  repositoryId: string;
  creation: Creation;
}

/** Creations of one repository go together, queued by table and repository; an undefined answer: the repository is gone. */
const together = new GroupCommit<Queued, Record<string, unknown> | undefined>(async (batch) => {
  const { events, table, repositoryId } = batch[0]!;
  const rows = await insertNumbered(
    events,
    table,
    repositoryId,
    batch.map((queued) => queued.creation),
  );
  return batch.map((queued) => rows.get(queued.creation.row.id));
}, MOST_AT_ONCE);

/**
 * Creates a numbered record: it takes the repository's next number, inserts
 * the record with it, and records the event `change` builds, with the event's
 * listeners (webhook deliveries) — all in ONE statement that is its own
 * transaction, so the counters row is locked only while PostgreSQL runs and
 * commits it (`allocateNumber` holds it from its UPDATE across every round
 * trip to the commit). Numbers stay gap-free and race-free, and a failed
 * statement gives its numbers back.
 *
 * Creations that arrive in this process while a statement for the same
 * repository runs wait for it and then go together in the next one
 * (GroupCommit), numbered in arrival order; should that statement fail, each
 * is retried alone (all answered 503 at once if the database failed it, as
 * one late at a lock). Inside a caller's transaction, a creation goes alone at
 * once (its locks last until that transaction ends).
 *
 * `change` is called before the number exists, with a stand-in that the
 * statement replaces by the number in the event's payload. Returns the
 * inserted row (as JSON); NOT_FOUND when the repository is gone.
 */
export async function createNumbered(
  em: EntityManager,
  events: EventRecorder,
  input: { table: NumberedTable; repositoryId: string } & Omit<Creation, 'em'>,
): Promise<Record<string, unknown>> {
  const { table, repositoryId } = input;
  const creation = { em, row: input.row, change: input.change };
  const row = em.isInTransaction()
    ? (await insertNumbered(events, table, repositoryId, [creation])).get(creation.row.id)
    : await together.add(`${table}:${repositoryId}`, { events, table, repositoryId, creation });
  if (!row) throw notFound('repository'); // deleted while this request ran
  return row;
}

/**
 * The statement: `k` numbers taken at once, the records inserted with them in the order given
 * (each row as JSON made into the table's row type, so each value takes its column's type), and
 * their events recorded. Returns the inserted rows by id.
 */
function insertNumbered(events: EventRecorder, table: NumberedTable, repositoryId: string, creations: Creation[]) {
  const recorded = creations.map((creation) => {
    // Negative, as no number is, and unguessable, so no title or body can spell it ahead of time.
    const standIn = -randomInt(2 ** 47, 2 ** 48 - 1);
    return { key: creation.row.id, change: creation.change(standIn), standIn: String(standIn) };
  });
  return events.recordInStatement(
    creations[0]!.em,
    {
      ctes: `k as (select ?::int as n),
             numbered as (update repository_counters set last_number = last_number + k.n, ${OPENS[table]}
                            from k where ${COUNTERS_OF} returning last_number - k.n as before),
             created as (insert into ${table}
                         select (jsonb_populate_record(null::${table}, r.value || jsonb_build_object('number', n.before + r.position))).*
                           from numbered n, jsonb_array_elements(?::jsonb) with ordinality as r(value, position)
                         returning *)`,
      params: [creations.length, repositoryId, JSON.stringify(creations.map((creation) => creation.row))],
      made: 'created',
      key: 'id',
      value: 'number',
    },
    recorded,
  );
}
