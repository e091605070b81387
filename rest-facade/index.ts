import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { GraphQLError, GraphQLSchema } from 'graphql';
import type { Services } from '../src/context.js';
import type { Surface } from '../src/server.js';
import { requestContext } from '../src/context.js';
import { requireToken } from '../src/http/authenticate.js';
import { rateLimited, viewerOf } from '../src/http/rate-limit-headers.js';
import { readJsonObject } from './body.js';
import { render, sendJson, sendRendered } from './conditional.js';
import { KeptAnswers } from './kept-answers.js';
import { DomainError } from '../src/errors/domain-error.js';
import { knownError } from '../src/errors/known-error.js';
import { internalError, sendMethodNotAllowed, sendRestError } from '../src/http/error-answers.js';
import { RestOperation } from './operation.js';
import { ROUTES } from './routes.js';
import { ENVELOPE, type RestPage, type RestRoute, type RouteInput } from './route.js';

import { COMMENT_ROUTES } from './comment-routes.js';
import { LABEL_ROUTES } from './label-routes.js';
import { PROTECTION_ROUTES } from './protection-routes.js';
import { PULL_ROUTES } from './pull-routes.js';
import { REVIEW_COMMENT_ROUTES } from './review-comment-routes.js';
import { STATUS_ROUTES } from './status-routes.js';
import { WEBHOOK_ROUTES } from './webhook-routes.js';
import { openApiDocument, stableJson } from './openapi/document.js';

/** Every REST endpoint. */
export const ALL_ROUTES: RestRoute[] = [
  ...ROUTES,
  ...COMMENT_ROUTES,
  ...PULL_ROUTES,
  ...REVIEW_COMMENT_ROUTES,
  ...STATUS_ROUTES,
  ...PROTECTION_ROUTES,
  ...WEBHOOK_ROUTES,
  ...LABEL_ROUTES,
];

/**
 * The REST facade as a surface of the core: its OpenAPI document at `/openapi.json` (public, like the
 * health endpoints, so mounted before the token check), then one router, mounted at `/api` and `/`.
 */
export const restSurface: Surface = (services, schema) => {
  const router = createRestRouter(services, schema);
  return [
    ['/openapi.json', openApiHandler(() => openApiDocument(schema, ALL_ROUTES))],
    ['/api', router],
    ['/', router],
  ];
};

/**
 * `GET /openapi.json`: the description of this facade, generated from the same routes it serves, at its first
 * request (0.1 s of CPU a start need not pay: few clients ever ask for it).
 */
function openApiHandler(document: () => Record<string, unknown>): RequestHandler {
  let json: string | null = null;
  return (req, res, next) => {
    if (req.path !== '/') return next(); // below /openapi.json/: not this document
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendMethodNotAllowed(res, req.method, ['GET', 'HEAD']);
    json ??= stableJson(document());
    res.type('application/json').send(json);
  };
}

/**
 * The REST API as an Express router, mounted at `/` and `/api`.
 * Each route runs its GraphQL operation in-process and maps the outcome;
 * unknown paths are 404, known paths with another method 405.
 */
export function createRestRouter(services: Services, schema: GraphQLSchema, routes: RestRoute[] = ALL_ROUTES): Router {
  const router = express.Router();
  router.use(requireToken((header) => services.auth.fromAuthorizationHeader(header), sendRestError));
  router.use(rateLimited((res) => services.rateLimits.request(viewerOf(res)), sendRestError));

  const kept = new KeptAnswers();
  for (const route of routes) {
    const operation = new RestOperation(schema, route.document);
    if (route.reuse && route.method !== 'get') throw new Error(`${route.path}: only a GET's answer is kept`);
    const reuse = route.reuse ? { version: new RestOperation(schema, route.reuse), kept } : null;
    router[route.method](route.path, (req, res) => handle(services, route, operation, reuse, req, res));
  }

  const methodsByPath = new Map<string, string[]>();
  // Express answers HEAD wherever GET is routed, so Allow names it too.
  const methodsOf = (route: RestRoute) => (route.method === 'get' ? ['GET', 'HEAD'] : [route.method.toUpperCase()]);
  for (const route of routes) methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), ...methodsOf(route)]);
  for (const [path, methods] of methodsByPath) {
    router.all(path, (req, res) => sendMethodNotAllowed(res, req.method, methods));
  }
  router.use((_req, res) => sendRestError(res, new DomainError('NOT_FOUND', 'no such endpoint')));
  return router;
}

/** A route's version operation and where its answers are kept (route.ts, `reuse`). */
interface Reuse {
  version: RestOperation;
  kept: KeptAnswers;
}

async function handle(
  services: Services,
  route: RestRoute,
  operation: RestOperation,
  reuse: Reuse | null,
  req: Request,
  res: Response,
): Promise<void> {
  try {
    const unknown = unknownQuery(route, req.query);
    if (unknown) return sendRestError(res, unknown);
    const body = route.body ? await readJsonObject(req, res) : {};
    // From here on the client's values are FromClient: routes pass them on, GraphQL and the services judge them.
    // Only the declared query parameters reach the route, so the OpenAPI document names all it reads.
    const query = Object.fromEntries(
      route.query.filter(({ name }) => Object.hasOwn(req.query, name)).map(({ name }) => [name, req.query[name]]),
    );
    const input = { params: req.params, query, body } as RouteInput;
    const variables = route.variables(input);
    let version: string | null = null;
    if (reuse) {
      // Its own entity manager: the answer's reads must all come after the version's.
      const checked = await reuse.version.run(requestContext(services, res), variables);
      if (!checked.ok) return failed(services, route, res, checked.error);
      version = String(Object.values(checked.data)[0]);
      const answer = reuse.kept.get(route.path, version);
      if (answer) return sendRendered(req, res, route.status, answer);
    }
    const outcome = await operation.run(requestContext(services, res), variables);
    if (!outcome.ok) return failed(services, route, res, outcome.error);
    const value = route.result(outcome.data);
    if (value === null || value === undefined) return sendRestError(res, new DomainError('NOT_FOUND', 'not found'));
    const status = route.status;
    switch (route.kind) {
      case 'empty':
        res.status(204).end();
        return;
      case 'envelope': {
        const page = value as RestPage;
        sendJson(req, res, status, Object.fromEntries(Object.entries(ENVELOPE).map(([name, field]) => [name, page[field]])));
        return;
      }
      default: {
        if (!reuse || version === null) return sendJson(req, res, status, value);
        const rendered = render(value);
        reuse.kept.set(route.path, version, rendered);
        sendRendered(req, res, status, rendered);
      }
    }
  } catch (error) {
    const known = knownError(error);
    if (known) return sendRestError(res, known);
    services.log.error({ err: error, route: route.path }, 'REST request failed');
    sendRestError(res, internalError());
  }
}

/** An operation's error as the route answers it: a domain error as documented, anything else 500 (logged). */
function failed(services: Services, route: RestRoute, res: Response, error: DomainError | GraphQLError): void {
  if (error instanceof DomainError) return sendRestError(res, error);
  services.log.error({ err: error.originalError ?? error, route: route.path }, 'REST operation failed');
  sendRestError(res, internalError());
}

/**
 * A query parameter the route does not read is refused (400), not silently ignored: `?limit=5` on a
 * list that is not paged, or a misspelt filter, would otherwise answer something other than what the
 * client asked for. Null when every parameter is one the route reads.
 */
function unknownQuery(route: RestRoute, query: Request['query']): DomainError | null {
  const names = Object.keys(query).filter((name) => !route.query.some((param) => param.name === name));
  if (!names.length) return null;
  const takes = route.query.length ? `it takes ${route.query.map((param) => param.name).join(', ')}` : 'it takes none';
  const details = names.slice(0, 20).map((name) => ({
    field: name.slice(0, 100),
    code: 'unknown',
    message: `${name.slice(0, 100)} is not a query parameter of ${route.method.toUpperCase()} ${route.path}`,
  }));
  return new DomainError('BAD_REQUEST', `unknown query parameter ${details.map((d) => d.field).join(', ')}: ${takes}`, details);
}
