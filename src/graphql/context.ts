import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../principal.js';

/** One request as every resolver sees it: who is calling, an entity manager private to it, its id for logs. */
interface RequestScope {
  viewer: Principal;
  /** A fork of the ORM's entity manager, private to this request. */
  em: EntityManager;
  requestId: string;
}

/**
 * A resolver's context: the request, and the use cases it calls. Each
 * capability's resolvers name the services they use (`ResolverContext<{
 * issues: Issues }>`); the service's one context holds them all, so it fits
 * every resolver without any capability knowing the others.
 */
export type ResolverContext<S> = RequestScope & { services: S };
