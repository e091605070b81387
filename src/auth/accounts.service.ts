import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { conflict, DomainError, notFound, Problems } from '../errors/domain-error.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';
import { requireScope } from './permissions.js';
import { looksLikeId } from '../ids.js';
import { grants, isScope, SCOPES, type Principal, type Scope } from '../principal.js';
import { AccessToken } from './access-token.entity.js';
import type { CreateAccessTokenInput, CreatedAccessToken, CreateUserInput, UpdateViewerInput } from './auth.inputs.js';
import type { TokenAuthenticator } from './authenticate.js';
import { boundedExpiry, requireRoomForToken } from './token-limits.js';
import { noreplyEmail } from './commit-identity.js';
import { generateToken, hashToken } from './tokens.js';
import { User } from './user.entity.js';

/** GitHub-style logins: letters, digits and single inner hyphens, at most 39 characters. */
const LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
/**
 * A public commit email is written into commit headers, between `<` and `>`: on top of being an
 * address, it may hold no angle brackets or control characters, which a commit header cannot.
 */
const COMMIT_EMAIL = /^[^\s@<>\x00-\x1f\x7f]{1,64}@[^\s@<>\x00-\x1f\x7f]{1,189}$/;

/** A site admin calling with a token that holds the admin scope. */
const actsAsSiteAdmin = (viewer: Principal) => viewer.admin && grants(viewer.scopes, 'admin');

function requireSiteAdmin(viewer: Principal): void {
  if (!actsAsSiteAdmin(viewer)) {
    throw new DomainError('FORBIDDEN', 'site administration needs a site admin token with the admin scope');
  }
}

/** Creates a token and returns its secret once. Only the hash is stored. */
export async function issueToken(
  em: EntityManager,
  user: User,
  name: string,
  scopes: Scope[],
  expiresAt: Date | null,
  secret = generateToken(),
): Promise<CreatedAccessToken> {
  const accessToken = em.create(AccessToken, { user, name, scopes, tokenHash: hashToken(secret), expiresAt });
  await em.flush();
  return { token: secret, accessToken };
}

/**
 * The accounts use cases (users and their tokens), callable by any transport
 * with the request's entity manager and the acting user. Revocation also
 * reaches the authenticator's cache, so it takes effect at once here.
 */
export class Accounts {
  constructor(
    private readonly authenticator: TokenAuthenticator,
    /** CAIRN_BASE_URL, whose host no-reply addresses name. */
    private readonly baseUrl: string,
  ) {}

  /** The user whose token made the request. */
  viewer(em: EntityManager, viewer: Principal): Promise<User> {
    return em.findOneOrFail(User, { id: viewer.userId });
  }

  /** The address Cairn writes for a user who sets no public commit email. */
  noreplyEmail(user: User): string {
    return noreplyEmail(user, this.baseUrl);
  }

  /**
   * The caller changes their own account: `commitEmail` (a string sets it, null clears it, absent
   * leaves it). Changing how one appears in commits is a write, so it needs the `repo` scope.
   */
  async updateViewer(em: EntityManager, viewer: Principal, input: UpdateViewerInput): Promise<User> {
    requireScope(viewer, 'repo');
    const problems = new Problems();
    if (input.commitEmail != null && !COMMIT_EMAIL.test(input.commitEmail)) {
      problems.add('commitEmail', 'invalid_format', 'commitEmail is not an address (at most 254 characters, no spaces or angle brackets)');
    }
    problems.throwIfAny();
    const user = await em.findOneOrFail(User, { id: viewer.userId });
    if (input.commitEmail !== undefined) user.commitEmail = input.commitEmail;
    await em.flush();
    // The principals of the user's tokens carry the commit email: the next push or merge here uses the new one.
    this.authenticator.forgetUser(user.id);
    return user;
  }

  /** The caller's own tokens, newest first. */
  tokens(em: EntityManager, viewer: Principal): Promise<AccessToken[]> {
    return em.find(AccessToken, { user: viewer.userId }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  }

  /** Every account, oldest first (as GitHub's and Gitea's admin user lists); site admins only. */
  async users(em: EntityManager, viewer: Principal, page: Page): Promise<Connection<User>> {
    requireSiteAdmin(viewer);
    const [users, total] = await em.findAndCount(
      User,
      {},
      { orderBy: { createdAt: 'asc', id: 'asc' }, limit: page.limit, offset: page.offset },
    );
    return connection(users, total, page);
  }

  /**
   * A user's tokens, revoked and expired ones included, newest first: the
   * caller's own by default; another user's (by login) for a site admin only.
   */
  async tokensOf(em: EntityManager, viewer: Principal, login: string | null, page: Page): Promise<Connection<AccessToken>> {
    const forOther = login != null && login.toLowerCase() !== viewer.login.toLowerCase();
    if (forOther) requireSiteAdmin(viewer);
    const user = forOther ? await em.findOne(User, { loginKey: login.toLowerCase() }) : { id: viewer.userId };
    if (!user) throw notFound('user');
    const [tokens, total] = await em.findAndCount(
      AccessToken,
      { user: user.id },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit, offset: page.offset },
    );
    return connection(tokens, total, page);
  }

  async createUser(em: EntityManager, viewer: Principal, input: CreateUserInput): Promise<User> {
    requireSiteAdmin(viewer);
    const problems = new Problems();
    if (!LOGIN.test(input.login)) {
      problems.add('login', 'invalid_format', 'login must be 1-39 letters, digits or inner single hyphens');
    }
    if (!EMAIL.test(input.email)) problems.add('email', 'invalid_format', 'email is not an address');
    problems.throwIfAny();
    try {
      const user = em.create(User, {
        login: input.login,
        loginKey: input.login.toLowerCase(),
        email: input.email,
        admin: input.admin ?? false,
      });
      await em.flush();
      return user;
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw conflict('this login is taken');
      throw error;
    }
  }

  /**
   * A caller may create tokens for themself; a site admin (admin scope) for
   * anyone. A token can only hand out scopes its caller's token holds, so a
   * read-only token cannot mint a read-write one, and only site admins may
   * hold `admin`; nor can it hand out more time than it has left
   * (`boundedExpiry`), for whomever it mints. A user holds at most
   * MAX_ACTIVE_TOKENS working tokens, whoever mints them.
   */
  async createAccessToken(em: EntityManager, viewer: Principal, input: CreateAccessTokenInput): Promise<CreatedAccessToken> {
    const forOther = input.login != null && input.login.toLowerCase() !== viewer.login.toLowerCase();
    if (forOther) requireSiteAdmin(viewer);

    const problems = new Problems();
    const name = input.name.trim();
    if (name === '' || name.length > 100) problems.add('name', 'invalid_length', 'name must be 1 to 100 characters');
    if (input.scopes.length === 0) problems.add('scopes', 'missing', 'at least one scope is needed');
    for (const scope of input.scopes) {
      if (!isScope(scope)) problems.add('scopes', 'unknown_scope', `unknown scope "${scope}" (known: ${SCOPES.join(', ')})`);
    }
    if (input.expiresAt && input.expiresAt.getTime() <= Date.now()) {
      problems.add('expiresAt', 'in_past', 'expiresAt must be in the future');
    }
    const expiresAt = boundedExpiry(viewer, input.expiresAt ?? null, problems);
    problems.throwIfAny();

    const scopes = [...new Set(input.scopes)] as Scope[];
    for (const scope of scopes) {
      if (!grants(viewer.scopes, scope)) throw new DomainError('FORBIDDEN', `this token cannot grant the ${scope} scope it does not hold`);
    }
    return em.transactional(async (tx) => {
      // The user's row lock queues concurrent creations for one user, so the count of their tokens is exact.
      const where = forOther ? { loginKey: input.login!.toLowerCase() } : { id: viewer.userId };
      const user = await tx.findOne(User, where, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!user) throw notFound('user');
      if (scopes.includes('admin') && !user.admin) throw new DomainError('FORBIDDEN', 'only site admins may hold the admin scope');
      await requireRoomForToken(tx, user);
      return issueToken(tx, user, name, scopes, expiresAt);
    });
  }

  async revokeAccessToken(em: EntityManager, viewer: Principal, id: string): Promise<boolean> {
    const token = looksLikeId('tok', id) ? await em.findOne(AccessToken, { id }) : null;
    const mayRevoke = token && (token.user.id === viewer.userId || actsAsSiteAdmin(viewer));
    if (!token || !mayRevoke) throw notFound('access token');
    // Revoking is a write: a read-only token may end only itself, never the owner's other tokens.
    if (token.id !== viewer.tokenId) requireScope(viewer, 'repo');
    if (!token.revokedAt) {
      token.revokedAt = new Date();
      await em.flush();
    }
    this.authenticator.forget(token.id);
    return true;
  }
}
