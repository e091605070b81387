import type { MikroORM } from '@mikro-orm/postgresql';
import type { QueryResult } from '@mikro-orm/core';
import { FairSlots, mapLimit } from '../concurrency/slots.js';
import type { GitStorage } from '../git/storage.js';
import type { MergeabilityOutcome, Metrics } from '../http/metrics.js';
import type { Logger } from '../logger.js';
import { GitLimitExceeded } from '../git/run-git.js';
import { measurePairs, mergeTree, type MergeTreeResult, type PairMeasure } from './pull-request.git.js';
import { RepositoryPasses } from './repository-passes.js';
import { applyPullRefs, linkHeadRef, pullRef, writeTestMerge, type PullRefChange } from './pull-refs.js';

const MERGEABILITY_SWEEP_JOB = 'pull-request-mergeability-sweep';
/** Open pull requests checked per pass over a repository; a repository with more gets another pass at once. */
const BATCH = 100;
/** git processes of checks at once in this process, shared fairly between the accounts owning the repositories (FairSlots). */
const CONCURRENT_CHECKS = 2;
/** How soon a pass checks again the pull requests whose rows a change held while it stored its results. */
const SKIPPED_RETRY_MS = 1_000;
/** Open pull requests whose stored result is not for their current (base, head) pair. */
const STALE = `state = 'open' and (mergeable_base_sha is distinct from base_sha or mergeable_head_sha is distinct from head_sha)`;

interface StalePullRequest {
  id: string;
  number: number;
  head_ref: string;
  base_sha: string;
  head_sha: string;
  mergeable_head_sha: string | null;
}

/** A check made, to be stored with the rest of its pass. */
interface Checked {
  pr: StalePullRequest;
  result: MergeTreeResult & { commit: string | null };
  commits: number | null;
  /** Whether the head contains the base tip (branch rules with strict status checks: `behind`); null: unknown. */
  baseInHead: boolean | null;
  started: number;
}

/**
 * Computes whether open pull requests merge cleanly, off the request path
 *, with `git merge-tree --write-tree` for the exact (base sha, head sha)
 * pair, and stores the result with that pair. The write is conditional on
 * the pair still being current, so a result computed for a pair a push has
 * since replaced is dropped, never reported.
 *
 * The process that commits a change wakes the check at once (a push, an
 * opening, a base change, a reopening); a sweep job every 30 s and at
 * start-up picks up whatever a crash or another process left stale. Checks
 * of one repository run one pass at a time; a wake during a pass runs
 * another pass after it.
 */
export class Mergeability extends RepositoryPasses {
  private readonly slots = new FairSlots(CONCURRENT_CHECKS);
  private readonly mergeableListeners: Array<(repositoryId: string) => void> = [];

  constructor(
    orm: MikroORM,
    private readonly git: GitStorage,
    log: Logger,
    private readonly metrics: Metrics,
  ) {
    super(orm, log, {
      job: MERGEABILITY_SWEEP_JOB,
      failure: 'mergeability check failed; the sweep retries it',
      waiting: `select distinct repository_id from pull_requests where ${STALE}`,
    });
  }

  /** Told, once stored, that a pass found pull requests of a repository mergeable (auto-merge waits for that). */
  onMergeable(listener: (repositoryId: string) => void): void {
    this.mergeableListeners.push(listener);
  }

  protected pass(repositoryId: string): Promise<boolean> {
    return this.checkRepository(repositoryId);
  }

  private async checkRepository(repositoryId: string): Promise<boolean> {
    const em = this.orm.em.fork();
    const stale = await em.execute<StalePullRequest[]>(
      `select id, number, head_ref, base_sha, head_sha, mergeable_head_sha from pull_requests where repository_id = ? and ${STALE} order by number limit ${BATCH}`,
      [repositoryId],
    );
    if (!stale.length) return false;
    const dir = this.git.pathFor(repositoryId);
    // Slots are shared fairly between accounts: one account's repositories take one slot between them.
    const [owner] = await em.execute<Array<{ owner_id: string }>>('select owner_id from repositories where id = ?', [repositoryId]);
    if (!owner) return false;
    const account = owner.owner_id;
    // Commits are counted with one git process per base (pull requests mostly share one), merges one by one.
    // A count git cannot make within its bounds keeps the counts stored (null: unknown). Counts the
    // push that made the pair already made cost nothing (pull-request.git.ts measurePairs).
    const counts = new Map<string, Promise<Map<string, PairMeasure> | null>>();
    for (const base of new Set(stale.map((pr) => pr.base_sha))) {
      const heads = stale.filter((pr) => pr.base_sha === base).map((pr) => pr.head_sha);
      const counted = this.slots.run(account, () => measurePairs(dir, base, heads)).catch(this.beyondBounds(repositoryId, null));
      counted.catch(() => undefined); // awaited by its checks; one failing first must not leave it unobserved
      counts.set(base, counted);
    }
    this.metrics.mergeabilityQueued.inc(stale.length);
    this.metrics.mergeabilityQueueDepth.inc(stale.length);
    let begun = 0;
    let settled = false;
    const checked: Checked[] = [];
    let failure: unknown = null;
    try {
      await mapLimit(stale, CONCURRENT_CHECKS, async (pr) => {
        begun++;
        if (!settled) this.metrics.mergeabilityQueueDepth.dec();
        const started = performance.now();
        const [result, counted] = await Promise.all([
          this.slots
            .run(account, async () => {
              const merged = await mergeTree(dir, pr.base_sha, pr.head_sha);
              // The test merge for refs/pull/<n>/merge, made from the tree just computed (pull-refs.ts).
              const commit = merged.tree === null ? null : await writeTestMerge(dir, pr.base_sha, pr.head_sha, merged.tree);
              return { ...merged, commit };
            })
            .catch(this.beyondBounds(repositoryId, { tree: null, conflicts: [] as string[], commit: null })),
          counts.get(pr.base_sha)!,
        ]);
        const measure = counted?.get(pr.head_sha) ?? null;
        checked.push({ pr, result, commits: measure?.commits ?? null, baseInHead: measure?.containsBase ?? null, started });
      });
    } catch (error) {
      failure = error; // what was checked is stored all the same; the sweep takes up the rest
    } finally {
      // After a failure the pass is over for the queue, though a check still running may go on to the
      // rest: what it has not started counts as no longer waiting (the sweep takes them up again).
      settled = true;
      if (begun < stale.length) this.metrics.mergeabilityQueueDepth.dec(stale.length - begun);
      if (checked.length < begun) this.metrics.mergeabilityChecks.inc({ outcome: 'failed' }, begun - checked.length);
    }
    const skipped = await this.store(
      repositoryId,
      dir,
      checked.sort((a, b) => a.pr.number - b.pr.number),
    );
    if (failure) throw failure;
    // Rows a change held: checked again a moment later (the change, once committed, may well wake it first).
    if (skipped) setTimeout(() => this.wake(repositoryId), SKIPPED_RETRY_MS).unref();
    return stale.length === BATCH;
  }

  /**
   * Stores the pass's results and writes its pull refs in one transaction: each result only if its
   * pair is still current and its row is not held by a change (true: some were, for a later pass), then
   * every ref change of the pass with one `update-ref --stdin` before the commit — so the refs of a
   * pull request are written in the order of its changes, and a result dropped moves no ref.
   */
  private async store(repositoryId: string, dir: string, checked: Checked[]): Promise<boolean> {
    if (!checked.length) return false;
    const outcomes: MergeabilityOutcome[] = [];
    let skipped = 0;
    try {
      await this.orm.em.fork().transactional(async (tx) => {
        outcomes.length = 0;
        skipped = 0;
        const refs: PullRefChange[] = [];
        // Rows a change holds (a push or merge following its branches, a close) are left for the next
        // pass, not waited for: that change may be waiting for a row this transaction has locked.
        const free = new Set(
          (
            await tx.execute<Array<{ id: string }>>(
              `select id from pull_requests where id in (select jsonb_array_elements_text(?::jsonb)) order by number for update skip locked`,
              [JSON.stringify(checked.map(({ pr }) => pr.id))],
            )
          ).map((row) => row.id),
        );
        for (const { pr, result, commits, baseInHead } of checked) {
          if (!free.has(pr.id)) {
            outcomes.push('superseded');
            skipped++;
            continue;
          }
          const stored = await tx.execute<QueryResult>(
            `update pull_requests
                set mergeable = ?, conflicts = ?::jsonb, mergeable_base_sha = ?, mergeable_head_sha = ?, commits_count = coalesce(?, commits_count),
                    base_in_head = ?
              where id = ? and state = 'open' and base_sha = ? and head_sha = ?`,
            [
              ...[result.tree !== null, JSON.stringify(result.conflicts), pr.base_sha, pr.head_sha, commits, baseInHead],
              ...[pr.id, pr.base_sha, pr.head_sha],
            ],
            'run',
          );
          // Not stored: a push or a close replaced the pair while it was checked (its own check follows).
          outcomes.push(stored.affectedRows === 0 ? 'superseded' : result.tree !== null ? 'mergeable' : 'conflicting');
          if (stored.affectedRows === 0) continue;
          refs.push({ ref: pullRef(pr.number, 'merge'), sha: result.commit });
          // Never checked: opened before pull refs existed (a migration made it stale) — or just
          // opened, its head ref linked already; linking again is harmless and once per opening.
          if (pr.mergeable_head_sha === null) await linkHeadRef(dir, pr.number, pr.head_ref);
        }
        await applyPullRefs(dir, refs);
      });
      if (outcomes.includes('mergeable')) for (const listener of this.mergeableListeners) listener(repositoryId);
    } catch (error) {
      outcomes.fill('failed');
      throw error;
    } finally {
      for (const [i, { started }] of checked.entries()) {
        this.metrics.mergeabilityChecks.inc({ outcome: outcomes[i] ?? 'failed' });
        this.metrics.mergeabilityDuration.observe((performance.now() - started) / 1000);
      }
    }
    return skipped > 0;
  }

  /**
   * A check git cannot make within its bounds (git-bounds.ts) has `fallback` for its answer — a
   * merge: not mergeable, without conflicting paths; a count: none, keeping the one stored — and is
   * stored like any answer: checking the same pair again would meet the same bound, every sweep.
   * Such a pull request is merged outside the service.
   */
  private beyondBounds<T>(repositoryId: string, fallback: T) {
    return (error: unknown): T => {
      if (!(error instanceof GitLimitExceeded)) throw error;
      this.log.warn({ repositoryId, err: error }, 'a mergeability check met a bound of git; stored as not mergeable');
      return fallback;
    };
  }
}
