import type { MikroORM } from '@mikro-orm/postgresql';
import type { TokenAuthenticator } from '../../auth/authenticate.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import type { RateLimits } from '../../ratelimit/rate-limits.js';
import type { Repositories } from '../../repositories/repository.service.js';
import type { RefTransactions } from '../refs/ref-transaction.js';
import type { GitStorage } from '../storage.js';

/** What git over HTTP works with: the same use cases as the resolvers (repositories, tokens) and git's own parts. */
export interface GitHttp {
  config: Config;
  log: Logger;
  orm: MikroORM;
  git: GitStorage;
  refs: RefTransactions;
  auth: TokenAuthenticator;
  repositories: Repositories;
  /** Anonymous fetches are limited per client address. */
  rateLimits: RateLimits;
}
