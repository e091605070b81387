import { Client, fetchExchange, type ClientOptions } from '@urql/core';
import type { CairnServer } from './server.js';

/**
 * urql, the GraphQL client a frontend would use, on a server's `/graphql` with a bearer token:
 * tests check the GraphQL surface with it rather than with our own helper. `options` adds to or
 * replaces the client's settings (a `fetch` that watches the requests, say).
 */
export function urqlClient(server: CairnServer, token: string, options: Partial<ClientOptions> = {}): Client {
  return new Client({
    url: `${server.url}/graphql`,
    exchanges: [fetchExchange],
    fetchOptions: { headers: { authorization: `Bearer ${token}` } },
    ...options,
  });
}
