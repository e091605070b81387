import type { MikroORM } from '@mikro-orm/postgresql';
import type { Agenda } from 'agenda';
import { defineJob, type JobDefinitions } from '../jobs/agenda.js';
import type { Logger } from '../logger.js';

/** What a kind of background pass is called and where its sweep finds work. */
interface PassKind {
  /** The sweep job's name (Agenda). */
  job: string;
  /** Logged when a pass fails (the sweep retries it). */
  failure: string;
  /** SQL selecting `repository_id` of repositories with work waiting (bounded by the caller's LIMIT). */
  waiting: string;
  /** Passes running at once in a process (unbounded when their work is bounded otherwise); the others queue. */
  atOnce?: number;
}

/**
 * Background work done a repository at a time (mergeability checks, auto-merges): the process that
 * commits a change wakes a pass over its repository at once; a sweep job every 30 s and at start-up
 * (one process at a time, Agenda's lock) wakes every repository with work waiting — whatever a crash
 * or another process left. Passes of one repository run one at a time; a wake during a pass runs
 * one more pass after it, as does a pass that says it left work for another; a kind may bound how
 * many run at once, the other repositories waiting their turn in the order they were woken.
 */
export abstract class RepositoryPasses {
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  /** Repositories waiting for a pass to end, oldest first (a sweep may wake a thousand). */
  private readonly queued = new Set<string>();
  private stopped = false;

  protected constructor(
    protected readonly orm: MikroORM,
    protected readonly log: Logger,
    private readonly kind: PassKind,
  ) {}

  /** One pass over a repository; true when it left work for another pass (a full batch). */
  protected abstract pass(repositoryId: string): Promise<boolean>;

  /** A pass over the repository, now or right after the one in progress (or once a pass of another ends). */
  wake(repositoryId: string): void {
    if (this.stopped) return;
    if (this.running.has(repositoryId)) {
      this.again.add(repositoryId);
      return;
    }
    if (this.running.size >= (this.kind.atOnce ?? Infinity)) {
      this.queued.add(repositoryId);
      return;
    }
    const pass = this.pass(repositoryId)
      .then((more) => {
        if (more) this.again.add(repositoryId);
      })
      .catch((error: unknown) => this.log.warn({ err: error, repositoryId }, this.kind.failure))
      .finally(() => {
        this.running.delete(repositoryId);
        if (this.again.delete(repositoryId)) this.queued.add(repositoryId);
        const next = this.queued.values().next();
        if (!next.done) {
          this.queued.delete(next.value);
          this.wake(next.value);
        }
      });
    this.running.set(repositoryId, pass);
  }

  jobs(): JobDefinitions {
    return (agenda: Agenda) => defineJob(agenda, this.log, this.kind.job, () => this.sweep(), { concurrency: 1 });
  }

  async start(agenda: Agenda): Promise<void> {
    await agenda.every('30 seconds', this.kind.job, undefined, { skipImmediate: true });
    await this.sweep();
  }

  /** No new passes; those running finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([...this.running.values()]);
  }

  private async sweep(): Promise<void> {
    const rows = await this.orm.em.fork().execute<Array<{ repository_id: string }>>(`${this.kind.waiting} limit 1000`);
    for (const row of rows) this.wake(row.repository_id);
  }
}
