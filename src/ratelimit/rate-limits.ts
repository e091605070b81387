import type { RateLimitSettings } from '../config.js';
import { DomainError } from '../errors/domain-error.js';
import type { Principal } from '../principal.js';
import type { Budget, Quota, RateLimiter } from './rate-limiter.js';

const HOUR = 3_600_000;
const MINUTE = 60_000;
/** GraphQL points per unit of estimated cost, as GitHub counts: a query costs its cost / 100, at least 1. */
const COST_PER_POINT = 100;

/**
 * Cairn's rate limits, as GitHub has them: a primary budget per user per
 * hour (a REST request is 1; a GraphQL operation its cost in points), a
 * secondary budget per user per minute on creating content (issues, pull
 * requests, reviews, webhooks, tokens), and anonymous git fetches per client
 * address per hour. The budgets bind the user, not the token: all of a
 * user's tokens draw on the same ones, so minting more tokens buys nothing.
 */
export class RateLimits {
  private readonly core: Budget;
  private readonly creations: Budget;
  private readonly anonymousFetches: Budget;

  constructor(
    settings: RateLimitSettings,
    private readonly limiter: RateLimiter,
  ) {
    this.core = { name: 'core', limit: settings.perHour, windowMs: HOUR };
    this.creations = { name: 'creations', limit: settings.createsPerMinute, windowMs: MINUTE };
    this.anonymousFetches = { name: 'git', limit: settings.anonymousFetchesPerHour, windowMs: HOUR };
  }

  /** One REST request. */
  request(viewer: Principal): Promise<Quota | null> {
    return this.limiter.take(this.core, viewer.userId);
  }

  /** A GraphQL operation of estimated `cost`. */
  operation(viewer: Principal, cost: number): Promise<Quota | null> {
    return this.limiter.take(this.core, viewer.userId, Math.max(1, Math.ceil(cost / COST_PER_POINT)));
  }

  /** The primary budget, charging nothing (GraphQL before its cost is known). */
  standing(viewer: Principal): Promise<Quota | null> {
    return this.limiter.peek(this.core, viewer.userId);
  }

  /** Creating one piece of content: throws RATE_LIMITED beyond the per-minute budget. */
  async creation(viewer: Principal): Promise<void> {
    const quota = await this.limiter.take(this.creations, viewer.userId);
    if (quota && !quota.allowed) {
      throw refusal(
        quota,
        `You are creating content too quickly: at most ${quota.limit} issues, pull requests, reviews, webhooks and tokens per minute.`,
      );
    }
  }

  /** An anonymous git fetch from `address`. */
  anonymousFetch(address: string): Promise<Quota | null> {
    return this.limiter.take(this.anonymousFetches, address);
  }
}

/** RATE_LIMITED with `Retry-After` at the end of the quota's window. */
export function refusal(quota: Quota, message?: string): DomainError {
  const seconds = Math.max(1, Math.ceil((quota.resetAt - Date.now()) / 1000));
  return new DomainError(
    'RATE_LIMITED',
    message ?? `Rate limit exceeded: ${quota.limit} per hour; it resets at ${new Date(quota.resetAt).toISOString()}.`,
    [],
    seconds,
  );
}

/** `X-RateLimit-*` as GitHub sends them: the budget, what is left, when it resets (epoch seconds), what is used. */
export function rateLimitHeaders(quota: Quota | null): Array<[name: string, value: string]> {
  if (!quota) return [];
  return [
    ['X-RateLimit-Limit', String(quota.limit)],
    ['X-RateLimit-Remaining', String(quota.remaining)],
    ['X-RateLimit-Reset', String(Math.ceil(quota.resetAt / 1000))],
    ['X-RateLimit-Used', String(quota.used)],
    ['X-RateLimit-Resource', quota.resource],
  ];
}

/** Charges a GraphQL operation its cost (startApollo's onOperationCost): headers, or RATE_LIMITED past the budget. */
export function chargeOperations(limits: RateLimits) {
  return async (
    context: { viewer: Principal },
    cost: number,
    _type: string,
    headers: { set(name: string, value: string): unknown },
  ): Promise<void> => {
    const quota = await limits.operation(context.viewer, cost);
    for (const [name, value] of rateLimitHeaders(quota)) headers.set(name, value);
    if (quota && !quota.allowed) throw refusal(quota);
  };
}
