/**
 * Bounds on work running at once, for whoever needs them: a map with a limit, a counting semaphore
 * whose holders also count against keys (`SharedSlots`), and slots shared round robin between keys
 * (`FairSlots`).
 */

/** Runs `work` over `items` with at most `limit` running at once; results in input order. */
export async function mapLimit<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** A key a holder of a `SharedSlots` slot counts against (a client address, an account), and how many that key may hold. */
export interface SlotShare {
  key: string;
  max: number;
}

interface SlotWaiter {
  shares: SlotShare[];
  grant: () => void;
}

/**
 * A counting semaphore whose holders also count against keys, each key holding at most its own
 * share: no one client can take every slot, however many requests it opens. Waiters are served in
 * order, except that one held back by its share does not hold back those behind it.
 */
export class SharedSlots {
  private active = 0;
  private readonly held = new Map<string, number>();
  private readonly waiting: SlotWaiter[] = [];

  constructor(readonly size: number) {}

  /** A release function once a slot is free within every share, or null if `signal` aborts first. */
  acquire(shares: SlotShare[], signal?: AbortSignal): Promise<(() => void) | null> {
    if (signal?.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      const waiter: SlotWaiter = {
        shares,
        grant: () => {
          signal?.removeEventListener('abort', abandon);
          resolve(this.releaser(shares));
        },
      };
      const abandon = () => {
        const index = this.waiting.indexOf(waiter);
        if (index >= 0) this.waiting.splice(index, 1);
        resolve(null);
      };
      signal?.addEventListener('abort', abandon, { once: true });
      this.waiting.push(waiter);
      this.serve();
    });
  }

  private fits(shares: SlotShare[]): boolean {
    return shares.every(({ key, max }) => (this.held.get(key) ?? 0) < max);
  }

  private serve(): void {
    for (let i = 0; i < this.waiting.length && this.active < this.size;) {
      const waiter = this.waiting[i]!;
      if (!this.fits(waiter.shares)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.active++;
      for (const { key } of waiter.shares) this.held.set(key, (this.held.get(key) ?? 0) + 1);
      waiter.grant();
    }
  }

  private releaser(shares: SlotShare[]): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      for (const { key } of shares) {
        const left = this.held.get(key)! - 1;
        if (left) this.held.set(key, left);
        else this.held.delete(key);
      }
      this.serve();
    };
  }
}

/**
 * Slots shared fairly between keys (accounts): a key holds at most one slot at a time, and a freed
 * slot goes to the key that has waited longest since it was last served, round robin — whatever
 * one key has queued, another waits for at most one piece of its work per slot.
 */
export class FairSlots {
  private active = 0;
  private readonly held = new Set<string>();
  /** Waiters by key; the map's order is the rotation (a key served goes to its back). */
  private readonly queues = new Map<string, Array<() => void>>();

  constructor(readonly size: number) {}

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    await new Promise<void>((grant) => {
      const queue = this.queues.get(key);
      if (queue) queue.push(grant);
      else this.queues.set(key, [grant]);
      this.serve();
    });
    try {
      return await work();
    } finally {
      this.active--;
      this.held.delete(key);
      this.serve();
    }
  }

  private serve(): void {
    for (const [key, waiters] of this.queues) {
      if (this.active >= this.size) return;
      if (this.held.has(key)) continue; // a key served meanwhile comes round again, and is skipped
      const grant = waiters.shift()!;
      this.queues.delete(key);
      if (waiters.length) this.queues.set(key, waiters);
      this.active++;
      this.held.add(key);
      grant();
    }
  }
}
