import type { MiddlewareFn } from 'type-graphql';
import type { ResolverContext } from '../graphql/context.js';
import type { RateLimits } from './rate-limits.js';

/**
 * On a mutation that creates content (`@UseMiddleware(CreatesContent)`): counts against the
 * per-minute creation budget of the calling user (all their tokens together) before the mutation
 * runs, so a refused creation changes nothing — whichever transport asked, and however many aliases
 * a document holds.
 */
export const CreatesContent: MiddlewareFn<ResolverContext<{ rateLimits: RateLimits }>> = async ({ context }, next) => {
  await context.services.rateLimits.creation(context.viewer);
  return next();
};
