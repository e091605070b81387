import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../logger.js';
import type { AttemptOutcome } from './http-sender.js';

/**
 * A webhook's failure streak and auto-disable. `failing_since` is the
 * first failure of the current streak and a success ends it. When a webhook
 * still failing has had no success for CAIRN_WEBHOOK_DISABLE_AFTER since then,
 * it becomes inactive (`consistent_failure`) and its pending deliveries are
 * cancelled: checked after every failed attempt and by the periodic sweep.
 */
export class WebhookHealth {
  constructor(
    private readonly orm: MikroORM,
    private readonly disableAfterMs: number,
    private readonly log: Logger,
  ) {}

  async afterAttempt(webhookId: string, outcome: AttemptOutcome): Promise<void> {
    const em = this.orm.em.fork();
    const at = new Date();
    const lastResponse = JSON.stringify({ statusCode: outcome.statusCode, error: outcome.error, at: at.toISOString() });
    if (outcome.ok) {
      // Successes are the common case: write only when ending a streak, or at most once a second.
      await em.execute(
        `update webhooks set last_response = ?, failing_since = null
          where id = ? and (failing_since is not null or last_response is null or last_response->>'at' < ?)`,
        [lastResponse, webhookId, new Date(at.getTime() - 1000).toISOString()],
      );
      return;
    }
    const [row] = await em.execute<{ failing_since: Date }[]>(
      `update webhooks set last_response = ?, failing_since = coalesce(failing_since, ?)
        where id = ? and active returning failing_since`,
      [lastResponse, at, webhookId],
    );
    if (row && at.getTime() - new Date(row.failing_since).getTime() >= this.disableAfterMs) {
      await this.disable([webhookId]);
    }
  }

  /** The periodic check: webhooks whose streak has lasted long enough. */
  async sweep(): Promise<void> {
    const rows = await this.orm.em
      .fork()
      .execute<{ id: string }[]>('select id from webhooks where active and failing_since <= ?', [
        new Date(Date.now() - this.disableAfterMs),
      ]);
    if (rows.length) await this.disable(rows.map((row) => row.id));
  }

  private async disable(webhookIds: string[]): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const disabled = await em.execute<{ id: string }[]>(
        `update webhooks set active = false, disabled_at = now(), disabled_reason = 'consistent_failure', updated_at = now()
          where id in (?) and active returning id`,
        [webhookIds],
      );
      if (disabled.length === 0) return;
      await cancelPendingDeliveries(
        em,
        disabled.map((row) => row.id),
      );
      this.log.warn({ webhookIds: disabled.map((row) => row.id) }, 'webhooks disabled after consistent failure');
    });
  }
}

/** Deactivating, deleting or disabling a webhook ends its pending deliveries. */
export async function cancelPendingDeliveries(em: EntityManager, webhookIds: string[]): Promise<void> {
  await em.execute(
    `update deliveries set status = 'cancelled', completed_at = now(), next_attempt_at = null
      where webhook_id in (?) and status = 'pending'`,
    [webhookIds],
  );
}
