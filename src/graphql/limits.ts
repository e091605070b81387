import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import type { GraphQLError, ValidationContext, ValidationRule } from 'graphql';
import { mutationFieldsLimit } from './mutation-fields.js';
import { limitError } from './request-error.js';

/*
 * What one GraphQL document may ask for. Each check is linear in the document's size, fragments
 * included (each fragment is measured once, however often it is spread), so that any document the
 * body limit lets through is accepted or refused in milliseconds: a document of exponential size
 * once expanded (fragments spreading the next one twice) is refused by its expanded selections,
 * counted without expanding it.
 */

/** Lexical tokens of a document; beyond it the document is refused before it is parsed whole (token-limit.ts). */
export const MAX_TOKENS = 1000;
/** Nesting of fields, fragments followed (a fragment adds no level of its own). */
const MAX_DEPTH = 12;
/**
 * Nesting under `__schema`. The standard introspection query (graphql-js `getIntrospectionQuery`,
 * which GraphQL Code Generator, graphql-inspector and IDEs send) reaches 15: `__schema` › `types` ›
 * `fields` › `args` › `type`, then a type reference of 9 `ofType` levels. Deeper selections there
 * only nest `ofType` further; they are refused. `__type` has no allowance of its own (MAX_DEPTH).
 */
const MAX_INTROSPECTION_DEPTH = 15;
/** Aliased fields (`__typename` aside), counted in the operation as its fragments expand. */
const MAX_ALIASES = 30;
/** Directives (`@include`, `@skip`), counted the same way. */
const MAX_DIRECTIVES = 50;
/** Fields at the root of a mutation: each is its own change, run one after the other. */
const MAX_MUTATION_FIELDS = 10;
/** Selections once fragments are expanded (Apollo's own rule counts them, memoised per fragment). */
export const MAX_SELECTIONS = 5_000;
/** Estimated cost of an operation (cost.ts). */
export const MAX_COST = 20_000;
/** Base cost of a field that runs git (declared with `@Extensions({ cost })`): a process, not a row. */
export const GIT_FIELD_COST = 50;
/** Cost of a field that answers a file's text, up to 1 MiB: a thousand rows' worth (a query holds at most 20 of them). */
export const BLOB_FIELD_COST = 1000;
/**
 * Cost of a text field of up to 64 KiB (the body of an issue, a pull request, a comment, a review):
 * on the scale of BLOB_FIELD_COST, so the text one query may gather stays about 20 MB, whatever
 * aliases and pages it asks for (30 aliases of 100 bodies would be 190 MB).
 */
export const TEXT_FIELD_COST = 64;
/**
 * The usual size (`@Extensions({ listSize })` in the cost) of the short lists of an issue or pull
 * request — its labels, assignees (at most 10), requested reviewers — rather than the 20 an unpaged
 * list counts as: a page of 100 pull requests with them and their bodies stays within the cost limit.
 */
export const SHORT_LIST_SIZE = 5;

/** graphql-armor reports "… limit of N exceeded, found M."; the number found, for our message. */
const found = (error: GraphQLError) => /found (\d+)/.exec(error.message)?.[1] ?? 'more';

/** The armor options every rule shares: report the refusal (as ours) instead of throwing out of validation. */
function reportAs(message: (error: GraphQLError) => string, onReject?: (context: ValidationContext) => void) {
  return {
    propagateOnRejection: false,
    onReject: [
      (context: ValidationContext | null, error: GraphQLError) => {
        if (!context) return;
        onReject?.(context);
        context.reportError(limitError(message(error)));
      },
    ],
  };
}

/**
 * The depth limits: MAX_DEPTH for the operation with `__schema` set aside, then
 * MAX_INTROSPECTION_DEPTH for all of it — whose refusal is only news when the first one passed
 * (an operation already refused for its depth is not refused twice).
 */
function depthLimits(): ValidationRule[] {
  const refused = new WeakSet<ValidationContext>();
  const common = { flattenFragments: true, exposeLimits: true };
  return [
    maxDepthRule({
      ...common,
      n: MAX_DEPTH,
      ignoreIntrospection: true,
      onAccept: [(context) => context && refused.delete(context)],
      ...reportAs(
        (error) => `query depth ${found(error)} exceeds the limit of ${MAX_DEPTH}`,
        (context) => refused.add(context),
      ),
    }),
    maxDepthRule({
      ...common,
      n: MAX_INTROSPECTION_DEPTH,
      ignoreIntrospection: false,
      propagateOnRejection: false,
      onReject: [
        (context, error) => {
          if (context && !refused.has(context)) {
            context.reportError(limitError(`introspection depth ${found(error)} exceeds the limit of ${MAX_INTROSPECTION_DEPTH}`));
          }
        },
      ],
    }),
  ];
}

/** The validation rules of the limits, run after GraphQL's own (see `startApollo`). */
export function validationLimits(): ValidationRule[] {
  return [
    ...depthLimits(),
    maxAliasesRule({
      n: MAX_ALIASES,
      exposeLimits: true,
      ...reportAs((error) => `the operation has ${found(error)} aliases, more than the limit of ${MAX_ALIASES}`),
    }),
    maxDirectivesRule({
      n: MAX_DIRECTIVES,
      exposeLimits: true,
      ...reportAs((error) => `the operation has ${found(error)} directives, more than the limit of ${MAX_DIRECTIVES}`),
    }),
    mutationFieldsLimit(MAX_MUTATION_FIELDS),
  ];
}
