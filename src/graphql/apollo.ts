import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, Kind, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import type { Logger } from '../logger.js';
import { ANSWERS } from '../errors/answers.js';
import { DomainError } from '../errors/domain-error.js';
import { depthLimit, MAX_COST, MAX_DEPTH, operationCost } from './limits.js';

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
 * How GraphQL answers an error: a use case's DomainError by the one table (its
 * `extensions.code`, and `details` for invalid fields); GraphQL's own client
 * errors pass through; anything unexpected is logged and reduced to a
 * stack-less INTERNAL error.
 */
function maskError(formatted: GraphQLFormattedError, error: unknown, log: Logger): GraphQLFormattedError {
  const original = unwrapResolverError(error);
  if (original instanceof DomainError) {
    const extensions = { code: ANSWERS[original.code].graphql, ...(original.details.length ? { details: original.details } : {}) };
    return { message: original.message, locations: formatted.locations, path: formatted.path, extensions };
  }
  const code = formatted.extensions?.code;
  if (typeof code === 'string' && CLIENT_CODES.has(code)) {
    return { message: formatted.message, locations: formatted.locations, path: formatted.path, extensions: { code } };
  }
  // A variable of the wrong type: the error points at the variable's definition, not at a resolver.
  if (original instanceof GraphQLError && original.nodes?.[0]?.kind === Kind.VARIABLE_DEFINITION) {
    return { message: formatted.message, locations: formatted.locations, extensions: { code: 'BAD_USER_INPUT' } };
  }
  log.error({ err: original }, 'unexpected error in a GraphQL operation');
  return { message: 'Internal server error', path: formatted.path, extensions: { code: ANSWERS.INTERNAL.graphql } };
}

/** A DomainError raised before execution (by a plugin): a GraphQLError with the table's code and HTTP status. */
function requestError(error: DomainError): GraphQLError {
  const answer = ANSWERS[error.code];
  return new GraphQLError(error.message, { extensions: { code: answer.graphql, http: { status: answer.status } } });
}

function costLimit<C extends object>(schema: GraphQLSchema): ApolloServerPlugin<C> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document }) {
          let cost: number;
          try {
            cost = operationCost(schema, document, request.operationName ?? undefined, request.variables ?? {});
          } catch (error) {
            // Costing coerces the variables first: a wrong type or a missing required variable is the
            // client's mistake (execution would say the same), not a server error.
            if (!(error instanceof GraphQLError)) throw error;
            throw new GraphQLError(error.message, { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } });
          }
          if (cost > MAX_COST) throw requestError(new DomainError('BAD_REQUEST', `query cost ${cost} exceeds the limit of ${MAX_COST}`));
        },
      };
    },
  };
}

export async function startApollo<C extends object>(schema: GraphQLSchema, log: Logger): Promise<ApolloServer<C>> {
  const apollo = new ApolloServer<C>({
    schema,
    introspection: true, // every /graphql request is authenticated before Apollo sees it
    includeStacktraceInErrorResponses: false,
    stopOnTerminationSignals: false, // the service stops Apollo itself, in order (it would re-raise the signal)
    validationRules: [depthLimit(MAX_DEPTH)],
    formatError: (formatted, error) => maskError(formatted, error, log),
    plugins: [costLimit<C>(schema)],
  });
  await apollo.start();
  return apollo;
}
