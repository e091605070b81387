import { within } from '../../deadline.js';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SharedSlots } from '../../concurrency/slots.js';
import { installHooks } from '../hooks.js';
import type { Logger } from '../../logger.js';
import { OutputSockets } from './git-output.js';
import { installPackCache } from './pack-cache.js';

/** Pushes one user may have in flight at once in one process. */
const MAX_PUSHES_PER_USER = 8;

/** Who a fetch is for, as its slot counts it. */
export interface FetchClient {
  /** The client's address (client-address.ts). */
  address: string;
  /** The account of an authenticated fetch. */
  userId?: string;
}

/**
 * The running parts of git hosting, built once at start-up: the hook
 * directory, the bound on concurrent fetches, and the pushes in flight
 * (which a graceful shutdown lets finish recording before the database goes away).
 */
export class GitHosting {
  /**
   * Pack-producing upload-pack runs at once; more clones wait their turn rather than pile up. One
   * address holds at most a quarter of them and one account half (an account may fetch from many
   * machines; an address is all a client without one has): a client that opens many fetches and
   * reads them slowly makes its own wait, not everyone's.
   */
  private readonly fetchSlots = new SharedSlots(Math.max(4, os.availableParallelism() * 4));
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly pushesByUser = new Map<string, number>();

  private constructor(
    readonly hooksDir: string,
    readonly reportsDir: string,
    /** Where fetch requests too large to keep in memory wait for their git (request-body.ts). */
    readonly requestsDir: string,
    /** What fetches' packs are read through (git-output.ts); null where the socket could not be made (they go through pipes). */
    readonly outputSockets: OutputSockets | null,
    /** The command `pack-objects` runs behind so concurrent clones share packs (pack-cache.ts); null without the cache. */
    readonly packCache: string[] | null,
  ) {}

  /** `nonceSeed`: the site's signed-push nonce seed (receive-settings.ts); `packCacheBytes`: CAIRN_PACK_CACHE. */
  static async start(dataDir: string, nonceSeed: string, packCacheBytes: number, log: Logger): Promise<GitHosting> {
    const hooksDir = await installHooks(dataDir, nonceSeed);
    // Scratch of the last process: reports and requests of pushes and fetches that died with it,
    // sockets of its gits, its cached packs (nothing waits on them now).
    const scratch = (name: string) => freshScratchDir(dataDir, name);
    const [reportsDir, requestsDir, outputDir, packCacheDir] = await Promise.all([
      scratch('push-reports'),
      scratch('fetch-requests'),
      scratch('git-output'),
      scratch('pack-cache'),
    ]);
    const packCache = await installPackCache(packCacheDir, hooksDir, packCacheBytes, log);
    const outputSockets = await OutputSockets.listen(outputDir).catch((error: unknown) => {
      log.warn({ err: error, dir: outputDir }, 'git output socket unavailable: packs go through pipes, at more CPU');
      return null;
    });
    return new GitHosting(hooksDir, reportsDir, requestsDir, outputSockets, packCache);
  }

  /** A fetch slot within the client's shares; null when `signal` aborts (the client left) first. */
  fetchSlot(client: FetchClient, signal: AbortSignal): Promise<(() => void) | null> {
    const size = this.fetchSlots.size;
    const shares = [{ key: `address ${client.address}`, max: Math.max(1, Math.floor(size / 4)) }];
    if (client.userId) shares.push({ key: `account ${client.userId}`, max: Math.max(1, Math.floor(size / 2)) });
    return this.fetchSlots.acquire(shares, signal);
  }

  /**
   * A push slot for this user, or null when they already have MAX_PUSHES_PER_USER in flight here:
   * one account's slow or stalled pushes cannot take every lock connection.
   */
  startPush(userId: string): (() => void) | null {
    const running = this.pushesByUser.get(userId) ?? 0;
    if (running >= MAX_PUSHES_PER_USER) return null;
    this.pushesByUser.set(userId, running + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = this.pushesByUser.get(userId)! - 1;
      if (left) this.pushesByUser.set(userId, left);
      else this.pushesByUser.delete(userId);
    };
  }

  /** Keeps track of a push until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work)).catch(() => undefined);
    return work;
  }

  /** Waits (bounded) for pushes in flight to record their events: before the jobs and the database stop. */
  async drain(timeoutMs = 30_000): Promise<void> {
    if (!this.inFlight.size) return;
    await within(Promise.allSettled([...this.inFlight]), timeoutMs);
  }
}

/** A directory of the data dir's scratch space (`tmp/<name>`), only the service's user may enter, emptied of what the last process left. */
async function freshScratchDir(dataDir: string, name: string): Promise<string> {
  const dir = path.join(dataDir, 'tmp', name);
  await fs.rm(dir, { recursive: true, force: true });
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  return dir;
}
