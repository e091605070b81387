import pg from 'pg';

/** Advisory-lock namespaces (first key of the two-key form); the second key is a hash of the repository id. */
const PUSH_LOCKS = 0x47495450; // "GITP": ref updates and their events
const MAINTENANCE_LOCKS = 0x4749544d; // "GITM": gc and friends

export type LockKind = 'push' | 'maintenance';

export interface HeldLock {
  /** The session holding the lock; usable for small autocommit statements while it is held. */
  client: pg.PoolClient;
  release(): Promise<void>;
}

/**
 * Per-repository PostgreSQL advisory locks, so that pushes to one repository
 * are serialised across every service process sharing the database. Session
 * locks on connections of their own (not the ORM's pool, which a long push
 * would otherwise starve): a process that dies releases its locks with its
 * connections. Waiting polls `pg_try_advisory_lock`, so a waiter whose client
 * has gone away simply stops waiting.
 */
export class RepositoryLocks {
  private readonly pool: pg.Pool;

  constructor(databaseUrl: string) {
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: 64, idleTimeoutMillis: 10_000 });
    this.pool.on('error', () => undefined); // an idle connection dropped by the server; the pool replaces it
  }

  /**
   * Takes the lock, waiting up to `waitMs` (0: only if free now). Null when it
   * was not obtained in time or `signal` was aborted while waiting.
   */
  async acquire(kind: LockKind, repositoryId: string, options: { waitMs: number; signal?: AbortSignal }): Promise<HeldLock | null> {
    const client = await this.pool.connect();
    const key = [kind === 'push' ? PUSH_LOCKS : MAINTENANCE_LOCKS, repositoryId];
    const deadline = Date.now() + options.waitMs;
    let delay = 10;
    try {
      for (;;) {
        const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1, hashtext($2)) as locked', key);
        if (rows[0]?.locked) break;
        if (Date.now() >= deadline || options.signal?.aborted) {
          client.release();
          return null;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 250);
      }
    } catch (error) {
      client.release(true);
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
          client.release();
        } catch {
          client.release(true); // dropping the connection drops the lock
        }
      },
    };
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
