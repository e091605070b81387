import { DomainError } from './domain-error.js';

/** What a client is told to wait before asking again while the database is away. */
const RETRY_AFTER_SECONDS = 5;

export const databaseUnavailable = () =>
  new DomainError('UNAVAILABLE', 'the database is unavailable for the moment; try again shortly', [], RETRY_AFTER_SECONDS);

/**
 * PostgreSQL's SQLSTATEs of a database that is going or gone: class 08 (connection exception),
 * 57P01–57P03 (terminated by an administrator, a crash shutdown, cannot connect now), 53300 (too
 * many connections).
 */
const UNAVAILABLE_STATES = /^(08...|57P0[123]|53300)$/;
/** The drivers' own words for a connection that broke or never formed (pg, postgres.js, pg-pool). */
const UNAVAILABLE_MESSAGES =
  /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Client was closed|CONNECTION_(CLOSED|ENDED|DESTROYED)|terminating connection/;
const UNAVAILABLE_SYSCALLS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

/**
 * The database could not be reached, or dropped the connection mid-statement (a restart, a
 * failover, a killed backend): not the request's fault nor a bug, so not a 500 — 503 with
 * `Retry-After`, which clients retry. Null for every other error.
 */
export function unavailableOf(error: unknown): DomainError | null {
  for (let cause = error, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    const e = cause as { code?: unknown; message?: unknown; syscall?: unknown };
    const matches =
      (typeof e.code === 'string' && (UNAVAILABLE_STATES.test(e.code) || (UNAVAILABLE_SYSCALLS.has(e.code) && e.syscall === 'connect'))) ||
      (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message));
    if (matches) return databaseUnavailable();
  }
  return null;
}
