import { isUnavailable } from '../errors/unavailable.js';

/**
 * Group commit: items queued under one key are written by one statement at a time, and those that
 * arrive while it runs go together in the next (at most `most` a statement). Alone, an item is
 * written at once; under load a statement takes everything that queued during the previous one —
 * one round trip, one lock and one commit for all of them.
 *
 * `write` answers each item of a batch, in order, with ONE statement: a batch is made or not as a
 * whole. If it fails, each item is written alone, so one item's failure is never another's: only
 * the item that fails alone sees its error. Unless the database failed it (away, or past its
 * deadline: unavailable.ts): then every item gets that answer at once, rather than each waiting a
 * deadline of its own after the batch's — even if one item's lock wait was what made it late.
 *
 * `distinct`, if given, names what no two items of one batch may share (one statement may touch a
 * row once): an item whose name is taken waits for the next batch, after those before it.
 */
export class GroupCommit<T, R> {
  private readonly queues = new Map<string, Waiting<T, R>[]>();

  constructor(
    private readonly write: (batch: T[]) => Promise<R[]>,
    private readonly most: number,
    private readonly options: {
      /** Told when a batch failed and its items are about to be written one by one. */
      onBatchFailure?: (error: unknown, size: number) => void;
      distinct?: (item: T) => string;
    } = {},
  ) {}

  add(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const entry = { item, resolve, reject };
      const queued = this.queues.get(key);
      if (queued) {
        queued.push(entry);
        return;
      }
      // No statement runs for this key: this one goes now, alone; the queue collects what comes meanwhile.
      this.queues.set(key, []);
      void this.drain(key, [entry]);
    });
  }

  private async drain(key: string, first: Waiting<T, R>[]): Promise<void> {
    for (let batch = first; batch.length > 0; batch = this.nextBatch(key)) {
      await this.writeBatch(batch);
    }
    this.queues.delete(key);
  }

  /** Takes the next batch off the queue of `key`: at most `most` items, in order, no two of one `distinct` name. */
  private nextBatch(key: string): Waiting<T, R>[] {
    const queued = this.queues.get(key)!;
    const { distinct } = this.options;
    if (!distinct) return queued.splice(0, this.most);
    const batch: Waiting<T, R>[] = [];
    const rest: Waiting<T, R>[] = [];
    const names = new Set<string>();
    for (const entry of queued) {
      const name = distinct(entry.item);
      if (batch.length < this.most && !names.has(name)) {
        names.add(name);
        batch.push(entry);
      } else rest.push(entry);
    }
    this.queues.set(key, rest);
    return batch;
  }

  private async writeBatch(batch: Waiting<T, R>[]): Promise<void> {
    try {
      const answers = await this.write(batch.map((entry) => entry.item));
      batch.forEach((entry, i) => entry.resolve(answers[i]!));
    } catch (error) {
      if (batch.length === 1 || isUnavailable(error)) {
        for (const entry of batch) entry.reject(error);
        return;
      }
      this.options.onBatchFailure?.(error, batch.length);
      for (const entry of batch) {
        await this.write([entry.item]).then(([answer]) => entry.resolve(answer!), entry.reject);
      }
    }
  }
}

interface Waiting<T, R> {
  item: T;
  resolve(answer: R): void;
  reject(error: unknown): void;
}
