import type { MikroORM } from '@mikro-orm/postgresql';
import type { Agenda } from 'agenda';
import type { Config } from '../config.js';
import type { EventListener } from '../events/event-recorder.js';
import type { Metrics } from '../http/metrics.js';
import type { JobDefinitions } from '../jobs/agenda.js';
import type { Logger } from '../logger.js';
import { DeliveryWorker } from './delivery-worker.js';
import { DestinationPolicy } from './destination-policy.js';
import { webhookFanOut } from './fan-out.js';
import { HttpSender } from './http-sender.js';
import { SecretBox } from './secret-box.js';
import { dueWebhooks, scheduleWebhookJobs, webhookJobs } from './webhook-jobs.js';
import { WebhookHealth } from './webhook-health.js';
import { VERSION } from '../version.js';

/** The User-Agent of every webhook request. */
const USER_AGENT = `Cairn-Hookshot/${VERSION}`;

/** Requests on the wire at most per webhook and process, for a receiver that answers quickly (the window adapts below it). */
const MAX_PER_WEBHOOK_CONCURRENCY = 64;
/** Attempts in flight at once per process, all webhooks together (sockets; their bodies' memory is CAIRN_WEBHOOK_MEMORY). */
const PROCESS_CONCURRENCY = 1024;

/**
 * The webhook capability as the rest of the service sees it: the secret box
 * and destination policy the API uses, the fan-out listener for the event
 * recorder, the Agenda jobs, and `wake` for new deliveries.
 */
export class WebhookDelivery {
  readonly policy: DestinationPolicy;
  private worker: DeliveryWorker | null = null;
  private readonly health: WebhookHealth;

  private constructor(
    readonly box: SecretBox,
    private readonly config: Config,
    private readonly orm: MikroORM,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {
    this.policy = new DestinationPolicy(config.webhookAllowedHosts);
    this.health = new WebhookHealth(orm, config.webhookDisableAfterMs, log);
  }

  static async open(config: Config, orm: MikroORM, metrics: Metrics, log: Logger): Promise<WebhookDelivery> {
    return new WebhookDelivery(
      await SecretBox.open(config.secretKey, orm, config.dataDir),
      config,
      orm,
      metrics,
      log.child({ component: 'webhooks' }),
    );
  }

  /** For the event recorder: deliveries are created in the event's transaction. */
  fanOut(): EventListener {
    return webhookFanOut((ids) => this.wake(ids));
  }

  /** New deliveries (events, pings, redeliveries) for these webhooks are waiting. */
  wake(webhookIds: string[]): void {
    this.worker?.wake(webhookIds);
  }

  jobs(): JobDefinitions {
    return async (agenda: Agenda) => {
      const sender = new HttpSender(this.policy, this.log);
      const settings = {
        timeoutMs: this.config.webhookTimeoutMs,
        retryDelaysMs: this.config.webhookRetryDelaysMs,
        maxPerWebhookConcurrency: MAX_PER_WEBHOOK_CONCURRENCY,
        processConcurrency: PROCESS_CONCURRENCY,
        memoryBytes: this.config.webhookMemoryBytes,
        databaseTimeoutMs: this.config.databaseTimeoutMs,
        userAgent: USER_AGENT,
      };
      this.worker = new DeliveryWorker(this.orm, agenda, sender, this.box, settings, this.health, this.log, this.metrics);
      const worker = this.worker;
      await webhookJobs(worker, this.health, this.orm, this.config, this.metrics, this.log)(agenda);
    };
  }

  /**
   * With a database no other process can use (the embedded one), claims left by a crashed run are
   * released at once instead of waiting for their lease to lapse. Before Agenda runs, and before
   * anything else of this process can deliver: a claim of its own would be released too, and its
   * delivery sent twice.
   */
  async releaseClaimsOfCrashedRun(): Promise<void> {
    await this.orm.em.fork().execute(`update deliveries set claimed_until = null where status = 'pending' and claimed_until is not null`);
  }

  /** Once Agenda runs: periodic jobs, and a sweep for whatever a previous run left pending. */
  async start(agenda: Agenda): Promise<void> {
    await scheduleWebhookJobs(agenda, this.config);
    this.wake(await dueWebhooks(this.orm, 0));
  }

  /** Graceful shutdown: no new attempts; those in flight finish (bounded by the timeout). */
  async stop(): Promise<void> {
    await this.worker?.stop();
  }
}
