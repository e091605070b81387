import type { MikroORM } from '@mikro-orm/postgresql';
import type { Agenda } from 'agenda';
import type { Config } from '../config.js';
import type { Metrics } from '../http/metrics.js';
import { defineJob, type JobDefinitions } from '../jobs/agenda.js';
import type { Logger } from '../logger.js';
import { DELIVER_JOB, type DeliveryWorker } from './delivery-worker.js';
import type { WebhookHealth } from './webhook-health.js';

const SWEEP_JOB = 'webhooks:sweep';
const PURGE_JOB = 'webhooks:purge';
const SWEEP_EVERY_MS = 5_000;
const PURGE_BATCH = 1_000;

/**
 * The webhook jobs on Agenda: deliveries (retries at their time, hand-overs
 * to a drain), the sweep (lost wake-ups, lapsed claims, auto-disable, queue
 * depth) and the retention purge.
 */
export function webhookJobs(
  worker: DeliveryWorker,
  health: WebhookHealth,
  orm: MikroORM,
  config: Config,
  metrics: Metrics,
  log: Logger,
): JobDefinitions {
  return async (agenda: Agenda) => {
    // Hands the webhook to a drain in this process and completes at once: no job slot is held while attempts run.
    defineJob<{ webhookId: string }>(agenda, log, DELIVER_JOB, (job) => worker.run(job), { concurrency: 16, removeOnComplete: true });
    defineJob(agenda, log, SWEEP_JOB, async () => {
      worker.wake(await dueWebhooks(orm, 2));
      await health.sweep();
      metrics.queueDepth.set(await pendingCount(orm));
    });
    defineJob(agenda, log, PURGE_JOB, () => purgeExpiredDeliveries(orm, config.deliveryRetentionMs, log));
  };
}

/** Once Agenda runs: the periodic jobs (idempotent when several processes start). */
export async function scheduleWebhookJobs(agenda: Agenda, config: Config): Promise<void> {
  await agenda.every(`${SWEEP_EVERY_MS / 1000} seconds`, SWEEP_JOB);
  const purgeEveryMs = Math.min(Math.max(Math.round(config.deliveryRetentionMs / 10), 1_000), 3_600_000);
  await agenda.every(`${Math.round(purgeEveryMs / 1000)} seconds`, PURGE_JOB);
}

/**
 * Webhooks with deliveries due for `graceSeconds` and not claimed by a live
 * worker. The periodic sweep leaves 2 s to the wake-up after a commit; at
 * start-up everything due is taken (it includes what a crash left behind).
 */
export async function dueWebhooks(orm: MikroORM, graceSeconds: number): Promise<string[]> {
  const rows = await orm.em.fork().execute<{ webhook_id: string }[]>(
    `select distinct webhook_id from deliveries
      where status = 'pending' and next_attempt_at <= now() - make_interval(secs => ?)
        and (claimed_until is null or claimed_until < now())`,
    [graceSeconds],
  );
  return rows.map((row) => row.webhook_id);
}

async function pendingCount(orm: MikroORM): Promise<number> {
  const [row] = await orm.em.fork().execute<{ n: number }[]>(`select count(*)::int as n from deliveries where status = 'pending'`);
  return row?.n ?? 0;
}

/**
 * Deletes delivery history older than the retention in batches of
 * 1,000 picked through the created_at index, each its own short statement,
 * so deliveries in progress never wait behind a long delete. Domain events
 * of that age go too (their deliveries were created with them).
 */
async function purgeExpiredDeliveries(orm: MikroORM, retentionMs: number, log: Logger): Promise<number> {
  const cutoff = new Date(Date.now() - retentionMs);
  const em = orm.em.fork();
  let purged = 0;
  for (;;) {
    const rows = await em.execute<{ id: string }[]>(
      `delete from deliveries where id in (
         select id from deliveries where created_at < ? and status <> 'pending' order by created_at limit ?)
       returning id`,
      [cutoff, PURGE_BATCH],
    );
    purged += rows.length;
    if (rows.length < PURGE_BATCH) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (;;) {
    const rows = await em.execute<{ id: string }[]>(
      `delete from domain_events where id in (select id from domain_events where created_at < ? order by id limit ?) returning id`,
      [cutoff, PURGE_BATCH],
    );
    if (rows.length < PURGE_BATCH) break;
  }
  if (purged) log.info({ purged, cutoff }, 'delivery history purged');
  return purged;
}
