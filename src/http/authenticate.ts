import type { NextFunction, Request, Response } from 'express';
import { DomainError } from '../errors/domain-error.js';
import type { Principal } from '../principal.js';
import { locals } from './request-context.js';
import { whenReady } from './when-ready.js';

/**
 * Turns an `Authorization` header into the caller, or null when it names no valid token: at once
 * for a token verified moments ago, else once the database answers.
 */
export type Authenticate = (header: string) => Principal | null | Promise<Principal | null>;

/**
 * Every REST and GraphQL request needs a valid token. Without one the
 * surface writes UNAUTHENTICATED in its own shape (`send`), with
 * `WWW-Authenticate: Bearer`.
 */
export function requireToken(authenticate: Authenticate, send: (res: Response, error: DomainError) => void) {
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    const admit = (viewer: Principal | null) => {
      if (!viewer) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="Cairn"');
        send(res, new DomainError('UNAUTHENTICATED', refusal(header)));
        return;
      }
      locals(res).viewer = viewer;
      next();
    };
    return whenReady(header ? authenticate(header) : null, admit);
  };
}

/**
 * Why a request has no caller, in words that lead to the fix: another scheme (a token sent as
 * `Token …` or as Basic, which only git over HTTP takes) is named as such, never echoing the value.
 */
function refusal(header: string | undefined): string {
  if (!header) return 'a bearer token is required: send "Authorization: Bearer <token>"';
  const scheme = /^\S+/.exec(header)?.[0] ?? '';
  if (scheme.toLowerCase() !== 'bearer') {
    const named = /^[A-Za-z][\w-]{0,19}$/.test(scheme) ? `the ${JSON.stringify(scheme)} scheme` : 'this scheme';
    const basic = scheme.toLowerCase() === 'basic' ? ' (Basic authentication is for git over HTTP)' : '';
    return `the API takes "Authorization: Bearer <token>", not ${named}${basic}`;
  }
  return 'the token is malformed, unknown, revoked or expired';
}
