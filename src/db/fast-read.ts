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
  return runPrepared<T>(em, clientOf(em.config, 'read'), sql, params);
}

/**
 * A prepared statement on one of postgres.js's connections, noted in the request's statement count.
 * postgres.js has no deadline of its own for a statement: past the ORM's, the caller gets pg's error
 * for the same case (answered 503, unavailable.ts), and the statement, if the database ever
 * answers, is left to finish unheard — as pg's `query_timeout` leaves it.
 */
export async function runPrepared<T>(em: EntityManager, client: postgres.Sql, sql: string, params: unknown[]): Promise<T[]> {
  noteStatement();
  const running = client.unsafe(numbered(sql), params as postgres.ParameterOrJSON<never>[], { prepare: true });
  const timeoutMs = statementTimeoutOf(em.config);
  const ran = timeoutMs ? await within(running, timeoutMs) : { late: false as const, value: await running };
  if (ran.late) throw new Error('Query read timeout');
  return ran.value as unknown as T[];
}

/** The ORM's deadline for one statement (orm.ts: CAIRN_DATABASE_TIMEOUT), which the reader keeps too. */
function statementTimeoutOf(config: EntityManager['config']): number | undefined {
  return (config.get('driverOptions') as { query_timeout?: number } | undefined)?.query_timeout;
}

/** Closes the postgres.js connections of an ORM's database; the service calls it before it closes the ORM. */
export async function closePreparedClients(orm: MikroORM): Promise<void> {
  const opened = clients.get(orm.config);
  clients.delete(orm.config);
  await Promise.all([...(opened?.values() ?? [])].map((client) => client.end({ timeout: 5 })));
}

/**
 * `read`: one connection carries every hot read of the process. Pipelining, not connection count,
 * keeps up with load: the reads a turn of the event loop issues leave in one write(2) and wake one
 * backend, which answers them back to back; spread over several connections the same reads take as
 * many writes and wake-ups. A single Node process cannot issue more simple reads than one backend
 * answers.
 *
 * `write`: the single statements that make a change and record its events (prepared-write.ts). They
 * run long beside a read and wait for their commit, so they have connections of their own, several,
 * as statements for different repositories run side by side.
 */
const CONNECTIONS = { read: 1, write: 8 } as const;

const clients = new WeakMap<object, Map<keyof typeof CONNECTIONS, postgres.Sql>>();

export function clientOf(config: EntityManager['config'], role: keyof typeof CONNECTIONS): postgres.Sql {
  let opened = clients.get(config);
  if (!opened) clients.set(config, (opened = new Map()));
  let client = opened.get(role);
  if (!client) {
    const url = config.get('clientUrl')!;
    // A Unix socket's directory is the URL's host, percent-encoded (as pg reads it); postgres.js takes it decoded.
    const host = decodeURIComponent(new URL(url).hostname);
    const timeoutMs = statementTimeoutOf(config);
    client = postgres(url, {
      max: CONNECTIONS[role],
      idle_timeout: 60,
      ...(timeoutMs ? { connect_timeout: Math.ceil(timeoutMs / 1000) } : {}),
      onnotice: () => undefined,
      ...(host.startsWith('/') ? { host } : {}),
      // A json or jsonb parameter given as text is that JSON's text, as pg takes it (the callers pass
      // `JSON.stringify(…)`, which either driver may run): postgres.js would encode it again, as a string.
      types: { json: { to: 114, from: [114, 3802], serialize: jsonText, parse: (text: string) => JSON.parse(text) as unknown } },
    });
    opened.set(role, client);
  }
  return client;
}

const jsonText = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

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
