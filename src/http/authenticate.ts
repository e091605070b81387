import type { NextFunction, Request, Response } from 'express';
import type { Services } from '../context.js';
import { locals } from './request-context.js';

/**
 * Every REST and GraphQL request needs a valid token. Without one the
 * surface-specific `reject` answers 401 with `WWW-Authenticate: Bearer`.
 */
export function requireToken(services: Services, reject: (req: Request, res: Response, message: string) => void) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    const viewer = header ? await services.auth.fromAuthorizationHeader(header) : null;
    if (!viewer) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="Cairn"');
      reject(req, res, header ? 'the token is malformed, unknown, revoked or expired' : 'a bearer token is required');
      return;
    }
    locals(res).viewer = viewer;
    next();
  };
}
