import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { commitSignature } from '../auth/commit-identity.js';
import { authorize, Permission, readableRepositoriesCondition, requireScope } from '../auth/permissions.js';
import { User } from '../auth/user.entity.js';
import { fastRead } from '../db/fast-read.js';
import { mapRowAndRelated } from '../db/read-only.js';
import { lockForUpdate } from '../db/lock-row.js';
import { conflict, invalid, notFound, Problems } from '../errors/domain-error.js';
import type { Changes, NoFields } from '../events/event-map.js';
import type { EventRecorder } from '../events/event-recorder.js';
import { cloneUrl } from '../events/payloads.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';
import { looksLikeId, ZERO_SHA } from '../ids.js';
import type { Principal, Scope } from '../principal.js';
import { checkBranchName, checkDescription, checkRepositoryName } from './names.js';
import { createCounters } from './numbering.js';
import type { CreateRepositoryInput, UpdateRepositoryInput } from './repository.inputs.js';
import { Repository } from './repository.entity.js';
import type { RefGuard, RepositoryStorage } from './repository.ports.js';

/** The events repositories record. */
declare module '../events/event-map.js' {
  interface ActionEvents {
    repository: { created: NoFields; updated: { changes: Changes }; deleted: NoFields };
  }
}

/** How long deleting a repository waits for a push or merge to it to finish. */
const DELETE_WAIT_MS = 30_000;

/**
 * Loads a repository by id with its owner; null when there is none (permission not yet checked).
 * Nearly every request starts here, so it is one prepared statement (with the repository's counters)
 * hydrated into the entities: em.findOne with a populated owner costs ~1.2 ms of ORM work.
 * `untracked`: plain instances, kept out of `em`'s identity map (`mapRow`).
 */
export async function findRepository(em: EntityManager, id: string, untracked = false): Promise<Repository | null> {
  if (!looksLikeId('repo', id)) return null;
  return loadRepository(em, 'r.id = ?', [id], untracked);
}

/**
 * Loads a repository by owner login and name (case-insensitive) with its owner; null when there is none.
 * No permission check: git over HTTP applies its own rules (anonymous reads, 401 challenges).
 */
async function findRepositoryByName(em: EntityManager, owner: string, name: string): Promise<Repository | null> {
  return loadRepository(em, 'u.login_key = ? and r.name_key = ?', [owner.toLowerCase(), name.toLowerCase()]);
}

async function loadRepository(em: EntityManager, condition: string, params: unknown[], untracked = false): Promise<Repository | null> {
  const rows = await fastRead<Record<string, unknown>>(
    em,
    `select r.*, c.open_issues as open_issues_count, c.open_pulls as open_pulls_count, to_jsonb(u) as owner_row
       from repositories r join users u on u.id = r.owner_id join repository_counters c on c.repository_id = r.id
      where ${condition}`,
    params,
    // Only read: mapped into entities of this request's own. Its values are text, numbers, booleans
    // and Dates (shared as they are: nothing here changes a Date in place).
    true,
  );
  const row = rows[0];
  if (!row) return null;
  const [repo, owner] = mapRowAndRelated(em, Repository, User, row, 'owner_row', untracked);
  repo.owner = owner;
  return repo;
}

/**
 * The repositories use cases. Callable by any transport: the caller passes
 * the entity manager of its request and who is acting (null for an anonymous
 * git fetch); the collaborators are given once, at start-up.
 */
export class Repositories {
  constructor(private readonly deps: { events: EventRecorder; storage: RepositoryStorage; refs: RefGuard; baseUrl: string }) {}

  cloneUrl(repo: Repository): string {
    return cloneUrl(this.deps.baseUrl, repo.owner.login, repo.name);
  }

  /**
   * The repository, if the viewer holds `needed` on it (and the token `scope`, when named):
   * NOT_FOUND when it is missing or invisible to them, FORBIDDEN when visible but not allowed.
   */
  async find(
    em: EntityManager,
    viewer: Principal | null,
    id: string,
    needed = Permission.READ,
    scope?: Scope | null,
    seenWith?: readonly Scope[],
  ): Promise<Repository> {
    return authorized(em, viewer, await findRepository(em, id), needed, scope, seenWith);
  }

  /** The same, by owner login and name (case-insensitive): GraphQL's `repositoryByName` and git over HTTP use it. */
  async byName(em: EntityManager, viewer: Principal | null, owner: string, name: string, needed = Permission.READ): Promise<Repository> {
    return authorized(em, viewer, await findRepositoryByName(em, owner, name), needed);
  }

  /**
   * As `find`, but the repository (and its owner) are not tracked by `em`: for a use case that
   * writes only through its own statements, never by flushing or relating entities to it (a plain
   * instance given to `em.create` would be inserted). Such a use case has no use for what tracking
   * costs: an identity-map entry and a change-tracking snapshot per entity.
   */
  async findUntracked(em: EntityManager, viewer: Principal, id: string, needed: Permission, scope: Scope): Promise<Repository> {
    return authorized(em, viewer, await findRepository(em, id, true), needed, scope);
  }

  /** Repositories the viewer can read, newest first, optionally of one owner. */
  async list(em: EntityManager, viewer: Principal, page: Page, ownerLogin?: string | null): Promise<Connection<Repository>> {
    const readable = readableRepositoriesCondition(viewer);
    let where = readable.sql;
    const params = [...readable.params];
    if (ownerLogin) {
      where += ' and r.owner_id = (select id from users where login_key = ?)';
      params.push(ownerLogin.toLowerCase());
    }
    const [{ total }] = await em.execute<{ total: number }[]>(`select count(*)::int as total from repositories r where ${where}`, params);
    const ids = await em.execute<{ id: string }[]>(
      `select r.id from repositories r where ${where} order by r.created_at desc, r.id desc limit ? offset ?`,
      [...params, page.limit, page.offset],
    );
    const repos = ids.length
      ? await em.find(
          Repository,
          { id: { $in: ids.map((row) => row.id) } },
          { populate: ['owner'], orderBy: { createdAt: 'desc', id: 'desc' } },
        )
      : [];
    return connection(repos, total, page);
  }

  async create(em: EntityManager, viewer: Principal, input: CreateRepositoryInput): Promise<Repository> {
    requireScope(viewer, 'repo');
    const defaultBranch = input.defaultBranch ?? 'main';
    const problems = new Problems();
    for (const field of ['private', 'autoInit', 'defaultBranch'] as const) {
      if (input[field] === null) problems.add(field, 'missing', `${field} cannot be null (leave it out for the default)`);
    }
    checkRepositoryName(input.name, problems);
    checkDescription(input.description, problems);
    checkBranchName(defaultBranch, problems);
    problems.throwIfAny();

    const { storage, events, refs } = this.deps;
    let createdOnDisk: string | null = null;
    try {
      return await events.transaction(em, async (tx) => {
        const owner = await tx.findOneOrFail(User, { id: viewer.userId });
        const repo = tx.create(Repository, {
          name: input.name,
          nameKey: input.name.toLowerCase(),
          owner,
          description: input.description ?? null,
          private: input.private ?? false,
          defaultBranch,
        });
        await tx.flush(); // a duplicate name fails here, before anything touches the disk
        await createCounters(tx, repo.id);
        await storage.create(repo.id, defaultBranch);
        createdOnDisk = repo.id;
        if (input.autoInit) {
          const readme = `# ${repo.name}\n${repo.description ? `\n${repo.description}\n` : ''}`;
          // Authored as everything Cairn commits for a user: their public commit email or no-reply address.
          const sha = await storage.writeInitialCommit(repo.id, commitSignature(owner, this.deps.baseUrl), 'Initial commit', [
            { path: 'README.md', content: readme },
          ]);
          // Like GitHub, the initial commit of a new repository sends no push or branch_create:
          // `repository` created says it. The ref transaction writes `pushed_at` and `empty`.
          await refs.initialize(tx, repo, [{ ref: `refs/heads/${defaultBranch}`, before: ZERO_SHA, after: sha }]);
          await tx.refresh(repo);
        }
        await events.record(tx, { type: 'repository', action: 'created', repository: repo, actor: owner, fields: {} });
        return repo;
      });
    } catch (error) {
      if (createdOnDisk) await storage.remove(createdOnDisk).catch(() => undefined);
      throw translateUniqueViolation(error);
    }
  }

  async update(em: EntityManager, viewer: Principal, id: string, input: UpdateRepositoryInput): Promise<Repository> {
    const loaded = await this.find(em, viewer, id, Permission.ADMIN);
    const problems = new Problems();
    for (const field of ['name', 'private', 'defaultBranch'] as const) {
      if (input[field] === null) problems.add(field, 'missing', `${field} cannot be null`);
    }
    if (input.name != null) checkRepositoryName(input.name, problems);
    checkDescription(input.description, problems);
    if (input.defaultBranch != null) checkBranchName(input.defaultBranch, problems);
    problems.throwIfAny();

    const { storage, events } = this.deps;
    if (input.defaultBranch != null && input.defaultBranch !== loaded.defaultBranch && !loaded.empty) {
      if (!(await storage.hasBranch(loaded.id, input.defaultBranch))) {
        throw invalid('defaultBranch', 'unknown_branch', `branch "${input.defaultBranch}" does not exist`);
      }
    }

    try {
      return await events.transaction(em, async (tx) => {
        // What changed is decided on the locked row: concurrent updates each record their own `from`.
        const repo = await lockForUpdate(tx, loaded, 'repository');
        const changes: Record<string, { from: unknown }> = {};
        const apply = <K extends 'name' | 'description' | 'private' | 'defaultBranch'>(field: K, payloadName: string) => {
          const next = input[field];
          if (next === undefined || next === repo[field]) return;
          changes[payloadName] = { from: repo[field] };
          (repo as Record<K, unknown>)[field] = next;
        };
        apply('name', 'name');
        apply('description', 'description');
        apply('private', 'private');
        apply('defaultBranch', 'default_branch');
        if (Object.keys(changes).length === 0) return repo;
        repo.nameKey = repo.name.toLowerCase();
        repo.updatedAt = new Date();
        await tx.flush();
        if (changes.default_branch) await storage.setDefaultBranch(repo.id, repo.defaultBranch);
        const actor = { id: viewer.userId, login: viewer.login };
        await events.record(tx, { type: 'repository', action: 'updated', repository: repo, actor, fields: { changes } });
        return repo;
      });
    } catch (error) {
      throw translateUniqueViolation(error);
    }
  }

  async delete(em: EntityManager, viewer: Principal, id: string): Promise<{ id: string; deleted: true }> {
    const loaded = await this.find(em, viewer, id, Permission.ADMIN);
    const { storage, events, refs } = this.deps;
    // No ref may change meanwhile: a push would write into a directory being removed, and its
    // recording would lock rows this deletion removes.
    const done = await refs.exclusive(loaded.id, DELETE_WAIT_MS, () =>
      events.transaction(em, async (tx) => {
        // The rows the deletion cascades to are locked first, in the order every other transaction
        // locks them (recorded refs, then pull requests), then the repository's own row. Concurrent
        // deletes queue on these locks; all but the first find the repository gone (404, no second event).
        await tx.execute('select 1 from git_refs where repository_id = ? order by name for update', [loaded.id]);
        await tx.execute('select 1 from pull_requests where repository_id = ? order by number for update', [loaded.id]);
        const repo = await lockForUpdate(tx, loaded, 'repository');
        await events.record(tx, {
          type: 'repository',
          action: 'deleted',
          repository: repo,
          actor: { id: viewer.userId, login: viewer.login },
          fields: {},
        });
        tx.remove(repo);
        return true;
      }),
    );
    if (!done) throw conflict('a push or merge to this repository is still running; try again');
    // After the commit: a crash here leaves a directory without a record, which start-up removes.
    await storage.remove(loaded.id);
    return { id: loaded.id, deleted: true };
  }
}

/** `repo` if the viewer holds `needed` on it (authorize): NOT_FOUND when there is none. */
async function authorized(
  em: EntityManager,
  viewer: Principal | null,
  repo: Repository | null,
  needed: Permission,
  scope?: Scope | null,
  seenWith?: readonly Scope[],
): Promise<Repository> {
  if (!repo) throw notFound('repository');
  await authorize(em, viewer, repo, needed, scope, seenWith);
  return repo;
}

function translateUniqueViolation(error: unknown): unknown {
  if (error instanceof UniqueConstraintViolationException) {
    return conflict('a repository with this name already exists for this owner');
  }
  return error;
}
