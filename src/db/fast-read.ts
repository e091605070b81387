import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import postgres from 'postgres';
import { within } from '../deadline.js';
import { numberedPlaceholders } from './bound-query.js';
import { noteStatement } from './statement-count.js';

/**
 * Reads on the hot path (a repository with its owner and counts, nearly every request's first
 * statement; a page of pull requests) go through postgres.js rather than the ORM's pg pool. It
 * prepares each statement once and pipelines: the requests in flight share one connection, each
 * sending its statement without waiting for the one before to answer. With
 * pg, one statement per connection at a time, every read wakes a PostgreSQL backend of its own
 * and pays for the wake-up on both sides; pipelined, the wake-ups are shared (`npm run bench:api`
 * measures the difference).
 *
 * Outside a transaction both drivers read what is committed: the same answer. No caller reads
 * inside one today; should one, the read goes through the entity manager, on the transaction's own
 * connection, so it sees the transaction's writes.
 *
 * `sql` uses `?` placeholders (in the order of `params`), like `em.execute`; it must not use
 * PostgreSQL's `?` jsonb operators. Each distinct text is prepared on every connection that runs
 * it, so the texts must be a fixed set (never built from values). Rows come back as pg gives
 * them: columns by name, timestamps as Dates, json parsed, int8 as strings.
 */
export async function fastRead<T extends object>(em: EntityManager, sql: string, params: unknown[]): Promise<T[]> {
  if (em.isInTransaction()) return em.execute<T[]>(sql, params);
  noteStatement();
  const reading = readerOf(em.config).unsafe(numbered(sql), params as postgres.ParameterOrJSON<never>[], { prepare: true });
  const timeoutMs = statementTimeoutOf(em.config);
  const read = timeoutMs ? await within(reading, timeoutMs) : { late: false as const, value: await reading };
  // postgres.js has no deadline of its own for a statement: past it the caller gets pg's error for
  // the same case (answered 503, unavailable.ts), and the read, if the database ever answers, is dropped.
  if (read.late) throw new Error('Query read timeout');
  return read.value as unknown as T[];
}

/** The ORM's deadline for one statement (orm.ts: CAIRN_DATABASE_TIMEOUT), which the reader keeps too. */
function statementTimeoutOf(config: EntityManager['config']): number | undefined {
  return (config.get('driverOptions') as { query_timeout?: number } | undefined)?.query_timeout;
}

/** Closes the readers of an ORM's database; the service calls it before it closes the ORM. */
export async function closeFastReads(orm: MikroORM): Promise<void> {
  const reader = readers.get(orm.config);
  readers.delete(orm.config);
  await reader?.end({ timeout: 5 });
}

/**
 * One connection carries every hot read of the process. Pipelining, not connection count, keeps up
 * with load: the reads a turn of the event loop issues leave in one write(2) and wake one backend,
 * which answers them back to back; spread over several connections the same reads take as many
 * writes and wake-ups. A single Node process cannot issue more simple reads than one backend
 * answers.
 */
const READER_CONNECTIONS = 1;

const readers = new WeakMap<object, postgres.Sql>();

function readerOf(config: EntityManager['config']): postgres.Sql {
  let reader = readers.get(config);
  if (!reader) {
    const url = config.get('clientUrl')!;
    // A Unix socket's directory is the URL's host, percent-encoded (as pg reads it); postgres.js takes it decoded.
    const host = decodeURIComponent(new URL(url).hostname);
    const timeoutMs = statementTimeoutOf(config);
    reader = postgres(url, {
      max: READER_CONNECTIONS,
      idle_timeout: 60,
      ...(timeoutMs ? { connect_timeout: Math.ceil(timeoutMs / 1000) } : {}),
      onnotice: () => undefined,
      ...(host.startsWith('/') ? { host } : {}),
    });
    readers.set(config, reader);
  }
  return reader;
}

const texts = new Map<string, string>();

/** numberedPlaceholders, memoised: the texts are a fixed set. */
function numbered(sql: string): string {
  let text = texts.get(sql);
  if (text === undefined) {
    text = numberedPlaceholders(sql).text;
    texts.set(sql, text);
  }
  return text;
}

/** A timestamp as a row may hold it (a Date, or the text a driver left it as). */
export const asDate = (value: string | Date): Date => (value instanceof Date ? value : new Date(value));
