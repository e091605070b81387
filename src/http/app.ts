import { expressMiddleware } from '@as-integrations/express5';
import type { ApolloServer } from '@apollo/server';
import express, { type Express, type Request, type Response } from 'express';
import type { GraphQLSchema } from 'graphql';
import { MAX_BODY_BYTES } from '../../rest-facade/body.js';
import { sendMethodNotAllowed } from '../../rest-facade/errors.js';
import { createRestRouter } from '../../rest-facade/index.js';
import type { RequestContext, Services } from '../context.js';
import { requireToken } from './authenticate.js';
import type { Metrics } from './metrics.js';
import { requestContext, requestTracking } from './request-context.js';
import { transportErrorHandler } from './transport-errors.js';

export interface AppParts {
  services: Services;
  schema: GraphQLSchema;
  apollo: ApolloServer<RequestContext>;
  metrics: Metrics;
  ready: () => Promise<boolean>;
  /** Routers mounted before the REST facade (git smart HTTP), which authenticate on their own. */
  extraRouters?: express.Router[];
}

function graphqlUnauthorized(_req: Request, res: Response, message: string): void {
  res.status(401).json({ errors: [{ message, extensions: { code: 'UNAUTHENTICATED' } }] });
}

/**
 * Route order: operations endpoints (no token), then git (own auth), then
 * GraphQL and the REST facade, both behind a bearer token.
 */
export function createApp({ services, schema, apollo, metrics, ready, extraRouters = [] }: AppParts): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(requestTracking(services, metrics));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const ok = await ready().catch(() => false);
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not_ready' });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  app.all(['/healthz', '/readyz', '/metrics'], (req, res) => sendMethodNotAllowed(res, req.method, ['GET', 'HEAD']));

  for (const router of extraRouters) app.use(router);

  app.use(
    '/graphql',
    requireToken(services, graphqlUnauthorized),
    express.json({ limit: MAX_BODY_BYTES }),
    expressMiddleware(apollo, { context: async ({ res }) => requestContext(services, res) }),
  );

  const rest = createRestRouter(services, schema);
  app.use('/api', rest);
  app.use('/', rest);
  app.use(transportErrorHandler(services.log));
  return app;
}
