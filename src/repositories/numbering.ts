import { randomInt } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../errors/domain-error.js';
import type { EventRecorder, RecordedChange } from '../events/event-recorder.js';

/*
 * A repository's counters live in a row of their own, `repository_counters`: the number sequence
 * that issues and pull requests share, and its open issues. Only numbering and issue state changes
 * lock it, so they never queue behind writers of the repository row (a push, an edit) nor those
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

/**
 * Next number of the sequence that issues and pull requests share.
 * Must run inside the transaction that inserts the numbered record: the
 * UPDATE takes the counters row's lock until commit, so concurrent
 * creators queue up (no duplicates) and a rolled-back insert gives its
 * number back (no gaps).
 */
export async function allocateNumber(em: EntityManager, repositoryId: string): Promise<number> {
  const rows = await em.execute<{ last_number: number }[]>(
    `update repository_counters set last_number = last_number + 1 where ${COUNTERS_OF} returning last_number`,
    [repositoryId],
  );
  if (!rows[0]) throw notFound('repository'); // deleted while this request ran
  return rows[0].last_number;
}

/**
 * Counts issues closed (-1) or reopened (+1), in the transaction that changes them. It locks the
 * counters row until commit, as numbering does: run it as the transaction's last statement.
 */
export async function countOpenIssues(em: EntityManager, repositoryId: string, delta: 1 | -1): Promise<void> {
  await em.execute('update repository_counters set open_issues = open_issues + ? where repository_id = ?', [delta, repositoryId]);
}

/** Tables of records numbered from the shared sequence, and what creating one adds to the other counters. */
type NumberedTable = 'issues';
const OPENS: Record<NumberedTable, string> = { issues: ', open_issues = open_issues + 1' };

/**
 * Creates a numbered record with ONE statement: it takes the repository's
 * next number, inserts `row` (every column of the table but `number`) with it, and
 * records the event `change` builds, with the event's listeners (webhook
 * deliveries). The number is taken last and held only while PostgreSQL runs
 * and commits that statement, so creators in one repository queue for about
 * a millisecond each instead of several round trips to a busy process
 * (`allocateNumber` holds it from its UPDATE to the commit). The statement is
 * one transaction: numbers stay gap-free and race-free, and a failed insert
 * gives its number back. `change` is called before the number exists, with a
 * stand-in the statement replaces by the number in the event's payload.
 * Returns the inserted row (as JSON); NOT_FOUND when the repository is gone.
 */
export async function createNumbered(
  em: EntityManager,
  events: EventRecorder,
  input: { table: NumberedTable; repositoryId: string; row: Record<string, unknown>; change: (number: number) => RecordedChange },
): Promise<Record<string, unknown>> {
  // Negative, as no number is, and unguessable, so no title or body can spell it ahead of time.
  const standIn = -randomInt(2 ** 47, 2 ** 48 - 1);
  const inserted = await events.recordInStatement(
    em,
    {
      // The row as JSON made into the table's row type: each value takes its column's type.
      ctes: `numbered as (update repository_counters set last_number = last_number + 1${OPENS[input.table]}
                          where ${COUNTERS_OF} returning last_number),
             created as (insert into ${input.table}
                         select (jsonb_populate_record(null::${input.table}, ?::jsonb || jsonb_build_object('number', n.last_number))).*
                           from numbered n
                         returning *)`,
      params: [input.repositoryId, JSON.stringify(input.row)],
      made: 'created',
    },
    input.change(standIn),
    { token: String(standIn), column: 'number' },
  );
  if (!inserted) throw notFound('repository'); // deleted while this request ran
  return inserted;
}
