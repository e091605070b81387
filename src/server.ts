import { randomUUID } from 'node:crypto';
import { within } from './deadline.js';
import type { Server as HttpServer } from 'node:http';
import { http } from './http/node-http.js';
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
import { closePreparedClients } from './db/prepared-statements.js';
import { openDatabase } from './db/orm.js';
import { DiskSpace } from './disk/disk-space.js';
import { reportNoSpaceTo } from './errors/no-space.js';
import { siteValue } from './db/site-values.js';
import { reportUnavailabilityTo } from './errors/unavailable.js';
import { EventRecorder } from './events/event-recorder.js';
import { timelineListener, timelineSweep } from './conversations/timeline/timeline-listener.js';
import { configureGitBounds } from './git/git-bounds.js';
import { GitHosting } from './git/http/hosting.js';
import { maintenanceJobs, maintenanceScheduler } from './git/maintenance.js';
import { reconcileAtStart, reconcileJobs, scheduleReconcile } from './git/refs/reconcile.js';
import { RefTransactions } from './git/refs/ref-transaction.js';
import { pushCertSeed } from './git/receive-settings.js';
import { RepositoryLocks } from './git/refs/repository-lock.js';
import { createGitHandler } from './git/http/smart-http.js';
import { RepositoryBrowser } from './git/browse.service.js';
import { GitStorage } from './git/storage.js';
import { removeOrphanRepositories } from './git/orphans.js';
import { startApollo } from './graphql/apollo.js';
import type { GraphQLSchema } from 'graphql';
import { createApp, type Mount } from './http/app.js';
import { Metrics } from './http/metrics.js';
import { isOperationsProbe } from './http/request-context.js';
import { Issues } from './issues/issue.service.js';
import type { DescribeSubject } from './conversations/comments/comment-subject.js';
import { Comments } from './conversations/comments/comments.service.js';
import { issueSubject } from './issues/issue-subject.js';
import { pullSubject } from './pulls/pull-subject.js';
import { Assignees } from './conversations/assignees/assignee.service.js';
import { Labels } from './conversations/labels/label.service.js';
import { issueConversations } from './issues/issue-conversation.js';
import { pullConversations } from './pulls/pull-conversation.js';
import { notFound } from './errors/domain-error.js';
import { stopAutoMergeOnForeignPush } from './pulls/auto-merge.js';
import { followRefs } from './pulls/follow-refs.js';
import { BranchRules } from './protection/branch-rules.js';
import { dismissStaleReviews } from './protection/dismiss-stale.js';
import { PullRequirements } from './protection/pull-requirements.js';
import { BranchProtections } from './protection/branch-protection.service.js';
import { Mergeability } from './pulls/mergeability.js';
import { PullRequests } from './pulls/pull-request.service.js';
import { carryThreads } from './pulls/line-comments/carry-threads.js';
import { ReviewComments } from './pulls/line-comments/review-comments.service.js';
import { RateLimiter } from './ratelimit/rate-limiter.js';
import { chargeOperations, RateLimits } from './ratelimit/rate-limits.js';
import { startAgenda } from './jobs/agenda.js';
import { optimizeOnceBusy } from './memory/deferred-optimization.js';
import { compactWhenIdle } from './memory/idle-compaction.js';
import type { Logger } from './logger.js';
import { Repositories } from './repositories/repository.service.js';
import { getSchema } from './schema.js';
import { CommitStatuses } from './statuses/commit-status.service.js';
import { combinedStates } from './statuses/combined-status.js';
import { WebhookAdmin } from './webhooks/webhook-admin.service.js';
import { WebhookDelivery } from './webhooks/webhook-delivery.js';

/** Routers a surface built on the core (the REST facade) mounts onto the app, given the running services and schema. */
export type Surface = (services: Services, schema: GraphQLSchema) => Mount[];

export interface RunningService {
  services: Services;
  server: HttpServer;
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

/**
 * Starts the whole service, step by step (each a function below): the stores (database,
 * repositories, their locks), the services (use cases and the runtime parts they share), the
 * reconcile of what a crash left unrecorded, the jobs, and HTTP. Each step registers how it is
 * undone; a failed start undoes what was done, and `close` undoes everything, in reverse.
 */
export async function startService(
  config: Config,
  log: Logger,
  surface: Surface = () => [],
  /** The embedded database, when the caller started it already (run.ts starts it before the service's modules load). */
  starting?: Promise<EmbeddedDatabase>,
): Promise<RunningService> {
  const cleanups = new Cleanups(log);
  configureGitBounds(config.gitBounds, log);
  try {
    const stores = await openStores(config, log, cleanups, starting);
    const built = await buildServices(config, log, cleanups, stores);
    // The ref changes a crash left without events (the journal's) recorded before anything is served.
    await reconcileAtStart(built.services);
    const agenda = await startJobs(config, log, cleanups, stores, built);
    const server = await serveHttp(config, log, cleanups, stores, built, agenda, surface);
    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= (async () => {
        log.info('shutting down');
        await stopHttp(server);
        await cleanups.run();
        log.info('stopped');
      })());
    return { services: built.services, server, close };
  } catch (error) {
    await cleanups.run().catch((stuck: unknown) => log.error({ err: stuck }, 'clean-up after a failed start did not finish'));
    throw error;
  }
}

/** How each started part is stopped, run in reverse order of starting, within CLEANUP_DEADLINE_MS together. */
class Cleanups {
  private readonly steps: Array<[step: string, run: () => Promise<unknown>]> = [];

  constructor(private readonly log: Logger) {}

  push(step: string, run: () => Promise<unknown>): void {
    this.steps.push([step, run]);
  }

  async run(): Promise<void> {
    let pending = '';
    const steps = (async () => {
      for (const [step, run] of this.steps.splice(0).reverse()) {
        pending = step;
        await run().catch((error: unknown) => this.log.error({ err: error, step }, 'shutdown step failed'));
      }
    })();
    if ((await within(steps, CLEANUP_DEADLINE_MS)).late) {
      throw new Error(`shutdown step "${pending}" still running after ${CLEANUP_DEADLINE_MS} ms`);
    }
  }
}

interface Stores {
  embedded: EmbeddedDatabase | null;
  databaseUrl: string;
  orm: MikroORM;
  git: GitStorage;
  locks: RepositoryLocks;
}

/**
 * The database (embedded, or DATABASE_URL's) brought up to date, the site admin, the repositories
 * directory claimed for this site and cleared of what a crash left, and the repository locks.
 */
async function openStores(config: Config, log: Logger, cleanups: Cleanups, starting?: Promise<EmbeddedDatabase>): Promise<Stores> {
  let embedded: EmbeddedDatabase | null = null;
  if (!config.databaseUrl) {
    embedded = await (starting ?? startEmbeddedPostgres(config.dataDir, log));
    cleanups.push('embedded database', () => embedded!.stop());
  }
  const databaseUrl = config.databaseUrl ?? embedded!.url;
  const orm = await openDatabase(databaseUrl, log, ENTITIES, config.databaseTimeoutMs);
  cleanups.push('database connections', async () => {
    await closePreparedClients(orm);
    await orm.close(true);
  });
  await bootstrapAdmin(orm, config, log);

  const git = new GitStorage(config.repositoriesDir, log, orm);
  const locks = new RepositoryLocks(databaseUrl, config.databaseTimeoutMs, config.lockLeaseMs, async (kind, id, token) => {
    log.warn({ repositoryId: id, lock: kind }, 'revoking a repository lock holding never let go (its holder hung, was cut off or died)');
    if (kind === 'push') await git.revokeLock(id, token); // only the push lock's holder moves refs
  });
  cleanups.push('repository locks', () => locks.close());
  await git.claimFor(await siteValue(orm, 'site-id', () => randomUUID()));
  await removeOrphanRepositories(orm, git, locks, log);
  return { embedded, databaseUrl, orm, git, locks };
}

interface Built {
  services: Services;
  hosting: GitHosting;
  metrics: Metrics;
}

/** The runtime parts (events, webhook delivery, git hosting, ref transactions, rate limits) and the use cases, wired. */
async function buildServices(config: Config, log: Logger, cleanups: Cleanups, { orm, git, locks }: Stores): Promise<Built> {
  const metrics = new Metrics();
  const webhookDelivery = await WebhookDelivery.open(config, orm, metrics, log);
  const events = new EventRecorder(config.baseUrl);
  events.onRecord(webhookDelivery.fanOut());
  events.onRecord(timelineListener());
  events.onRecord(timelineSweep());
  // Git hosting: Cairn's hooks (the ref fence among them), before anything can move a ref.
  const hosting = await GitHosting.start(
    config.dataDir,
    await pushCertSeed(orm, webhookDelivery.box, config.dataDir),
    config.packCacheBytes,
    log,
  );
  const refs = new RefTransactions(orm, git, events, locks, log, hosting.hooksDir);
  const mergeability = new Mergeability(orm, git, log, metrics);
  // What a pull request's record in an event reads: its head's combined status, its base branch's rule.
  const recordFacts = { headStatuses: combinedStates, requirements: new PullRequirements() };
  refs.onRefsChanged(followRefs(events, git, mergeability, recordFacts));
  refs.onRefsChanged(dismissStaleReviews(events, recordFacts));
  refs.onRefsChanged(stopAutoMergeOnForeignPush({ events, ...recordFacts }));
  refs.onRefsChanged(carryThreads(git, log)); // after followRefs: comments on lines follow the heads
  refs.policyWith(new BranchRules(orm, git, log));
  const auth = new TokenAuthenticator(orm.em.fork(), log, config.baseUrl);
  const limiter = new RateLimiter(orm, log, metrics);
  limiter.start();
  cleanups.push('rate limits', () => limiter.stop()); // counts reach the database before it closes
  // The use cases, each given the collaborators it needs.
  const repositories = new Repositories({ events, storage: git, refs, baseUrl: config.baseUrl });
  const pullDeps = { events, repositories, git, refs, mergeability, ...recordFacts, log, baseUrl: config.baseUrl };
  const pulls = new PullRequests(pullDeps, orm);
  events.onRecord(pulls.autoMerger.wakes());
  mergeability.onMergeable((repositoryId) => pulls.autoMerger.wake(repositoryId));
  const issues = new Issues({ events, repositories });
  // What a comment's event says of its issue or pull request, read by each.
  const subjectOfPull = pullSubject(recordFacts);
  const describeSubject: DescribeSubject = async (em, repo, number) => {
    const subject = (await issueSubject(em, repo, number)) ?? (await subjectOfPull(em, repo, number));
    if (!subject) throw notFound('issue');
    return subject;
  };
  // Labels and assignees reach the record and the events of an issue or a pull request through these.
  const records = { issue: issueConversations(events), pull: pullConversations({ events, ...recordFacts }) };
  const conversationDeps = { events, repositories, records };
  const services: Services = {
    ...{ config, log, orm, git, refs, events, auth, webhookDelivery, mergeability },
    accounts: new Accounts(auth, config.baseUrl),
    repositories,
    browse: new RepositoryBrowser(git),
    collaborators: new Collaborators({ events, repositories }),
    issues,
    comments: new Comments({ events, repositories, describeSubject }),
    labels: new Labels(conversationDeps),
    assignees: new Assignees(conversationDeps),
    pulls,
    reviewComments: new ReviewComments(pullDeps),
    protections: new BranchProtections({ repositories }),
    statuses: new CommitStatuses({ events, repositories, git }),
    webhookAdmin: new WebhookAdmin({ repositories, delivery: webhookDelivery, baseUrl: config.baseUrl }),
    rateLimits: new RateLimits(config.rateLimits, limiter),
  };
  return { services, hosting, metrics };
}

/** Agenda with every capability's jobs, and the parts that run on it. */
async function startJobs(config: Config, log: Logger, cleanups: Cleanups, stores: Stores, built: Built): Promise<Agenda> {
  const { services, hosting } = built;
  if (stores.embedded) await services.webhookDelivery.releaseClaimsOfCrashedRun();
  const jobs = await startAgenda(config, stores.databaseUrl, log, [
    maintenanceJobs(services, stores.locks),
    reconcileJobs(services),
    services.webhookDelivery.jobs(),
    services.mergeability.jobs(),
    services.pulls.autoMerger.jobs(),
  ]);
  const agenda: Agenda = jobs.agenda;
  cleanups.push('jobs', () => jobs.stop());
  services.refs.onCommitted(maintenanceScheduler(agenda, log, config.gitMaintenanceDelayMs));
  // Cleanups run in reverse: pushes in flight record their events, then attempts in flight
  // finish, then jobs, git hosting and the database stop. (Each stop is safe on a part that never started.)
  cleanups.push('mergeability checks', () => services.mergeability.stop());
  cleanups.push('auto-merges', () => services.pulls.autoMerger.stop());
  cleanups.push('webhook attempts', () => services.webhookDelivery.stop());
  cleanups.push('git requests', () => hosting.drain());
  // Side by side: each schedules its periodic jobs (a committed write apiece, a wait on the disk) and
  // takes up what an earlier run left; none needs another. All settle before a failure is thrown, so
  // the cleanups never close the database under a start still running.
  await allStarted([
    scheduleReconcile(agenda),
    services.webhookDelivery.start(agenda),
    services.mergeability.start(agenda),
    services.pulls.autoMerger.start(agenda),
  ]);
  return agenda;
}

/** Waits for every start, then throws the first failure. */
async function allStarted(starts: Array<Promise<unknown>>): Promise<void> {
  const failed = (await Promise.allSettled(starts)).find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
}

/** GraphQL, readiness, the git protocol and the surfaces (REST) on one HTTP server, listening. */
async function serveHttp(
  config: Config,
  log: Logger,
  cleanups: Cleanups,
  stores: Stores,
  { services, hosting, metrics }: Built,
  agenda: Agenda,
  surface: Surface,
): Promise<HttpServer> {
  const schema = await getSchema();
  const graphql = await startApollo<RequestContext>(schema, log, { onOperationCost: chargeOperations(services.rateLimits) });
  cleanups.push('GraphQL', () => graphql.apollo.stop());
  // Ready when the database answers, the job store (PostgreSQL or MongoDB) does, and the disks have room.
  const disk = new DiskSpace(
    { data: config.dataDir, repositories: stores.git.root, ...(stores.embedded ? { database: stores.embedded.dataDir } : {}) },
    metrics.registry,
    log,
  );
  const unready = async () => {
    await stores.orm.em.fork().execute('select 1');
    await agenda.getRunningStats();
    return disk.problem();
  };
  reportUnavailabilityTo(log);
  reportNoSpaceTo((store, error) => disk.refused(store, error));
  const app = createApp({
    log,
    authenticate: (header) => services.auth.fromAuthorizationHeader(header),
    context: (res) => requestContext(services, res),
    rateLimits: services.rateLimits,
    graphql,
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
    server.once('error', (error: Error) => reject(new Error(`cannot listen on HOST=${config.host} PORT=${config.port}: ${error.message}`)));
    server.listen(config.port, config.host, () => resolve());
  });
  const address = server.address();
  log.info({ port: typeof address === 'object' && address ? address.port : config.port, baseUrl: config.baseUrl }, 'Cairn is listening');
  const compaction = compactWhenIdle(log);
  cleanups.push('idle compaction', async () => compaction.stop());
  const optimization = optimizeOnceBusy(log, server, (req) => !isOperationsProbe(req.url ?? '/'));
  cleanups.push('deferred optimization', async () => optimization.stop());
  return server;
}

/**
 * Stops accepting, lets in-flight requests finish for a while, then cuts what is left. A kept-alive
 * connection whose request finishes is idle from then on, and closed at the next sweep: `close()`
 * alone closes only the connections idle at the time, and would wait out the grace for the others.
 */
async function stopHttp(server: HttpServer): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  const timer = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
  await closed;
  clearInterval(sweep);
  clearTimeout(timer);
}
