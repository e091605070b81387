import type { ApolloServerPlugin } from '@apollo/server';
import { ANSWERS, answerHeaders } from '../errors/answers.js';
import { insufficientStorage } from '../errors/no-space.js';
import { databaseUnavailable } from '../errors/unavailable.js';

/** The site's faults an operation may meet, with the answer (and its `Retry-After`) each stands for. */
const FAULTS = [databaseUnavailable(), insufficientStorage('database')].map((error) => ({
  code: ANSWERS[error.code].graphql,
  status: ANSWERS[error.code].status,
  headers: answerHeaders(error),
}));

/**
 * An operation that met an unavailable database (503) or a full disk (507) answers that HTTP status
 * with `Retry-After`, as REST does: a GraphQL client (or a proxy) that retries on them then does,
 * instead of reading a 200 whose errors say to come back later.
 */
export function faultStatus<C extends object>(): ApolloServerPlugin<C> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single') return;
          const codes = new Set(response.body.singleResult.errors?.map((error) => error.extensions?.code));
          const fault = FAULTS.find((candidate) => codes.has(candidate.code));
          if (!fault) return;
          response.http.status = fault.status;
          for (const [name, value] of fault.headers) response.http.headers.set(name, value);
        },
      };
    },
  };
}
