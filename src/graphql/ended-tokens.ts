import type { GraphQLSchema } from 'graphql';
import { DomainError } from '../errors/domain-error.js';
import { beforeEachMutationField } from './mutation-root.js';

/** Requests (by their context) whose token a field of theirs revoked. */
const ended = new WeakSet<object>();

/** The request of `context` revoked the token it runs as (`revokeAccessToken` of one's own). */
export function tokenEnded(context: object): void {
  ended.add(context);
}

/**
 * A mutation that revokes the caller's own token ends it for the rest of its document too: each
 * root field after it is refused UNAUTHENTICATED, as the next request with that token is, instead
 * of acting for a token that no longer works.
 */
export function refuseAfterTokenEnds(schema: GraphQLSchema): GraphQLSchema {
  return beforeEachMutationField(schema, (context) => {
    if (ended.has(context)) throw new DomainError('UNAUTHENTICATED', 'an earlier field of this mutation revoked its token');
  });
}
