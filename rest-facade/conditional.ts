import { hash } from 'node:crypto';
import type { Request, Response } from 'express';

/**
 * Sends a JSON answer; a successful GET (and HEAD) of a record or list carries an `ETag`, and a
 * request whose `If-None-Match` names it is answered 304 without a body, as GitHub does. The tag is
 * a hash of the answer itself, so it changes with anything the caller would see — a change of the
 * record, of a count, of what the caller may see. It is weak (`W/`): the same data always
 * serialises alike, but a 304 promises only that what the client holds is still what it would get.
 *
 * `Cache-Control: private, no-cache, must-revalidate` lets the caller keep the answer but makes it
 * ask again each time, so nothing is served from a cache past a permission change or a token
 * revocation. `must-revalidate` is what lets an RFC 9111 cache store an answer to a request that
 * carried `Authorization` at all (§3.5; undici's cache, for one, stores nothing without it).
 * `Vary: Authorization` keeps caches from mixing callers.
 */
export function sendJson(req: Request, res: Response, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  send(req, res, status, body, tagged(req, status) ? tagOf(body) : null);
}

/** An answer as it is written out: the JSON text and its entity tag. */
export interface Rendered {
  body: string;
  tag: string;
}

/** An answer rendered once, to be sent as `sendJson` would send it (rest-facade/kept-answers.ts). */
export function render(value: unknown): Rendered {
  const body = JSON.stringify(value);
  return { body, tag: tagOf(body) };
}

export function sendRendered(req: Request, res: Response, status: number, rendered: Rendered): void {
  send(req, res, status, rendered.body, tagged(req, status) ? rendered.tag : null);
}

const tagged = (req: Request, status: number) => status === 200 && (req.method === 'GET' || req.method === 'HEAD');
const tagOf = (body: string) => `W/"${hash('sha1', body, 'base64url')}"`; // one-shot: no Hash object per answer

function send(req: Request, res: Response, status: number, body: string, tag: string | null): void {
  if (tag !== null) {
    res.setHeader('ETag', tag);
    res.setHeader('Cache-Control', 'private, no-cache, must-revalidate');
    res.setHeader('Vary', 'Authorization');
    if (matches(req.get('if-none-match'), tag)) {
      res.status(304).end();
      return;
    }
  }
  // Straight to Node's response: Express's send() would parse and rebuild the content type and judge
  // freshness again, work this answer has already done. Node drops the body of a HEAD answer itself.
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

/** RFC 9110 §13.1.2: `*`, or any listed tag equal to ours under weak comparison (the `W/` prefix ignored). */
function matches(header: string | undefined, tag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const opaque = tag.slice(2);
  return header.split(',').some((listed) => listed.trim().replace(/^W\//, '') === opaque);
}
