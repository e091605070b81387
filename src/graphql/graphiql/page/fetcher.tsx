import type { GraphiQLProps } from 'graphiql';
import { messageOf } from './schema.js';

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
    const headers = new Headers({ 'content-type': 'application/json', accept: 'application/json' });
    for (const [name, value] of Object.entries(options?.headers ?? {})) headers.set(name, String(value));
    if (token) headers.set('authorization', `Bearer ${token}`);
    if (!headers.has('authorization')) return { errors: [{ message: TOKEN_NEEDED }] };
    const response = await fetch('/graphql', { method: 'POST', headers, body: JSON.stringify(params) });
    const body = await response.json().catch(() => ({ errors: [{ message: `${response.status} ${response.statusText}` }] }));
    if (response.status === 401) onRefused(`The service refused this token: ${messageOf(body) ?? response.statusText}.`);
    return body;
  };
}
