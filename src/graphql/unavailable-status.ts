import type { ApolloServerPlugin } from '@apollo/server';
import { ANSWERS, answerHeaders } from '../errors/answers.js';
import { databaseUnavailable } from '../errors/unavailable.js';

/**
 * An operation that met an unavailable database answers HTTP 503 with `Retry-After`, as REST does:
 * a GraphQL client (or a proxy) that retries on 503 then does, instead of reading a 200 whose
 * errors say to come back later.
 */
export function unavailableStatus<C extends object>(): ApolloServerPlugin<C> {
  const code = ANSWERS.UNAVAILABLE.graphql;
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single') return;
          if (!response.body.singleResult.errors?.some((error) => error.extensions?.code === code)) return;
          response.http.status = ANSWERS.UNAVAILABLE.status;
          for (const [name, value] of answerHeaders(databaseUnavailable())) response.http.headers.set(name, value);
        },
      };
    },
  };
}
