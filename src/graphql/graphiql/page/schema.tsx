import { buildClientSchema, getIntrospectionQuery, type GraphQLSchema, type IntrospectionQuery } from 'graphql';
import { postGraphQL } from './post-graphql.js';

/** The schema, or why there is none, in words for the notice beside the Token field. */
export type SchemaAnswer = { schema: GraphQLSchema } | { problem: string };

/**
 * Asks /graphql for its schema with the token: one request, whose refusal is told once, plainly,
 * beside the field. The page does this itself rather than through GraphiQL's introspection, which
 * asks a second time after a refusal and prints the refusal into the response pane.
 */
export async function loadSchema(token: string, signal: AbortSignal): Promise<SchemaAnswer> {
  const headers = new Headers({ authorization: `Bearer ${token}` });
  const answer = await postGraphQL(headers, { query: getIntrospectionQuery(), operationName: 'IntrospectionQuery' }, signal);
  const data = (answer.body as { data?: IntrospectionQuery } | null)?.data;
  if (answer.ok && data?.__schema) return { schema: buildClientSchema(data) };
  return { problem: answer.refusal ?? `The schema could not be loaded: ${answer.message}.` };
}
