import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import postgres from 'postgres';
import { SharedSlots } from '../concurrency/slots.js';
import { within } from '../deadline.js';
import { boundText } from './bound-query.js';
import { noteStatement } from './statement-count.js';

/**
 * The postgres.js connections of a process, beside the ORM's pg pool: prepared statements, for the
 * hot reads (fast-read.ts) and for the statements that make a change on their own (prepared-write.ts).
 */

/**
 * A prepared statement on one of postgres.js's connections of `role`, noted in the request's
 * statement count. Past the ORM's deadline for a statement the caller gets pg's error for the same
 * case (answered 503, unavailable.ts). A late read is left to finish unheard.
 *
 * A write is answered 503 only when it did not happen, or a client that retries after the 503
 * makes the change twice. So no write is cancelled from here (a cancel request races the statement:
 * it may arrive after the lock it waited for came, or reach the connection's next statement).
 * PostgreSQL stops a write itself at the deadline (the write connections' `statement_timeout`), and
 * the caller gets its outcome: its rows, or 503 if it was stopped. A write is handed to postgres.js
 * only with a connection free for it (`turns`, as many as the connections): one that waits for a turn past the deadline was
 * never sent, and is answered 503 at once. The outcome is unknown (answered 503 all the same) only
 * when the database answers nothing within OUTCOME_GRACE_MS of the deadline (stalled, or slow to
 * connect) or the connection is lost under the statement (a restart, a failover). A write waits
 * for a turn, then for PostgreSQL: about two deadlines at most, beside what its caller waited before
 * (a group commit's batch ahead of it).
 */
export async function runPrepared<T>(em: EntityManager, role: Role, sql: string, params: unknown[]): Promise<T[]> {
  const text = boundText(sql, params, texts);
  noteStatement();
  const { client, turns } = connectionsOf(em.config, role);
  const timeoutMs = statementTimeoutOf(em.config);
  const run = () => client.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true });
  if (!timeoutMs) return (await run()) as unknown as T[];
  if (!turns) {
    const ran = await within(run(), timeoutMs);
    if (ran.late) throw lateStatement();
    return ran.value as unknown as T[];
  }
  const release = await turns.acquire([], AbortSignal.timeout(timeoutMs));
  if (!release) throw lateStatement(); // never handed to postgres.js: it cannot land
  let running: ReturnType<typeof run>;
  try {
    running = run();
  } catch (error) {
    release();
    throw error;
  }
  running.then(release, release);
  try {
    const outcome = await within(running, timeoutMs + OUTCOME_GRACE_MS);
    if (outcome.late) throw lateStatement();
    return outcome.value as unknown as T[];
  } catch (error) {
    throw (error as { code?: unknown }).code === STOPPED_AT_DEADLINE ? lateStatement() : error;
  }
}

/** How long after the deadline a write's outcome is waited for: PostgreSQL reports one it stopped in milliseconds, unless stalled. */
const OUTCOME_GRACE_MS = 1_000;
/** SQLSTATE query_canceled: PostgreSQL stopped the statement at its `statement_timeout`; nothing of it happened. */
const STOPPED_AT_DEADLINE = '57014';
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
  await Promise.all([...(opened?.values() ?? [])].map(({ client }) => client.end({ timeout: 1 })));
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
 * lock must not hold up the unrelated ones queued behind it, and postgres.js re-prepares a
 * statement whose cached plan a schema change invalidated only when nothing is pipelined behind it.
 * PostgreSQL stops each at the deadline itself (`statement_timeout`, see runPrepared).
 */
const CONNECTIONS = { read: { max: 1, max_pipeline: 100 }, write: { max: 8, max_pipeline: 0 } } as const;
type Role = keyof typeof CONNECTIONS;

/**
 * A role's postgres.js client, and for writes its turns: a statement is handed to postgres.js only
 * when a connection is free for it, so none waits in postgres.js's own queue, where it could no
 * longer be taken back.
 */
interface Connections {
  client: postgres.Sql;
  turns: SharedSlots | null;
}

const clients = new WeakMap<object, Map<Role, Connections>>();

function connectionsOf(config: EntityManager['config'], role: Role): Connections {
  let opened = clients.get(config);
  if (!opened) clients.set(config, (opened = new Map()));
  let connections = opened.get(role);
  if (!connections) {
    const url = config.get('clientUrl')!;
    // A Unix socket's directory is the URL's host, percent-encoded (as pg reads it); postgres.js takes it decoded.
    const host = decodeURIComponent(new URL(url).hostname);
    const timeoutMs = statementTimeoutOf(config);
    // postgres.js is patched (patches/, applied by `npm ci`): unpatched, a connection whose socket
    // closed carried a buffered statement or a half-read result over to its next socket, and could
    // then never connect again or answered wrong rows (docs/development.md, test/database-driver.test.ts).
    const client = postgres(url, {
      ...CONNECTIONS[role],
      ...(timeoutMs ? { connect_timeout: Math.ceil(timeoutMs / 1000) } : {}),
      // Write connections stay open once opened (no idle end, no lifetime): a connection ending or
      // reopening is a moment when postgres.js would queue a statement where the turns cannot see it.
      // Its catalog query at connect (array types) would run under the statement_timeout, and
      // postgres.js leaves that query's failure unhandled: the writes bind and return no arrays.
      ...(role === 'write'
        ? {
            idle_timeout: 0,
            max_lifetime: null,
            fetch_types: false,
            ...(timeoutMs ? { connection: { statement_timeout: timeoutMs } } : {}),
          }
        : { idle_timeout: 60 }),
      onnotice: () => undefined,
      ...(host.startsWith('/') ? { host } : {}),
      // A json or jsonb parameter given as text is that JSON's text, as pg takes it (the callers pass
      // `JSON.stringify(…)`, which either driver may run): postgres.js would encode it again, as a string.
      types: { json: { to: 114, from: [114, 3802], serialize: jsonText, parse: (text: string) => JSON.parse(text) as unknown } },
    });
    connections = { client, turns: role === 'write' ? new SharedSlots(CONNECTIONS.write.max) : null };
    opened.set(role, connections);
  }
  return connections;
}

const jsonText = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

/** The numbered texts of the statements run so far (a fixed set). */
const texts = new Map<string, { text: string; count: number }>();
