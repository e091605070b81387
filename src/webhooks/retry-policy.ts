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
