import { randomInt } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../errors/domain-error.js';
import type { EventRecorder, RecordedChange } from '../events/event-recorder.js';

/**
 * Next number of the sequence that issues and pull requests share.
 * Must run inside the transaction that inserts the numbered record: the
 * UPDATE takes the repository row's lock until commit, so concurrent
 * creators queue up (no duplicates) and a rolled-back insert gives its
 * number back (no gaps).
 */
export async function allocateNumber(em: EntityManager, repositoryId: string): Promise<number> {
  const rows = await em.execute<{ last_number: number }[]>(
    'update repositories set last_number = last_number + 1 where id = ? returning last_number',
    [repositoryId],
  );
  if (!rows[0]) throw notFound('repository'); // deleted while this request ran
  return rows[0].last_number;
}

/** Tables of records numbered from the shared sequence. */
type NumberedTable = 'issues';

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
      ctes: `numbered as (update repositories set last_number = last_number + 1 where id = ? returning last_number),
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
