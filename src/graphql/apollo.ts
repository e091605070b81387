import { ApolloServer } from '@apollo/server';
import { ApolloServerErrorCode, ApolloServerValidationErrorCode, unwrapResolverError } from '@apollo/server/errors';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { GraphQLError, Kind, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import type { Logger } from '../logger.js';
import { ANSWERS } from '../errors/answers.js';
import { DomainError } from '../errors/domain-error.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { operationCosts, type OperationCostHook } from './cost.js';
import { MAX_SELECTIONS, validationLimits } from './limits.js';
import { readOnlyQueries } from './read-only-queries.js';
import { domainErrorOf } from './request-error.js';
import { faultStatus } from './fault-status.js';
import { compiledExecution } from './compiled-execution.js';
import { repeatedQueries, type RepeatedQueries } from './repeated-queries.js';

/** Codes that carry a message meant for the client; anything else is masked as INTERNAL. */
const CLIENT_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'BAD_REQUEST',
]);

/**
 * How GraphQL answers an error: a DomainError — a use case's, or a limit's or a plugin's refusal
 * before execution — by the one table (its `extensions.code`, and `details` for invalid fields);
 * GraphQL's own client errors pass through; anything unexpected is logged and reduced to a
 * stack-less INTERNAL error.
 */
function maskError(formatted: GraphQLFormattedError, error: unknown, log: Logger): GraphQLFormattedError {
  const domain = domainErrorOf(error) ?? tooManySelections(formatted) ?? tooManyComparisons(formatted);
  if (domain) {
    const extensions = { code: ANSWERS[domain.code].graphql, ...(domain.details.length ? { details: domain.details } : {}) };
    return { message: domain.message, locations: formatted.locations, path: formatted.path, extensions };
  }
  const code = formatted.extensions?.code;
  if (typeof code === 'string' && CLIENT_CODES.has(code)) {
    return { message: formatted.message, locations: formatted.locations, path: formatted.path, extensions: { code } };
  }
  // A variable of the wrong type: the error points at the variable's definition, not at a resolver.
  const original = unwrapResolverError(error);
  if (original instanceof GraphQLError && original.nodes?.[0]?.kind === Kind.VARIABLE_DEFINITION) {
    return { message: formatted.message, locations: formatted.locations, extensions: { code: 'BAD_USER_INPUT' } };
  }
  log.error({ err: original }, 'unexpected error in a GraphQL operation');
  return { message: 'Internal server error', path: formatted.path, extensions: { code: ANSWERS.INTERNAL.graphql } };
}

/** Apollo's own limit of selections (`maxRecursiveSelections`), answered as our other limits are. */
function tooManySelections(formatted: GraphQLFormattedError): DomainError | null {
  if (formatted.extensions?.validationErrorCode !== ApolloServerValidationErrorCode.MAX_RECURSIVE_SELECTIONS_EXCEEDED) return null;
  return new DomainError(
    'BAD_REQUEST',
    `the operation selects more than ${MAX_SELECTIONS} fields once its fragments are expanded (the limit)`,
  );
}

/**
 * GraphQL's own bounds on the work of validating a document: comparing every pair of same-named
 * fields (900 repeats of one field pass it), expanding fragments. Past one it gives up with a bare
 * "Validation aborted."; answered as our other limits are, naming what was too much.
 */
function tooManyComparisons(formatted: GraphQLFormattedError): DomainError | null {
  if (formatted.message !== 'Validation aborted.' || formatted.extensions?.code !== ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED)
    return null;
  return new DomainError(
    'BAD_REQUEST',
    'the operation takes more work to validate than GraphQL allows (the limit of validation work: a field repeated hundreds of times)',
  );
}

export interface ApolloOptions<C> {
  /** Told each operation's cost before it runs; may refuse it with a DomainError (cost.ts). */
  onOperationCost?: OperationCostHook<C>;
}

/** GraphQL at /graphql: Apollo, and the quicker path of the queries it has run before (repeated-queries.ts). */
export interface GraphQLService<C extends { em: EntityManager }> {
  apollo: ApolloServer<C>;
  repeated: RepeatedQueries<C>;
}

export async function startApollo<C extends { em: EntityManager }>(
  schema: GraphQLSchema,
  log: Logger,
  options: ApolloOptions<C> = {},
): Promise<GraphQLService<C>> {
  const execution = compiledExecution<C>(schema, log);
  const costs = operationCosts<C>(schema, options.onOperationCost);
  const apollo = new ApolloServer<C>({
    gateway: execution.gateway,
    introspection: true, // every /graphql request is authenticated before Apollo sees it
    includeStacktraceInErrorResponses: false,
    stopOnTerminationSignals: false, // the service stops Apollo itself, in order (it would re-raise the signal)
    // GraphQL over GET, for queries (Apollo answers a mutation over GET 405, Allow: POST). Apollo's
    // CSRF prevention refuses every GET without a header that forces a CORS preflight, which is
    // every GET a client such as urql sends. It guards against requests a browser sends with
    // ambient credentials (cookies, HTTP authentication); Cairn reads none: /graphql answers only a
    // request with an `Authorization: Bearer` token, which a browser never adds by itself, and a
    // cross-site page can add it only through a preflight that Cairn does not grant.
    csrfPrevention: false,
    // Apollo's own count of the selections once fragments are expanded, memoised per fragment: a
    // fragment bomb is refused here, in linear time. Given this limit, Apollo runs the rules below
    // in a second pass, over documents that passed GraphQL's own rules and this one.
    maxRecursiveSelections: MAX_SELECTIONS,
    validationRules: validationLimits(),
    formatError: (formatted, error) => maskError(formatted, error, log),
    // Apollo's default landing page loads its hosted Sandbox from a CDN; the service serves its own IDE (graphiql/serve.ts).
    // Its cache-control plugin, on by default, wraps every field's resolver to gather cache hints,
    // which no type declares and no response carries: off, a field runs its resolver directly.
    // Its inline-trace plugin (on by default) serves federated subgraphs, which this schema is not:
    // off, no start loads its protobuf code and no request calls its hook.
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      costs.plugin,
      readOnlyQueries<C>(),
      faultStatus<C>(),
    ],
  });
  await apollo.start();
  return { apollo, repeated: repeatedQueries(execution, costs) };
}
