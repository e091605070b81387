import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { within } from '../../deadline.js';

/** Advisory-lock namespaces (first key of the two-key form); the second key is a hash of the repository id. */
const PUSH_LOCKS = 0x47495450; // "GITP": ref updates and their events
const MAINTENANCE_LOCKS = 0x4749544d; // "GITM": gc and friends
/** How long closing waits for locks still held (a push cut off by shutdown) before letting go anyway. */
const CLOSE_WAIT_MS = 10_000;
/** How often a waiter looks for a lease run out (besides trying the lock at every poll). */
const LEASE_CHECK_EVERY_MS = 1_000;

export type LockKind = 'push' | 'maintenance';

export interface HeldLock {
  /** The session holding the lock; usable for small autocommit statements while it is held. */
  client: pg.PoolClient;
  /** This holding's lease token: what the repository's fence names once the lease is taken away (RevokeLease). */
  token: string;
  release(): Promise<void>;
}

/**
 * Told, before a lock whose holder stopped renewing its lease is taken from it, the token of that
 * holding: the repository's refs must refuse every change made under it from then on (fencing),
 * since its holder may be only paused and go on once it wakes.
 */
export type RevokeLease = (kind: LockKind, repositoryId: string, token: string) => Promise<void>;

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
 *
 * Each lock held has a lease (`repository_lock_leases`), renewed while it is held. A session that
 * holds a lock stays open as long as its machine answers TCP, a paused (SIGSTOP) or hung process
 * included; so a waiter that finds the lease run out first revokes the holding (the repository's
 * fence, see RevokeLease), then ends the holder's session, which lets the lock go.
 */
export class RepositoryLocks {
  private readonly pool: pg.Pool;
  private readonly lines = new Map<string, Line>();

  /**
   * `timeoutMs`: how long to wait for a connection and each statement (CAIRN_DATABASE_TIMEOUT).
   * `leaseMs` (CAIRN_LOCK_LEASE): how long a lease lasts from its last renewal; it is renewed three
   * times within it, so two renewals may fail (a slow database) before it runs out.
   */
  constructor(
    databaseUrl: string,
    timeoutMs: number,
    private readonly leaseMs: number,
    private readonly revoke: RevokeLease,
  ) {
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
  async acquire(
    kind: LockKind,
    repositoryId: string,
    options: { waitMs: number; signal?: AbortSignal; takeOver?: boolean },
  ): Promise<HeldLock | null> {
    const key: [number, string] = [kind === 'push' ? PUSH_LOCKS : MAINTENANCE_LOCKS, repositoryId];
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
    const token = randomUUID();
    let delay = 10;
    let leaseCheckedAt = Date.now();
    try {
      for (;;) {
        // The lease a holder left without releasing (its session ended: a dropped connection, a
        // database restart) names a holding that may still have git at work: it is revoked too.
        const { rows } = await client.query<{ locked: boolean; left: string | null }>(
          `with attempt as (select pg_try_advisory_lock($1, hashtext($2)) as locked),
                previous as (select token from repository_lock_leases where kind = $3 and repository_id = $2),
                lease as (
                  insert into repository_lock_leases (kind, repository_id, token, backend_pid, expires_at)
                  select $3, $2, $4, pg_backend_pid(), now() + make_interval(secs => $5) from attempt where locked
                  on conflict (kind, repository_id) do update
                    set token = excluded.token, backend_pid = excluded.backend_pid, expires_at = excluded.expires_at)
           select locked, (select token from previous) as left from attempt`,
          [...key, kind, token, this.leaseMs / 1000],
        );
        if (rows[0]?.locked) {
          if (rows[0].left) await this.revoke(kind, repositoryId, rows[0].left.replace(/^revoked:/, ''));
          break;
        }
        if (Date.now() >= deadline || options.signal?.aborted) {
          giveBack();
          this.passTurn(lineKey);
          return null;
        }
        if (options.takeOver !== false && Date.now() - leaseCheckedAt >= LEASE_CHECK_EVERY_MS) {
          leaseCheckedAt = Date.now();
          if (await this.takeFromLapsedHolder(client, kind, repositoryId, key)) delay = 10;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 250);
      }
    } catch (error) {
      giveBack(true);
      this.passTurn(lineKey);
      throw error;
    }
    // Renewed through the holding session itself: a paused process renews nothing and loses the lease.
    const renewal = setInterval(() => {
      client
        .query(
          'update repository_lock_leases set expires_at = now() + make_interval(secs => $3) where kind = $1 and repository_id = $2 and token = $4',
          [kind, repositoryId, this.leaseMs / 1000, token],
        )
        .catch(() => undefined); // the session is gone or the database slow: the lease runs out, the fence holds
    }, this.leaseMs / 3);
    renewal.unref();
    let released = false;
    return {
      client,
      token,
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(renewal);
        try {
          await client.query(
            `with lease as (delete from repository_lock_leases where kind = $3 and repository_id = $2 and token = $4)
             select pg_advisory_unlock($1, hashtext($2))`,
            [...key, kind, token],
          );
          giveBack();
        } catch {
          giveBack(true); // dropping the connection drops the lock
        } finally {
          this.passTurn(lineKey);
        }
      },
    };
  }

  /**
   * When the lock's lease has run out and the session it names still holds the lock: claims the
   * lease first (its token marked revoked, in the same statement that checks it has run out, so a
   * late renewal cannot bring it back), revokes the holding (fencing its ref changes), then ends
   * that session if it still holds this very lock, which lets the lock go. Matching the lock itself
   * keeps a lease whose holder let go meanwhile (its session, or pid, now another's) from ending an
   * innocent session. True when it asked for a session to end.
   */
  private async takeFromLapsedHolder(client: pg.PoolClient, kind: LockKind, repositoryId: string, key: [number, string]): Promise<boolean> {
    const holds = `held.locktype = 'advisory' and held.granted and held.objsubid = 2
      and held.database = (select oid from pg_database where datname = current_database())
      and held.classid::bigint = $1 and held.objid::bigint = (hashtext($2)::bigint & 4294967295)`;
    const { rows } = await client.query<{ token: string; backend_pid: number }>(
      `update repository_lock_leases lease
         set token = case when lease.token like 'revoked:%' then lease.token else 'revoked:' || lease.token end
       where lease.kind = $3 and lease.repository_id = $2 and lease.expires_at < now()
         and exists (select 1 from pg_locks held where held.pid = lease.backend_pid and ${holds})
       returning substr(lease.token, 9) as token, lease.backend_pid`,
      [...key, kind],
    );
    const lapsed = rows[0];
    if (!lapsed) return false;
    await this.revoke(kind, repositoryId, lapsed.token);
    // Refused (another role's session, a superuser's): the fence stands, and the holder keeps the lock until it ends.
    const { rows: ended } = await client
      .query<{ ended: boolean }>(`select pg_terminate_backend(held.pid) as ended from pg_locks held where held.pid = $3 and ${holds}`, [
        ...key,
        lapsed.backend_pid,
      ])
      .catch(() => ({ rows: [] as Array<{ ended: boolean }> }));
    return ended[0]?.ended ?? false;
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
