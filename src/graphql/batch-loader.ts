import DataLoader from 'dataloader';

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

/** `rows` grouped by `keyOf`, in the order of `keys`, for a `load` that reads all keys' rows in one statement. */
export function groupedBy<K, R>(keys: readonly K[], rows: R[], keyOf: (row: R) => K): R[][] {
  const groups = new Map<K, R[]>(keys.map((key) => [key, []]));
  for (const row of rows) groups.get(keyOf(row))?.push(row);
  return keys.map((key) => groups.get(key)!);
}
