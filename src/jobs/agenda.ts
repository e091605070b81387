import { Agenda, type Job, type NotificationChannel } from 'agenda';
import { Settings as LuxonSettings } from 'luxon';
import pg from 'pg';
import type { Config } from '../config.js';
import { underSchemaLock } from '../db/orm.js';
import type { Logger } from '../logger.js';

// Agenda computes each repeating job's next run with luxon (the same copy: package.json pins the
// version Agenda uses). With no locale set, luxon asks ICU for the system's default locale, which maps
// ~6 MB of locale data into the process for a value nothing reads: no date of ours is formatted by
// luxon. A fixed locale skips the question.
LuxonSettings.defaultLocale = 'en-US';

/** A capability's background jobs: it defines them on the shared Agenda before it starts. */
export type JobDefinitions = (agenda: Agenda) => void | Promise<void>;

/**
 * How long a job's lock outlives the last sign of life of the process running it: a process that
 * dies or hangs (SIGSTOP) leaves its jobs — a sweep, a retry, a maintenance run — to the others
 * after this (plus their next poll), not after Agenda's default of 10 minutes. A job running longer
 * renews its lock (`defineJob`).
 */
const JOB_LOCK_LIFETIME_MS = 20_000;

/** Options a job definition may set (Agenda's, but the lock's lifetime: every job has JOB_LOCK_LIFETIME_MS). */
type JobOptions = Parameters<Agenda['define']>[2] & {
  lockLifetime?: never;
  /**
   * Many jobs of this definition may be due at once (one per repository, say). A process only
   * looks for due jobs at its poll (`processEvery`), and locks no more than it runs at once, so
   * without this a backlog would drain `concurrency` jobs per poll however quickly each one runs.
   * With it, each finished job tells every process (through the queue's notification channel) to
   * lock the next ones now.
   */
  backlog?: boolean;
};

/** Jobs of one definition running at once in a process, unless it says otherwise (Agenda's `defaultConcurrency`). */
const DEFAULT_CONCURRENCY = 8;

/**
 * Defines a job whose lock is renewed while it runs, every third of its lifetime: long work
 * (maintenance, a purge of many deliveries) keeps its job, and a process that stops renewing loses
 * it within JOB_LOCK_LIFETIME_MS. A renewal that fails is logged (another process may take the job
 * once the lock lapses); the last one has landed before the job's end is saved, so it cannot lock
 * a finished job again. A process locks at most as many jobs of a definition as it runs at once:
 * one locked and left waiting would lapse and be locked again, over and over.
 */
export function defineJob<DATA>(
  agenda: Agenda,
  log: Logger,
  name: string,
  run: (job: Job<DATA>) => Promise<unknown>,
  { backlog, ...options }: JobOptions = {},
): void {
  // Agenda emits `complete` once the job's end is saved, and its processor frees the job's slot in
  // the same turn (no `removeOnComplete` in between); the notification comes back through the
  // database later, so the slot is free when it asks for the next job. Without a notification
  // channel (the MongoDB backend) the queue is polled as before.
  if (backlog) agenda.on(`complete:${name}`, (job: Job) => void agenda.publishJobNotification(job));
  agenda.define<DATA>(
    name,
    async (job) => {
      let renewing: Promise<void> = Promise.resolve();
      const renewal = setInterval(() => {
        renewing = renewing.then(() =>
          job
            .touch()
            .catch((error: unknown) => log.warn({ err: error, job: name }, 'could not renew a job lock; another process may take the job')),
        );
      }, JOB_LOCK_LIFETIME_MS / 3);
      try {
        await run(job);
      } finally {
        clearInterval(renewal);
        await renewing;
      }
    },
    { lockLimit: options.concurrency ?? DEFAULT_CONCURRENCY, ...options },
  );
}

export async function startAgenda(
  config: Config,
  databaseUrl: string,
  log: Logger,
  definitions: JobDefinitions[],
): Promise<{ agenda: Agenda; stop: () => Promise<void> }> {
  let backend;
  let closeStore = async () => {};
  if (config.mongodbUrl) {
    // Connected here, not by Agenda: its own connect has no error path (an unreachable server would
    // crash the process half a minute later), and start-up must say which setting is wrong.
    const { MongoClient } = await import('mongodb');
    let client: InstanceType<typeof MongoClient>;
    try {
      client = await MongoClient.connect(config.mongodbUrl, { serverSelectionTimeoutMS: 5_000 });
    } catch (error) {
      throw new Error(`MONGODB_URL: cannot connect to MongoDB: ${(error as Error).message}`);
    }
    closeStore = () => client.close();
    backend = new (await import('@agendajs/mongo-backend')).MongoBackend({ mongo: client.db() });
  } else {
    const { PostgresBackend } = await import('@agendajs/postgres-backend');
    // The queue's own pool, with the service's database deadline (a stalled database fails a job's
    // statement instead of holding the worker), closed with the queue.
    const pool = new pg.Pool({
      connectionString: databaseUrl,
      connectionTimeoutMillis: config.databaseTimeoutMs,
      query_timeout: config.databaseTimeoutMs,
    });
    closeStore = () => pool.end();
    // `pool.end()` does not wait for its idle connections to close, so when the database stops right
    // after Agenda (shutdown on a busy machine), one of them can receive "terminating connection due
    // to administrator command" and, unheard, crash the process.
    pool.on('error', (error: Error) => log.warn({ err: error }, 'agenda database connection error'));
    // Agenda makes its tables and indexes as soon as it is constructed, outside any lock, and two
    // processes starting together fail there ("tuple concurrently updated"). They are made here,
    // one process at a time, and the backend Agenda is given leaves them be. (Not its log table:
    // Agenda's `logging` stays off, so nothing writes one.)
    const tables = new PostgresBackend({ pool, tableName: 'agenda_jobs', disableNotifications: true });
    await underSchemaLock(databaseUrl, () => tables.repository.connect()).catch(async (error: unknown) => {
      await closeStore();
      throw error;
    });
    backend = new PostgresBackend({ pool, tableName: 'agenda_jobs', ensureSchema: false });
    keepListening(backend.notificationChannel, log);
  }
  const agenda = new Agenda({
    backend,
    processEvery: '5 seconds',
    maxConcurrency: 64,
    defaultConcurrency: DEFAULT_CONCURRENCY,
    defaultLockLifetime: JOB_LOCK_LIFETIME_MS,
  });
  agenda.on('error', (error: unknown) => log.error({ err: error }, 'agenda error'));
  try {
    for (const define of definitions) await define(agenda);
    await agenda.start();
  } catch (error) {
    await closeStore();
    throw error;
  }
  log.info({ backend: config.mongodbUrl ? 'mongodb' : 'postgresql' }, 'background jobs started');
  return {
    agenda,
    stop: async () => {
      await agenda.stop();
      await closeStore();
    },
  };
}

/**
 * The job queue's LISTEN connection: when the database drops it (a restart, a failover,
 * `pg_terminate_backend`) the channel reports an `'error'` event and reconnects on its own, with
 * backoff — but an `'error'` event nobody listens to ends the process. After its last attempt the
 * channel gives up; it is asked to connect again a while later, for as long as the service runs.
 * Meanwhile jobs still run: workers also poll the queue (processEvery).
 */
function keepListening(channel: NotificationChannel | undefined, log: Logger): void {
  if (!channel) return;
  let retry: NodeJS.Timeout | undefined;
  channel.on('error', (error: Error) => {
    log.warn({ err: error }, 'job queue notifications: connection lost, reconnecting');
    if (channel.state === 'error' && !retry) {
      retry = setTimeout(() => {
        retry = undefined;
        channel.connect().catch(() => undefined); // a failure is reported as another 'error' event
      }, GIVE_UP_RETRY_MS);
      retry.unref();
    }
  });
}

/** How long after the channel gave up it is asked to connect again. */
const GIVE_UP_RETRY_MS = 30_000;
