import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../logger.js';
import { recordAttempts, type FinishedAttempt } from './attempt-record.js';

/** Attempts recorded by one statement at most. */
const MAX_BATCH = 500;

interface Waiting {
  attempt: FinishedAttempt;
  done: (recorded: boolean) => void;
  failed: (error: unknown) => void;
}

/**
 * Records finished attempts a batch at a time (group commit): one statement
 * runs at a time, and the attempts that end while it runs are recorded
 * together by the next. An attempt alone is recorded at once; under load a
 * statement records as many attempts as ended during the previous one. Each
 * `record` resolves once its attempt is in the database (true) or its
 * delivery turned out to be gone (false).
 */
export class AttemptRecorder {
  private queue: Waiting[] = [];
  private running = false;

  constructor(
    private readonly orm: MikroORM,
    private readonly log: Logger,
  ) {}

  record(attempt: FinishedAttempt): Promise<boolean> {
    return new Promise<boolean>((done, failed) => {
      this.queue.push({ attempt, done, failed });
      if (!this.running) void this.run();
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          await this.write(batch);
        } catch (error) {
          if (batch.length === 1) {
            batch[0]!.failed(error);
            continue;
          }
          // Whatever failed the batch, the others must not share its fate: each is tried alone.
          this.log.warn({ err: error, attempts: batch.length }, 'could not record a batch of attempts; recording them one by one');
          for (const one of batch) await this.write([one]).catch(one.failed);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async write(batch: Waiting[]): Promise<void> {
    // A fresh entity manager per statement: nothing accumulates in an identity map between batches.
    const recorded = await recordAttempts(
      this.orm.em.fork(),
      batch.map((one) => one.attempt),
    );
    for (const one of batch) one.done(recorded.has(one.attempt.deliveryId));
  }
}
