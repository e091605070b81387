import type { ApolloServerPlugin } from '@apollo/server';
import { getNullableType, GraphQLError, isListType, type DocumentNode, type GraphQLObjectType, type GraphQLSchema } from 'graphql';
import { createRequire } from 'node:module';
import type { ComplexityEstimator, getComplexity as GetComplexity } from 'graphql-query-complexity';
import { DomainError } from '../errors/domain-error.js';
import { MAX_COST, MAX_SELECTIONS } from './limits.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from './pagination.js';
import { limitError, requestError } from './request-error.js';

// Its ESM build imports `graphql/index.mjs`, a second graphql instance beside the CommonJS one
// every other package resolves to; its CommonJS build shares theirs.
const { getComplexity } = createRequire(import.meta.url)('graphql-query-complexity') as { getComplexity: typeof GetComplexity };

/** What an unpaged list (collaborators, webhooks, a tree, attempts) counts as: its usual size, not its worst, unless it declares one. */
const UNPAGED_LIST_SIZE = 20;

/** Introspection (`__schema`, `__type` and the fields of their types) is read from the schema in memory. */
const readsSchema = (parent: { name: string }, field: { name: string }) =>
  parent.name.startsWith('__') || (field.name.startsWith('__') && field.name !== '__typename');

/**
 * A paged field costs its children times the page it may return (the default page when `limit` is
 * not given); an unpaged list its children times UNPAGED_LIST_SIZE; anything else its children. Each
 * adds its own base cost: 1, or what the field declares (GIT_FIELD_COST for fields that run git).
 * Introspection fields have no base cost — no database, no git — but their lists count like any
 * unpaged list: what they cost is the size of the answer, which nesting lists in lists multiplies.
 */
const pageAwareEstimator: ComplexityEstimator = ({ type, field, args, childComplexity }) => {
  const children = Math.max(childComplexity, 1);
  const isList = isListType(getNullableType(field.type));
  if (readsSchema(type, field)) return isList ? UNPAGED_LIST_SIZE * children : childComplexity;
  const base = typeof field.extensions?.cost === 'number' ? field.extensions.cost : 1;
  if (field.args.some((arg) => arg.name === 'limit')) {
    const limit = typeof args.limit === 'number' ? Math.min(Math.max(args.limit, 0), MAX_LIMIT) : DEFAULT_LIMIT;
    return base + limit * children;
  }
  // A connection's `nodes` is the page its paged parent field already counted.
  const isPage = field.name === 'nodes' && 'hasMore' in (type as GraphQLObjectType).getFields();
  // A bounded list may declare its usual size (`@Extensions({ listSize })`: the assignees of an issue).
  const size = typeof field.extensions?.listSize === 'number' ? field.extensions.listSize : UNPAGED_LIST_SIZE;
  if (!isPage && isList) return base + size * children;
  return base + childComplexity;
};

/**
 * Estimated cost of an operation, for the cost limit. It walks the operation with its fragments
 * expanded, which validation bounded (MAX_SELECTIONS, counted without expanding): the walk stops
 * there too, so no document makes it long.
 */
function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | undefined,
  variables: Record<string, unknown>,
): number {
  return getComplexity({
    schema,
    query: document,
    operationName,
    variables,
    estimators: [pageAwareEstimator],
    maxQueryNodes: MAX_SELECTIONS + 1,
  });
}

/**
 * Told the cost of each operation once, after it is costed and within the cost limit, before it
 * runs (introspection included). A DomainError it throws refuses the operation with the table's
 * answer (RATE_LIMITED: 429). Introspection alone may cost 0: it counts only the size of its lists.
 */
export type OperationCostHook<C> = (
  contextValue: C,
  cost: number,
  operationType: 'query' | 'mutation' | 'subscription',
  /** The response's headers (a hook may report what it counted). */
  headers: { set(name: string, value: string): unknown },
) => void | Promise<void>;

/** Apollo plugin: costs each operation once, refuses it over MAX_COST, then tells `onOperationCost`. */
export function costLimit<C extends object>(schema: GraphQLSchema, onOperationCost?: OperationCostHook<C>): ApolloServerPlugin<C> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, response, document, operation, contextValue }) {
          if (!operation) return; // no such operation in the document: Apollo refuses it next
          let cost: number;
          try {
            cost = operationCost(schema, document, request.operationName ?? undefined, request.variables ?? {});
          } catch (error) {
            // Costing coerces the variables first: a wrong type or a missing required variable is the
            // client's mistake (execution would say the same), not a server error.
            if (!(error instanceof GraphQLError)) throw error;
            throw new GraphQLError(error.message, { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } });
          }
          if (cost > MAX_COST) throw limitError(`query cost ${cost} exceeds the limit of ${MAX_COST}`);
          try {
            await onOperationCost?.(contextValue, cost, operation.operation, response.http.headers);
          } catch (error) {
            throw error instanceof DomainError ? requestError(error) : error;
          }
        },
      };
    },
  };
}
