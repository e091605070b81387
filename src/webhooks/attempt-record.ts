import type { EntityManager } from '@mikro-orm/postgresql';
import { AttemptTrigger, DeliveryStatus } from './delivery.entity.js';
import type { AttemptOutcome } from './http-sender.js';

/** A delivery as claimed by a worker. */
export interface ClaimedDelivery {
  id: string;
  event: string;
  body: string;
  series: number;
  series_attempts: number;
  attempts_count: number;
  created_at: Date | string;
}

export interface AttemptFacts {
  url: string;
  headers: Record<string, string>;
  startedAt: Date;
  outcome: AttemptOutcome;
  retryDelaysMs: number[];
}

/**
 * What follows an attempt: success ends the delivery; a failure waits
 * for the next retry delay, counted from the failure, or — after the last —
 * ends it as failed. The attempt row and the delivery's new state are one
 * statement. A delivery cancelled meanwhile stays cancelled.
 */
export async function recordAttempt(
  em: EntityManager,
  delivery: ClaimedDelivery,
  facts: AttemptFacts,
): Promise<{ retryAt: Date | null; firstAttempt: boolean }> {
  const { outcome } = facts;
  const numberInSeries = delivery.series_attempts + 1;
  const trigger = numberInSeries > 1 ? AttemptTrigger.RETRY : delivery.series > 0 ? AttemptTrigger.REDELIVERY : AttemptTrigger.INITIAL;
  const delay = facts.retryDelaysMs[numberInSeries - 1];
  const now = new Date();
  const retryAt = !outcome.ok && delay !== undefined ? new Date(now.getTime() + delay) : null;
  const status = outcome.ok ? DeliveryStatus.SUCCEEDED : retryAt ? DeliveryStatus.PENDING : DeliveryStatus.FAILED;

  await em.execute(
    `with attempt as (
       insert into delivery_attempts (delivery_id, number, started_at, duration_ms, status_code, error, trigger)
       values (?, ?, ?, ?, ?, ?, ?))
     update deliveries set
       attempts_count = attempts_count + 1,
       series_attempts = series_attempts + 1,
       status = case when status = 'pending' then ? else status end,
       next_attempt_at = case when status = 'pending' then ?::timestamptz else null end,
       completed_at = case when status = 'pending' then ?::timestamptz else completed_at end,
       status_code = ?, duration_ms = ?, claimed_until = null,
       last_request_url = ?, last_request_headers = ?, last_response = ?
     where id = ?`,
    [
      delivery.id,
      delivery.attempts_count + 1,
      facts.startedAt,
      outcome.durationMs,
      outcome.statusCode,
      outcome.error,
      trigger,
      status,
      retryAt,
      status === DeliveryStatus.PENDING ? null : now,
      outcome.statusCode,
      outcome.durationMs,
      facts.url,
      JSON.stringify(facts.headers),
      outcome.response ? JSON.stringify(outcome.response) : null,
      delivery.id,
    ],
  );
  return { retryAt, firstAttempt: trigger === AttemptTrigger.INITIAL };
}
