import { ANSWERS } from '../errors/answers.js';
import {
  getNullableType,
  GraphQLError,
  isListType,
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import { createRequire } from 'node:module';
import type { DocumentNode } from 'graphql';
import type { ComplexityEstimator, getComplexity as GetComplexity } from 'graphql-query-complexity';
import { DEFAULT_LIMIT, MAX_LIMIT } from './pagination.js';

// Its ESM build imports `graphql/index.mjs`, a second graphql instance beside the CommonJS one
// every other package resolves to; its CommonJS build shares theirs.
const { getComplexity } = createRequire(import.meta.url)('graphql-query-complexity') as { getComplexity: typeof GetComplexity };

export const MAX_DEPTH = 12;
export const MAX_COST = 20_000;

/** Validation rule: rejects selections nested deeper than `max` fields (fragments followed). */
export function depthLimit(max: number) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of context.getDocument().definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    }
    const depthOf = (set: SelectionSetNode | undefined, seen: Set<string>): number => {
      if (!set) return 0;
      let deepest = 0;
      for (const selection of set.selections) {
        if (selection.kind === Kind.FIELD) {
          deepest = Math.max(deepest, selection.selectionSet ? 1 + depthOf(selection.selectionSet, seen) : 1);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          deepest = Math.max(deepest, depthOf(selection.selectionSet, seen));
        } else if (!seen.has(selection.name.value)) {
          const fragment = fragments.get(selection.name.value);
          deepest = Math.max(deepest, depthOf(fragment?.selectionSet, new Set([...seen, selection.name.value])));
        }
      }
      return deepest;
    };
    return {
      OperationDefinition(node) {
        const depth = depthOf(node.selectionSet, new Set());
        if (depth > max) {
          context.reportError(
            new GraphQLError(`query depth ${depth} exceeds the limit of ${max}`, {
              nodes: [node],
              extensions: { code: ANSWERS.BAD_REQUEST.graphql },
            }),
          );
        }
      },
    };
  };
}

/** Base cost of a field that runs git (declared with `@Extensions({ cost })`): a process, not a row. */
export const GIT_FIELD_COST = 50;

/** What an unpaged list (collaborators, webhooks, a tree, attempts) counts as: its usual size, not its worst. */
const UNPAGED_LIST_SIZE = 20;

/**
 * A paged field costs its children times the page it may return (the default page when `limit` is
 * not given); an unpaged list its children times UNPAGED_LIST_SIZE; anything else its children. Each
 * adds its own base cost: 1, or what the field declares (GIT_FIELD_COST for fields that run git).
 */
const pageAwareEstimator: ComplexityEstimator = ({ type, field, args, childComplexity }) => {
  const base = typeof field.extensions?.cost === 'number' ? field.extensions.cost : 1;
  const children = Math.max(childComplexity, 1);
  if (field.args.some((arg) => arg.name === 'limit')) {
    const limit = typeof args.limit === 'number' ? Math.min(Math.max(args.limit, 0), MAX_LIMIT) : DEFAULT_LIMIT;
    return base + limit * children;
  }
  // A connection's `nodes` is the page its paged parent field already counted.
  const isPage = field.name === 'nodes' && 'hasMore' in (type as GraphQLObjectType).getFields();
  if (!isPage && isListType(getNullableType(field.type))) return base + UNPAGED_LIST_SIZE * children;
  return base + childComplexity;
};

/** Estimated cost of an operation, for the cost limit. */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | undefined,
  variables: Record<string, unknown>,
): number {
  return getComplexity({ schema, query: document, operationName, variables, estimators: [pageAwareEstimator] });
}
