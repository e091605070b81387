import type { ApolloServerPlugin } from '@apollo/server';
import {
  getNullableType,
  getVariableValues,
  GraphQLError,
  isListType,
  Kind,
  visit,
  type DocumentNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
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
/**
 * The only argument whose value the estimate reads: a page's size. The costs kept per document
 * (operationCost) are keyed by the variables given to it, so an estimate that read another argument
 * would have to be named here too.
 */
const PAGE_SIZE = 'limit';

const pageAwareEstimator: ComplexityEstimator = ({ type, field, args, childComplexity }) => {
  const children = Math.max(childComplexity, 1);
  const isList = isListType(getNullableType(field.type));
  if (readsSchema(type, field)) return isList ? UNPAGED_LIST_SIZE * children : childComplexity;
  const base = typeof field.extensions?.cost === 'number' ? field.extensions.cost : 1;
  if (field.args.some((arg) => arg.name === PAGE_SIZE)) {
    const given: unknown = args[PAGE_SIZE];
    const limit = typeof given === 'number' ? Math.min(Math.max(given, 0), MAX_LIMIT) : DEFAULT_LIMIT;
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
 *
 * The walk is as long as the document, and clients send the same documents again and again with
 * other ids: a cost is kept per document (Apollo hands the same parsed document for the same text)
 * and per value of the variables it depends on — those given as a `limit` or to `@include`/`@skip`.
 * Every request's variables are still coerced first, as the walk would, so a wrong one is refused
 * as before.
 */
function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  operationName: string | undefined,
  variables: Record<string, unknown>,
): number {
  const { coerced, errors } = getVariableValues(schema, operation.variableDefinitions ?? [], variables);
  if (errors?.length) throw errors[errors.length - 1]!;
  const known = costsOf(document);
  const key = `${operationName ?? ''}\u0000${JSON.stringify(known.variables.map((name) => coerced![name]))}`;
  let cost = known.costs.get(key);
  if (cost === undefined) {
    cost = getComplexity({
      schema,
      query: document,
      operationName,
      variables,
      estimators: [pageAwareEstimator],
      maxQueryNodes: MAX_SELECTIONS + 1,
    });
    if (known.costs.size >= COSTS_PER_DOCUMENT) known.costs.clear();
    known.costs.set(key, cost);
  }
  return cost;
}

/** Costs kept for one document, by operation and values of `variables`; at most this many. */
const COSTS_PER_DOCUMENT = 64;
const documentCosts = new WeakMap<DocumentNode, { variables: string[]; costs: Map<string, number> }>();

function costsOf(document: DocumentNode): { variables: string[]; costs: Map<string, number> } {
  let known = documentCosts.get(document);
  if (!known) {
    known = { variables: costVariables(document), costs: new Map() };
    documentCosts.set(document, known);
  }
  return known;
}

/**
 * The variables a cost can depend on, in name order: those given as a page's size (PAGE_SIZE) or as
 * a directive's `if` (`@include`/`@skip`: a skipped selection costs nothing). Any other variable
 * names what is read, not how much.
 */
function costVariables(document: DocumentNode): string[] {
  const names = new Set<string>();
  visit(document, {
    [Kind.ARGUMENT](argument) {
      if (argument.name.value !== PAGE_SIZE && argument.name.value !== 'if') return;
      visit(argument.value, { [Kind.VARIABLE]: (variable) => void names.add(variable.name.value) });
    },
  });
  return [...names].sort();
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

/** One request's operation, as costing reads it. */
export interface CostedOperation<C> {
  contextValue: C;
  document: DocumentNode;
  operation: OperationDefinitionNode;
  operationName: string | undefined;
  variables: Record<string, unknown>;
  /** The response's headers (the hook may report what it counted). */
  headers: { set(name: string, value: string): unknown };
}

/**
 * The cost limit: `pay` costs an operation, refuses it over MAX_COST, then tells `onOperationCost`;
 * `plugin` does so for each operation Apollo runs. A request pays once, whichever path runs its
 * operation: a second `pay` for the same request answers the first one's outcome, so an operation
 * the quicker path of repeated queries (repeated-queries.ts) paid for and then handed to Apollo is
 * neither charged twice nor, once refused, given its arrival's point back twice.
 */
export function operationCosts<C extends { em: object }>(schema: GraphQLSchema, onOperationCost?: OperationCostHook<C>) {
  // Kept on the request's entity manager: Apollo runs an operation with a shallow copy of the
  // context it was given, which shares it. A request has one operation (Apollo's HTTP batching is
  // off). A property, as read-only.ts marks it: a WeakMap entry per request costs more.
  const PAID = Symbol('operation paid');
  type Paying = { [PAID]?: Promise<void> };

  async function charge({ contextValue, document, operation, operationName, variables, headers }: CostedOperation<C>): Promise<void> {
    let cost: number;
    try {
      cost = operationCost(schema, document, operation, operationName, variables);
    } catch (error) {
      // Costing coerces the variables first: a wrong type or a missing required variable is the
      // client's mistake (execution would say the same), not a server error.
      if (!(error instanceof GraphQLError)) throw error;
      throw new GraphQLError(error.message, { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } });
    }
    if (cost > MAX_COST) throw limitError(`query cost ${cost} exceeds the limit of ${MAX_COST}`);
    try {
      await onOperationCost?.(contextValue, cost, operation.operation, headers);
    } catch (error) {
      throw error instanceof DomainError ? requestError(error) : error;
    }
  }

  function pay(operation: CostedOperation<C>): Promise<void> {
    const em = operation.contextValue.em as Paying;
    return (em[PAID] ??= charge(operation));
  }

  const plugin: ApolloServerPlugin<C> = {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, response, document, operation, contextValue }) {
          if (!operation) return; // no such operation in the document: Apollo refuses it next
          const variables = request.variables ?? {};
          await pay({
            contextValue,
            document,
            operation,
            operationName: request.operationName ?? undefined,
            variables,
            headers: response.http.headers,
          });
        },
      };
    },
  };
  return { pay, plugin };
}

export type OperationCosts<C extends { em: object }> = ReturnType<typeof operationCosts<C>>;
