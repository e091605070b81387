import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Principal } from '../principal.js';
import type { Logger } from '../logger.js';
import type { Metrics, Surface } from './metrics.js';
import { countingStatements, type StatementTally } from '../db/statement-count.js';
import { accessLog } from './access-log.js';

/** What the HTTP layer attaches to a response while a request is handled. */
export interface RequestLocals {
  requestId: string;
  viewer?: Principal;
}

export function locals(res: Response): RequestLocals {
  return res.locals as RequestLocals;
}

/**
 * Gives every request an id (the caller's `X-Request-Id` when it is sane),
 * echoes it, counts the SQL statements it sends (answered in `Server-Timing`, logged), and logs
 * and counts the request when it finishes. Only the
 * method, path and status are logged: never headers, bodies or query strings.
 *
 * Its lines are written as text (access-log.ts), as pino would write them.
 */
export function requestTracking(log: Logger, metrics: Metrics) {
  const logRequest = accessLog(log);
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && /^[\w.:-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    locals(res).requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    const path = req.originalUrl.split('?')[0]!;
    const sql: StatementTally = { count: 0 };
    answerStatementCount(res, sql);
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const surface = surfaceOf(path);
      metrics.httpRequests.inc({ surface, method: req.method, status: String(res.statusCode) });
      metrics.httpDuration.observe({ surface }, seconds);
      logRequest({ requestId, method: req.method, path, status: res.statusCode, ms: Math.round(seconds * 1e4) / 10, sql: sql.count });
    });
    countingStatements(sql, next);
  };
}

/**
 * `Server-Timing: sql;count=N` on every answer: the SQL statements the request sent before its
 * headers went out (all of them, for an answer written whole). Browsers' developer tools show it; a
 * frontend sees whether a query's cost grows with its page size.
 */
function answerStatementCount(res: Response, sql: StatementTally): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: Response, ...args: Parameters<Response['writeHead']>) {
    if (!this.headersSent) this.appendHeader('Server-Timing', `sql;count=${sql.count};desc="SQL statements"`);
    return writeHead.apply(this, args);
  } as Response['writeHead'];
}

/** Whether a request is the platform checking on the service (health, readiness, metrics), not use of it. */
export function isOperationsProbe(url: string): boolean {
  return surfaceOf(url.split('?', 1)[0]!) === 'ops';
}

function surfaceOf(path: string): Surface {
  if (path === '/graphql') return 'graphql';
  if (/\/(info\/refs|git-upload-pack|git-receive-pack)$/.test(path)) return 'git';
  if (path === '/healthz' || path === '/readyz' || path === '/metrics') return 'ops';
  return 'rest';
}
