import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

export type { Logger };

/**
 * Structured JSON logs on stdout. Secrets never reach the logger: request
 * logging records method, path and status only, and the redact list is a
 * second line of defence for anything that slips into a log object (every
 * line but the request lines, whose keys are fixed: request-context.ts).
 */
export function createLogger(level: LogLevel): Logger {
  // Asynchronous writes: a log line never blocks a request on a write(2). Lines queue while a write
  // is in flight and go out together; `flush()` on shutdown writes what is left.
  const destination = pino.destination({ dest: 1, sync: false });
  return pino(
    {
      level,
      base: { service: 'cairn' },
      timestamp: isoTime,
      redact: {
        paths: ['token', 'secret', 'password', '*.token', '*.secret', '*.password', 'headers.authorization'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/**
 * A condition of the site that every request meeting it would log (a database away, a full disk):
 * at most one line per `everyMs`, counting in it (`alsoSince`) the occurrences it stood for.
 */
export function throttledLog(everyMs: number): (log: Logger | null, level: 'warn' | 'error', fields: object, message: string) => void {
  let lastAt = 0;
  let unlogged = 0;
  return (log, level, fields, message) => {
    const now = Date.now();
    if (now - lastAt < everyMs) {
      unlogged++;
      return;
    }
    log?.[level]({ ...fields, alsoSince: unlogged }, message);
    lastAt = now;
    unlogged = 0;
  };
}

let lastMs = -1;
let lastTime = '';

/**
 * pino's `isoTime` (`,"time":"2026-…Z"`), formatted once per millisecond: a busy service writes
 * several lines in the same millisecond, and formatting a date was a fifth of a line's cost.
 */
export function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}
