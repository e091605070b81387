import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { TokenAuthenticator } from './auth/authenticate.js';
import type { Principal } from './auth/principal.js';
import type { Config } from './config.js';
import type { EventRecorder } from './events/event-recorder.js';
import type { RefTransactions } from './git/ref-transaction.js';
import type { GitStorage } from './git/storage.js';
import type { Logger } from './logger.js';
import type { Mergeability } from './pulls/mergeability.js';
import type { Webhooks } from './webhooks/webhooks.js';

/** The long-lived parts of a running service, built once at start-up. */
export interface Services {
  config: Config;
  log: Logger;
  orm: MikroORM;
  git: GitStorage;
  /** The one way refs move (receive-pack, merges, auto_init, reconciliation). */
  refs: RefTransactions;
  events: EventRecorder;
  auth: TokenAuthenticator;
  webhooks: Webhooks;
  /** Background mergeability checks of pull requests. */
  mergeability: Mergeability;
}

/** Per-request context of every resolver (GraphQL over HTTP and the REST facade alike). */
export interface RequestContext {
  viewer: Principal;
  /** A fork of the ORM's entity manager, private to this request. */
  em: EntityManager;
  services: Services;
  requestId: string;
}
