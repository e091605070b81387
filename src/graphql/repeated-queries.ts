import type { EntityManager } from '@mikro-orm/postgresql';
import type { ExecutionResult } from 'graphql';
import type { CompiledExecution } from './compiled-execution.js';
import type { OperationCosts } from './cost.js';
import { loadsForOperation } from './read-only-queries.js';

/** A POST body as GraphQL over HTTP has it, when it is one this path answers. */
interface PlainRequest {
  query: string;
  operationName: string | null;
  variables: Record<string, unknown>;
}

/**
 * Queries a frontend sends again and again, answered without Apollo's per-request pipeline: the
 * same text Apollo has already parsed, validated (every limit of the document included) and run
 * compiled finds its compiled query by that text, pays its cost as Apollo's plugin would
 * (cost.ts), loads read-only and runs. Apollo hashes each text (SHA-256) to find its parsed
 * document, copies every header, negotiates the answer's type twice and awaits each plugin's hook
 * at each stage: for a small query that is more CPU than its execution.
 *
 * Only a plain success is answered here: anything else — a text not yet known, persisted queries,
 * a refusal of its cost, an error in its result — returns null, and the request goes to Apollo
 * whole, with the same context. Apollo then answers it as it answers every request, and the cost
 * is not paid twice (`pay` answers one outcome per request). A query whose run here failed is run
 * again by Apollo: so that this happens once, not at every request while it keeps failing, the
 * query is marked failing (`failed`) and goes straight to Apollo until a run there succeeds.
 */
export function repeatedQueries<C extends { em: EntityManager }>(compiled: CompiledExecution<C>, costs: OperationCosts<C>) {
  return async (body: unknown, contextValue: C, headers: { set(name: string, value: string): unknown }): Promise<string | null> => {
    const request = plainRequest(body);
    const known = request && compiled.repeated(request.query, request.operationName);
    if (!request || !known) return null;
    const { document, operation, query } = known;
    const { variables } = request;
    try {
      await costs.pay({ contextValue, document, operation, operationName: request.operationName ?? undefined, variables, headers });
    } catch {
      return null;
    }
    loadsForOperation(contextValue.em, operation.operation);
    let result: ExecutionResult | null;
    try {
      result = (await query.query(undefined, contextValue, variables)) as ExecutionResult;
    } catch {
      result = null;
    }
    if (!result || result.errors?.length) {
      compiled.failed(operation);
      return null;
    }
    return `${JSON.stringify({ data: result.data })}\n`; // as Apollo writes an answer
  };
}

export type RepeatedQueries<C extends { em: EntityManager }> = ReturnType<typeof repeatedQueries<C>>;

/** The body when it is a plain query request (no extensions, no batch), or null. */
function plainRequest(body: unknown): PlainRequest | null {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const { query, operationName, variables, extensions } = body as Record<string, unknown>;
  if (typeof query !== 'string' || extensions !== undefined) return null;
  if (operationName != null && typeof operationName !== 'string') return null;
  if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) return null;
  return { query, operationName: operationName ?? null, variables: (variables ?? {}) as Record<string, unknown> };
}
