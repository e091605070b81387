import type { ServerResponse } from 'node:http';
import { ANSWERS, answerHeaders } from '../../errors/answers.js';
import { DomainError } from '../../errors/domain-error.js';
import { setNoCache, type ServiceRun } from './transport.js';

/** A DomainError as git over HTTP answers it: the table's status and wording. */
export function sendGitAnswer(res: ServerResponse, error: DomainError): void {
  const answer = ANSWERS[error.code];
  if (!res.headersSent) for (const [name, value] of answerHeaders(error)) res.setHeader(name, value);
  sendGitText(res, answer.status, answer.git.replace('{message}', error.message));
}

/**
 * A plain-text error: git prints the body of a text/plain error response to
 * the user (as `remote: ...`), so the message is written for a person.
 */
function sendGitText(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent || res.destroyed) return;
  res.statusCode = status;
  if (status === 401) res.setHeader('WWW-Authenticate', 'Basic realm="Cairn"');
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  setNoCache(res);
  res.end(`${message}\n`);
}

/**
 * Ends the response of a git run. Once git has written anything, the
 * status is out and git's own protocol carries any error; before that, a
 * body we refused or a git that failed without a word is the request's
 * fault (malformed protocol input), never a 5xx.
 */
export function finishGitResponse(res: ServerResponse, run: ServiceRun): void {
  if (run.responded || res.headersSent) {
    if (!res.writableEnded) res.end();
    return;
  }
  if (run.bodyError) return sendGitAnswer(res, run.bodyError);
  if (run.stoppedAt) return sendGitAnswer(res, run.stoppedAt);
  if (run.code === 0) {
    res.statusCode = 200;
    setNoCache(res);
    res.end();
    return;
  }
  sendGitAnswer(res, new DomainError('BAD_REQUEST', 'git could not process this request.'));
}
