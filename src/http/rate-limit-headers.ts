import type { NextFunction, Request, Response } from 'express';
import type { DomainError } from '../errors/domain-error.js';
import type { Charge, Quota } from '../ratelimit/rate-limiter.js';
import { rateLimitHeaders, refusal } from '../ratelimit/rate-limits.js';
import { locals } from './request-context.js';
import { whenReady } from './when-ready.js';

/**
 * After authentication, before anything else is read: charges the request to
 * the caller's primary budget (`quota`; a GraphQL request its first point),
 * sends the headers, and refuses with 429 when the budget is spent.
 */
export function rateLimited(quota: (res: Response) => Charge, send: (res: Response, error: DomainError) => void) {
  return (_req: Request, res: Response, next: NextFunction) => {
    const judge = (current: Quota | null) => {
      for (const [name, value] of rateLimitHeaders(current)) res.setHeader(name, value);
      if (current && !current.allowed) return send(res, refusal(current));
      next();
    };
    return whenReady(quota(res), judge);
  };
}

/** The authenticated caller of a request (requireToken ran before). */
export function viewerOf(res: Response) {
  const viewer = locals(res).viewer;
  if (!viewer) throw new Error('rate limit before authentication');
  return viewer;
}
