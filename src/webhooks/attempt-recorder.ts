import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { GroupCommit } from '../db/group-commit.js';
import { preparedWrite } from '../db/prepared-write.js';
import type { Logger } from '../logger.js';
import type { FinishedAttempt } from './retry-policy.js';

/** Attempts recorded by one statement at most. */
const MAX_BATCH = 500;

/**
 * Records finished attempts a batch at a time (GroupCommit): one statement
 * runs at a time, and the attempts that end while it runs are recorded
 * together by the next. Each `record` resolves once its attempt is in the
 * database (true) or its delivery turned out to be gone (false).
 */
export class AttemptRecorder {
  private readonly batches: GroupCommit<FinishedAttempt, boolean>;

  constructor(orm: MikroORM, log: Logger) {
    this.batches = new GroupCommit(
      async (attempts) => {
        // A fresh entity manager per statement: nothing accumulates in an identity map between batches.
        const recorded = await recordAttempts(orm.em.fork(), attempts);
        return attempts.map((attempt) => recorded.has(attempt.deliveryId));
      },
      MAX_BATCH,
      {
        onBatchFailure: (error, size) =>
          log.warn({ err: error, attempts: size }, 'could not record a batch of attempts; recording them one by one'),
      },
    );
  }

  record(attempt: FinishedAttempt): Promise<boolean> {
    return this.batches.add('attempts', attempt);
  }
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
async function recordAttempts(em: EntityManager, attempts: FinishedAttempt[]): Promise<Set<string>> {
  const rows = await preparedWrite<{ delivery_id: string }>(
    em,
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
