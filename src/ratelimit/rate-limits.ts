import type { RateLimitSettings } from '../config.js';
import { DomainError } from '../errors/domain-error.js';
import type { Principal } from '../principal.js';
import type { Budget, Charge, Quota, RateLimiter } from './rate-limiter.js';

const HOUR = 3_600_000;
const MINUTE = 60_000;
/** GraphQL points per unit of estimated cost, as GitHub counts: a query costs its cost / 100, at least 1. */
const COST_PER_POINT = 100;
/** What every GraphQL request pays as it arrives: the least an operation costs. */
const ARRIVAL_POINTS = 1;

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
  request(viewer: Principal): Charge {
    return this.limiter.take(this.core, viewer.userId);
  }

  /**
   * A GraphQL request as it arrives, before its body is read: ARRIVAL_POINTS. A request refused at
   * its body, the document limits, parsing, validation or the cost limit keeps them paid, for the
   * work the service did all the same; an operation that runs pays the rest of its cost once costed,
   * and one refused for the budget gets them back (`operation`).
   */
  arrival(viewer: Principal): Charge {
    return this.limiter.take(this.core, viewer.userId, ARRIVAL_POINTS);
  }

  /**
   * The operation of a GraphQL request that paid on `arrival`, estimated at `cost`: charges the rest
   * of its points, or refuses it and gives the arrival's back (a refusal for the budget costs nothing).
   */
  operation(viewer: Principal, cost: number): Charge {
    const points = Math.max(ARRIVAL_POINTS, Math.ceil(cost / COST_PER_POINT));
    return this.limiter.take(this.core, viewer.userId, points - ARRIVAL_POINTS, ARRIVAL_POINTS);
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
  anonymousFetch(address: string): Charge {
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

/**
 * Charges a GraphQL operation the rest of its cost (startApollo's onOperationCost; its request paid
 * on arrival, app.ts): headers, or RATE_LIMITED past the budget.
 */
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
