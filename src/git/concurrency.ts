import os from 'node:os';
import { SharedSlots } from '../concurrency/slots.js';

/**
 * GraphQL fields that run git, resolving at once in this process: a query of many aliases queues
 * instead of forking hundreds of gits, and one account holds at most half the slots, so its queue
 * of expensive reads (thirty aliased listings of 40,000 tags, query after query) leaves the other
 * half to everyone else.
 */
const browsing = new SharedSlots(Math.max(2, os.availableParallelism() * 2));

/** Runs a git read for a GraphQL field of `account`'s request in one of the `browsing` slots. */
export async function limited<T>(account: string, work: () => Promise<T>): Promise<T> {
  const release = (await browsing.acquire([{ key: account, max: Math.max(1, Math.floor(browsing.size / 2)) }]))!;
  try {
    return await work();
  } finally {
    release();
  }
}
