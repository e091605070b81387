import type { CompiledQuery } from 'graphql-jit';
import {
  getNullableType,
  getOperationAST,
  type VariableDefinitionNode,
  isInputObjectType,
  validate,
  type DocumentNode,
  type GraphQLError,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationTypeNode,
} from 'graphql';
import type { RequestContext } from '../src/context.js';
import { NotAList, resultShape, toGraphQLValue, toRest, variableTypes } from './convert.js';
import { DomainError } from '../src/errors/domain-error.js';
import { loadsForOperation } from '../src/graphql/read-only-queries.js';
import { compileOperation } from '../src/graphql/compiled-execution.js';
import { fromGraphQLError, judgeVariables } from './errors.js';

export type OperationOutcome = { ok: true; data: Record<string, unknown> } | { ok: false; error: DomainError | GraphQLError };

/**
 * One GraphQL operation as the facade runs it: validated against the schema
 * and compiled to a function (graphql-jit) once, at its first request,
 * executed in-process with the caller's context, its result already converted
 * to the REST dialect. The documents are fixed, so the per-request work of a
 * generic executor (walking the document, looking fields up, coercing through
 * the type system) is done once instead of on every request.
 *
 * Once, but not at start-up: most of the facade's operations may never be
 * called in a process, and preparing them all cost every start 0.15–0.2 s of
 * CPU.
 * A document that does not match the schema still cannot ship:
 * `npm run openapi` prepares every one (`prepare()`), and the test suite
 * runs it.
 */
export class RestOperation {
  private prepared: Prepared | null = null;

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly document: DocumentNode,
  ) {}

  /** Validates, derives and compiles, once; throws when the document does not match the schema. */
  prepare(): Prepared {
    if (this.prepared) return this.prepared;
    const { schema, document } = this;
    const errors = validate(schema, document);
    if (errors.length) throw new Error(`facade operation does not match the schema: ${errors.map((e) => e.message).join('; ')}`);
    const operation = getOperationAST(document);
    if (!operation) throw new Error('facade operation names no single operation');
    this.prepared = {
      shape: resultShape(schema, document),
      variables: variableTypes(schema, document),
      variableDefinitions: operation.variableDefinitions ?? [],
      operationType: operation.operation,
      compiled: compileOperation(schema, document),
    };
    return this.prepared;
  }

  /** `raw`: REST-dialect values keyed by the operation's variable names. */
  async run(ctx: RequestContext, raw: Record<string, unknown>): Promise<OperationOutcome> {
    const { shape, variables, variableDefinitions, operationType, compiled } = this.prepare();
    const variableValues: Record<string, unknown> = {};
    try {
      for (const [name, type] of variables) {
        // A whole-body input object names its fields at the top level, like the request body does.
        const field = isInputObjectType(getNullableType(type)) ? '' : name;
        if (raw[name] !== undefined) variableValues[name] = toGraphQLValue(raw[name], type, field);
      }
    } catch (error) {
      if (!(error instanceof NotAList)) throw error;
      const problem = { field: error.field, code: 'invalid', message: error.message };
      return { ok: false, error: new DomainError('VALIDATION_FAILED', `Validation failed: ${error.message}`, [problem]) };
    }
    loadsForOperation(ctx.em, operationType);
    const result = await compiled.query(undefined, ctx, variableValues);
    // The compiled query coerces the values first and runs nothing when one is wrong (no data):
    // only then are they judged again, as graphql-js does, to answer naming the REST field.
    if (result.errors?.length && result.data === undefined) {
      const wrong = judgeVariables(this.schema, variableDefinitions, variableValues);
      if (wrong) return { ok: false, error: wrong };
    }
    const first = result.errors?.[0];
    if (first) return { ok: false, error: fromGraphQLError(first) ?? first };
    return { ok: true, data: toRest(result.data, shape) as Record<string, unknown> };
  }
}

interface Prepared {
  shape: ReturnType<typeof resultShape>;
  variables: Map<string, GraphQLInputType>;
  variableDefinitions: readonly VariableDefinitionNode[];
  operationType: OperationTypeNode;
  compiled: CompiledQuery;
}
