import { HeaderMap, type HTTPGraphQLRequest } from '@apollo/server';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Request, RequestHandler, Response } from 'express';
import { LRUCache } from 'lru-cache';
import type { GraphQLService } from '../graphql/apollo.js';

/**
 * The most `Accept` headers whose answer's type is remembered, least recently used forgotten first.
 * A client library sends one header for all its requests, so a few cover every client; a client
 * that sends many others only makes the ones it pushed out be learnt again, each by one answer of
 * Apollo's.
 */
const KNOWN_ACCEPTS = 64;
/** The longest `Accept` header remembered: a longer one is always negotiated by Apollo. */
const KNOWN_ACCEPT_LONGEST = 256;

/**
 * GraphQL as an Express handler: a query Apollo has run before from the same text is answered by
 * `repeated` (repeated-queries.ts) when it succeeds; everything else goes to Apollo, with the same
 * context. `req.body` is already parsed (app.ts); the query string is what follows the first `?`
 * (Apollo's own Express integration finds it with Node's legacy `url.parse`, which cost a GraphQL
 * request more CPU than its whole execution did).
 */
export function apolloHandler<C extends { em: EntityManager }>(graphql: GraphQLService<C>, context: (res: Response) => C): RequestHandler {
  /**
   * The type Apollo answered a query with, by the request's `Accept` (Apollo negotiates it from
   * that header alone), learnt from its answers: a repeated query is answered with the same.
   */
  const answerTypes = new LRUCache<string, string>({ max: KNOWN_ACCEPTS });
  return (req, res, next) => {
    const accept = req.headers.accept ?? '';
    const type = req.method === 'POST' ? answerTypes.get(accept) : undefined;
    const contextValue = type ? context(res) : null;
    const headers = { set: (name: string, value: string) => res.setHeader(name, value) };
    (contextValue ? graphql.repeated(req.body, contextValue, headers) : Promise.resolve(null))
      .then(async (answered) => {
        if (answered !== null) {
          res.statusCode = 200;
          res.setHeader('content-type', type!);
          res.setHeader('content-length', Buffer.byteLength(answered));
          res.end(answered);
          return;
        }
        const answer = await graphql.apollo.executeHTTPGraphQLRequest({
          httpGraphQLRequest: graphqlRequest(req),
          context: async () => contextValue ?? context(res),
        });
        for (const [name, value] of answer.headers) res.setHeader(name, value);
        res.statusCode = answer.status ?? 200;
        const answerType = answer.headers.get('content-type');
        if (
          answer.status === undefined &&
          answer.body.kind === 'complete' &&
          answerType &&
          accept.length <= KNOWN_ACCEPT_LONGEST &&
          !answerTypes.has(accept)
        ) {
          answerTypes.set(accept, answerType);
        }
        if (answer.body.kind === 'complete') {
          res.setHeader('content-length', Buffer.byteLength(answer.body.string));
          res.end(answer.body.string);
          return;
        }
        for await (const chunk of answer.body.asyncIterator) res.write(chunk);
        res.end();
      })
      .catch(next);
  };
}

function graphqlRequest(req: Request): HTTPGraphQLRequest {
  const headers = new HeaderMap();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const query = req.url.indexOf('?');
  return { method: req.method.toUpperCase(), headers, search: query < 0 ? '' : req.url.slice(query), body: req.body };
}
