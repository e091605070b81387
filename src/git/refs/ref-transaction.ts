import fs from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { commitEmail, type IdentityOwner } from '../../auth/commit-identity.js';
import type { EventRecorder } from '../../events/event-recorder.js';
import { conflict, DomainError, notFound } from '../../errors/domain-error.js';
import type { Logger } from '../../logger.js';
import type { Repository } from '../../repositories/repository.entity.js';
import { findRepository } from '../../repositories/repository.service.js';
import { abandonPush, beginPush, interruptedPush, RecordingAttempt, type CommitsNewTo, type InterruptedEntry } from './journal.js';
import { NO_PUSH_DETAILS, readPushDetails, type PushDetails } from './push-details.js';
import { pushEventDrafts, type DescribedUpdate, type EventDraft, type GitActor } from './push-events.js';
import { planRefUpdates, type RefUpdate, type ReportedUpdate } from './ref-updates.js';
import { ZERO_SHA } from '../../ids.js';
import { readDiskRefs, readRecordedRefs, saveRecordedRefs, type RefMap } from './refs.js';
import type { HeldLock, RepositoryLocks } from './repository-lock.js';
import { refsFingerprint } from './refs-fingerprint.js';
import { gitFailedOn } from '../run-git.js';
import { fencedBy } from '../hooks.js';
import type { GitStorage } from '../storage.js';

type Fence = ReturnType<typeof fencedBy>;

/** What listeners are told, inside the recording transaction, when a repository's refs have changed. */
interface RefsChanged {
  repository: Repository;
  /** Every change recorded, in order, with whether it rewrote history. */
  changes: DescribedUpdate[];
  /** The refs on disk now. */
  refs: RefMap;
  /** Who is credited: with the changes this update made (`push`), and with any others found (`outside`). */
  actors: { push: GitActor; outside: GitActor };
  /** What the writer said the change means (a merge names its pull request); kept in the journal until recorded. */
  note: unknown;
}

/**
 * Runs inside the transaction that records a ref change, after its events
 * and the recorded refs are written: what it changes and records commits
 * with them or not at all. Pull requests follow their branches this way.
 */
export type RefListener = (tx: EntityManager, change: RefsChanged) => Promise<void>;

/**
 * Decides whether ref changes may happen at all (branch protection): asked for every change on the
 * one ref path, whoever moves the refs. A change git writes itself (receive-pack) is asked ref by ref
 * from git's `update` hook, through a session open while git runs; a change Cairn decides (a merge)
 * is asked inside its recording transaction, before the swap.
 */
export interface RefPolicy {
  /** What git must run with for its `update` hook to put each ref update to this policy; closed once git is done. */
  open(repositoryId: string, actor: GitActor): Promise<PolicySession>;
  /** Throws to refuse a change Cairn decided; nothing has moved yet. */
  check(tx: EntityManager, change: { repositoryId: string; actor: GitActor; updates: ReportedUpdate[]; note: unknown }): Promise<void>;
}

export interface PolicySession {
  env: Record<string, string>;
  close(): Promise<void>;
}

export interface RefUpdateRequest {
  repositoryId: string;
  /** Who makes the change: the pusher or merger, credited in the events. */
  actor: GitActor;
  /** How long to wait for the repository's push lock (0: only if it is free now). */
  waitMs: number;
  /** Aborting stops the wait for the lock. */
  signal?: AbortSignal;
  /** Kept in the journal with the change and handed to the listeners, also when a crash makes start-up record it. */
  note?: unknown;
  /**
   * What the `push` events of this change list: the commits new to the repository (a push), or those
   * new to the branch each update moves (a merge, whose pull request commits were already pushed).
   */
  commitsNewTo?: CommitsNewTo;
  /**
   * A push: the name of the file in the repository's directory where its options and certificate are
   * written before any ref moves (the pre-receive hook). Kept in the journal, so that whichever
   * process records the push after its own died gives its events those details.
   */
  pushDetails?: string;
  /**
   * Moves refs itself, outside the recording transaction (receive-pack), and returns what git reports
   * it did and what the push said beside it. Told when the repository's lock was taken (epoch ms),
   * and what its git must run with so that its ref changes are fenced by the lock (hooks.ts fencedBy).
   */
  write?: (lock: { lockedAt: number; fence: Fence }) => Promise<{ updates: ReportedUpdate[]; details: PushDetails }>;
  /**
   * Decides, inside the recording transaction, which refs move: it may lock rows and check what it
   * relies on, and throw to change nothing. The updates are then applied by compare-and-swap, all or
   * none; a ref that no longer has its expected value is a CONFLICT and nothing moves.
   */
  decide?: (tx: EntityManager) => Promise<ReportedUpdate[]>;
}

export interface RefUpdateOutcome {
  updates: DescribedUpdate[];
  events: number;
}

/** Everything a recording needs, read from git and the database before the transaction writes. */
interface Prepared {
  repository: Repository;
  disk: RefMap;
  updates: DescribedUpdate[];
  drafts: EventDraft[];
  actors: { push: GitActor; outside: GitActor };
  /** A first push that did not create the default branch makes the first branch it created the default. */
  newDefault: string | null;
  /** The refs storage as it was just before `disk` was read (refs-fingerprint.ts), recorded with them. */
  fingerprint: string | null;
}

/** How far a change got: whether its journal entry is written, and whether refs may have moved. */
interface Progress {
  journaled: boolean;
  stage: 'unmoved' | 'moving' | 'moved';
}

interface RecordInput {
  /** What git reported it did (receive-pack's post-receive lines, or the compare-and-swap applied). */
  reported: ReportedUpdate[];
  /** Who made the reported changes; null when replaying a journal entry or reconciling. */
  actor: GitActor | null;
  /** The user credited with changes nobody reported (a journal entry's); without one, the owner. */
  creditedUserId: string | null;
  /** How to credit refs that differ on disk without a report: `push` while receive-pack ran under the lock (it may have died before reporting). */
  unreported: RefUpdate['cause'];
  note: unknown;
  /** The options and certificate of the push that made the reported changes, for their `push` events. */
  details: PushDetails;
  /** Record the refs without announcing them (a new repository's first commit). */
  silent?: boolean;
  commitsNewTo: CommitsNewTo;
  /**
   * The session holding the repository's lock, through which each attempt to record the changes is
   * counted in the journal (RecordingAttempt); null for a repository being created.
   */
  journal: pg.ClientBase | null;
  /** The token of the repository lock the change is made under (null: a repository being created, unlocked). */
  lease: string | null;
  /** List the paths each commit changed: false once an attempt to describe these changes never finished. */
  paths: boolean;
}

/**
 * The one way a repository's refs move and become events: receive-pack,
 * merges, `auto_init` and start-up reconciliation all go through here.
 *
 * 1. Take the repository's push lock: ref changes of one repository run one
 *    at a time across every process sharing the database.
 * 2. Record whatever an interrupted earlier change left unrecorded (its
 *    journal entry names its user and note).
 * 3. Journal this change, committed before any ref may move.
 * 4. Move the refs: receive-pack does it itself (`write`), Cairn's own
 *    changes by compare-and-swap inside the recording transaction (`decide`).
 * 5. In one transaction: the events of every change (push, branch and tag
 *    events), the recorded refs (`git_refs`), the listeners' own changes and
 *    events (pull requests), `pushed_at`/`empty`, and the removal of the
 *    journal row. A crash anywhere leaves the journal row, and the next change
 *    or start-up records what it finds, with the note.
 */
export class RefTransactions {
  private readonly listeners: RefListener[] = [];
  private readonly committedListeners: Array<(repositoryId: string) => void> = [];
  private policy: RefPolicy | null = null;

  constructor(
    private readonly orm: MikroORM,
    private readonly git: GitStorage,
    private readonly events: EventRecorder,
    private readonly locks: RepositoryLocks,
    private readonly log: Logger,
    /** Cairn's git hooks (hooks.ts): the reference-transaction hook fences ref changes under a lost lock. */
    private readonly hooksDir: string,
  ) {}

  /** A listener run inside every recording transaction that records ref changes. */
  onRefsChanged(listener: RefListener): void {
    this.listeners.push(listener);
  }

  /** The policy every change is put to before its refs move (one: branch protection). */
  policyWith(policy: RefPolicy): void {
    this.policy = policy;
  }

  /** A callback run after a recording transaction with ref changes has committed (maintenance). */
  onCommitted(listener: (repositoryId: string) => void): void {
    this.committedListeners.push(listener);
  }

  /**
   * Steps 1-5 for a change; null when the lock was not obtained in time (or `signal` aborted the
   * wait). If recording fails after refs moved, it is tried once more from the journal before the
   * lock is let go, so a passing failure (a deadlock victim, a dropped connection) leaves nothing
   * behind for later; the change then counts as made.
   */
  async update(request: RefUpdateRequest): Promise<RefUpdateOutcome | null> {
    const { repositoryId, actor } = request;
    const lock = await this.locks.acquire('push', repositoryId, { waitMs: request.waitMs, signal: request.signal });
    if (!lock) return null;
    const lockedAt = Date.now();
    const progress: Progress = { journaled: false, stage: 'unmoved' };
    try {
      // Deleting a repository holds this lock too: once it is ours, the repository stays or is already gone.
      const { rowCount } = await lock.client.query('select 1 from repositories where id = $1', [repositoryId]);
      if (!rowCount) throw notFound('repository');
      await this.replayInterrupted(lock, repositoryId);
      const entry = {
        ...{ userId: actor.id, note: request.note ?? null },
        ...{ commitsNewTo: request.commitsNewTo ?? 'repository', pushDetails: request.pushDetails ?? null },
      };
      await beginPush(lock.client, repositoryId, entry);
      progress.journaled = true;
      const input = {
        ...{ actor, creditedUserId: null, note: entry.note, commitsNewTo: entry.commitsNewTo, details: NO_PUSH_DETAILS },
        ...{ journal: lock.client, lease: lock.token, paths: true },
      };
      if (request.decide)
        return await this.recordDecided(repositoryId, input, request.decide, progress, fencedBy(this.hooksDir, lock.token, 'update-ref'));
      const written = request.write
        ? await this.written(request, lock.token, lockedAt, progress)
        : { updates: [], details: NO_PUSH_DETAILS };
      progress.stage = 'moved';
      return await this.recordMoved(repositoryId, { ...input, reported: written.updates, details: written.details, unreported: 'push' });
    } catch (error) {
      if (progress.stage === 'unmoved') {
        // Refused before any ref could move: this change's journal entry (never an earlier one's) describes nothing.
        if (progress.journaled) await abandonPush(lock.client, repositoryId).catch(() => undefined);
        throw error;
      }
      this.log.warn({ err: error, repositoryId }, 'recording a ref change failed; recording it again from the journal');
      const replayed = await this.replay(lock, repositoryId).catch((again: unknown) => {
        this.log.error({ err: again, repositoryId }, 'recording from the journal failed too; the next change or start-up records it');
        return null;
      });
      if (replayed && progress.stage === 'moved') return replayed;
      throw error;
    } finally {
      await lock.release();
    }
  }

  /** Step 4 by git itself: its ref changes fenced by the lock and each put to the guard by git's `update` hook. */
  private async written(request: RefUpdateRequest, token: string, lockedAt: number, progress: Progress) {
    const session = this.policy ? await this.policy.open(request.repositoryId, request.actor) : null;
    try {
      progress.stage = 'moving';
      const fence = fencedBy(this.hooksDir, token, 'receive-pack');
      return await request.write!({ lockedAt, fence: { config: fence.config, env: { ...fence.env, ...session?.env } } });
    } finally {
      await session?.close();
    }
  }

  /**
   * Start-up reconciliation of one repository: records any difference between
   * its recorded refs and the disk, credited to an interrupted change's user
   * (journal) or the owner. A repository whose lock is held is being changed
   * by another process, which records everything outstanding itself (step 2).
   * Returns whether anything was recorded.
   */
  async reconcile(repositoryId: string): Promise<boolean> {
    const lock = await this.locks.acquire('push', repositoryId, { waitMs: 0 });
    if (!lock) return false;
    try {
      return (await this.replay(lock, repositoryId)).updates.length > 0;
    } finally {
      await lock.release();
    }
  }

  /**
   * Runs `work` while no ref of the repository can change (its push lock held, waiting up to
   * `waitMs`); null when the lock was not obtained. Deleting a repository uses it, so no push writes
   * into a directory being removed and no recording locks rows the deletion is removing.
   */
  async exclusive<T>(repositoryId: string, waitMs: number, work: () => Promise<T>): Promise<T | null> {
    const lock = await this.locks.acquire('push', repositoryId, { waitMs });
    if (!lock) return null;
    try {
      return await work();
    } finally {
      await lock.release();
    }
  }

  /**
   * The first refs of a repository created in the transaction `tx` (`auto_init`), recorded in that
   * transaction without announcing them: `repository` `created` does (as on GitHub). No lock and no
   * journal: nobody can reach the repository before `tx` commits, and if it rolls back, start-up
   * removes the directory as an orphan.
   */
  async initialize(tx: EntityManager, repository: Repository, updates: ReportedUpdate[]): Promise<void> {
    if (!(await this.git.compareAndSwap(repository.id, updates))) throw conflict('the repository changed while it was created');
    const input = {
      reported: updates,
      actor: null,
      creditedUserId: repository.owner.id,
      unreported: 'outside',
      note: null,
      details: NO_PUSH_DETAILS,
      silent: true,
      commitsNewTo: 'repository',
      journal: null,
      lease: null,
      paths: true,
    } as const;
    const prepared = await this.prepare(tx, repository, input, null);
    await this.commit(tx, prepared, input);
  }

  /** Step 2: records what an interrupted change left behind, if its journal entry is there. */
  private async replayInterrupted(lock: HeldLock, repositoryId: string): Promise<void> {
    if (await interruptedPush(lock.client, repositoryId)) await this.replay(lock, repositoryId);
  }

  /**
   * Records every difference between the recorded refs and the disk, as the journal entry (if any)
   * describes it. When git fails on the repository as it is (a commit whose tree is missing, say),
   * trying again fails again, before every later change: the differences are then recorded without
   * events (recordUndescribed), so no repository can be blocked for good. The same when an earlier
   * attempt to describe them began and never finished — it ended its process (journal.ts): the
   * next attempt lists no paths, and the one after records no events, so no restart repeats a
   * description that took the service down.
   */
  private async replay(lock: HeldLock, repositoryId: string): Promise<RefUpdateOutcome> {
    const interrupted = await interruptedPush(lock.client, repositoryId);
    const attempts = interrupted?.describeAttempts ?? 0;
    const detailsFile = interrupted?.pushDetails ? path.join(this.git.pathFor(repositoryId), path.basename(interrupted.pushDetails)) : null;
    const outcome = await this.replayEntry(lock, repositoryId, interrupted, attempts, detailsFile);
    // Recorded (with or without events): the push's details are of no further use.
    if (detailsFile)
      await Promise.all([detailsFile, `${detailsFile}.tmp`].map((file) => fs.rm(file, { force: true }))).catch(() => undefined);
    return outcome;
  }

  private async replayEntry(
    lock: HeldLock,
    repositoryId: string,
    interrupted: InterruptedEntry | null,
    attempts: number,
    detailsFile: string | null,
  ): Promise<RefUpdateOutcome> {
    if (attempts >= 2) {
      const cause = new Error(`${attempts} attempts to describe these ref changes ended their process`);
      return this.recordUndescribed(repositoryId, lock.token, cause);
    }
    if (attempts === 1) {
      this.log.error({ repositoryId }, 'an attempt to describe these ref changes ended its process; recording them without paths');
    }
    // A push that got as far as its pre-receive hook (its details written) stays the push's, with its
    // options and certificate; one that did not had moved nothing, and any difference is someone else's.
    const pushed =
      detailsFile !== null &&
      (await fs.access(detailsFile).then(
        () => true,
        () => false,
      ));
    try {
      return await this.recordMoved(repositoryId, {
        reported: [],
        actor: null,
        creditedUserId: interrupted?.userId ?? null,
        unreported: pushed ? 'push' : 'outside',
        note: interrupted?.note ?? null,
        details: pushed ? await readPushDetails(detailsFile) : NO_PUSH_DETAILS,
        commitsNewTo: interrupted?.commitsNewTo ?? 'repository',
        journal: lock.client,
        lease: lock.token,
        paths: attempts === 0,
      });
    } catch (error) {
      if (!gitFailedOn(error)) throw error; // a passing failure (the database, a killed git): the journal keeps it for later
      return this.recordUndescribed(repositoryId, lock.token, error);
    }
  }

  /**
   * The refs as they are on disk become the recorded refs, with no events (git cannot describe the
   * changes) and no listeners, and the journal entry is dropped; logged as an error naming the refs.
   * When git cannot even list the refs, only the journal entry is dropped: the next change or
   * start-up records what it finds once git can.
   */
  private async recordUndescribed(repositoryId: string, lease: string, cause: unknown): Promise<RefUpdateOutcome> {
    const em = this.orm.em.fork();
    const fingerprint = await refsFingerprint(this.git.pathFor(repositoryId));
    const disk = await readDiskRefs(this.git.pathFor(repositoryId)).catch((error: unknown) => {
      if (gitFailedOn(error)) return null;
      throw error;
    });
    const updates: DescribedUpdate[] = [];
    await em.transactional(async (tx) => {
      await stillHeld(tx, repositoryId, lease);
      if (disk) {
        const recorded = await readRecordedRefs(tx, repositoryId);
        for (const ref of [...new Set([...recorded.keys(), ...disk.keys()])].sort()) {
          const before = recorded.get(ref) ?? ZERO_SHA;
          const after = disk.get(ref) ?? ZERO_SHA;
          if (before !== after) updates.push({ ref, before, after, cause: 'outside', forced: false });
        }
        await saveRecordedRefs(
          tx,
          repositoryId,
          updates.map(({ ref, after }) => ({ ref, sha: after })),
        );
        await tx.execute('update repositories set empty = ?, refs_fingerprint = ? where id = ?', [
          disk.size === 0,
          fingerprint,
          repositoryId,
        ]);
      }
      await tx.execute('delete from git_push_journal where repository_id = ?', [repositoryId]);
    });
    this.log.error(
      { err: cause, repositoryId, refs: updates.map((update) => update.ref), listed: disk !== null },
      'ref changes git cannot describe recorded without events',
    );
    return { updates, events: 0 };
  }

  /** Refs that already moved: read and describe them before the transaction opens, keeping it short. */
  private async recordMoved(repositoryId: string, input: RecordInput): Promise<RefUpdateOutcome> {
    const em = this.orm.em.fork();
    const repository = await findRepository(em, repositoryId);
    if (!repository) return { updates: [], events: 0 }; // deleted meanwhile: its refs and journal went with it
    const attempt = new RecordingAttempt(input.journal, repositoryId);
    try {
      const prepared = await this.prepare(em, repository, input, attempt);
      if (!prepared.updates.length) {
        await em.transactional(async (tx) => {
          await stillHeld(tx, repositoryId, input.lease);
          await tx.execute('delete from git_push_journal where repository_id = ?', [repositoryId]);
          await tx.execute('update repositories set refs_fingerprint = ? where id = ?', [prepared.fingerprint, repositoryId]);
        });
        return { updates: [], events: 0 };
      }
      await this.events.transaction(em, (tx) => this.commit(tx, prepared, input));
      this.committed(prepared, input);
      return { updates: prepared.updates, events: prepared.drafts.length };
    } catch (error) {
      await attempt.failed();
      throw error;
    }
  }

  /**
   * Refs Cairn moves itself: decided and swapped inside the recording transaction, under its row
   * locks. The attempt is counted before the transaction opens: its count is written through the
   * lock's own session, never waited on from inside the transaction.
   */
  private async recordDecided(
    repositoryId: string,
    input: Omit<RecordInput, 'reported' | 'unreported'>,
    decide: (tx: EntityManager) => Promise<ReportedUpdate[]>,
    progress: Progress,
    fence: Fence,
  ): Promise<RefUpdateOutcome> {
    const em = this.orm.em.fork();
    const repository = await findRepository(em, repositoryId);
    if (!repository) throw conflict('the repository was deleted');
    const attempt = new RecordingAttempt(input.journal, repositoryId);
    let prepared: Prepared | null = null;
    let recorded: RecordInput | null = null;
    try {
      await attempt.describing(input.actor?.id ?? repository.owner.id);
      await this.events.transaction(em, async (tx) => {
        const updates = await decide(tx);
        await this.policy?.check(tx, { repositoryId, actor: input.actor!, updates, note: input.note });
        progress.stage = 'moving';
        if (!(await this.git.compareAndSwap(repositoryId, updates, fence))) {
          progress.stage = 'unmoved'; // the swap is all or none, and it was none
          throw conflict('a branch moved while the change was prepared; nothing was written');
        }
        progress.stage = 'moved';
        recorded = { ...input, reported: updates, unreported: 'outside' };
        prepared = await this.prepare(tx, repository, recorded, attempt);
        await this.commit(tx, prepared, recorded);
      });
    } catch (error) {
      await attempt.failed();
      throw error;
    }
    this.committed(prepared!, recorded!);
    return { updates: prepared!.updates, events: prepared!.drafts.length };
  }

  /** Plans the changes (recorded vs reported vs disk) and describes them as events, the attempt counted first. */
  private async prepare(
    em: EntityManager,
    repository: Repository,
    input: RecordInput,
    attempt: RecordingAttempt | null,
  ): Promise<Prepared> {
    const dir = this.git.pathFor(repository.id);
    const fingerprint = await refsFingerprint(dir);
    const [disk, recorded] = await Promise.all([readDiskRefs(dir), readRecordedRefs(em, repository.id)]);
    const plan = planRefUpdates(recorded, input.reported, disk, input.unreported);
    const outside = await creditedUser(em, repository, input.creditedUserId, this.events.baseUrl);
    const actors = { push: input.actor ?? outside, outside };
    if (!plan.updates.length) return { repository, disk, updates: [], drafts: [], actors, newDefault: null, fingerprint };
    await attempt?.describing(actors.push.id);
    const { drafts, updates } = await pushEventDrafts(dir, plan, actors, {
      newTo: input.commitsNewTo,
      details: input.details,
      paths: input.paths,
    });
    const wasEmpty = recorded.size === 0 && input.reported.every((update) => update.before === ZERO_SHA);
    const newDefault = wasEmpty ? defaultBranchAfterFirstPush(repository, disk, plan.updates) : null;
    return { repository, disk, updates, drafts: input.silent ? [] : drafts, actors, newDefault, fingerprint };
  }

  /**
   * Step 5, inside the transaction `tx`. Rows are locked in one order: the recorded refs (by name),
   * then pull requests (by the listeners), then the repository's row; whatever else locks several
   * of them (opening or editing a pull request, deleting the repository) takes them in that order too.
   */
  private async commit(tx: EntityManager, prepared: Prepared, input: RecordInput): Promise<void> {
    await stillHeld(tx, prepared.repository.id, input.lease);
    const { repository, disk, updates, drafts, actors, newDefault, fingerprint } = prepared;
    const previousDefault = repository.defaultBranch;
    if (newDefault) {
      repository.defaultBranch = newDefault; // payloads below show the repository as it now is
      await this.git.setDefaultBranch(repository.id, newDefault);
    }
    // In order, so the outbox ids keep the order of the changes.
    await this.events.recordAll(
      tx,
      drafts.map((draft) => ({ ...draft, repository })),
    );
    if (newDefault) {
      await this.events.record(tx, {
        type: 'repository',
        action: 'updated',
        repository,
        actor: actors.push,
        fields: { changes: { default_branch: { from: previousDefault } } },
      });
    }
    const touched = [...new Set(updates.map((update) => update.ref))];
    await saveRecordedRefs(
      tx,
      repository.id,
      touched.map((ref) => ({ ref, sha: disk.get(ref) ?? ZERO_SHA })),
    );
    const change: RefsChanged = { repository, changes: updates, refs: disk, actors, note: input.note };
    for (const listener of this.listeners) await listener(tx, change);
    // Only a first push sets the default branch here: an admin's concurrent change of it must stand.
    await tx.execute(
      'update repositories set pushed_at = ?, empty = ?, default_branch = coalesce(?, default_branch), refs_fingerprint = ? where id = ?',
      [new Date(), disk.size === 0, newDefault, fingerprint, repository.id],
    );
    await tx.execute('delete from git_push_journal where repository_id = ?', [repository.id]);
  }

  private committed(prepared: Prepared, input: RecordInput): void {
    const { repository, updates, drafts } = prepared;
    const outside = updates.filter((update) => update.cause === 'outside').length;
    const logged = { repositoryId: repository.id, refs: updates.length, events: drafts.length, unreported: outside };
    if (outside && !input.silent) this.log.warn(logged, 'recorded ref changes no push reported');
    else this.log.info(logged, 'ref changes recorded');
    for (const listener of this.committedListeners) listener(repository.id);
  }
}

/**
 * Fences the database as the ref hook fences git: the recording transaction `tx` goes on only while
 * the repository's lock is still held under `lease`, and keeps its lease row from being taken over
 * (a share lock) until it commits. A holder that was paused past its lease and taken over records
 * nothing when it wakes; the one that took the lock has recorded its changes from the journal.
 */
async function stillHeld(tx: EntityManager, repositoryId: string, lease: string | null): Promise<void> {
  if (lease === null) return;
  const rows = await tx.execute(`select 1 from repository_lock_leases where kind = 'push' and repository_id = ? and token = ? for share`, [
    repositoryId,
    lease,
  ]);
  if (!rows.length) {
    throw new DomainError('BUSY', "This change's hold on the repository ran out and another process took it over; nothing was recorded.");
  }
}

/**
 * The user credited with unreported changes: the interrupted pusher if known and still there, else
 * the owner — with the email Cairn shows for users (commit email or no-reply), never the account's.
 */
async function creditedUser(em: EntityManager, repo: Repository, userId: string | null, baseUrl: string): Promise<GitActor> {
  let user: IdentityOwner = repo.owner;
  if (userId && userId !== repo.owner.id) {
    const rows = await em.execute<Array<{ id: string; login: string; commit_email: string | null }>>(
      'select id, login, commit_email from users where id = ?',
      [userId],
    );
    if (rows[0]) user = { id: rows[0].id, login: rows[0].login, commitEmail: rows[0].commit_email };
  }
  return { id: user.id, login: user.login, email: commitEmail(user, baseUrl) };
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
