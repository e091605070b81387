import { within } from '../deadline.js';
import { tokenLimit } from '../graphql/token-limit.js';
import { ASSETS_PATH } from '../graphql/graphiql/assets.js';
import { graphiqlAssets, graphiqlPage } from '../graphql/graphiql/serve.js';
import express, { type Express, type RequestHandler, type Response } from 'express';
import type { Logger } from '../logger.js';
import { requireToken, type Authenticate } from './authenticate.js';
import { sendGraphQLError, sendMethodNotAllowed, sendRestError } from './error-answers.js';
import { DomainError } from '../errors/domain-error.js';
import type { Metrics } from './metrics.js';
import type { RateLimits } from '../ratelimit/rate-limits.js';
import { rateLimited, viewerOf } from './rate-limit-headers.js';
import { parseJsonBytes, readBodyBytes } from './request-body.js';
import { requestTracking } from './request-context.js';
import { transportErrorHandler } from './transport-errors.js';
import { apolloHandler } from './apollo-express.js';
import type { GraphQLService } from '../graphql/apollo.js';
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * A handler mounted at a path: a Router, or a plain middleware for a surface that only looks at its own
 * requests. A Router that matches nothing hands the request on through `setImmediate`, so a plain
 * middleware is what a surface mounted at `/` in front of the REST routes should be.
 */
export type Mount = [path: string, handler: RequestHandler];

export interface AppParts<C extends { em: EntityManager }> {
  log: Logger;
  authenticate: Authenticate;
  /** The GraphQL context of an authenticated request. */
  context: (res: Response) => C;
  rateLimits: RateLimits;
  graphql: GraphQLService<C>;
  metrics: Metrics;
  /** What keeps the service from being ready (`database_unavailable`, `disk_full`, …), or null when it is. */
  unready: () => Promise<string | null>;
  /**
   * Routers that authenticate on their own (git smart HTTP), mounted before `/graphql`: a repository
   * path starts with its owner's login, and `graphql` is a login like any other.
   */
  protocols: Mount[];
  /** Routers mounted last: whatever the service is run with — the REST facade, mounted from outside the core. */
  mounts: Mount[];
}

/**
 * A GraphQL request's JSON body as `req.body` (what Apollo reads), within the bounds of
 * readBodyBytes; gzip-compressed bodies are accepted, as Express's own JSON parser did. A body of
 * another type is left unread: Apollo refuses the request.
 */
const graphqlBody: RequestHandler = (req, res, next) => {
  req.body = {}; // what Apollo reads of a request without one (GET)
  if (req.method !== 'POST' || !req.is('application/json')) return next();
  const charset = /;\s*charset="?([^";]+)/i.exec(req.get('content-type') ?? '')?.[1]?.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') {
    return next(new DomainError('UNSUPPORTED_MEDIA_TYPE', `the request body must be UTF-8, not ${charset.slice(0, 40)}`));
  }
  readBodyBytes(req, res, viewerOf(res).userId)
    .then((bytes) => {
      req.body = parseJsonBytes(bytes, req.get('content-encoding'), true);
      next();
    })
    .catch(next);
};

/**
 * What Apollo answers is a viewer's own data, never to be kept by a cache: `no-store`, as Apollo's
 * cache-control plugin said of every answer before it was turned off (apollo.ts).
 */
const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('cache-control', 'no-store');
  next();
};

/**
 * Route order: operations endpoints and the GraphQL IDE's page and assets (no token), git (own
 * auth), GraphQL behind a bearer token, then the mounted routers.
 */
/** How long `/readyz` waits for the database and the job store before answering 503. */
const READY_DEADLINE_MS = 2_000;

export function createApp<C extends { em: EntityManager }>({
  log,
  authenticate,
  context,
  rateLimits,
  graphql,
  metrics,
  unready,
  protocols,
  mounts,
}: AppParts<C>): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(requestTracking(log, metrics));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    // Its own deadline: a load balancer asks to be told, not kept waiting by a stalled database.
    const outcome = await within(
      unready().catch(() => 'database_unavailable'),
      READY_DEADLINE_MS,
    );
    if (outcome.late) log.warn({ deadlineMs: READY_DEADLINE_MS }, 'database stalled: readiness check unanswered');
    const reason = outcome.late ? 'database_stalled' : outcome.value;
    if (reason) res.status(503).json({ status: 'not_ready', reason });
    else res.json({ status: 'ready' });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  app.all(['/healthz', '/readyz', '/metrics'], (req, res) => sendMethodNotAllowed(res, req.method, ['GET', 'HEAD']));

  // A browser's GET /graphql gets the IDE; every other /graphql request goes on to GraphQL below.
  app.get('/graphql', graphiqlPage(log));
  app.use(ASSETS_PATH, graphiqlAssets(), (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendMethodNotAllowed(res, req.method, ['GET', 'HEAD']);
    sendRestError(res, new DomainError('NOT_FOUND', `no asset ${req.path} in the GraphQL IDE`));
  });

  for (const [path, handler] of protocols) app.use(path, handler);
  app.use(
    '/graphql',
    requireToken(authenticate, sendGraphQLError),
    // 1 point on arrival, so a request refused below (its body, the token limit, parsing, validation,
    // the cost limit) still pays for the work; its operation pays the rest once costed (apollo.ts).
    // A spent budget is refused here, before anything is read.
    rateLimited((res) => rateLimits.arrival(viewerOf(res)), sendGraphQLError),
    graphqlBody,
    tokenLimit(sendGraphQLError),
    noStore,
    apolloHandler(graphql, context),
  );

  for (const [path, handler] of mounts) app.use(path, handler);
  app.use(transportErrorHandler(log));
  return app;
}
