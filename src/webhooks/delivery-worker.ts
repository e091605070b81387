import type { MikroORM } from '@mikro-orm/postgresql';
import type { Agenda, Job } from 'agenda';
import type { Metrics } from '../http/metrics.js';
import type { Logger } from '../logger.js';
import { recordAttempt, type ClaimedDelivery } from './attempt-record.js';
import type { HttpSender } from './http-sender.js';
import type { SecretBox } from './secret-box.js';
import { signatureHeader } from './signature.js';
import type { WebhookHealth } from './webhook-health.js';

export const DELIVER_JOB = 'webhook:deliver';

export interface WorkerSettings {
  timeoutMs: number;
  retryDelaysMs: number[];
  disableAfterMs: number;
  /** Attempts in flight at once for one healthy webhook in one process. */
  perWebhookConcurrency: number;
  userAgent: string;
}

/** A failing webhook (one whose latest attempt failed) gets this many attempts in flight: a hanging receiver holds two sockets, not sixteen. */
export const FAILING_CONCURRENCY = 2;
/** How long one Agenda job drains a webhook before handing over to a fresh job (fairness, lock lifetime). */
const DRAIN_BUDGET_MS = 30_000;
/** How long a requested job counts as on its way; after that a wake-up asks again (duplicates are harmless). */
const REQUEST_PENDING_MS = 250;
/** While a webhook succeeds, its `last_response` is written at most this often. */
const SUCCESS_WRITE_EVERY_MS = 1_000;

interface WebhookTarget {
  url: string;
  secret: string;
}

/** A webhook being drained in this process. */
interface Drain {
  webhookId: string;
  /** New deliveries were announced since the last claim. */
  poked: boolean;
  /** The last claim was full: more may be due. */
  mayHaveMore: boolean;
  /** Claimed, not yet started. */
  queue: ClaimedDelivery[];
  inflight: Set<Promise<void>>;
  target: WebhookTarget | null;
  failing: boolean;
  lastSuccessWrite: number;
  wakeUp: (() => void) | null;
}

/**
 * Runs webhook deliveries (§8.2) as Agenda jobs: a `webhook:deliver` job
 * drains one webhook's due deliveries. It claims them in batches (SKIP LOCKED,
 * with a lease that a crashed worker's claims outlive only briefly), keeps a
 * short local queue, and runs at most `perWebhookConcurrency` attempts at a
 * time — two while the webhook is failing. One webhook per job means a
 * receiver that hangs occupies its own job and two sockets, nothing else.
 *
 * After a commit, `wake` pokes this process's drain of each webhook, or
 * starts a job for it (Agenda's PostgreSQL backend notifies every worker at
 * once): the first attempt does not wait for a polling interval. Retries
 * are jobs scheduled at their time. A periodic sweep (see webhook-jobs.ts)
 * restarts anything whose wake-up was lost to a crash.
 */
export class DeliveryWorker {
  private readonly drains = new Map<string, Drain>();
  /** Webhooks whose job this process asked for, and when: another process may be the one to run it. */
  private readonly requested = new Map<string, number>();
  private readonly scheduledRetries = new Map<string, Set<number>>();
  private stopping = false;

  constructor(
    private readonly orm: MikroORM,
    private readonly agenda: Agenda,
    private readonly sender: HttpSender,
    private readonly box: SecretBox,
    private readonly settings: WorkerSettings,
    private readonly health: WebhookHealth,
    private readonly log: Logger,
    private readonly metrics: Metrics,
  ) {}

  /** After a commit created deliveries for these webhooks: get them going now. */
  wake(webhookIds: Iterable<string>): void {
    for (const webhookId of new Set(webhookIds)) {
      const drain = this.drains.get(webhookId);
      if (drain) {
        this.poke(drain);
        continue;
      }
      const requestedAt = this.requested.get(webhookId);
      if (this.stopping || (requestedAt !== undefined && Date.now() - requestedAt < REQUEST_PENDING_MS)) continue;
      this.requested.set(webhookId, Date.now());
      this.agenda.now(DELIVER_JOB, { webhookId }).catch((error: unknown) => {
        this.requested.delete(webhookId);
        this.log.error({ err: error, webhookId }, 'could not start a delivery job; the sweep will retry');
      });
    }
  }

  /** The `webhook:deliver` job. */
  async run(job: Job<{ webhookId: string }>): Promise<void> {
    const { webhookId } = job.attrs.data;
    this.requested.delete(webhookId);
    const running = this.drains.get(webhookId);
    if (running) {
      this.poke(running);
      return;
    }
    const drain: Drain = {
      webhookId,
      poked: true,
      mayHaveMore: false,
      queue: [],
      inflight: new Set(),
      target: null,
      failing: false,
      lastSuccessWrite: 0,
      wakeUp: null,
    };
    this.drains.set(webhookId, drain);
    try {
      await this.drain(drain, job);
    } catch (error) {
      this.drains.delete(webhookId);
      await this.release(drain).catch(() => undefined);
      throw error;
    }
  }

  /** Stop claiming; resolves when the attempts in flight have ended (claimed but unstarted ones are released). */
  async stop(): Promise<void> {
    this.stopping = true;
    const drains = [...this.drains.values()];
    for (const drain of drains) this.poke(drain);
    await Promise.all(drains.flatMap((drain) => [...drain.inflight]));
    await Promise.all(drains.map((drain) => this.release(drain).catch(() => undefined)));
    this.sender.close();
  }

  private poke(drain: Drain): void {
    drain.poked = true;
    drain.wakeUp?.();
  }

  private async drain(drain: Drain, job: Job): Promise<void> {
    const deadline = Date.now() + DRAIN_BUDGET_MS;
    let lastTouch = Date.now();
    for (;;) {
      const limit = drain.failing ? FAILING_CONCURRENCY : this.settings.perWebhookConcurrency;
      const claiming = !this.stopping && Date.now() < deadline;
      if (claiming && drain.queue.length < limit && (drain.poked || drain.mayHaveMore)) {
        const want = 2 * limit - drain.queue.length - drain.inflight.size;
        if (want > 0) {
          drain.poked = false;
          await this.claim(drain, want);
        }
      }
      if (this.stopping) await this.release(drain);
      while (drain.inflight.size < limit && drain.queue.length > 0) this.start(drain, drain.queue.shift()!);

      if (drain.inflight.size === 0 && drain.queue.length === 0) {
        if ((drain.poked || drain.mayHaveMore) && claiming) continue;
        // Decided synchronously: a poke from now on finds no drain and starts a new job.
        this.drains.delete(drain.webhookId);
        if ((drain.poked || drain.mayHaveMore) && !this.stopping) this.wake([drain.webhookId]); // out of budget, work left
        return;
      }
      await new Promise<void>((resolve) => {
        drain.wakeUp = resolve;
        setTimeout(resolve, 5_000).unref();
      });
      drain.wakeUp = null;
      if (Date.now() - lastTouch > 10_000) {
        await job.touch().catch(() => undefined);
        lastTouch = Date.now();
      }
    }
  }

  /**
   * Takes up to `limit` due deliveries of the webhook into the drain's queue,
   * with the webhook's current URL, secret and health, in one statement.
   */
  private async claim(drain: Drain, limit: number): Promise<void> {
    const leaseSeconds = Math.ceil(this.settings.timeoutMs / 1000) + 5; // one attempt and a margin
    const rows = await this.orm.em.fork().execute<Array<ClaimedDelivery & { url: string; secret_ciphertext: string; failing: boolean }>>(
      `with hook as (select id, url, secret_ciphertext, failing_since is not null as failing from webhooks where id = ? and active),
            due as (select d.id from deliveries d join hook on hook.id = d.webhook_id
                     where d.status = 'pending' and d.next_attempt_at <= now() + interval '100 milliseconds'
                       and (d.claimed_until is null or d.claimed_until < now())
                     order by d.next_attempt_at, d.id
                     limit ? for update of d skip locked)
       update deliveries d set claimed_until = now() + make_interval(secs => ?)
         from due, hook
        where d.id = due.id
       returning d.id, d.event, d.body, d.series, d.series_attempts, d.attempts_count, d.created_at,
                 hook.url, hook.secret_ciphertext, hook.failing`,
      [drain.webhookId, limit, leaseSeconds],
    );
    drain.mayHaveMore = rows.length === limit;
    if (rows.length === 0) return;
    const { url, secret_ciphertext: sealed, failing } = rows[0]!;
    drain.target = { url, secret: this.box.open(sealed) };
    drain.failing = failing;
    drain.queue.push(...rows);
  }

  /** Gives claimed, unstarted deliveries back (shutdown): the next worker need not wait for their lease. */
  private async release(drain: Drain): Promise<void> {
    if (drain.queue.length === 0) return;
    const ids = drain.queue.map((delivery) => delivery.id);
    drain.queue = [];
    await this.orm.em.fork().execute('update deliveries set claimed_until = null where id in (?)', [ids]);
  }

  private start(drain: Drain, delivery: ClaimedDelivery): void {
    const attempt = this.attempt(drain, drain.target!, delivery).finally(() => {
      drain.inflight.delete(attempt);
      drain.wakeUp?.();
    });
    drain.inflight.add(attempt);
  }

  private async attempt(drain: Drain, target: WebhookTarget, delivery: ClaimedDelivery): Promise<void> {
    const { webhookId } = drain;
    try {
      const headers = {
        'Content-Type': 'application/json',
        'User-Agent': this.settings.userAgent,
        'X-Cairn-Event': delivery.event,
        'X-Cairn-Delivery': delivery.id,
        'X-Cairn-Hook-ID': webhookId,
        'X-Cairn-Signature-256': signatureHeader(target.secret, delivery.body),
      };
      const startedAt = new Date();
      const outcome = await this.sender.send(target.url, headers, delivery.body, this.settings.timeoutMs);
      const result = await recordAttempt(this.orm.em.fork(), delivery, {
        url: target.url,
        headers,
        startedAt,
        outcome,
        retryDelaysMs: this.settings.retryDelaysMs,
      });
      this.metrics.deliveries.inc({ outcome: outcome.ok ? 'succeeded' : result.retryAt ? 'retrying' : 'failed' });
      if (result.firstAttempt) this.metrics.deliveryLatency.observe((Date.now() - new Date(delivery.created_at).getTime()) / 1000);
      // The webhook row changes on every failure, but while it succeeds only to end a streak or once a second.
      const now = Date.now();
      if (!outcome.ok || drain.failing || now - drain.lastSuccessWrite >= SUCCESS_WRITE_EVERY_MS) {
        if (outcome.ok) drain.lastSuccessWrite = now;
        await this.health.afterAttempt(webhookId, outcome);
      }
      drain.failing = !outcome.ok;
      if (result.retryAt) this.scheduleRetry(webhookId, result.retryAt);
    } catch (error) {
      // The claim lapses and the sweep hands the delivery to a worker again.
      this.log.error({ err: error, webhookId, deliveryId: delivery.id }, 'delivery attempt could not be recorded');
    }
  }

  /** One job per webhook and second, however many of its deliveries retry then. */
  private scheduleRetry(webhookId: string, at: Date): void {
    const second = Math.ceil(at.getTime() / 1000);
    const seconds = this.scheduledRetries.get(webhookId) ?? new Set<number>();
    if (seconds.has(second)) return;
    seconds.add(second);
    this.scheduledRetries.set(webhookId, seconds);
    setTimeout(
      () => {
        seconds.delete(second);
        if (seconds.size === 0) this.scheduledRetries.delete(webhookId);
      },
      at.getTime() - Date.now() + 1_000,
    ).unref();
    this.agenda.schedule(at, DELIVER_JOB, { webhookId }).catch((error: unknown) => {
      this.log.error({ err: error, webhookId }, 'could not schedule a retry; the sweep will pick it up');
    });
  }
}
