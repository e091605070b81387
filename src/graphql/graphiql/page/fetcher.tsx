import type { GraphiQLProps } from 'graphiql';
import { postGraphQL } from './post-graphql.js';

type Fetcher = GraphiQLProps['fetcher'];

/** The answer to Run without any token: it could only be refused, so it is not sent. */
const TOKEN_NEEDED = 'A token is needed: paste one into the Token field above the editor.';

/**
 * Runs GraphiQL's operations: a POST to /graphql with `Authorization: Bearer <token>` (the Token
 * field wins over an Authorization typed into the Headers tab). With no token from either, nothing
 * is sent. A refusal of the token (401) is also reported, for the notice beside the field.
 */
export function serviceFetcher(token: string, onRefused: (problem: string) => void): Fetcher {
  return async (params, options) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(options?.headers ?? {})) headers.set(name, String(value));
    if (token) headers.set('authorization', `Bearer ${token}`);
    if (!headers.has('authorization')) return { errors: [{ message: TOKEN_NEEDED }] };
    const answer = await postGraphQL(headers, params);
    if (answer.refusal) onRefused(answer.refusal);
    return answer.body ?? { errors: [{ message: answer.message }] };
  };
}
