import type { NextFunction, Request, Response } from 'express';
import type { Services } from '../context.js';
import { DomainError } from '../errors/domain-error.js';
import { locals } from './request-context.js';

/**
 * Every REST and GraphQL request needs a valid token. Without one the
 * surface writes UNAUTHENTICATED in its own shape (`send`), with
 * `WWW-Authenticate: Bearer`.
 */
export function requireToken(services: Services, send: (res: Response, error: DomainError) => void) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    const viewer = header ? await services.auth.fromAuthorizationHeader(header) : null;
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
