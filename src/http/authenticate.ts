import type { NextFunction, Request, Response } from 'express';
import { DomainError } from '../errors/domain-error.js';
import type { Principal } from '../principal.js';
import { locals } from './request-context.js';

/** Turns an `Authorization` header into the caller, or null when it names no valid token. */
export type Authenticate = (header: string) => Promise<Principal | null>;

/**
 * Every REST and GraphQL request needs a valid token. Without one the
 * surface writes UNAUTHENTICATED in its own shape (`send`), with
 * `WWW-Authenticate: Bearer`.
 */
export function requireToken(authenticate: Authenticate, send: (res: Response, error: DomainError) => void) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    const viewer = header ? await authenticate(header) : null;
    if (!viewer) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="Cairn"');
      send(
        res,
        new DomainError('UNAUTHENTICATED', header ? 'the token is malformed, unknown, revoked or expired' : 'a bearer token is required'),
      );
      return;
    }
    locals(res).viewer = viewer;
    next();
  };
}
