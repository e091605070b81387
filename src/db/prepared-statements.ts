import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import postgres from 'postgres';
import { within } from '../deadline.js';
import { boundText } from './bound-query.js';
import { noteStatement } from './statement-count.js';

/**
 * The postgres.js connections of a process, beside the ORM's pg pool: prepared statements, for the
 * hot reads (fast-read.ts) and for the statements that make a change on their own (prepared-write.ts).
 */

/**
 * A prepared statement on one of postgres.js's connections of `role`, noted in the request's
 * statement count. postgres.js has no deadline of its own for a statement: past the ORM's, the
 * caller gets pg's error for the same case (answered 503, unavailable.ts). A late read is left to
 * finish unheard.
 *
 * A late write is cancelled, and its outcome heard before the caller is answered: a 503 must mean
 * the change did not happen, or a client that retries after it makes the change twice. One still
 * waiting for a connection never runs; one running (each write connection runs one statement at a
 * time, so the cancel reaches it and no other) is stopped, unless the lock it waited for came or its
 * commit began before the cancel did — then it landed, and the caller gets its answer, late. Only a
 * database that answers nothing within CANCEL_HEARD_MS (stalled) leaves the outcome unknown: 503.
 */
export async function runPrepared<T>(em: EntityManager, role: Role, sql: string, params: unknown[]): Promise<T[]> {
  const text = boundText(sql, params, texts);
  noteStatement();
  const running = clientOf(em.config, role).unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true });
  const timeoutMs = statementTimeoutOf(em.config);
  const ran = timeoutMs ? await within(running, timeoutMs) : { late: false as const, value: await running };
  if (!ran.late) return ran.value as unknown as T[];
  if (role === 'read') throw lateStatement();
  // Typed void, a promise at run time; one that could not be sent leaves the statement's outcome to say what happened.
  Promise.resolve(running.cancel() as unknown).catch(() => undefined);
  const outcome = await within(
    running.then(
      (rows) => ({ landed: true as const, rows }),
      (error: unknown) => ({ landed: false as const, error }),
    ),
    CANCEL_HEARD_MS,
  );
  if (outcome.late) throw lateStatement();
  if (outcome.value.landed) return outcome.value.rows as unknown as T[];
  throw (outcome.value.error as { code?: unknown }).code === CANCELLED ? lateStatement() : outcome.value.error;
}

/** How long a late write's outcome is waited for after its cancel: PostgreSQL answers one in milliseconds unless stalled. */
const CANCEL_HEARD_MS = 1_000;
/** SQLSTATE query_canceled: the cancel stopped the statement (or postgres.js dropped it from its queue). */
const CANCELLED = '57014';
/** pg's own error for a statement past its query_timeout, which unavailable.ts answers 503. */
const lateStatement = () => new Error('Query read timeout');

/** The ORM's deadline for one statement (orm.ts: CAIRN_DATABASE_TIMEOUT), which the reader keeps too. */
function statementTimeoutOf(config: EntityManager['config']): number | undefined {
  return (config.get('driverOptions') as { query_timeout?: number } | undefined)?.query_timeout;
}

/** Closes the postgres.js connections of an ORM's database; the service calls it before it closes the ORM. */
export async function closePreparedClients(orm: MikroORM): Promise<void> {
  const opened = clients.get(orm.config);
  clients.delete(orm.config);
  // Whatever writes or reads has stopped by now. A statement still open is one whose connection
  // dropped under it (postgres.js's end() would wait for it for ever): one second, then closed.
  await Promise.all([...(opened?.values() ?? [])].map((client) => client.end({ timeout: 1 })));
}

/**
 * `read`: one connection carries every hot read of the process. Pipelining, not connection count,
 * keeps up with load: the reads a turn of the event loop issues leave in one write(2) and wake one
 * backend, which answers them back to back; spread over several connections the same reads take as
 * many writes and wake-ups. A single Node process cannot issue more simple reads than one backend
 * answers.
 *
 * `write`: the single statements that make a change on their own (prepared-write.ts). They run
 * long beside a read, may wait on a row lock and wait for their commit, so they have connections of
 * their own, several, and one statement at a time on each (no pipelining): a statement waiting on a
 * lock must not hold up the unrelated ones queued behind it, a late one's cancel must reach it
 * alone, and postgres.js re-prepares a statement whose cached plan a schema change invalidated only
 * when nothing is pipelined behind it.
 */
const CONNECTIONS = { read: { max: 1, max_pipeline: 100 }, write: { max: 8, max_pipeline: 0 } } as const;
type Role = keyof typeof CONNECTIONS;

const clients = new WeakMap<object, Map<Role, postgres.Sql>>();

function clientOf(config: EntityManager['config'], role: Role): postgres.Sql {
  let opened = clients.get(config);
  if (!opened) clients.set(config, (opened = new Map()));
  let client = opened.get(role);
  if (!client) {
    const url = config.get('clientUrl')!;
    // A Unix socket's directory is the URL's host, percent-encoded (as pg reads it); postgres.js takes it decoded.
    const host = decodeURIComponent(new URL(url).hostname);
    const timeoutMs = statementTimeoutOf(config);
    client = postgres(url, {
      ...CONNECTIONS[role],
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

/** The numbered texts of the statements run so far (a fixed set). */
const texts = new Map<string, { text: string; count: number }>();
