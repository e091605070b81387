import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { commitEmail } from '../auth/commit-identity.js';
import { DomainError } from '../errors/domain-error.js';
import type { DomainEvent } from '../events/domain-event.entity.js';
import type { EventListener } from '../events/event-recorder.js';
import type { Principal } from '../principal.js';
import { findRepository } from '../repositories/repository.service.js';
import { stopAutoMerge } from './auto-merge.js';
import { mergePullRequest } from './merge.js';
import type { MergeMethod } from './merge-commits.js';
import type { PullDeps } from './pull-request.deps.js';
import { MergeableState, PullRequest } from './pull-request.entity.js';
import { readPullRequest } from './pull-request.reads.js';
import { RepositoryPasses } from './repository-passes.js';

const AUTO_MERGE_SWEEP_JOB = 'pull-request-auto-merge-sweep';
/** Pull requests with auto-merge tried per pass over a repository. */
const BATCH = 20;
/** What a pull request's state must be for it to merge itself: everything its rule requires holds. */
const READY = new Set([MergeableState.CLEAN, MergeableState.UNSTABLE]);
/** Events after which a pull request may have become ready: its checks, reviews, branches or mergeability moved. */
const WAKING = new Set(['status', 'pull_request', 'pull_request_review', 'push']);

interface Enabled {
  number: number;
  method: MergeMethod;
  user_id: string;
  login: string;
  admin: boolean;
  commit_email: string | null;
}

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
    });
  }

  /** Wakes a repository's pass once a change that may have made a pull request ready commits. */
  wakes(): EventListener {
    const after = (repositoryIds: Iterable<string>) => {
      const ids = [...new Set(repositoryIds)];
      return ids.length ? () => ids.forEach((id) => this.wake(id)) : undefined;
    };
    return {
      inTransaction: async (_em: EntityManager, events: DomainEvent[]) =>
        after(events.filter((event) => WAKING.has(event.type) && event.repositoryId).map((event) => event.repositoryId!)),
      inStatement: {
        sql: (source) =>
          `select distinct e.repository_id from ${source} where e.type in (${[...WAKING].map((type) => `'${type}'`).join(', ')})`,
        done: (rows) => after((rows as Array<{ repository_id: string }>).map((row) => row.repository_id)),
      },
    };
  }

  protected async pass(repositoryId: string): Promise<boolean> {
    const em = this.orm.em.fork();
    const enabled = await em.execute<Enabled[]>(
      `select p.number, p.auto_merge_method as method, u.id as user_id, u.login, u.admin, u.commit_email
         from pull_requests p join users u on u.id = p.auto_merge_enabled_by_id
        where p.repository_id = ? and p.state = 'open' and p.auto_merge_method is not null
        order by p.number limit ${BATCH}`,
      [repositoryId],
    );
    if (!enabled.length) return false;
    const repo = await findRepository(em, repositoryId);
    if (!repo) return false;
    for (const pr of enabled) {
      const view = await readPullRequest(em, repo, pr.number);
      await this.deps.requirements.refine(em, repositoryId, [view]);
      if (!READY.has(view.mergeableState)) continue;
      const merger: Principal = {
        userId: pr.user_id,
        login: pr.login,
        gitEmail: commitEmail({ id: pr.user_id, login: pr.login, commitEmail: pr.commit_email }, this.deps.baseUrl),
        admin: pr.admin,
        tokenId: 'auto-merge',
        tokenExpiresAt: null,
        scopes: new Set(['repo']),
      };
      try {
        const merged = await mergePullRequest(this.deps, this.orm.em.fork(), merger, {
          repositoryId,
          number: pr.number,
          method: pr.method,
          sha: view.head.sha, // what was judged ready is what merges: a push meanwhile is a CONFLICT, and the next pass judges it
        });
        this.deps.log.info({ repositoryId, number: pr.number, sha: merged.sha }, 'pull request merged itself (auto-merge)');
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        if (error.code === 'FORBIDDEN' || error.code === 'NOT_FOUND') {
          await this.cancel(repositoryId, pr, `${pr.login} can no longer merge into this repository`);
        } else {
          this.deps.log.info({ repositoryId, number: pr.number, code: error.code, reason: error.message }, 'auto-merge waits');
        }
      }
    }
    return enabled.length === BATCH;
  }

  /** Auto-merge whose merger lost the right to merge stops, with the event saying why. */
  private async cancel(repositoryId: string, enabled: Enabled, reason: string): Promise<void> {
    const em = this.orm.em.fork();
    await this.deps.events.transaction(em, async (tx) => {
      const repo = await findRepository(tx, repositoryId);
      const pr = await tx.findOne(
        PullRequest,
        { repository: repositoryId, number: enabled.number },
        { populate: ['user', 'mergedBy'], lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!repo || !pr?.autoMergeMethod) return;
      await stopAutoMerge(this.deps, tx, repo, pr, { id: enabled.user_id, login: enabled.login }, reason);
    });
  }
}
