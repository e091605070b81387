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
 * once at start-up and compiled to a function (graphql-jit) once, executed
 * in-process with the caller's context, its result already converted to the
 * REST dialect. The documents are fixed, so the per-request work of a generic
 * executor (walking the document, looking fields up, coercing through the
 * type system) is done once instead of on every request.
 */
export class RestOperation {
  private readonly shape: ReturnType<typeof resultShape>;
  private readonly variables: Map<string, GraphQLInputType>;
  private compiled: CompiledQuery | null = null;
  private readonly variableDefinitions: readonly VariableDefinitionNode[];
  private readonly operationType: OperationTypeNode;

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly document: DocumentNode,
  ) {
    const errors = validate(schema, document);
    if (errors.length) throw new Error(`facade operation does not match the schema: ${errors.map((e) => e.message).join('; ')}`);
    this.shape = resultShape(schema, document);
    this.variables = variableTypes(schema, document);
    const operation = getOperationAST(document);
    if (!operation) throw new Error('facade operation names no single operation');
    this.variableDefinitions = operation.variableDefinitions ?? [];
    this.operationType = operation.operation;
  }

  /** Compiled at its first request, not at start-up: most of the 80 routes of a process may never be called. */
  private compile(): CompiledQuery {
    if (!this.compiled) {
      this.compiled = compileOperation(this.schema, this.document);
    }
    return this.compiled;
  }

  /** `raw`: REST-dialect values keyed by the operation's variable names. */
  async run(ctx: RequestContext, raw: Record<string, unknown>): Promise<OperationOutcome> {
    const variableValues: Record<string, unknown> = {};
    try {
      for (const [name, type] of this.variables) {
        // A whole-body input object names its fields at the top level, like the request body does.
        const field = isInputObjectType(getNullableType(type)) ? '' : name;
        if (raw[name] !== undefined) variableValues[name] = toGraphQLValue(raw[name], type, field);
      }
    } catch (error) {
      if (!(error instanceof NotAList)) throw error;
      const problem = { field: error.field, code: 'invalid', message: error.message };
      return { ok: false, error: new DomainError('VALIDATION_FAILED', `Validation failed: ${error.message}`, [problem]) };
    }
    loadsForOperation(ctx.em, this.operationType);
    const result = await this.compile().query(undefined, ctx, variableValues);
    // The compiled query coerces the values first and runs nothing when one is wrong (no data):
    // only then are they judged again, as graphql-js does, to answer naming the REST field.
    if (result.errors?.length && result.data === undefined) {
      const wrong = judgeVariables(this.schema, this.variableDefinitions, variableValues);
      if (wrong) return { ok: false, error: wrong };
    }
    const first = result.errors?.[0];
    if (first) return { ok: false, error: fromGraphQLError(first) ?? first };
    return { ok: true, data: toRest(result.data, this.shape) as Record<string, unknown> };
  }
}
