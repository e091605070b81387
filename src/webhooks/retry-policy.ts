import type { EntityManager } from '@mikro-orm/postgresql';
import { AttemptTrigger, DeliveryStatus } from './delivery.entity.js';
import type { AttemptOutcome } from './http-sender.js';

/**
 * The retry policy of webhook deliveries, pure: given a claimed delivery and how its attempt went,
 * what becomes of it — succeeded, retried after the next delay of the schedule
 * (CAIRN_WEBHOOK_RETRY_DELAYS), or failed once the schedule is spent. attempt-recorder.ts writes
 * what it decides.
 */

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

/** An attempt that has ended, with what it makes of its delivery: its attempt row and the delivery's new state. */
export interface FinishedAttempt {
  deliveryId: string;
  number: number;
  startedAt: Date;
  outcome: AttemptOutcome;
  trigger: AttemptTrigger;
  status: DeliveryStatus;
  retryAt: Date | null;
  completedAt: Date | null;
  url: string;
  headers: Record<string, string>;
}

/**
 * What follows an attempt, decided when it ends: success ends the delivery;
 * a failure waits for the next retry delay, counted from the failure, or —
 * after the last — ends it as failed.
 */
export function finishAttempt(delivery: ClaimedDelivery, facts: AttemptFacts): FinishedAttempt {
  const { outcome } = facts;
  const numberInSeries = delivery.series_attempts + 1;
  const trigger = numberInSeries > 1 ? AttemptTrigger.RETRY : delivery.series > 0 ? AttemptTrigger.REDELIVERY : AttemptTrigger.INITIAL;
  const delay = facts.retryDelaysMs[numberInSeries - 1];
  const now = new Date();
  const retryAt = !outcome.ok && delay !== undefined ? new Date(now.getTime() + delay) : null;
  const status = outcome.ok ? DeliveryStatus.SUCCEEDED : retryAt ? DeliveryStatus.PENDING : DeliveryStatus.FAILED;
  return {
    deliveryId: delivery.id,
    number: delivery.attempts_count + 1,
    startedAt: facts.startedAt,
    outcome,
    trigger,
    status,
    retryAt,
    completedAt: status === DeliveryStatus.PENDING ? null : now,
    url: facts.url,
    headers: facts.headers,
  };
}

/**
 * Records finished attempts, any number in one statement: each delivery's
 * new state, then an attempt row for each delivery that was updated. The
 * update comes first and locks the delivery, so a delivery deleted meanwhile
 * (with its webhook) is simply not recorded instead of failing the batch on
 * its foreign key, and one deleted later waits for this statement. A delivery
 * cancelled meanwhile stays cancelled. An attempt already recorded (a statement
 * that landed after its caller gave up on it, then tried again) is not recorded
 * twice. Returns the ids of the deliveries recorded.
 */
export async function recordAttempts(em: EntityManager, attempts: FinishedAttempt[]): Promise<Set<string>> {
  const rows = await em.execute<{ delivery_id: string }[]>(
    `with input as (
       select * from jsonb_to_recordset(?::jsonb) as i(
         id uuid, number int, started_at timestamptz, duration_ms int, status_code int, error text, trigger text,
         status text, next_attempt_at timestamptz, completed_at timestamptz, url text, headers jsonb, response jsonb)),
     updated as (
       update deliveries d set
         attempts_count = d.attempts_count + 1,
         series_attempts = d.series_attempts + 1,
         status = case when d.status = 'pending' then i.status else d.status end,
         next_attempt_at = case when d.status = 'pending' then i.next_attempt_at else null end,
         completed_at = case when d.status = 'pending' then i.completed_at else d.completed_at end,
         status_code = i.status_code, duration_ms = i.duration_ms, claimed_until = null,
         last_request_url = i.url, last_request_headers = i.headers, last_response = i.response
       from input i
       where d.id = i.id and d.attempts_count = i.number - 1
       returning d.id)
     insert into delivery_attempts (delivery_id, number, started_at, duration_ms, status_code, error, trigger)
     select i.id, i.number, i.started_at, i.duration_ms, i.status_code, i.error, i.trigger
       from input i join updated u on u.id = i.id
     returning delivery_id`,
    [JSON.stringify(attempts.map(attemptFields))],
  );
  return new Set(rows.map((row) => row.delivery_id));
}

function attemptFields(attempt: FinishedAttempt) {
  const { outcome } = attempt;
  return {
    id: attempt.deliveryId,
    number: attempt.number,
    started_at: attempt.startedAt,
    duration_ms: outcome.durationMs,
    status_code: outcome.statusCode,
    error: outcome.error,
    trigger: attempt.trigger,
    status: attempt.status,
    next_attempt_at: attempt.retryAt,
    completed_at: attempt.completedAt,
    url: attempt.url,
    headers: attempt.headers,
    response: outcome.response,
  };
}
