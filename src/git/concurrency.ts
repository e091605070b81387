import os from 'node:os';

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

/**
 * A counting semaphore: at most `size` holders, the rest wait in order. It
 * bounds how many pack-producing git processes run at once, so a crowd of
 * clones queues instead of exhausting memory.
 */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  async acquire(): Promise<() => void> {
    if (this.active >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const wake = this.waiting.shift();
      if (wake)
        wake(); // the slot passes straight to the next waiter
      else this.active--;
    };
  }
}

/** GraphQL fields that run git, resolving at once in this process: a query of many aliases queues instead of forking hundreds of gits. */
const browsing = new Semaphore(Math.max(2, os.availableParallelism() * 2));

/** Runs a git read for a GraphQL field in one of the `browsing` slots. */
export async function limited<T>(work: () => Promise<T>): Promise<T> {
  const release = await browsing.acquire();
  try {
    return await work();
  } finally {
    release();
  }
}
