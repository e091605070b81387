import { HeaderMap, type ApolloServer, type HTTPGraphQLRequest } from '@apollo/server';
import type { Request, RequestHandler, Response } from 'express';

/**
 * Apollo as an Express handler: `req.body` (already parsed, see app.ts) and the request's headers
 * and query string in, Apollo's answer out. Apollo's own Express integration does the same, but
 * finds the query string with Node's legacy `url.parse`, which cost a GraphQL request more CPU
 * than its whole execution did; the query string is what follows the first `?`.
 */
export function apolloHandler<C extends object>(apollo: ApolloServer<C>, context: (res: Response) => C): RequestHandler {
  return (req, res, next) => {
    apollo
      .executeHTTPGraphQLRequest({ httpGraphQLRequest: graphqlRequest(req), context: async () => context(res) })
      .then(async (answer) => {
        for (const [name, value] of answer.headers) res.setHeader(name, value);
        res.statusCode = answer.status ?? 200;
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
