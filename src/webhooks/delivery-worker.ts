import type { MikroORM } from '@mikro-orm/postgresql';
import type { Agenda, Job } from 'agenda';
import type { Logger } from '../logger.js';
import type { Metrics } from '../http/metrics.js';
import type { HttpSender } from './http-sender.js';
import { recordAttempt, type ClaimedDelivery } from './attempt-record.js';
import type { SecretBox } from './secret-box.js';
import { signatureHeader } from './signature.js';
import type { WebhookHealth } from './webhook-health.js';

export const DELIVER_JOB = 'webhook:deliver';

export interface WorkerSettings {
  timeoutMs: number;
  retryDelaysMs: number[];
  disableAfterMs: number;
  /** Attempts in flight at once for one webhook in one process: a hanging receiver holds at most these. */
  perWebhookConcurrency: number;
  userAgent: string;
}

interface WebhookTarget {
  url: string;
  secret: string;
}

/** A webhook being drained in this process. */
interface Drain {
  poked: boolean;
  inflight: Set<Promise<void>>;
  wakeUp: (() => void) | null;
}

/** How long one Agenda job drains a webhook before handing over to a fresh job (fairness, lock lifetime). */
const DRAIN_BUDGET_MS = 30_000;

/**
 * Runs webhook deliveries (§8.2) as Agenda jobs: a `webhook:deliver` job
 * drains one webhook's due deliveries, at most `perWebhookConcurrency` at a
 * time, claiming them in batches (SKIP LOCKED, with a lease that a crashed
 * worker's claims outlive only briefly). One webhook per job means a
 * receiver that hangs occupies its own job and nothing else.
 *
 * After a commit, `wake` pokes this process's drain of each webhook, or
 * starts a job for it (Agenda's PostgreSQL backend notifies every worker at
 * once): the first attempt does not wait for a polling interval. Retries
 * are jobs scheduled at their time. A periodic sweep (see webhook-jobs.ts)
 * restarts anything whose wake-up was lost to a crash.
 */
export class DeliveryWorker {
  private readonly drains = new Map<string, Drain>();
  private readonly requested = new Set<string>();
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
      if (this.stopping || this.requested.has(webhookId)) continue;
      this.requested.add(webhookId);
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
    const drain: Drain = { poked: false, inflight: new Set(), wakeUp: null };
    this.drains.set(webhookId, drain);
    try {
      await this.drain(webhookId, drain, job);
    } catch (error) {
      this.drains.delete(webhookId);
      throw error;
    }
  }

  /** Stop claiming; resolves when the attempts in flight have ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const drain of this.drains.values()) this.poke(drain);
    await Promise.all([...this.drains.values()].flatMap((drain) => [...drain.inflight]));
    this.sender.close();
  }

  private poke(drain: Drain): void {
    drain.poked = true;
    drain.wakeUp?.();
  }

  private async drain(webhookId: string, drain: Drain, job: Job): Promise<void> {
    const deadline = Date.now() + DRAIN_BUDGET_MS;
    let lastTouch = Date.now();
    for (;;) {
      const room = this.settings.perWebhookConcurrency - drain.inflight.size;
      let claimed = 0;
      if (room > 0 && !this.stopping && Date.now() < deadline) {
        drain.poked = false;
        const batch = await this.claim(webhookId, room);
        claimed = batch.deliveries.length;
        for (const delivery of batch.deliveries) {
          const attempt = this.attempt(webhookId, batch.target!, delivery).finally(() => {
            drain.inflight.delete(attempt);
            drain.wakeUp?.();
          });
          drain.inflight.add(attempt);
        }
      }
      if (claimed === 0 && drain.inflight.size === 0) {
        if (drain.poked && !this.stopping && Date.now() < deadline) continue;
        // Decided synchronously: a poke from now on finds no drain and starts a new job.
        this.drains.delete(webhookId);
        if (drain.poked && !this.stopping) this.wake([webhookId]); // out of budget with work left
        return;
      }
      if (claimed === room && room > 0) continue; // a full batch: there may be more due right now
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

  /** Takes up to `limit` due deliveries of a webhook, with the webhook's current URL and secret. */
  private async claim(webhookId: string, limit: number): Promise<{ target: WebhookTarget | null; deliveries: ClaimedDelivery[] }> {
    const em = this.orm.em.fork();
    const [hook] = await em.execute<{ url: string; secret_ciphertext: string }[]>(
      'select url, secret_ciphertext from webhooks where id = ? and active',
      [webhookId],
    );
    if (!hook) return { target: null, deliveries: [] };
    const leaseSeconds = Math.ceil(this.settings.timeoutMs / 1000) + 5; // one attempt and a margin
    const deliveries = await em.execute<ClaimedDelivery[]>(
      `update deliveries d set claimed_until = now() + make_interval(secs => ?)
         from (select id from deliveries
                where webhook_id = ? and status = 'pending' and next_attempt_at <= now() + interval '100 milliseconds'
                  and (claimed_until is null or claimed_until < now())
                order by next_attempt_at, id
                limit ? for update skip locked) due
        where d.id = due.id
       returning d.id, d.event, d.body, d.series, d.series_attempts, d.attempts_count, d.created_at`,
      [leaseSeconds, webhookId, limit],
    );
    return { target: { url: hook.url, secret: this.box.open(hook.secret_ciphertext) }, deliveries };
  }

  private async attempt(webhookId: string, target: WebhookTarget, delivery: ClaimedDelivery): Promise<void> {
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
      await this.health.afterAttempt(webhookId, outcome);
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
