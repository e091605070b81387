import type { EntityManager } from '@mikro-orm/postgresql';
import { holds, Permission } from '../../auth/permissions.js';
import { invalid, Problems } from '../../errors/domain-error.js';
import type { EventRecorder } from '../../events/event-recorder.js';
import type { Principal } from '../../principal.js';
import type { Repositories } from '../../repositories/repository.service.js';
import type { ConversationChange, ConversationRecordsByKind } from '../conversation-changes.js';
import { lockConversation } from '../conversation-lock.js';
import type { ConversationRecord } from '../conversation-record.js';
import { findConversation } from '../conversation-target.js';
import type { AssigneesInput } from './assignee.inputs.js';
import { loginKeys, usersByLogin } from './users-by-login.js';

/** GitHub's bound: an issue or pull request has at most this many assignees. */
const MAX_ASSIGNEES = 10;

interface AssigneeDeps {
  events: EventRecorder;
  repositories: Repositories;
  records: ConversationRecordsByKind;
}

/**
 * Assigning users to issues and pull requests: writers do it (GitHub: push access), and only users
 * who can write the repository can be assigned. One `assigned` or `unassigned` event per user who
 * actually came or went. Both answer the or pull request's record.
 */
export class Assignees {
  constructor(private readonly deps: AssigneeDeps) {}

  async add(em: EntityManager, viewer: Principal, input: AssigneesInput): Promise<ConversationRecord> {
    const repo = await this.deps.repositories.find(em, viewer, input.repositoryId, Permission.WRITE, 'repo');
    const keys = loginKeys(input.assignees, 'assignees', MAX_ASSIGNEES);
    const target = await findConversation(em, repo, input.number);
    await this.deps.events.transaction(em, async (tx) => {
      await lockConversation(tx, target);
      // Decided under the lock: a collaborator removed meanwhile is not assigned.
      const users = await usersByLogin(tx, repo.id, keys);
      const problems = new Problems();
      for (const key of keys) {
        const user = users.get(key);
        if (!user) problems.add('assignees', 'invalid', `no user ${JSON.stringify(key.slice(0, 40))}`);
        else if (!holds(user.permission, Permission.WRITE)) {
          problems.add('assignees', 'invalid', `${user.login} cannot be assigned: assignees need write access to the repository`);
        }
      }
      problems.throwIfAny();
      const added = await tx.execute<Array<{ user_id: string }>>(
        `insert into conversation_assignees (repository_id, number, user_id, created_at)
         select ?, ?, id, now() from jsonb_array_elements_text(?::jsonb) as id
         on conflict do nothing returning user_id`,
        [repo.id, target.number, JSON.stringify([...users.values()].map((user) => user.id))],
      );
      const [{ count }] = (await tx.execute(
        'select count(*)::int as count from conversation_assignees where repository_id = ? and number = ?',
        [repo.id, target.number],
      )) as [{ count: number }];
      if (count > MAX_ASSIGNEES) throw invalid('assignees', 'too_many', `an issue has at most ${MAX_ASSIGNEES} assignees`);
      const ids = new Set(added.map((row) => row.user_id));
      const changes: ConversationChange[] = [...users.values()]
        .filter((user) => ids.has(user.id))
        .map((user) => ({ action: 'assigned', assignee: { id: user.id, login: user.login } }));
      if (changes.length) await this.deps.records[target.kind].changed(tx, target, { id: viewer.userId, login: viewer.login }, changes);
    });
    return this.deps.records[target.kind].read(em, target);
  }

  /** Logins that are not assigned (or not users) change nothing. */
  async remove(em: EntityManager, viewer: Principal, input: AssigneesInput): Promise<ConversationRecord> {
    const repo = await this.deps.repositories.find(em, viewer, input.repositoryId, Permission.WRITE, 'repo');
    const keys = loginKeys(input.assignees, 'assignees', MAX_ASSIGNEES);
    const target = await findConversation(em, repo, input.number);
    const users = await usersByLogin(em, repo.id, keys);
    await this.deps.events.transaction(em, async (tx) => {
      await lockConversation(tx, target);
      const removed = await tx.execute<Array<{ user_id: string }>>(
        `delete from conversation_assignees where repository_id = ? and number = ?
           and user_id in (select jsonb_array_elements_text(?::jsonb)) returning user_id`,
        [repo.id, target.number, JSON.stringify([...users.values()].map((user) => user.id))],
      );
      const ids = new Set(removed.map((row) => row.user_id));
      const changes: ConversationChange[] = [...users.values()]
        .filter((user) => ids.has(user.id))
        .map((user) => ({ action: 'unassigned', assignee: { id: user.id, login: user.login } }));
      if (changes.length) await this.deps.records[target.kind].changed(tx, target, { id: viewer.userId, login: viewer.login }, changes);
    });
    return this.deps.records[target.kind].read(em, target);
  }
}
