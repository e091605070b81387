import type { EntityManager } from '@mikro-orm/postgresql';
import { runPrepared } from './prepared-statements.js';
import { readKey, SameTurnReads } from './same-turn-reads.js';

/**
 * Reads on the hot path (a repository with its owner and counts, nearly every request's first
 * statement; a page of pull requests) go through postgres.js rather than the ORM's pg pool. It
 * prepares each statement once and pipelines: the requests in flight share one connection, each
 * sending its statement without waiting for the one before to answer. With
 * pg, one statement per connection at a time, every read wakes a PostgreSQL backend of its own
 * and pays for the wake-up on both sides; pipelined, the wake-ups are shared (`npm run bench:api`
 * measures the difference). Identical reads asked for in one turn of the event loop are one
 * statement (same-turn-reads.ts): a busy repository's requests all start by reading it.
 *
 * Outside a transaction both drivers read what is committed: the same answer. No caller reads
 * inside one today; should one, the read goes through the entity manager, on the transaction's own
 * connection, so it sees the transaction's writes.
 *
 * `sql` uses `?` placeholders (in the order of `params`), like `em.execute`; it must not use
 * PostgreSQL's `?` jsonb operators. Each distinct text is prepared on every connection that runs
 * it, so the texts must be a fixed set (never built from values). Rows come back as pg gives
 * them: columns by name, timestamps as Dates, json parsed, int8 as strings. Each caller's rows are
 * its own, unless it passes `onlyReads`: a promise to change neither the rows nor anything in them,
 * which lets callers making it share one set of rows (same-turn-reads.ts).
 */
export async function fastRead<T extends object>(em: EntityManager, sql: string, params: unknown[], onlyReads = false): Promise<T[]> {
  if (em.isInTransaction()) return em.execute<T[]>(sql, params);
  const send = () => runPrepared<T>(em, 'read', sql, params);
  const key = readKey(sql, params);
  if (key === null) return send();
  let reads = sameTurn.get(em.config);
  if (!reads) sameTurn.set(em.config, (reads = new SameTurnReads()));
  return reads.ask(key, send, onlyReads);
}

/** The reads waiting for the next turn, per database (an ORM's configuration, as its connections are). */
const sameTurn = new WeakMap<object, SameTurnReads>();

/** A timestamp as a row may hold it (a Date, or the text a driver left it as). */
export const asDate = (value: string | Date): Date => (value instanceof Date ? value : new Date(value));
