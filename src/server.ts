import { randomUUID } from 'node:crypto';
import { within } from './deadline.js';
import http from 'node:http';
import type { Agenda } from 'agenda';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Accounts } from './auth/accounts.service.js';
import { TokenAuthenticator } from './auth/authenticate.js';
import { bootstrapAdmin } from './auth/bootstrap.js';
import type { Config } from './config.js';
import { ENTITIES } from './capabilities.js';
import { Collaborators } from './collaborators/collaborator.service.js';
import { requestContext, type RequestContext, type Services } from './context.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded-postgres.js';
import { closeFastReads } from './db/fast-read.js';
import { openDatabase } from './db/orm.js';
import { DiskSpace } from './disk/disk-space.js';
import { reportNoSpaceTo } from './errors/no-space.js';
import { siteValue } from './db/site-values.js';
import { reportUnavailabilityTo } from './errors/unavailable.js';
import { EventRecorder } from './events/event-recorder.js';
import { configureGitBounds } from './git/git-bounds.js';
import { GitHosting } from './git/hosting.js';
import { maintenanceJobs, maintenanceScheduler } from './git/maintenance.js';
import { reconcileAtStart, reconcileJobs, scheduleReconcile } from './git/reconcile.js';
import { RefTransactions } from './git/ref-transaction.js';
import { pushCertSeed } from './git/receive-settings.js';
import { RepositoryLocks } from './git/repository-lock.js';
import { createGitHandler } from './git/smart-http.js';
import { GitStorage } from './git/storage.js';
import { startApollo } from './graphql/apollo.js';
import type { GraphQLSchema } from 'graphql';
import { createApp, type Mount } from './http/app.js';
import { Metrics } from './http/metrics.js';
import { Issues } from './issues/issue.service.js';
import { followRefs } from './pulls/follow-refs.js';
import { Mergeability } from './pulls/mergeability.js';
import { PullRequests } from './pulls/pull-request.service.js';
import { RateLimiter } from './ratelimit/rate-limiter.js';
import { chargeOperations, RateLimits } from './ratelimit/rate-limits.js';
import { startAgenda } from './jobs/agenda.js';
import { compactWhenIdle } from './memory/idle-compaction.js';
import type { Logger } from './logger.js';
import { Repository } from './repositories/repository.entity.js';
import { Repositories } from './repositories/repository.service.js';
import { getSchema } from './schema.js';
import { WebhookAdmin } from './webhooks/webhook-admin.service.js';
import { WebhookDelivery } from './webhooks/webhook-delivery.js';

/** Routers a surface built on the core (the REST facade) mounts onto the app, given the running services and schema. */
export type Surface = (services: Services, schema: GraphQLSchema) => Mount[];

export interface RunningService {
  services: Services;
  server: http.Server;
  /** Graceful stop: no new connections, in-flight work finishes (bounded), database stopped last. */
  close(): Promise<void>;
}

const SHUTDOWN_GRACE_MS = 10_000;
/**
 * How long the steps after HTTP (pushes and attempts in flight, jobs, the database) may take together.
 * Each waits on the database; one that stops answering would hold the shutdown for as long, so past
 * this the shutdown fails, naming the step it waited on (run.ts then exits 1, and an embedded
 * PostgreSQL still gets its fast shutdown from the exit hook).
 */
const CLEANUP_DEADLINE_MS = 10_000;

export async function startService(
  config: Config,
  log: Logger,
  surface: Surface = () => [],
  /** The embedded database, when the caller started it already (run.ts starts it while the service loads). */
  starting?: Promise<EmbeddedDatabase>,
): Promise<RunningService> {
  const cleanups: Array<[step: string, run: () => Promise<unknown>]> = [];
  const cleanUp = async () => {
    let pending = '';
    const steps = (async () => {
      for (const [step, run] of cleanups.reverse()) {
        pending = step;
        await run().catch((error: unknown) => log.error({ err: error, step }, 'shutdown step failed'));
      }
    })();
    if ((await within(steps, CLEANUP_DEADLINE_MS)).late) {
      throw new Error(`shutdown step "${pending}" still running after ${CLEANUP_DEADLINE_MS} ms`);
    }
  };
  configureGitBounds(config.gitBounds, log);
  try {
    let embedded: EmbeddedDatabase | null = null;
    if (!config.databaseUrl) {
      embedded = await (starting ?? startEmbeddedPostgres(config.dataDir, log));
      cleanups.push(['embedded database', () => embedded!.stop()]);
    }
    const databaseUrl = config.databaseUrl ?? embedded!.url;
    const orm = await openDatabase(databaseUrl, log, ENTITIES, config.databaseTimeoutMs);
    cleanups.push([
      'database connections',
      async () => {
        await closeFastReads(orm);
        await orm.close(true);
      },
    ]);
    await bootstrapAdmin(orm, config, log);

    const git = new GitStorage(config.repositoriesDir, log, orm);
    const locks = new RepositoryLocks(databaseUrl, config.databaseTimeoutMs, config.lockLeaseMs, async (kind, id, token) => {
      log.warn({ repositoryId: id, lock: kind }, 'revoking a repository lock holding never let go (its holder hung, was cut off or died)');
      if (kind === 'push') await git.revokeLock(id, token); // only the push lock's holder moves refs
    });
    cleanups.push(['repository locks', () => locks.close()]);
    await git.claimFor(await siteValue(orm, 'site-id', () => randomUUID()));
    await removeOrphanRepositories(orm, git, locks, log);

    const metrics = new Metrics();
    const webhookDelivery = await WebhookDelivery.open(config, orm, metrics, log);
    const events = new EventRecorder(config.baseUrl);
    events.onRecord(webhookDelivery.fanOut());
    // Git hosting: Cairn's hooks (the ref fence among them), before anything can move a ref.
    const hosting = await GitHosting.start(config.dataDir, await pushCertSeed(orm, webhookDelivery.box, config.dataDir));
    const refs = new RefTransactions(orm, git, events, locks, log, hosting.hooksDir);
    const mergeability = new Mergeability(orm, git, log, metrics);
    refs.onRefsChanged(followRefs(events, git, mergeability));
    const auth = new TokenAuthenticator(orm.em.fork(), log, config.baseUrl);
    const limiter = new RateLimiter(orm, log, metrics);
    limiter.start();
    cleanups.push(['rate limits', () => limiter.stop()]); // counts reach the database before it closes
    // The use cases, each given the collaborators it needs.
    const repositories = new Repositories({ events, storage: git, refs, baseUrl: config.baseUrl });
    const services: Services = {
      ...{ config, log, orm, git, refs, events, auth, webhookDelivery, mergeability },
      accounts: new Accounts(auth, config.baseUrl),
      repositories,
      collaborators: new Collaborators({ events, repositories }),
      issues: new Issues({ events, repositories }),
      pulls: new PullRequests({ events, repositories, git, refs, mergeability, log, baseUrl: config.baseUrl }),
      webhookAdmin: new WebhookAdmin({ repositories, delivery: webhookDelivery, baseUrl: config.baseUrl }),
      rateLimits: new RateLimits(config.rateLimits, limiter),
    };

    // The ref changes a crash left without events (the journal's) recorded before anything is served.
    await reconcileAtStart(services);

    const jobs = await startAgenda(config, databaseUrl, log, [
      maintenanceJobs(services, locks),
      reconcileJobs(services),
      webhookDelivery.jobs(),
      mergeability.jobs(),
    ]);
    const agenda: Agenda = jobs.agenda;
    cleanups.push(['jobs', () => jobs.stop()]);
    refs.onCommitted(maintenanceScheduler(agenda, log));
    await scheduleReconcile(agenda);
    await webhookDelivery.start(agenda, embedded !== null);
    await mergeability.start(agenda);
    cleanups.push(['mergeability checks', () => mergeability.stop()]);
    // Cleanups run in reverse: pushes in flight record their events, then attempts in flight
    // finish, then jobs, git hosting and the database stop.
    cleanups.push(['webhook attempts', () => webhookDelivery.stop()]);
    cleanups.push(['git requests', () => hosting.drain()]);

    const schema = await getSchema();
    const apollo = await startApollo<RequestContext>(schema, log, { onOperationCost: chargeOperations(services.rateLimits) });
    cleanups.push(['GraphQL', () => apollo.stop()]);
    // Ready when the database answers, the job store (PostgreSQL or MongoDB) does, and the disks have room.
    const disk = new DiskSpace(
      { data: config.dataDir, repositories: git.root, ...(embedded ? { database: embedded.dataDir } : {}) },
      metrics.registry,
      log,
    );
    const unready = async () => {
      await orm.em.fork().execute('select 1');
      await agenda.getRunningStats();
      return disk.problem();
    };
    reportUnavailabilityTo(log);
    reportNoSpaceTo((store, error) => disk.refused(store, error));
    const app = createApp({
      log,
      authenticate: (header) => auth.fromAuthorizationHeader(header),
      context: (res) => requestContext(services, res),
      rateLimits: services.rateLimits,
      apollo,
      metrics,
      unready,
      protocols: [['/', createGitHandler(services, hosting, metrics)]],
      mounts: surface(services, schema),
    });

    const server = http.createServer(app);
    server.keepAliveTimeout = 65_000;
    // No deadline for a whole request: a large push over a slow link legitimately takes longer than
    // Node's default 5 minutes. Headers still must arrive within headersTimeout (slow-loris guard).
    server.requestTimeout = 0;
    await new Promise<void>((resolve, reject) => {
      // A host name that does not resolve, or an address or port that is taken: say which setting.
      server.once('error', (error: Error) =>
        reject(new Error(`cannot listen on HOST=${config.host} PORT=${config.port}: ${error.message}`)),
      );
      server.listen(config.port, config.host, () => resolve());
    });
    const address = server.address();
    log.info({ port: typeof address === 'object' && address ? address.port : config.port, baseUrl: config.baseUrl }, 'Cairn is listening');
    const compaction = compactWhenIdle(log);
    cleanups.push(['idle compaction', async () => compaction.stop()]);

    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= (async () => {
        log.info('shutting down');
        await stopHttp(server);
        await cleanUp();
        log.info('stopped');
      })());
    return { services, server, close };
  } catch (error) {
    await cleanUp().catch((stuck: unknown) => log.error({ err: stuck }, 'clean-up after a failed start did not finish'));
    throw error;
  }
}

/**
 * Stops accepting, lets in-flight requests finish for a while, then cuts what is left. A kept-alive
 * connection whose request finishes is idle from then on, and closed at the next sweep: `close()`
 * alone closes only the connections idle at the time, and would wait out the grace for the others.
 */
async function stopHttp(server: http.Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  const timer = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
  await closed;
  clearInterval(sweep);
  clearTimeout(timer);
}

/**
 * A directory without a record younger than this is left alone: its repository may be being
 * created by another process (the directory is made inside the transaction that inserts the row),
 * and no creation runs this long.
 */
const ORPHAN_GRACE_MS = 10 * 60_000;
/** More directories without a record than this (and a tenth of all) are not removed, but reported. */
const ORPHANS_AT_MOST = 10;

/**
 * A crash between deleting a repository's record and its directory, or during a creation, leaves a
 * directory without a record: removed at start-up once it is older than ORPHAN_GRACE_MS, under the
 * repository's lock, and only if the record is still missing then. Another process sharing the
 * repositories may be creating one right now: its directory is younger, and its row commits.
 */
async function removeOrphanRepositories(orm: MikroORM, git: GitStorage, locks: RepositoryLocks, log: Logger): Promise<void> {
  await git.removeLeftovers();
  const onDisk = await git.listIds();
  if (onDisk.length === 0) return;
  const known = async (ids: string[]) =>
    new Set((await orm.em.fork().find(Repository, { id: { $in: ids } }, { fields: ['id'] })).map((repo) => repo.id));
  const recorded = await known(onDisk);
  const orphans: string[] = [];
  for (const id of onDisk.filter((id) => !recorded.has(id))) if (await git.untouchedFor(id, ORPHAN_GRACE_MS)) orphans.push(id);
  // A crash leaves one or two; many at once say the database is not the one these repositories belong to.
  if (orphans.length > Math.max(ORPHANS_AT_MOST, onDisk.length / 10)) {
    log.error(
      { orphans: orphans.length, repositories: onDisk.length },
      'not removing repository data without records: too many for a crash to leave (is DATABASE_URL right?)',
    );
    return;
  }
  for (const id of orphans) {
    const lock = await locks.acquire('push', id, { waitMs: 0 });
    if (!lock) continue; // someone is working on it: not for a start-up to decide
    try {
      if ((await known([id])).has(id)) continue;
      log.warn({ repositoryId: id }, 'removing repository data without a record');
      await git.remove(id);
    } finally {
      await lock.release();
    }
  }
}
