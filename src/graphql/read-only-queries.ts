import type { ApolloServerPlugin } from '@apollo/server';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { OperationTypeNode } from 'graphql';
import { markReadOnly } from '../db/read-only.js';

/**
 * The one rule, for every surface that runs GraphQL (Apollo at `/graphql`, the REST facade
 * in-process): a query changes nothing, so the entities it loads need no identity map or change
 * tracking (src/db/read-only.ts). Called once the operation is known and before it runs.
 */
export function loadsForOperation(em: EntityManager, operation: OperationTypeNode): void {
  if (operation === 'query') markReadOnly(em);
}

/** Apollo plugin: applies `loadsForOperation` to the request's entity manager. */
export function readOnlyQueries<C extends { em: EntityManager }>(): ApolloServerPlugin<C> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, contextValue }) {
          if (operation) loadsForOperation(contextValue.em, operation.operation);
        },
      };
    },
  };
}
