import type { EntityManager } from '@mikro-orm/postgresql';
import { holds, Permission, userPermission } from '../../auth/permissions.js';
import { invalid, Problems } from '../../errors/domain-error.js';
import type { EventRecorder } from '../../events/event-recorder.js';
import type { Principal } from '../../principal.js';
import type { Repositories } from '../../repositories/repository.service.js';
import type { ConversationChange, ConversationRecordsByKind } from '../conversation-changes.js';
import { lockConversation } from '../conversation-lock.js';
import type { ConversationRecord } from '../conversation-record.js';
import { findConversation } from '../conversation-target.js';
import type { AssigneesInput } from './assignee.inputs.js';

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
    const target = await findConversation(em, repo, input.number);
    const users = await usersByLogin(em, input.assignees);
    const problems = new Problems();
    if (users.size > MAX_ASSIGNEES) problems.add('assignees', 'too_many', `an issue has at most ${MAX_ASSIGNEES} assignees`);
    for (const login of input.assignees) {
      const user = users.get(login.toLowerCase());
      if (!user) problems.add('assignees', 'invalid', `no user ${JSON.stringify(login.slice(0, 40))}`);
      else if (!holds(await userPermission(em, user.id, repo.id), Permission.WRITE)) {
        problems.add('assignees', 'invalid', `${user.login} cannot be assigned: assignees need write access to the repository`);
      }
    }
    problems.throwIfAny();
    await this.deps.events.transaction(em, async (tx) => {
      await lockConversation(tx, target);
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
    const target = await findConversation(em, repo, input.number);
    const users = await usersByLogin(em, input.assignees);
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

/** The users with these logins (any case), by lowercase login, in the order given. */
async function usersByLogin(em: EntityManager, logins: string[]): Promise<Map<string, { id: string; login: string }>> {
  const keys = [...new Set(logins.map((login) => login.toLowerCase()))];
  if (keys.length === 0) return new Map();
  if (keys.length > 100) throw invalid('assignees', 'too_many', `at most ${MAX_ASSIGNEES} assignees`);
  const rows = await em.execute<Array<{ id: string; login: string; login_key: string }>>(
    'select id, login, login_key from users where login_key in (select jsonb_array_elements_text(?::jsonb))',
    [JSON.stringify(keys)],
  );
  const found = new Map(rows.map((row) => [row.login_key, row]));
  return new Map(keys.filter((key) => found.has(key)).map((key) => [key, { id: found.get(key)!.id, login: found.get(key)!.login }]));
}
