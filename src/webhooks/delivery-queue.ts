import type { EntityManager } from '@mikro-orm/postgresql';
import { preparedWrite } from '../db/prepared-write.js';
import type { ClaimedDelivery } from './retry-policy.js';

/** A due delivery as a claim takes it, with its webhook as it is at that instant. */
interface QueuedDelivery extends ClaimedDelivery {
  url: string;
  /** The webhook's secret, still sealed (secret-box.ts). */
  secret_ciphertext: string;
  /** Whether the webhook's latest attempt failed. */
  failing: boolean;
}

/** What one claim took, and how many deliveries were due when it ran. */
export interface Claimed {
  deliveries: Array<QueuedDelivery & { bytes: number }>;
  /** Due deliveries the claim saw (at most its `limit`): more than it took when the rest did not fit `maxBytes`. */
  due: number;
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
 * The claim takes the oldest due deliveries whose bodies fit `maxBytes` together (their stored
 * UTF-8 size, read without loading them), and with `oversizeFirst` the oldest one whatever its
 * size: the worker's memory bound holds bodies, not counts. A body that does not fit is left for a
 * later claim, in its turn.
 *
 * The due deliveries are read by the webhook's id as one value (`= (select id from hook)`), not by
 * a join on the webhook: then the index on (webhook_id, next_attempt_at, id) hands them over in
 * claim order and the scan stops at `limit`. Joined, PostgreSQL read and sorted the webhook's whole
 * backlog at every claim (1,500 rows for 32, half a push's drain).
 *
 * `dueWithinSeconds`: how far ahead of now counts as due.
 */
export async function claimDue(
  em: EntityManager,
  webhookId: string,
  options: { limit: number; maxBytes: number; oversizeFirst: boolean; dueWithinSeconds: number; leaseSeconds: number },
): Promise<Claimed> {
  // One row even when nothing was taken: the count of due deliveries says whether some were left for bytes.
  const rows = await preparedWrite<QueuedDelivery & { bytes: number; due: number; id: string | null }>(
    em,
    `with hook as (select id, url, secret_ciphertext, failing_since is not null as failing from webhooks where id = ? and active),
          due as (select d.id, d.next_attempt_at, octet_length(d.body) as bytes
                    from deliveries d
                   where d.webhook_id = (select id from hook) and d.status = 'pending' and d.next_attempt_at <= now() + make_interval(secs => ?)
                     and (d.claimed_until is null or d.claimed_until < now())
                   order by d.next_attempt_at, d.id
                   limit ? for update of d skip locked),
          fitting as (select id from (select id, sum(bytes) over w as running, row_number() over w as n
                                        from due window w as (order by next_attempt_at, id)) ranked
                       where running <= ? or (n = 1 and ?)),
          claimed as (update deliveries d set claimed_until = now() + make_interval(secs => ?)
                        from fitting, hook
                       where d.id = fitting.id
                      returning d.id, d.event, d.body, octet_length(d.body) as bytes, d.series, d.series_attempts,
                                d.attempts_count, d.created_at, hook.url, hook.secret_ciphertext, hook.failing)
     select claimed.*, counted.due from (select count(*)::int as due from due) counted left join claimed on true`,
    [webhookId, options.dueWithinSeconds, options.limit, options.maxBytes, options.oversizeFirst, options.leaseSeconds],
  );
  return {
    deliveries: rows.filter((row): row is QueuedDelivery & { bytes: number; due: number } => row.id !== null),
    due: rows[0]?.due ?? 0,
  };
}
