import type { EntityManager } from '@mikro-orm/postgresql';
import { authorize, Permission } from '../auth/permissions.js';
import { User } from '../auth/user.entity.js';
import { lockRow } from '../db/lock-row.js';
import { invalid, notFound } from '../errors/domain-error.js';
import type { EventRecorder } from '../events/event-recorder.js';
import { actorRef, type ActorRef } from '../events/payloads.js';
import type { Principal } from '../principal.js';
import type { Repository } from '../repositories/repository.entity.js';
import type { Repositories } from '../repositories/repository.service.js';
import { Collaborator } from './collaborator.entity.js';

/** The events collaborators record. */
declare module '../events/event-map.js' {
  interface ActionEvents {
    member: { added: { member: ActorRef; permission: Permission }; removed: { member: ActorRef; permission: Permission } };
  }
}

/** Collaborators of a repository: users given `read`, `write` or `admin` on it by its admins. */
export class Collaborators {
  constructor(private readonly deps: { events: EventRecorder; repositories: Repositories }) {}

  /** The collaborators of a repository: who may push is for those who may push (write), as on GitHub. */
  async list(em: EntityManager, viewer: Principal | null, repo: Repository): Promise<Collaborator[]> {
    await authorize(em, viewer, repo, Permission.WRITE, null);
    return em.find(Collaborator, { repository: repo }, { populate: ['user'], orderBy: { user: { loginKey: 'asc' } } });
  }

  /**
   * Adds a collaborator or changes their permission (admin on the repository).
   * Only a new membership records `member` `added`.
   */
  async set(em: EntityManager, viewer: Principal, repositoryId: string, login: string, permission: Permission): Promise<Collaborator> {
    const repo = await this.deps.repositories.find(em, viewer, repositoryId, Permission.ADMIN);
    const user = await userByLogin(em, login);
    if (user.id === repo.owner.id) throw invalid('username', 'is_owner', 'the owner already has admin permission');

    const { events } = this.deps;
    return events.transaction(em, async (tx) => {
      await lockRow(tx, 'repositories', repo.id); // concurrent PUTs cannot both insert
      const existing = await tx.findOne(Collaborator, { repository: repo, user });
      if (existing) {
        existing.permission = permission;
        return existing;
      }
      const collaborator = tx.create(Collaborator, { repository: repo, user, permission });
      await events.record(tx, {
        type: 'member',
        action: 'added',
        repository: repo,
        actor: { id: viewer.userId, login: viewer.login },
        fields: { member: actorRef(user), permission },
      });
      return collaborator;
    });
  }

  async remove(em: EntityManager, viewer: Principal, repositoryId: string, login: string): Promise<boolean> {
    const repo = await this.deps.repositories.find(em, viewer, repositoryId, Permission.ADMIN);
    const user = await userByLogin(em, login);
    const { events } = this.deps;
    return events.transaction(em, async (tx) => {
      await lockRow(tx, 'repositories', repo.id); // concurrent PUTs cannot both insert
      const existing = await tx.findOne(Collaborator, { repository: repo, user });
      if (!existing) throw notFound('collaborator');
      tx.remove(existing);
      await events.record(tx, {
        type: 'member',
        action: 'removed',
        repository: repo,
        actor: { id: viewer.userId, login: viewer.login },
        fields: { member: actorRef(user), permission: existing.permission },
      });
      return true;
    });
  }
}

async function userByLogin(em: EntityManager, login: string): Promise<User> {
  const user = await em.findOne(User, { loginKey: login.toLowerCase() });
  if (!user) throw notFound('user');
  return user;
}
