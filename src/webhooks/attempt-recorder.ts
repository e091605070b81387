import type { MikroORM } from '@mikro-orm/postgresql';
import { GroupCommit } from '../db/group-commit.js';
import type { Logger } from '../logger.js';
import { recordAttempts, type FinishedAttempt } from './retry-policy.js';

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
      (error, size) => log.warn({ err: error, attempts: size }, 'could not record a batch of attempts; recording them one by one'),
    );
  }

  record(attempt: FinishedAttempt): Promise<boolean> {
    return this.batches.add('attempts', attempt);
  }
}
