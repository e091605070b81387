import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import type { DocumentNode } from 'graphql';
import type { ErrorCode } from '../src/errors/domain-error.js';

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

/** A list page in the REST dialect (the connection a list operation selects). */
export interface RestPage {
  nodes: unknown[];
  total_count: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

/** The list envelope's names for the fields of a page: the response writer and the OpenAPI document both read this. */
export const ENVELOPE = { data: 'nodes', total: 'total_count', limit: 'limit', offset: 'offset', hasMore: 'has_more' } as const;

/** A query parameter a route reads: its value goes to the operation's variable of the same name, which gives its type. */
export interface QueryParam {
  name: string;
  description: string;
}

/**
 * How a JSON body maps onto the operation's variables: the whole body as one input object variable
 * (fields the path sets are not the client's), or body fields as variables of the same name.
 */
type BodyShape = { input: string; fromPath?: readonly string[] } | { variables: readonly string[] };

/** The key paths of a (REST-dialect) result, a few levels deep: where a route's answer sits. */
type PathIn<T, Depth extends unknown[] = []> = Depth['length'] extends 4
  ? never
  : T extends readonly unknown[]
    ? never
    : T extends object
      ? { [K in keyof T & string]: [K] | [K, ...PathIn<NonNullable<T[K]>, [...Depth, unknown]>] }[keyof T & string]
      : never;

interface RouteBase<TData, TVariables, TPassed> {
  method: 'get' | 'post' | 'patch' | 'put' | 'delete';
  path: string;
  document: TypedDocumentNode<TData, TVariables>;
  /**
   * The operation's variables, by name; values in the REST dialect. Input objects are checked
   * field by field where the route sets them, and are otherwise the client's to fill. `query` holds
   * only the declared query parameters.
   */
  variables: (input: RouteInput) => TPassed;
  /** Where the answer sits in the (REST-shaped) result; null or absent on the way answers 404. */
  resultPath: PathIn<Rest<NoInfer<TData>>>;
  /**
   * The answer is the object at this key of the value at `resultPath`, with the value's other
   * fields beside it when they are set (a created webhook and its one-time secret).
   */
  spread?: string;
  /** Query parameters the route reads. */
  query?: readonly QueryParam[];
  status?: number;
  /** The JSON body the endpoint takes, if any. */
  body?: BodyShape;
  /**
   * How the answer is written out. record: the value (default); envelope: a page as
   * `{data, total, limit, offset, hasMore}`; array: a list; empty: 204 once the operation succeeds.
   */
  kind?: 'record' | 'envelope' | 'array' | 'empty';
  /**
   * Errors its operation may answer that the route's shape does not imply (openapi/statuses.ts):
   * FORBIDDEN on a read that needs more than read access, CONFLICT, NOT_MERGEABLE.
   */
  answers?: readonly ErrorCode[];
  /**
   * For a GET whose answer is the same for everyone who may read it: an operation with the same
   * variables whose one field answers the answer's version — a value that names one answer of the
   * route (requests with the same version get the same answer), changes whenever the answer would,
   * and never comes back. It is run first, and answers what the route's operation would to a
   * caller who may not read; the answer made at a version is kept and sent again for it
   * (kept-answers.ts) instead of being made anew.
   */
  reuse?: TypedDocumentNode<Record<string, string>, TVariables>;
}

/**
 * One REST endpoint as a mapping onto a GraphQL operation: which variables it passes, where its
 * answer sits in the (already REST-shaped) result, and how it is written out. No rule of the
 * service lives here. Typed by its document: variables by the operation's variables, `resultPath`
 * by its result. Everything but `variables` is data, which the OpenAPI document is generated from.
 */
export type Route<TData, TVariables, TPassed = RestVariables<TVariables>> = RouteBase<TData, TVariables, TPassed>;

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
  resultPath: readonly string[];
  spread: string | null;
  /** The answer in the result: read through `resultPath` (and `spread`), so it is what the document describes. */
  result: (data: Record<string, unknown>) => unknown;
  query: readonly QueryParam[];
  kind: 'record' | 'envelope' | 'array' | 'empty';
  status: number;
  body: BodyShape | null;
  answers: readonly ErrorCode[];
  reuse: DocumentNode | null;
}

/** The value at `path`, or undefined where the way is null. */
function at(data: unknown, path: readonly string[]): unknown {
  let value = data;
  for (const key of path) {
    if (value === null || value === undefined) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** Checks a route against its document's types, then forgets them: the router runs any route alike. */
export function route<TData, TVariables, TPassed extends RestVariables<NoInfer<TVariables>>>(
  // NoInfer: the document alone says what the types are; the route is checked against them.
  definition: Route<TData, TVariables, TPassed> & OnlyDeclared<TPassed, NoInfer<TVariables>>,
): RestRoute {
  const resultPath = definition.resultPath as readonly string[];
  const spread = definition.spread ?? null;
  const result = (data: Record<string, unknown>): unknown => {
    const value = at(data, resultPath);
    if (spread === null || value === null || typeof value !== 'object') return value;
    const { [spread]: inner, ...beside } = value as Record<string, unknown>;
    if (inner === null || inner === undefined) return inner;
    return {
      ...(inner as object),
      ...Object.fromEntries(Object.entries(beside).filter(([, v]) => v !== null && v !== undefined && v !== '')),
    };
  };
  return {
    method: definition.method,
    path: definition.path,
    document: definition.document,
    variables: definition.variables as RestRoute['variables'],
    resultPath,
    spread,
    result,
    query: definition.query ?? [],
    kind: definition.kind ?? 'record',
    status: definition.status ?? 200,
    body: definition.body ?? null,
    answers: definition.answers ?? [],
    reuse: definition.reuse ?? null,
  } as RestRoute;
}
