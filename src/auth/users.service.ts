import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Field, InputType, ObjectType } from 'type-graphql';
import type { RequestContext } from '../context.js';
import { DomainError, conflict, notFound, Problems } from '../errors/domain-error.js';
import { looksLikeId } from '../ids.js';
import { AccessToken } from './access-token.entity.js';
import { grants, isScope, SCOPES, type Scope } from './scopes.js';
import { generateToken, hashToken } from './tokens.js';
import { User } from './user.entity.js';

@InputType()
export class CreateUserInput {
  @Field()
  login!: string;

  @Field()
  email!: string;

  @Field(() => Boolean, { nullable: true, defaultValue: false })
  admin?: boolean | null;
}

@InputType()
export class CreateAccessTokenInput {
  @Field(() => String, { nullable: true, description: "Whose token; defaults to the caller. Another user's needs the admin scope." })
  login?: string | null;

  @Field()
  name!: string;

  @Field(() => [String], { description: `Any of: ${SCOPES.join(', ')}.` })
  scopes!: string[];

  @Field(() => Date, { nullable: true })
  expiresAt?: Date | null;
}

@ObjectType()
export class CreatedAccessToken {
  @Field({ description: 'The secret. Shown only in this response.' })
  token!: string;

  @Field(() => AccessToken)
  accessToken!: AccessToken;
}

/** GitHub-style logins: letters, digits and single inner hyphens, at most 39 characters. */
const LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

function requireSiteAdmin(ctx: RequestContext): void {
  if (!ctx.viewer.admin || !grants(ctx.viewer.scopes, 'admin')) {
    throw new DomainError('FORBIDDEN', 'site administration needs a site admin token with the admin scope');
  }
}

export async function createUser(ctx: RequestContext, input: CreateUserInput): Promise<User> {
  requireSiteAdmin(ctx);
  const problems = new Problems();
  if (!LOGIN.test(input.login)) {
    problems.add('login', 'invalid_format', 'login must be 1-39 letters, digits or inner single hyphens');
  }
  if (!EMAIL.test(input.email)) problems.add('email', 'invalid_format', 'email is not an address');
  problems.throwIfAny();
  try {
    const user = ctx.em.create(User, {
      login: input.login,
      loginKey: input.login.toLowerCase(),
      email: input.email,
      admin: input.admin ?? false,
    });
    await ctx.em.flush();
    return user;
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw conflict('this login is taken');
    throw error;
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
 * A caller may create tokens for themself; a site admin (admin scope) for
 * anyone. A token can only hand out scopes its caller's token holds, so a
 * read-only token cannot mint a read-write one, and only site admins may
 * hold `admin`.
 */
export async function createAccessToken(ctx: RequestContext, input: CreateAccessTokenInput): Promise<CreatedAccessToken> {
  const forOther = input.login != null && input.login.toLowerCase() !== ctx.viewer.login.toLowerCase();
  if (forOther) requireSiteAdmin(ctx);

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
  problems.throwIfAny();

  const scopes = [...new Set(input.scopes)] as Scope[];
  for (const scope of scopes) {
    if (!grants(ctx.viewer.scopes, scope))
      throw new DomainError('FORBIDDEN', `this token cannot grant the ${scope} scope it does not hold`);
  }
  const user = await ctx.em.findOne(User, forOther ? { loginKey: input.login!.toLowerCase() } : { id: ctx.viewer.userId });
  if (!user) throw notFound('user');
  if (scopes.includes('admin') && !user.admin) throw new DomainError('FORBIDDEN', 'only site admins may hold the admin scope');
  return issueToken(ctx.em, user, name, scopes, input.expiresAt ?? null);
}

export async function revokeAccessToken(ctx: RequestContext, id: string): Promise<boolean> {
  const token = looksLikeId('tok', id) ? await ctx.em.findOne(AccessToken, { id }) : null;
  const mayRevoke = token && (token.user.id === ctx.viewer.userId || (ctx.viewer.admin && grants(ctx.viewer.scopes, 'admin')));
  if (!token || !mayRevoke) throw notFound('access token');
  if (!token.revokedAt) {
    token.revokedAt = new Date();
    await ctx.em.flush();
  }
  ctx.services.auth.forget(token.id);
  return true;
}
