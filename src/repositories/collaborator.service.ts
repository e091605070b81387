import { Permission } from '../auth/permissions.js';
import { User } from '../auth/user.entity.js';
import type { RequestContext } from '../context.js';
import { lockRow } from '../db/lock-row.js';
import { actorRef } from '../events/payloads.js';
import { invalid, notFound } from '../errors/domain-error.js';
import { Collaborator } from './collaborator.entity.js';
import type { Repository } from './repository.entity.js';
import { repositoryFor } from './repository.service.js';

export async function listCollaborators(ctx: RequestContext, repo: Repository): Promise<Collaborator[]> {
  return ctx.em.find(Collaborator, { repository: repo }, { populate: ['user'], orderBy: { user: { loginKey: 'asc' } } });
}

async function userByLogin(ctx: RequestContext, login: string): Promise<User> {
  const user = await ctx.em.findOne(User, { loginKey: login.toLowerCase() });
  if (!user) throw notFound('user');
  return user;
}

/**
 * Adds a collaborator or changes their permission (admin on the repository).
 * Only a new membership records `member` `added`.
 */
export async function setCollaborator(
  ctx: RequestContext,
  repositoryId: string,
  login: string,
  permission: Permission,
): Promise<Collaborator> {
  const repo = await repositoryFor(ctx, repositoryId, Permission.ADMIN);
  const user = await userByLogin(ctx, login);
  if (user.id === repo.owner.id) throw invalid('username', 'is_owner', 'the owner already has admin permission');

  const { events } = ctx.services;
  return events.transaction(ctx.em, async (em) => {
    await lockRow(em, 'repositories', repo.id); // concurrent PUTs cannot both insert
    const existing = await em.findOne(Collaborator, { repository: repo, user });
    if (existing) {
      existing.permission = permission;
      return existing;
    }
    const collaborator = em.create(Collaborator, { repository: repo, user, permission });
    await events.record(em, {
      type: 'member',
      action: 'added',
      repository: repo,
      actor: { id: ctx.viewer.userId, login: ctx.viewer.login },
      fields: { member: actorRef(user), permission },
    });
    return collaborator;
  });
}

export async function removeCollaborator(ctx: RequestContext, repositoryId: string, login: string): Promise<boolean> {
  const repo = await repositoryFor(ctx, repositoryId, Permission.ADMIN);
  const user = await userByLogin(ctx, login);
  const { events } = ctx.services;
  return events.transaction(ctx.em, async (em) => {
    await lockRow(em, 'repositories', repo.id); // concurrent PUTs cannot both insert
    const existing = await em.findOne(Collaborator, { repository: repo, user });
    if (!existing) throw notFound('collaborator');
    em.remove(existing);
    await events.record(em, {
      type: 'member',
      action: 'removed',
      repository: repo,
      actor: { id: ctx.viewer.userId, login: ctx.viewer.login },
      fields: { member: actorRef(user), permission: existing.permission },
    });
    return true;
  });
}
