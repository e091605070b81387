import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { commitEmail } from '../auth/commit-identity.js';
import { DomainError } from '../errors/domain-error.js';
import type { DomainEvent } from '../events/domain-event.entity.js';
import type { EventListener } from '../events/event-recorder.js';
import type { Principal } from '../principal.js';
import { findRepository } from '../repositories/repository.service.js';
import { stopAutoMerge } from './auto-merge-stop.js';
import { mergePullRequest } from './merge.js';
import type { PullDeps } from './pull-request.deps.js';
import { MergeableState, PullRequest } from './pull-request.entity.js';
import { readAutoMergeable } from './pull-request.reads.js';
import type { PullRequestView } from './pull-request.view.js';
import { RepositoryPasses } from './repository-passes.js';

const AUTO_MERGE_SWEEP_JOB = 'pull-request-auto-merge-sweep';
/** Passes at once in a process: a sweep over a thousand repositories is not a thousand passes at once. */
const PASSES_AT_ONCE = 4;
/** Pull requests with auto-merge read at once in a pass (a page). */
const BATCH = 20;
/** What a pull request's state must be for it to merge itself: everything its rule requires holds. */
const READY = new Set([MergeableState.CLEAN, MergeableState.UNSTABLE]);
/** Events after which a pull request may have become ready: its checks, reviews, branches or mergeability moved. */
const WAKING = new Set(['status', 'pull_request', 'pull_request_review', 'push']);

/**
 * Merges pull requests whose auto-merge is enabled as soon as every requirement of their base
 * branch holds (their `mergeable_state` is clean, or unstable: only optional statuses fail), as
 * the one who enabled it, through the same merge as the API's.
 *
 * What is enabled is stored with the pull request, so nothing is lost with a process: a pass over
 * a repository runs after every committed change that may have made one ready (a status, a review,
 * a push, a mergeability result), and a sweep job (one process at a time, Agenda's lock) every 30 s
 * and at start-up passes over every repository with one enabled. Passes of one repository run one at
 * a time in a process; across processes the merge's compare-and-swap lets only one land, and the
 * others find the pull request merged.
 */
export class AutoMerger extends RepositoryPasses {
  constructor(
    orm: MikroORM,
    private readonly deps: PullDeps,
  ) {
    super(orm, deps.log, {
      job: AUTO_MERGE_SWEEP_JOB,
      failure: 'an auto-merge pass failed; the sweep retries it',
      waiting: `select distinct repository_id from pull_requests where state = 'open' and auto_merge_method is not null`,
      atOnce: PASSES_AT_ONCE,
    });
  }

  /** Wakes a repository's pass once a change that may have made a pull request ready commits. */
  wakes(): EventListener {
    const after = (repositoryIds: Iterable<string>) => {
      const ids = [...new Set(repositoryIds)];
      return ids.length ? () => ids.forEach((id) => this.wake(id)) : undefined;
    };
    const types = [...WAKING].map((type) => `'${type}'`).join(', ');
    // Only repositories with a pull request waiting to merge itself are woken: most changes (a stream
    // of statuses) concern none, and cost one probe of the partial index, in the change's own statement.
    const waiting = (repository: string) =>
      `exists (select 1 from pull_requests p where p.repository_id = ${repository} and p.state = 'open' and p.auto_merge_method is not null)`;
    return {
      inTransaction: async (em: EntityManager, events: DomainEvent[]) => {
        const candidates = [
          ...new Set(events.filter((event) => WAKING.has(event.type) && event.repositoryId).map((event) => event.repositoryId!)),
        ];
        if (!candidates.length) return undefined;
        const rows = await em.execute<Array<{ id: string }>>(
          `select r.id from jsonb_array_elements_text(?::jsonb) as r(id) where ${waiting('r.id')}`,
          [JSON.stringify(candidates)],
        );
        return after(rows.map((row) => row.id));
      },
      inStatement: {
        sql: (source) => `select distinct e.repository_id from ${source} where e.type in (${types}) and ${waiting('e.repository_id')}`,
        done: (rows) => after((rows as Array<{ repository_id: string }>).map((row) => row.repository_id)),
      },
    };
  }

  /**
   * Every pull request of the repository with auto-merge enabled, a page at a time (their views and
   * what their rules say read together); those ready are merged one after another.
   */
  protected async pass(repositoryId: string): Promise<boolean> {
    const em = this.orm.em.fork();
    const repo = await findRepository(em, repositoryId);
    if (!repo) return false;
    for (let after = 0; ;) {
      const views = await readAutoMergeable(em, repo, after, BATCH);
      await this.deps.requirements.refine(em, repositoryId, views);
      for (const view of views) {
        after = view.number;
        if (!view.autoMerge || !READY.has(view.mergeableState)) continue;
        // A rule made after it was enabled that refuses its method: it would fail every pass; it waits instead.
        if (await this.deps.requirements.methodRefusal(em, repositoryId, view.base.ref, view.autoMerge.method)) continue;
        await this.attempt(em, repositoryId, view);
      }
      if (views.length < BATCH) return false;
    }
  }

  /** Merges a ready pull request as the one who enabled auto-merge, by the method they chose. */
  private async attempt(em: EntityManager, repositoryId: string, view: PullRequestView): Promise<void> {
    const { enabledBy, method } = view.autoMerge!;
    const [user] = await em.execute<Array<{ admin: boolean; commit_email: string | null }>>(
      'select admin, commit_email from users where id = ?',
      [enabledBy.id],
    );
    if (!user) return;
    const merger: Principal = {
      userId: enabledBy.id,
      login: enabledBy.login,
      gitEmail: commitEmail({ id: enabledBy.id, login: enabledBy.login, commitEmail: user.commit_email }, this.deps.baseUrl),
      admin: user.admin,
      tokenId: 'auto-merge',
      tokenExpiresAt: null,
      scopes: new Set(['repo']),
    };
    try {
      // What was judged ready is what merges: a push meanwhile is a CONFLICT, and the next pass judges it.
      // As an auto-merge, the rule binds an admin too: it waits for the rule, and the rule decides.
      const merged = await mergePullRequest(
        this.deps,
        this.orm.em.fork(),
        merger,
        { repositoryId, number: view.number, method, sha: view.head.sha },
        { auto: true },
      );
      this.deps.log.info({ repositoryId, number: view.number, sha: merged.sha }, 'pull request merged itself (auto-merge)');
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      if (error.code === 'FORBIDDEN' || error.code === 'NOT_FOUND') {
        await this.cancel(repositoryId, view.number, enabledBy, `${enabledBy.login} can no longer merge into this repository`);
      } else {
        this.deps.log.info({ repositoryId, number: view.number, code: error.code, reason: error.message }, 'auto-merge waits');
      }
    }
  }

  /** Auto-merge whose merger lost the right to merge stops, with the event saying why. */
  private async cancel(repositoryId: string, number: number, enabledBy: { id: string; login: string }, reason: string): Promise<void> {
    const em = this.orm.em.fork();
    await this.deps.events.transaction(em, async (tx) => {
      const repo = await findRepository(tx, repositoryId);
      const pr = await tx.findOne(
        PullRequest,
        { repository: repositoryId, number },
        { populate: ['user', 'mergedBy'], lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!repo || !pr?.autoMergeMethod) return;
      await stopAutoMerge(this.deps, tx, repo, pr, enabledBy, reason);
    });
  }
}
