import { buildClientSchema, getIntrospectionQuery, type GraphQLSchema, type IntrospectionQuery } from 'graphql';

/** The schema, or why there is none, in words for the notice beside the Token field. */
export type SchemaAnswer = { schema: GraphQLSchema } | { problem: string };

/** The first message of a GraphQL answer: /graphql refuses in that shape too (`errors[0].message`). */
export const messageOf = (body: unknown): string | undefined =>
  (body as { errors?: { message?: unknown }[] } | null)?.errors?.map((error) => error.message).find((m) => typeof m === 'string');

/**
 * Asks /graphql for its schema with the token: one request, whose refusal is told once, plainly,
 * beside the field. The page does this itself rather than through GraphiQL's introspection, which
 * asks a second time after a refusal and prints the refusal into the response pane.
 */
export async function loadSchema(token: string, signal: AbortSignal): Promise<SchemaAnswer> {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: getIntrospectionQuery(), operationName: 'IntrospectionQuery' }),
    signal,
  });
  const body: unknown = await response.json().catch(() => null);
  const data = (body as { data?: IntrospectionQuery } | null)?.data;
  if (response.ok && data?.__schema) return { schema: buildClientSchema(data) };
  const message = messageOf(body) ?? `${response.status} ${response.statusText}`;
  if (response.status === 401) return { problem: `The service refused this token: ${message}.` };
  return { problem: `The schema could not be loaded: ${message}.` };
}
