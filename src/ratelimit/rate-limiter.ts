import type { MikroORM } from '@mikro-orm/postgresql';
import type { Metrics, RateLimitBudget } from '../http/metrics.js';
import type { Logger } from '../logger.js';

/** A budget: at most `limit` units per window of `windowMs`, per subject (a user, an address). 0 = unlimited. */
export interface Budget {
  /** Names the bucket family in storage, in `X-RateLimit-Resource` and in the refusals metric. */
  name: RateLimitBudget;
  limit: number;
  windowMs: number;
}

/** Where a subject stands in its current window, after (or instead of) a charge. */
export interface Quota {
  resource: string;
  limit: number;
  used: number;
  remaining: number;
  /** When the window ends (epoch ms). */
  resetAt: number;
  /** Whether the charge was taken; a refused charge counts nothing. */
  allowed: boolean;
}

/** A charge's outcome: at once when the subject's window is known here, else once it is read. */
export type Charge = Quota | null | Promise<Quota | null>;

/** Usage of one subject in one window, as this process knows it. */
interface Counter {
  bucket: string;
  windowStart: number;
  windowMs: number;
  limit: number;
  /** Usage by every process as of the last write, ours included. */
  known: number;
  /** Counted here and being written. */
  writing: number;
  /** Counted here since. */
  pending: number;
  /** The first read of the window's total (once per subject, window and process); null once done. */
  loading: Promise<void> | null;
}

/** What a subject has used of its window, as this process knows it. */
const usage = (counter: Counter) => counter.known + counter.writing + counter.pending;

/** How often counts are written and the other processes' counts read back. */
const SYNC_MS = 500;
/** Windows are kept in storage this long after they end (for a look at recent use), then purged. */
const KEEP_MS = 24 * 3_600_000;
/** Counters with nothing new are read back only when this close to their limit (where others' use matters). */
const SHARE_FROM = 0.5;

/**
 * Fixed-window rate limits shared by every process on one database, with no
 * round trip on the request path in the common case: a request is judged on
 * what this process knows (the total read when it first saw the subject in
 * this window, or read back since, plus what it counted since), and counts are
 * added to `rate_limit_usage` in one statement every SYNC_MS, which returns the
 * totals of all processes. Across processes a budget can therefore overshoot
 * by what the others admit within one sync — a bound, not a leak.
 */
export class RateLimiter {
  private readonly counters = new Map<string, Counter>();
  private timer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> | null = null;
  private syncs = 0;

  constructor(
    private readonly orm: MikroORM,
    private readonly log: Logger,
    private readonly metrics: Metrics,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sync(), SYNC_MS);
    this.timer.unref();
  }

  /** Writes what is counted; the service stops after this. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sync();
  }

  /**
   * Charges `cost` units to `subject` unless that would exceed the budget. Null when the budget is
   * unlimited. `paid`: what this request was charged already in this window (a GraphQL request's
   * point on arrival); a refusal gives it back, so a refused charge counts nothing.
   */
  take(budget: Budget, subject: string, cost = 1, paid = 0, now = Date.now()): Charge {
    if (budget.limit === 0) return null;
    const counter = this.counter(budget, subject, now);
    // Once the window's total is read (every request but a subject's first in a window), the
    // charge is answered at once: no promise, no turn of the event loop on the request path.
    if (counter.loading) return counter.loading.then(() => this.charge(budget, counter, cost, paid));
    return this.charge(budget, counter, cost, paid);
  }

  private charge(budget: Budget, counter: Counter, cost: number, paid: number): Quota {
    const allowed = usage(counter) + cost <= budget.limit;
    if (allowed) counter.pending += cost;
    else {
      // Never below nothing. A deposit taken in the last moment of the window before this one may
      // be given back here, one unit this window never took: a bound, like the overshoot across processes.
      counter.pending -= Math.min(paid, usage(counter));
      this.metrics.rateLimitRefusals.inc({ resource: budget.name });
    }
    return this.quota(budget, counter, allowed);
  }

  private quota(budget: Budget, counter: Counter, allowed: boolean): Quota {
    const used = Math.min(usage(counter), budget.limit);
    return {
      resource: budget.name,
      limit: budget.limit,
      used,
      remaining: budget.limit - used,
      resetAt: counter.windowStart + budget.windowMs,
      allowed,
    };
  }

  private counter(budget: Budget, subject: string, now: number): Counter {
    const windowStart = now - (now % budget.windowMs);
    const bucket = `${budget.name}:${subject}`;
    const key = `${bucket}@${windowStart}`;
    let counter = this.counters.get(key);
    if (!counter) {
      const fresh: Counter = {
        ...{ bucket, windowStart, windowMs: budget.windowMs, limit: budget.limit },
        ...{ known: 0, writing: 0, pending: 0, loading: null },
      };
      fresh.loading = this.load(fresh).then(() => void (fresh.loading = null));
      this.counters.set(key, (counter = fresh));
    }
    return counter;
  }

  /** What the other processes used of a window this process has not seen yet: one read, then syncs keep it. */
  private async load(counter: Counter): Promise<void> {
    try {
      const rows = await this.orm.em
        .fork()
        .execute<{ used: number }[]>('select used from rate_limit_usage where bucket = ? and window_start = ?', [
          counter.bucket,
          new Date(counter.windowStart).toISOString(),
        ]);
      counter.known = Math.max(counter.known, Number(rows[0]?.used ?? 0));
    } catch (error) {
      this.log.warn({ err: error }, 'reading rate-limit usage failed; judging on this process’s counts');
    }
  }

  /** One write of every count, returning the totals; ended windows are forgotten once written. */
  sync(): Promise<void> {
    this.syncing ??= this.write().finally(() => (this.syncing = null));
    return this.syncing;
  }

  private async write(): Promise<void> {
    const now = Date.now();
    const batch: Counter[] = [];
    for (const [key, counter] of this.counters) {
      const ended = counter.windowStart + counter.windowMs <= now;
      // Pending is below zero after a deposit written earlier was given back: that is written too.
      if (counter.pending !== 0 || (!ended && counter.known + counter.pending >= counter.limit * SHARE_FROM)) batch.push(counter);
      else if (ended) this.counters.delete(key);
    }
    const purge = this.syncs++ % 1000 === 0;
    if (batch.length === 0 && !purge) return;
    for (const counter of batch) {
      counter.writing = counter.pending;
      counter.pending = 0;
    }
    try {
      const em = this.orm.em.fork();
      if (batch.length) {
        const rows = await em.execute<{ bucket: string; window_start: Date; used: number }[]>(
          `insert into rate_limit_usage (bucket, window_start, used)
           select bucket, window_start, used from jsonb_to_recordset(?::jsonb) as counts(bucket text, window_start timestamptz, used int)
           on conflict (bucket, window_start) do update set used = rate_limit_usage.used + excluded.used
           returning bucket, window_start, used`,
          [JSON.stringify(batch.map((c) => ({ bucket: c.bucket, window_start: new Date(c.windowStart).toISOString(), used: c.writing })))],
        );
        const totals = new Map(rows.map((row) => [`${row.bucket}@${new Date(row.window_start).getTime()}`, Number(row.used)]));
        for (const counter of batch) {
          counter.known = totals.get(`${counter.bucket}@${counter.windowStart}`) ?? counter.known + counter.writing;
          counter.writing = 0;
        }
      }
      if (purge) await em.execute('delete from rate_limit_usage where window_start < ?', [new Date(now - KEEP_MS).toISOString()]);
    } catch (error) {
      // Counted again at the next write: a database hiccup loses no usage.
      for (const counter of batch) {
        counter.pending += counter.writing;
        counter.writing = 0;
      }
      this.log.warn({ err: error }, 'writing rate-limit usage failed');
    }
  }
}
