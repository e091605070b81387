import type { EntityManager } from '@mikro-orm/postgresql';
import type { Services } from '../context.js';
import type { Repository } from '../repositories/repository.entity.js';
import { findRepository } from '../repositories/repository.service.js';
import { pushEventDrafts, type GitActor } from './push-events.js';
import { planRefUpdates, type RefUpdate, type ReportedUpdate } from './ref-updates.js';
import { readDiskRefs, readRecordedRefs, saveRecordedRefs, ZERO_SHA, type RefMap } from './refs.js';

export interface RefChangesInput {
  repositoryId: string;
  /** What receive-pack's post-receive hook reported for this push (empty when reconciling). */
  reported: ReportedUpdate[];
  /** The user pushing; null when reconciling. */
  pusher: GitActor | null;
  /**
   * The user of an interrupted push of this repository (from the journal):
   * credited with the changes nobody reported. Without one, the owner is.
   */
  interruptedUserId: string | null;
}

export interface RefChangesOutcome {
  updates: RefUpdate[];
  events: number;
}

/**
 * Brings the recorded state of a repository up to its refs on disk, and
 * records the events of every change, in one transaction: the events, the
 * new `git_refs` rows, `pushed_at`/`empty` (and the default branch of a
 * first push) and the removal of the push journal row commit together or not
 * at all. Called with the repository's push lock held, so the refs on disk
 * cannot move meanwhile. The git reads that build the payloads happen
 * before the transaction opens, keeping it short.
 */
export async function recordRefChanges(services: Services, input: RefChangesInput): Promise<RefChangesOutcome> {
  const em = services.orm.em.fork();
  const dir = services.git.pathFor(input.repositoryId);
  const [repo, disk, recorded] = await Promise.all([
    findRepository(em, input.repositoryId),
    readDiskRefs(dir).catch((error: unknown) => error as Error),
    readRecordedRefs(em, input.repositoryId),
  ]);
  if (!repo) return { updates: [], events: 0 }; // deleted meanwhile: its refs and journal went with it
  if (disk instanceof Error) throw disk;
  const plan = planRefUpdates(recorded, input.reported, disk, input.pusher ? 'push' : 'outside');
  if (!plan.updates.length) {
    await em.execute('delete from git_push_journal where repository_id = ?', [repo.id]);
    return { updates: [], events: 0 };
  }

  const outside = await creditedUser(em, repo, input.interruptedUserId);
  const drafts = await pushEventDrafts(dir, plan, { push: input.pusher ?? outside, outside });
  const wasEmpty = recorded.size === 0 && input.reported.every((update) => update.before === ZERO_SHA);
  const previousDefault = repo.defaultBranch;
  const newDefault = wasEmpty ? defaultBranchAfterFirstPush(repo, disk, plan.updates) : null;

  await services.events.transaction(em, async (tx) => {
    const { events, git } = services;
    if (newDefault) {
      repo.defaultBranch = newDefault; // payloads below show the repository as it now is
      await git.setDefaultBranch(repo.id, newDefault);
    }
    // In order, so the outbox ids keep the order of the changes.
    await events.recordAll(
      tx,
      drafts.map((draft) => ({ type: draft.type, repository: repo, actor: draft.actor, fields: draft.fields })),
    );
    if (newDefault) {
      const actor = input.pusher ?? outside;
      await events.record(tx, {
        type: 'repository',
        action: 'updated',
        repository: repo,
        actor,
        fields: { changes: { default_branch: { from: previousDefault } } },
      });
    }
    const touched = [...new Set(plan.updates.map((update) => update.ref))];
    await saveRecordedRefs(
      tx,
      repo.id,
      touched.map((ref) => ({ ref, sha: disk.get(ref) ?? ZERO_SHA })),
    );
    await tx.execute('update repositories set pushed_at = ?, empty = ?, default_branch = ? where id = ?', [
      new Date(),
      disk.size === 0,
      repo.defaultBranch,
      repo.id,
    ]);
    await tx.execute('delete from git_push_journal where repository_id = ?', [repo.id]);
  });

  const outsideCount = plan.updates.filter((update) => update.cause === 'outside').length;
  const logged = { repositoryId: repo.id, refs: plan.updates.length, events: drafts.length, unreported: outsideCount };
  if (outsideCount) services.log.warn(logged, 'recorded ref changes no push reported');
  else services.log.info(logged, 'push recorded');
  return { updates: plan.updates, events: drafts.length };
}

/** The user credited with unreported changes: the interrupted pusher if known and still there, else the owner. */
async function creditedUser(em: EntityManager, repo: Repository, userId: string | null): Promise<GitActor> {
  if (userId) {
    const rows = await em.execute<GitActor[]>('select id, login, email from users where id = ?', [userId]);
    if (rows[0]) return rows[0];
  }
  return { id: repo.owner.id, login: repo.owner.login, email: repo.owner.email };
}

/**
 * A first push into an empty repository that does not create its default
 * branch makes the first branch it creates the default (as GitHub does), so
 * that clones check something out.
 */
function defaultBranchAfterFirstPush(repo: Repository, disk: RefMap, updates: RefUpdate[]): string | null {
  if (disk.has(`refs/heads/${repo.defaultBranch}`)) return null;
  const created = updates.find((update) => update.ref.startsWith('refs/heads/') && disk.has(update.ref));
  return created ? created.ref.slice('refs/heads/'.length) : null;
}
