import type { EntityManager } from '@mikro-orm/postgresql';
import { preparedWrite } from '../db/prepared-write.js';
import type { ClaimedDelivery } from './retry-policy.js';

/** A due delivery as a claim takes it, with its webhook as it is at that instant. */
export interface QueuedDelivery extends ClaimedDelivery {
  url: string;
  /** The webhook's secret, still sealed (secret-box.ts). */
  secret_ciphertext: string;
  /** Whether the webhook's latest attempt failed. */
  failing: boolean;
}

/**
 * The delivery queue is the `deliveries` table: a pending delivery is due at `next_attempt_at`, and
 * a worker holds it while `claimed_until` is ahead. Claiming takes up to `limit` due deliveries of
 * one webhook, oldest due first, in one statement that also reads the webhook's URL, secret and
 * `active` — so a webhook deactivated, deleted or re-pointed is never sent a delivery claimed
 * before the change — and skips rows another worker is claiming (SKIP LOCKED). A claim lasts
 * `leaseSeconds`: a worker that dies holds its claims only that long. Nothing is claimed from a
 * webhook that is inactive or gone.
 *
 * `dueWithinSeconds`: how far ahead of now counts as due.
 */
export async function claimDue(
  em: EntityManager,
  webhookId: string,
  options: { limit: number; dueWithinSeconds: number; leaseSeconds: number },
): Promise<QueuedDelivery[]> {
  return preparedWrite<QueuedDelivery>(
    em,
    `with hook as (select id, url, secret_ciphertext, failing_since is not null as failing from webhooks where id = ? and active),
          due as (select d.id from deliveries d join hook on hook.id = d.webhook_id
                   where d.status = 'pending' and d.next_attempt_at <= now() + make_interval(secs => ?)
                     and (d.claimed_until is null or d.claimed_until < now())
                   order by d.next_attempt_at, d.id
                   limit ? for update of d skip locked)
     update deliveries d set claimed_until = now() + make_interval(secs => ?)
       from due, hook
      where d.id = due.id
     returning d.id, d.event, d.body, d.series, d.series_attempts, d.attempts_count, d.created_at,
               hook.url, hook.secret_ciphertext, hook.failing`,
    [webhookId, options.dueWithinSeconds, options.limit, options.leaseSeconds],
  );
}
