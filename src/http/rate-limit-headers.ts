import type { NextFunction, Request, Response } from 'express';
import type { DomainError } from '../errors/domain-error.js';
import type { Quota } from '../ratelimit/rate-limiter.js';
import { rateLimitHeaders, refusal } from '../ratelimit/rate-limits.js';
import { locals } from './request-context.js';

/**
 * After authentication, before anything else is read: charges the request to
 * the caller's primary budget (`quota`; a GraphQL request its first point),
 * sends the headers, and refuses with 429 when the budget is spent.
 */
export function rateLimited(quota: (res: Response) => Promise<Quota | null>, send: (res: Response, error: DomainError) => void) {
  return async (_req: Request, res: Response, next: NextFunction) => {
    const current = await quota(res);
    for (const [name, value] of rateLimitHeaders(current)) res.setHeader(name, value);
    if (current && !current.allowed) return send(res, refusal(current));
    next();
  };
}

/** The authenticated caller of a request (requireToken ran before). */
export function viewerOf(res: Response) {
  const viewer = locals(res).viewer;
  if (!viewer) throw new Error('rate limit before authentication');
  return viewer;
}
