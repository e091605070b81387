import type { ApolloServerOptionsWithGateway } from '@apollo/server';
import { execute, GraphQLError, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

/**
 * One operation of a document compiled to a function (graphql-jit): the walk of the document, the
 * look-up of each field and the checks of each value that graphql-js repeats on every request are
 * done once, and the result is made of plain objects (graphql-js builds prototype-less ones, which
 * JSON.stringify serialises slowly). The document must already be valid against `schema`.
 */
export function compileOperation(schema: GraphQLSchema, document: DocumentNode, operationName?: string): CompiledQuery {
  const compiled = compileQuery(schema, document, operationName, { disablingCapturingStackErrors: true });
  if (!isCompiledQuery(compiled)) throw new Error(`operation does not compile: ${compiled.errors?.map((e) => e.message).join('; ')}`);
  return compiled;
}

/**
 * graphql-jit's error as graphql-js would have made it. Its own errors borrow GraphQLError's
 * prototype but not its constructor, which is what gives an error its `extensions` (Apollo's error
 * formatting reads them, and fails on an error without).
 */
function asGraphQLError(error: GraphQLError): GraphQLError {
  const made = new GraphQLError(error.message, { path: error.path, originalError: error.originalError, extensions: error.extensions });
  (made as { locations: GraphQLError['locations'] }).locations = error.locations;
  return made;
}

/** Documents whose operations are kept compiled, most recently run last; at most this many. */
const COMPILED_MOST = 256;

/**
 * How Apollo executes operations at /graphql: a document's first run by graphql-js, its later runs
 * by its compiled form. Compiling costs several times what parsing and validating the document did
 * (an introspection query: about 12 ms), and most documents that arrive once never come again (an
 * IDE's, a script's); the ones a frontend sends on every page come again and again, with other
 * variables, and those are the ones worth compiling — as Mercurius does with its `jit` option.
 *
 * Apollo still does everything around execution: parsing, validation and the limits, the plugins
 * (costing, read-only loading, fault statuses), error formatting. Apollo takes another executor
 * only through its gateway interface, which this implements for one fixed schema.
 */
export function compiledExecution<C extends object>(schema: GraphQLSchema): ApolloServerOptionsWithGateway<C>['gateway'] {
  const runs = new WeakMap<DocumentNode, number>();
  const compiled = new Map<DocumentNode, Map<string, CompiledQuery>>();

  /** The compiled operation, compiled now on the document's second run; null on its first. */
  function compiledFor(document: DocumentNode, operationName: string | undefined): CompiledQuery | null {
    let operations = compiled.get(document);
    if (operations) {
      compiled.delete(document); // most recently run last
      compiled.set(document, operations);
    } else {
      const times = (runs.get(document) ?? 0) + 1;
      runs.set(document, times);
      if (times < 2) return null;
      if (compiled.size >= COMPILED_MOST) compiled.delete(compiled.keys().next().value!);
      compiled.set(document, (operations = new Map()));
    }
    const key = operationName ?? '';
    let operation = operations.get(key);
    if (!operation) operations.set(key, (operation = compileOperation(schema, document, operationName)));
    return operation;
  }

  return {
    async load() {
      return {
        executor: async ({ document, operation: resolved, request, context }) => {
          const { operationName, variables = {} } = request;
          // No such operation in the document: graphql-js says so, in the words Apollo answers 400 with.
          const operation = resolved ? compiledFor(document, operationName ?? undefined) : null;
          if (!operation) return execute({ schema, document, operationName, variableValues: variables, contextValue: context });
          const result = (await operation.query(undefined, context, variables)) as ExecutionResult;
          return result.errors ? { ...result, errors: result.errors.map(asGraphQLError) } : result;
        },
      };
    },
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => {};
    },
    async stop() {},
  };
}
