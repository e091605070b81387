import { throttledLog, type Logger } from '../logger.js';
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
  /Query read timeout|Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Client was closed|CONNECT_TIMEOUT|CONNECTION_(CLOSED|ENDED|DESTROYED)|terminating connection/;
/** Socket errors of a connection that broke or never formed; ENOENT only of a connect (a Unix socket that is not there). */
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

/** A SQLSTATE: the error came from PostgreSQL itself, whose messages may quote what a client sent. */
const SQLSTATE = /^[0-9A-Z]{5}$/;

/** The error (or one of its causes) that says the database is away or stalled, or null. */
function unavailableCause(error: unknown): unknown {
  for (let cause = error, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    const e = cause as { code?: unknown; message?: unknown; syscall?: unknown };
    const code = typeof e.code === 'string' ? e.code : null;
    const matches =
      (code !== null && (UNAVAILABLE_STATES.test(code) || CONNECTION_ERRORS.has(code) || (code === 'ENOENT' && e.syscall === 'connect'))) ||
      // The drivers' own words, never a server error's: those may quote a client's input.
      ((code === null || !SQLSTATE.test(code)) && typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message));
    if (matches) return cause;
  }
  return null;
}

/** Whether an error says the database is away or stalled (no log, no count: for a caller that retries). */
export const isUnavailable = (error: unknown): boolean => unavailableCause(error) !== null;

/**
 * The database could not be reached, dropped the connection mid-statement (a restart, a
 * failover, a killed backend) or did not answer within CAIRN_DATABASE_TIMEOUT (stalled): not the
 * request's fault nor a bug, so not a 500 — 503 with `Retry-After`, which clients retry. Null for
 * every other error.
 */
export function unavailableOf(error: unknown): DomainError | null {
  const cause = unavailableCause(error);
  if (cause === null) return null;
  report(cause);
  return databaseUnavailable();
}

/** At most one log line per this long while the database stays away; the others are counted in it. */
const REPORT_EVERY_MS = 5_000;
let log: Logger | null = null;
const reportThrottled = throttledLog(REPORT_EVERY_MS);

/** Where unavailableOf reports what it recognises: the service's log, set once at start-up. */
export function reportUnavailabilityTo(logger: Logger): void {
  log = logger;
}

/** Logs that the database is away or stalled — a fault of the site, not of a request — at most every REPORT_EVERY_MS. */
function report(error: unknown): void {
  reportThrottled(log, 'warn', { err: error }, 'database unavailable or stalled: answering 503');
}
