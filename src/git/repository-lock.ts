import { within } from '../deadline.js';
import pg from 'pg';

/** Advisory-lock namespaces (first key of the two-key form); the second key is a hash of the repository id. */
const PUSH_LOCKS = 0x47495450; // "GITP": ref updates and their events
const MAINTENANCE_LOCKS = 0x4749544d; // "GITM": gc and friends
/** How long closing waits for locks still held (a push cut off by shutdown) before letting go anyway. */
const CLOSE_WAIT_MS = 10_000;

export type LockKind = 'push' | 'maintenance';

export interface HeldLock {
  /** The session holding the lock; usable for small autocommit statements while it is held. */
  client: pg.PoolClient;
  release(): Promise<void>;
}

/** One lock's line of waiters in this process: only its head talks to the database. */
interface Line {
  waiting: Array<() => void>;
}

/**
 * Per-repository PostgreSQL advisory locks, so that pushes to one repository
 * are serialised across every service process sharing the database. Session
 * locks on connections of their own (not the ORM's pool, which a long push
 * would otherwise starve): a process that dies releases its locks with its
 * connections. Waiting polls `pg_try_advisory_lock`, so a waiter whose client
 * has gone away simply stops waiting.
 *
 * Within a process, waiters for one lock queue in memory first: only the one
 * at the head holds a connection, so a crowd of pushes to one repository
 * costs one connection, not one each, and cannot starve other repositories.
 */
export class RepositoryLocks {
  private readonly pool: pg.Pool;
  private readonly lines = new Map<string, Line>();

  /** `timeoutMs`: how long to wait for a connection and each statement (CAIRN_DATABASE_TIMEOUT). */
  constructor(databaseUrl: string, timeoutMs: number) {
    this.pool = new pg.Pool({
      connectionString: databaseUrl,
      max: 64,
      idleTimeoutMillis: 10_000,
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
    });
    this.pool.on('error', () => undefined); // an idle connection dropped by the server; the pool replaces it
  }

  /**
   * Takes the lock, waiting up to `waitMs` (0: only if free now). Null when it
   * was not obtained in time or `signal` was aborted while waiting.
   */
  async acquire(kind: LockKind, repositoryId: string, options: { waitMs: number; signal?: AbortSignal }): Promise<HeldLock | null> {
    const key = [kind === 'push' ? PUSH_LOCKS : MAINTENANCE_LOCKS, repositoryId];
    const lineKey = `${kind} ${repositoryId}`;
    const deadline = Date.now() + options.waitMs;
    if (!(await this.takeTurn(lineKey, options.waitMs, options.signal))) return null;
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      this.passTurn(lineKey);
      throw error;
    }
    // A connection the database drops while checked out reports an 'error' event that nothing else
    // hears (pg-pool listens only to idle ones) and that would end the process. The lock went with the
    // connection: the statement in flight fails, and release() drops the broken connection.
    const dropped = () => undefined;
    client.on('error', dropped);
    const giveBack = (destroy?: boolean) => {
      client.off('error', dropped);
      client.release(destroy);
    };
    let delay = 10;
    try {
      for (;;) {
        const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1, hashtext($2)) as locked', key);
        if (rows[0]?.locked) break;
        if (Date.now() >= deadline || options.signal?.aborted) {
          giveBack();
          this.passTurn(lineKey);
          return null;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 250);
      }
    } catch (error) {
      giveBack(true);
      this.passTurn(lineKey);
      throw error;
    }
    let released = false;
    return {
      client,
      release: async () => {
        if (released) return;
        released = true;
        try {
          await client.query('select pg_advisory_unlock($1, hashtext($2))', key);
          giveBack();
        } catch {
          giveBack(true); // dropping the connection drops the lock
        } finally {
          this.passTurn(lineKey);
        }
      },
    };
  }

  /** Waits to be first in this process's line for the lock; false when `waitMs` passed or `signal` aborted first. */
  private takeTurn(lineKey: string, waitMs: number, signal?: AbortSignal): Promise<boolean> {
    const line = this.lines.get(lineKey);
    if (!line) {
      this.lines.set(lineKey, { waiting: [] });
      return Promise.resolve(true);
    }
    if (waitMs <= 0 || signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onTurn = () => {
        stopWaiting();
        resolve(true);
      };
      const giveUp = () => {
        const index = line.waiting.indexOf(onTurn);
        if (index < 0) return; // the turn came first
        line.waiting.splice(index, 1);
        stopWaiting();
        resolve(false);
      };
      const timer = setTimeout(giveUp, waitMs);
      const stopWaiting = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', giveUp);
      };
      signal?.addEventListener('abort', giveUp, { once: true });
      line.waiting.push(onTurn);
    });
  }

  private passTurn(lineKey: string): void {
    const line = this.lines.get(lineKey);
    const next = line?.waiting.shift();
    if (next) next();
    else this.lines.delete(lineKey);
  }

  /** Lets go of the lock connections: waits for held ones (bounded), so a stuck push cannot stall shutdown. */
  async close(): Promise<void> {
    await within(this.pool.end(), CLOSE_WAIT_MS);
  }
}
