import DataLoader from 'dataloader';
import type { GraphQLResolveInfo, GraphQLSchema } from 'graphql';
import { beforeEachMutationField } from './mutation-root.js';
import { selectsNodes, type Connection, type Page } from './pagination.js';

const loadersOf = new WeakMap<object, Map<string, DataLoader<unknown, unknown>>>();

/**
 * The batch loader `name` of one request: the nested lists of a page (the labels of 30 issues, the
 * reviews of 30 pull requests) are asked for one item at a time by their field resolvers, and load
 * together, in one statement, once the page's resolvers have all asked. `scope` is the request's
 * context (one per request, GraphQL and REST alike), so nothing is cached across requests; `load`
 * answers one value per key, in the order of the keys.
 */
export function batchLoader<K, V>(scope: object, name: string, load: (keys: readonly K[]) => Promise<V[]>): DataLoader<K, V> {
  let loaders = loadersOf.get(scope);
  if (!loaders) loadersOf.set(scope, (loaders = new Map()));
  let loader = loaders.get(name) as DataLoader<K, V> | undefined;
  if (!loader) {
    loader = new DataLoader<K, V>(load, { maxBatchSize: 1000 });
    loaders.set(name, loader as DataLoader<unknown, unknown>);
  }
  return loader;
}

/**
 * Each root field of a mutation is a change, and what a request's loaders hold was loaded before
 * it: the loaders are emptied as each one starts, so a field after it (`b: removeAssignees { assignees }`
 * after `a: addAssignees { assignees }`) loads what the change left, not what an earlier field saw.
 */
export function freshLoadsPerMutation(schema: GraphQLSchema): GraphQLSchema {
  return beforeEachMutationField(schema, (context) => loadersOf.delete(context));
}

/** `rows` grouped by `keyOf`, in the order of `keys`, for a `load` that reads all keys' rows in one statement. */
export function groupedBy<K, R>(keys: readonly K[], rows: R[], keyOf: (row: R) => K): R[][] {
  const groups = new Map<K, R[]>(keys.map((key) => [key, []]));
  for (const row of rows) groups.get(keyOf(row))?.push(row);
  return keys.map((key) => groups.get(key)!);
}

/**
 * The page of `key`'s items that a connection field answers, loaded together with the pages of
 * every other parent the request lists: `load` reads the pages of all `keys` in one statement.
 * When the query selects only the connection's counts, no item is loaded (`reviews { totalCount }`
 * on 30 pull requests counts their reviews), and the answer still states the page asked for.
 */
export async function pageOf<T>(
  scope: object,
  name: string,
  key: string,
  page: Page,
  info: GraphQLResolveInfo,
  load: (keys: readonly string[], page: Page) => Promise<Array<Connection<T>>>,
): Promise<Connection<T>> {
  const loads = selectsNodes(info) ? page : { limit: 0, offset: page.offset };
  const loaded = await batchLoader(scope, `${name}:${loads.limit}:${loads.offset}`, (keys: readonly string[]) => load(keys, loads)).load(
    key,
  );
  return loads === page ? loaded : { ...loaded, limit: page.limit, hasMore: page.offset + page.limit < loaded.totalCount };
}
