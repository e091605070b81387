import type { ApolloServerOptionsWithGateway } from '@apollo/server';
import {
  execute,
  GraphQLError,
  Kind,
  type DocumentNode,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Logger } from '../logger.js';

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

/** The most selections (fragments expanded) a compiled query may have; larger ones always run by graphql-js. */
const COMPILED_LARGEST = 1_000;
/** The most selections all kept compiled queries may have together: a bound on the code they hold. */
const KEPT_SELECTIONS = 20_000;
/**
 * The most characters of text their documents may have together: a kept query's operation holds
 * its document's text (the AST's locations point into it), and a small query may be sent in a body
 * of a megabyte of comments.
 */
const KEPT_TEXT = 8 * 1024 * 1024;
/**
 * The longest text a repeated query is found by. V8 hashes a string of 16,384 characters or more by
 * its length alone, so same-length texts that long would share a slot of the map that finds them;
 * a query that long runs through Apollo (compiled all the same).
 */
const REPEATED_LONGEST = 16_383;

/**
 * How Apollo executes operations at /graphql: a query's first run by graphql-js, its later runs by
 * its compiled form. Compiling costs several times what parsing and validating the document did
 * (an introspection query: about 12 ms), and most documents that arrive once never come again (an
 * IDE's, a script's); the ones a frontend sends on every page come again and again, with other
 * variables, and those are the ones worth compiling — as Mercurius does with its `jit` option.
 *
 * Only queries: graphql-js runs a mutation's root fields one after another and stops at the first
 * that fails, graphql-jit runs the rest anyway. Not a query with a field answered as `__proto__`
 * (graphql-jit builds results as object literals, where that key sets the prototype), nor one too
 * large to be worth its code. The compiled queries kept are bounded by their selections together
 * and by their documents' text together, least recently run dropped first; a dropped one must run twice again to be compiled again.
 *
 * Apollo does everything around execution: parsing, validation and the limits, the plugins
 * (costing — which coerces the variables first, so a compiled query never meets a wrong one —,
 * read-only loading, fault statuses), error formatting. Apollo takes another executor only through
 * its gateway interface, which this implements for one fixed schema. Once a kept query has run
 * compiled, its text and operation name find it (`repeated`), and its later successes are
 * answered without Apollo (repeated-queries.ts) until one of its runs there fails: then it runs
 * through Apollo until a run succeeds again (`failed`).
 */
export function compiledExecution<C extends object>(schema: GraphQLSchema, log: Logger): CompiledExecution<C> {
  /** Runs of each query not compiled yet; the operation is Apollo's, the same for the same document text. */
  const runs = new WeakMap<OperationDefinitionNode, number>();
  const notCompiled = new WeakSet<OperationDefinitionNode>();
  const kept = new Map<OperationDefinitionNode, Kept>();
  let keptSelections = 0;
  let keptText = 0;
  /** The kept queries by the text they were run from, then the operation name they were asked by (null: none). */
  const bySource = new Map<string, Map<string | null, RepeatedQuery>>();

  /** Drops what finds a kept query that is dropped: its text and names, unless a newer document of the same text took them. */
  function forget(operation: OperationDefinitionNode, entry: Kept): void {
    if (entry.source === undefined) return;
    const names = bySource.get(entry.source);
    for (const name of entry.names) if (names?.get(name)?.operation === operation) names.delete(name);
    if (names?.size === 0) bySource.delete(entry.source);
  }

  /** The compiled query, compiled now on its second run; null on its first, or for one that is never compiled. */
  function compiledFor(document: DocumentNode, operation: OperationDefinitionNode): CompiledQuery | null {
    const known = kept.get(operation);
    if (known) {
      kept.delete(operation); // most recently run last
      kept.set(operation, known);
      return known.query;
    }
    if (operation.operation !== 'query' || notCompiled.has(operation)) return null;
    const times = (runs.get(operation) ?? 0) + 1;
    runs.set(operation, times);
    if (times < 2) return null;
    runs.delete(operation);
    const selections = compilableSelections(document, operation);
    const query = selections === null ? null : compiledOrNull(document, operation);
    if (!query || selections === null) {
      notCompiled.add(operation);
      return null;
    }
    const text = document.loc?.source.body.length ?? 0;
    for (const [dropped, entry] of kept) {
      if (keptSelections + selections <= KEPT_SELECTIONS && keptText + text <= KEPT_TEXT) break;
      kept.delete(dropped);
      forget(dropped, entry);
      keptSelections -= entry.selections;
      keptText -= entry.text;
    }
    kept.set(operation, { query, selections, text, names: [], failing: false });
    keptSelections += selections;
    keptText += text;
    return query;
  }

  /** The query compiled, or null (logged) in the unexpected case that graphql-jit cannot compile a valid one. */
  function compiledOrNull(document: DocumentNode, operation: OperationDefinitionNode): CompiledQuery | null {
    try {
      return compileOperation(schema, document, operation.name?.value);
    } catch (error) {
      log.warn({ err: error }, 'a query graphql-jit cannot compile runs by graphql-js');
      return null;
    }
  }

  /**
   * Remembers the text and operation name a kept query was run from, for `repeated`: the
   * document's own text (the same characters as the request's), which the kept operation holds
   * anyway. A document's operations are each found by their own name; the only operation of a
   * document both by its name and by none, as it may be asked.
   */
  function runFrom(document: DocumentNode, operation: OperationDefinitionNode, operationName: string | undefined) {
    const entry = kept.get(operation);
    const source = document.loc?.source.body;
    const name = operationName ?? null;
    if (!entry || source === undefined || source.length > REPEATED_LONGEST || entry.names.includes(name)) return;
    entry.source = source;
    entry.names.push(name);
    let names = bySource.get(source);
    if (!names) bySource.set(source, (names = new Map()));
    names.set(name, { document, operation, operationName: name, query: entry.query });
  }

  function repeated(source: string, operationName: string | null): RepeatedQuery | null {
    if (source.length > REPEATED_LONGEST) return null;
    const known = bySource.get(source)?.get(operationName);
    const entry = known && kept.get(known.operation);
    if (!known || !entry || entry.failing) return null;
    kept.delete(known.operation); // most recently run last
    kept.set(known.operation, entry);
    return known;
  }

  function failed(operation: OperationDefinitionNode): void {
    const entry = kept.get(operation);
    if (entry) entry.failing = true;
  }

  const gateway: ApolloServerOptionsWithGateway<C>['gateway'] = {
    async load() {
      return {
        executor: async ({ document, operation: resolved, request, context }) => {
          const { operationName, variables = {} } = request;
          // No such operation in the document: graphql-js says so, in the words Apollo answers 400 with.
          const compiled = resolved ? compiledFor(document, resolved) : null;
          if (!compiled) return execute({ schema, document, operationName, variableValues: variables, contextValue: context });
          runFrom(document, resolved!, operationName);
          const result = (await compiled.query(undefined, context, variables)) as ExecutionResult;
          if (result.errors) return { ...result, errors: result.errors.map(asGraphQLError) };
          const entry = kept.get(resolved!);
          if (entry) entry.failing = false; // answered without Apollo again from now on
          return result;
        },
      };
    },
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => {};
    },
    async stop() {},
  };
  return { gateway, repeated, failed };
}

interface Kept {
  query: CompiledQuery;
  selections: number;
  /** Characters of its document's text. */
  text: number;
  /** Its document's text, once run compiled: with `names`, what finds it in `bySource`. */
  source?: string;
  /** The operation names it was run by (null: none), at most two: its own, and none when it is its document's only operation. */
  names: (string | null)[];
  /** Its last run without Apollo failed (`failed`), and no run through Apollo has succeeded since. */
  failing: boolean;
}

/** A query Apollo has validated and run compiled, as `repeated` finds it by its text. */
interface RepeatedQuery {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** The name it was asked by (null: none, the document's only operation). */
  operationName: string | null;
  query: CompiledQuery;
}

export interface CompiledExecution<C extends object> {
  /** How Apollo executes operations (its gateway interface, for one fixed schema). */
  gateway: ApolloServerOptionsWithGateway<C>['gateway'];
  /**
   * The kept compiled query run compiled from this exact text with this operation name, or null: a
   * document Apollo has parsed and validated, whose cost and execution need nothing more from it
   * (repeated-queries.ts). Null too for a text longer than REPEATED_LONGEST, and while the query
   * is failing (`failed`). Finding it counts as running it, for which queries stay kept.
   */
  repeated(source: string, operationName: string | null): RepeatedQuery | null;
  /**
   * A run of the query `repeated` found ended in errors or threw: it goes to Apollo, which runs it
   * again, until a run there succeeds. A query that keeps failing (a repository that is gone, a
   * database that is down) is then run once a request, not twice.
   */
  failed(operation: OperationDefinitionNode): void;
}

/**
 * The selections of an operation with its fragments expanded (each fragment counted once, then
 * reused), or null when it should not be compiled: more than COMPILED_LARGEST of them, or a field
 * answered as `__proto__`. Stops counting past the bound, so no document makes it long.
 */
function compilableSelections(document: DocumentNode, operation: OperationDefinitionNode): number | null {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions)
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const counted = new Map<string, number>();
  const count = (set: SelectionSetNode | undefined): number => {
    let total = 0;
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FIELD) {
        if ((selection.alias ?? selection.name).value === '__proto__') return Infinity;
        total += 1 + count(selection.selectionSet);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        total += count(selection.selectionSet);
      } else {
        const name = selection.name.value;
        if (!counted.has(name)) counted.set(name, count(fragments.get(name)?.selectionSet)); // validation refused cycles
        total += counted.get(name)!;
      }
      if (total > COMPILED_LARGEST) return Infinity;
    }
    return total;
  };
  const total = count(operation.selectionSet);
  return total > COMPILED_LARGEST ? null : total;
}
