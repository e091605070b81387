import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import type { DocumentNode } from 'graphql';

/**
 * The REST dialect of a generated GraphQL type, as convert.ts produces it at run time: snake_case
 * keys and lowercase enum values. A route reads its result through this type, so a field renamed
 * or dropped from its operation breaks the route at compile time.
 */
type Rest<T> = T extends string
  ? string extends T
    ? string
    : Lowercase<T>
  : T extends readonly (infer Item)[]
    ? Rest<Item>[]
    : T extends object
      ? { [K in keyof T as SnakeCase<K & string>]: Rest<T[K]> }
      : T;

type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Uppercase<Head> ? (Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`) : Head}${SnakeCase<Tail>}`
  : S;

declare const fromClient: unique symbol;
/**
 * A value exactly as the client sent it (a query parameter, a body field). Routes pass it on
 * unchecked: GraphQL's coercion and the services judge it, and name the error.
 */
export type FromClient = { readonly [fromClient]: true };

/** A variable value a route builds, in the REST dialect; any part of it may come straight from the client. */
type RestValue<V> = V extends readonly (infer Item)[]
  ? RestValue<Item>[]
  : V extends string | number | boolean | null | undefined
    ? Rest<V>
    : { [K in keyof V as SnakeCase<K & string>]?: RestValue<V[K]> | FromClient };

/** An operation's variables as a route passes them: the operation's own names, REST-dialect values. */
type RestVariables<V> = { [K in keyof V]: RestValue<V[K]> | FromClient };

/** The parts of a request a route maps onto variables. */
export interface RouteInput {
  params: Record<string, string>;
  query: Record<string, FromClient | undefined>;
  body: Record<string, FromClient>;
}

/** A list page in the REST dialect, written out as the `{data, total, limit, offset, hasMore}` envelope. */
export interface RestPage {
  nodes: unknown[];
  total_count: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

interface RouteBase<TData, TVariables, TPassed> {
  method: 'get' | 'post' | 'patch' | 'put' | 'delete';
  path: string;
  document: TypedDocumentNode<TData, TVariables>;
  /**
   * The operation's variables, by name; values in the REST dialect. Input objects are checked
   * field by field where the route sets them, and are otherwise the client's to fill.
   */
  variables: (input: RouteInput) => TPassed;
  status?: number;
  /** Whether the endpoint takes a JSON body. */
  body?: boolean;
}

/**
 * One REST endpoint as a mapping onto a GraphQL operation: which variables it passes, where its
 * answer sits in the (already REST-shaped) result, and how it is written out. No rule of the
 * service lives here. Typed by its document: variables by the operation's variables, `result`
 * by its result.
 */
export type Route<TData, TVariables, TPassed = RestVariables<TVariables>> = RouteBase<TData, TVariables, TPassed> &
  (
    | { kind: 'envelope'; result: (data: Rest<NoInfer<TData>>) => RestPage | null | undefined }
    | { kind: 'array'; result: (data: Rest<NoInfer<TData>>) => unknown[] | null | undefined }
    /** record: the value (default); empty: 204 once the operation succeeds. */
    | { kind?: 'record' | 'empty'; result: (data: Rest<NoInfer<TData>>) => unknown }
  );

/** Names a route passes that its operation does not declare: a compile error naming them, else nothing. */
type OnlyDeclared<TPassed, TVariables> = [Exclude<keyof TPassed, keyof TVariables>] extends [never]
  ? unknown
  : { variables: `not a variable of the operation: ${Exclude<keyof TPassed, keyof TVariables> & string}` };

declare const checked: unique symbol;

/** A route once checked against its document, as the router mounts it (only `route()` makes one). */
export interface RestRoute {
  readonly [checked]: true;
  method: Route<unknown, unknown>['method'];
  path: string;
  document: DocumentNode;
  variables: (input: RouteInput) => Record<string, unknown>;
  result: (data: Record<string, unknown>) => unknown;
  kind: 'record' | 'envelope' | 'array' | 'empty';
  status: number;
  body: boolean;
}

/** Checks a route against its document's types, then forgets them: the router runs any route alike. */
export function route<TData, TVariables, TPassed extends RestVariables<NoInfer<TVariables>>>(
  // NoInfer: the document alone says what the types are; the route is checked against them.
  definition: Route<TData, TVariables, TPassed> & OnlyDeclared<TPassed, NoInfer<TVariables>>,
): RestRoute {
  return {
    status: 200,
    body: false,
    ...definition,
    kind: definition.kind ?? 'record',
    variables: definition.variables as RestRoute['variables'],
    result: definition.result as RestRoute['result'],
  } as RestRoute;
}
