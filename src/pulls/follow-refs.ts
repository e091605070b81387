import type { EntityManager } from '@mikro-orm/postgresql';
import { User } from '../auth/user.entity.js';
import type { Changes } from '../events/event-map.js';
import type { EventRecorder } from '../events/event-recorder.js';
import { isAncestor } from '../git/commits.js';
import type { DescribedUpdate, GitActor } from '../git/refs/push-events.js';
import type { RefListener } from '../git/refs/ref-transaction.js';
import type { GitStorage } from '../git/storage.js';
import { countOpen } from '../repositories/numbering.js';
import type { Mergeability } from './mergeability.js';
import { PullRequest, PullRequestState } from './pull-request.entity.js';
import { pullRequestRecord } from './pull-request.payload.js';
import type { PullRecordFacts } from './pull-request.ports.js';
import { countCommits, headsContainedIn } from './pull-request.git.js';
import { applyPullRefs, settledRefs } from './pull-refs.js';
import { CLOSED, stopAutoMerge } from './auto-merge-stop.js';
import { closeIssuesAsCompleted } from '../issues/issue-closing.js';
import { closingReferences, commitMessages } from './closing-keywords.js';

/** What a merge through the API writes into the ref transaction's journal entry. */
export interface MergeNote {
  /**
   * `method`: how it merges (branch protection refuses merge commits where history must stay
   * linear); `auto`: an auto-merge, which the branch rule binds even for an admin.
   */
  merge: { pullRequestId: string; sha: string; method?: string; auto?: boolean };
}

export function mergeNoteOf(note: unknown): MergeNote['merge'] | null {
  const merge = (note as Partial<MergeNote> | null)?.merge;
  return merge && typeof merge.pullRequestId === 'string' && typeof merge.sha === 'string' ? merge : null;
}

const BRANCH = 'refs/heads/';

/**
 * Pull requests follow their branches, inside the transaction that
 * records each ref change — a push, a merge, or what reconciliation finds:
 *
 * - a merge through the API (named by the journal's note) whose sha is now
 *   the base tip: `merged`, by the merger — also when replayed after a crash;
 * - head branch deleted: `closed` — unless its last commit is in base, which
 *   makes it `merged`; base branch deleted: `closed`;
 * - head moved: `head.sha` follows, `updated` with `changes.head` and `forced`
 *   (a pull request this change merges keeps its old base: its commits stay its own);
 * - base moved: `base.sha` follows (no event);
 * - head now reachable from base (a merge made outside the API and pushed):
 *   `merged`, by whoever moved the branch, `merge_commit_sha` the base tip.
 *
 * A pull request merged into the default branch closes the issues its body or its commits' messages
 * name with a closing keyword (closing-keywords.ts), by its merger.
 *
 * Mergeability of every pull request touched is re-checked once the change commits.
 */
export function followRefs(events: EventRecorder, git: GitStorage, mergeability: Mergeability, recordFacts: PullRecordFacts): RefListener {
  return async (tx, change) => {
    const moved = new Map<string, DescribedUpdate>();
    for (const update of change.changes) if (update.ref.startsWith(BRANCH)) moved.set(update.ref.slice(BRANCH.length), update);
    const merge = mergeNoteOf(change.note);
    if (!moved.size && !merge) return;

    const pulls = await lockAffected(tx, change.repository.id, [...moved.keys()], merge?.pullRequestId ?? null);
    if (!pulls.length) return;
    const dir = git.pathFor(change.repository.id);
    const tip = (branch: string) => change.refs.get(`${BRANCH}${branch}`) ?? null;
    const actorOf = (branch: string) => change.actors[moved.get(branch)?.cause ?? 'push'];
    const merged = await headsInBase(
      dir,
      pulls.filter((pr) => pr.id !== merge?.pullRequestId),
      tip,
    );

    const users = new Map<string, Promise<User>>(); // who merged, loaded once per change
    const userOf = (actor: GitActor) => {
      let user = users.get(actor.id);
      if (!user) users.set(actor.id, (user = tx.findOneOrFail(User, { id: actor.id })));
      return user;
    };
    const defaultBranch = change.repository.defaultBranch;
    const deleted = [...moved.keys()].filter((branch) => !tip(branch));
    let facts: StackFacts | undefined; // read at the first pull request whose base was deleted
    const wereOpen = pulls.filter((pr) => pr.state === PullRequestState.OPEN).length;
    const closing: Array<{ numbers: number[]; by: GitActor }> = [];
    const closesIssues = async (pr: PullRequest, by: GitActor) => {
      if (pr.baseRef !== defaultBranch) return;
      closing.push({ numbers: closingReferences([pr.body, ...(await commitMessages(dir, pr.baseSha, pr.headSha))]), by });
    };
    for (const pr of pulls) {
      const record = async (action: 'closed' | 'merged', actor: GitActor) =>
        events.record(tx, {
          type: 'pull_request',
          action,
          repository: change.repository,
          actor,
          fields: { number: pr.number, pull_request: await pullRequestRecord(recordFacts, tx, pr) },
        });
      const now = new Date();
      const baseTip = tip(pr.baseRef);
      const headTip = tip(pr.headRef);

      // A merge through the API: the note decides, whatever happened to the pull request meanwhile
      // (a close that slipped in between the swap and a crash does not undo the merge).
      if (merge?.pullRequestId === pr.id) {
        if (pr.state !== PullRequestState.MERGED && baseTip === merge.sha) {
          await markMerged(pr, await userOf(change.actors.push), merge.sha, now);
          await record('merged', change.actors.push);
          await closesIssues(pr, change.actors.push);
        }
        continue;
      }
      // Its head inside its base merges it when its own commits landed there. A head moved into base
      // (force-pushed onto base's tip, say) whose earlier commits did not land has none left: closed.
      const headMoved = headTip !== null && headTip !== pr.headSha;
      const merging = merged.has(pr.id) && (!headMoved || (await isAncestor(dir, pr.headSha, baseTip!)));
      const emptied = merged.has(pr.id) && !merging;
      if (headTip && headTip !== pr.headSha) {
        // A pull request being merged keeps its old base: its commits are counted against it.
        const against = merging || !baseTip ? pr.baseSha : baseTip;
        const changes = { head: { from_sha: pr.headSha, to_sha: headTip } };
        pr.headSha = headTip;
        pr.baseSha = against;
        pr.commitsCount = await countCommits(dir, against, headTip);
        pr.updatedAt = now;
        await events.record(tx, {
          type: 'pull_request',
          action: 'updated',
          repository: change.repository,
          actor: actorOf(pr.headRef),
          fields: {
            number: pr.number,
            pull_request: await pullRequestRecord(recordFacts, tx, pr),
            changes,
            forced: moved.get(pr.headRef)?.forced ?? false,
          },
        });
      }
      // Its base deleted: a stacked pull request moves onto the default branch, any other closes.
      const retargeted =
        !merging && headTip && !baseTip
          ? await retargetStacked(
              dir,
              pr,
              defaultBranch,
              tip(defaultBranch),
              (facts ??= await stackFacts(tx, change.repository.id, deleted, defaultBranch)),
            )
          : null;
      if (merging) {
        const by = moved.has(pr.baseRef) ? actorOf(pr.baseRef) : actorOf(pr.headRef);
        await markMerged(pr, await userOf(by), baseTip!, now);
        await record('merged', by);
        await closesIssues(pr, by);
      } else if (retargeted) {
        // A stacked pull request whose base was merged and deleted: on the default branch now, as GitHub does.
        await events.record(tx, {
          type: 'pull_request',
          action: 'updated',
          repository: change.repository,
          actor: actorOf(retargeted.base.ref.from),
          fields: { number: pr.number, pull_request: await pullRequestRecord(recordFacts, tx, pr), changes: retargeted },
        });
      } else if (!headTip || !baseTip || emptied) {
        pr.state = PullRequestState.CLOSED;
        pr.closedAt = pr.updatedAt = now;
        const closer = actorOf(headTip && !emptied ? pr.baseRef : pr.headRef); // whoever moved the branch that closed it
        await stopAutoMerge({ events, ...recordFacts }, tx, change.repository, pr, closer, CLOSED);
        await record('closed', closer);
      } else if (baseTip !== pr.baseSha) {
        pr.baseSha = baseTip;
      }
    }
    await tx.flush();
    for (const { numbers, by } of closing) await closeIssuesAsCompleted(events, tx, change.repository, numbers, by);
    await applyPullRefs(dir, settledRefs(pulls.filter((pr) => pr.state !== PullRequestState.OPEN))); // merged or closed now: pull-refs.ts
    events.afterCommit(tx, () => mergeability.wake(change.repository.id));
    const areOpen = pulls.filter((pr) => pr.state === PullRequestState.OPEN).length;
    await countOpen(tx, change.repository.id, 'open_pulls', areOpen - wereOpen); // last: it locks the counters that creation takes too
  };
}

/**
 * The open pull requests whose head or base is among `branches`, and the one a merge names (in any
 * state), under row locks: an edit or review of them waits for this change. Loaded with their users.
 */
async function lockAffected(tx: EntityManager, repositoryId: string, branches: string[], mergedId: string | null): Promise<PullRequest[]> {
  const rows = await tx.execute<{ id: string }[]>(
    `select id from pull_requests
      where repository_id = ?
        and ((state = 'open' and (head_ref in (select jsonb_array_elements_text(?::jsonb)) or base_ref in (select jsonb_array_elements_text(?::jsonb))))
             or id = ?)
      order by number for update`,
    [repositoryId, JSON.stringify(branches), JSON.stringify(branches), mergedId],
  );
  if (!rows.length) return [];
  return tx.find(PullRequest, { id: { $in: rows.map((row) => row.id) } }, { populate: ['user', 'mergedBy'], orderBy: { number: 'asc' } });
}

/**
 * Which of these pull requests now have their head inside their base: one
 * `for-each-ref --merged` per distinct base tip for heads that exist, and an
 * ancestry check of the last known head for heads deleted by this change.
 */
async function headsInBase(dir: string, pulls: PullRequest[], tip: (branch: string) => string | null): Promise<Set<string>> {
  const merged = new Set<string>();
  const byBase = new Map<string, PullRequest[]>();
  for (const pr of pulls) {
    const baseTip = tip(pr.baseRef);
    if (!baseTip) continue;
    if (!tip(pr.headRef)) {
      if (await isAncestor(dir, pr.headSha, baseTip)) merged.add(pr.id);
      continue;
    }
    byBase.set(baseTip, [...(byBase.get(baseTip) ?? []), pr]);
  }
  for (const [baseTip, group] of byBase) {
    // Counted, not listed with for-each-ref --merged: the counts that follow, of the same pairs, are then made (pull-refs.ts).
    const contained = await headsContainedIn(dir, baseTip, new Map(group.map((pr) => [`${BRANCH}${pr.headRef}`, tip(pr.headRef)!])));
    for (const pr of group) if (contained.has(`${BRANCH}${pr.headRef}`)) merged.add(pr.id);
  }
  return merged;
}

/** Merged: `base.sha` stays the base tip before the merge (what the pull request's commits are counted against). */
function markMerged(pr: PullRequest, by: User, mergeCommit: string, now: Date): void {
  pr.state = PullRequestState.MERGED;
  pr.mergedAt = pr.closedAt = pr.updatedAt = now;
  pr.mergedBy = by;
  pr.mergeCommitSha = mergeCommit;
}

/** What a retarget changed, as `changes` of the `updated` event. */
type Retargeted = { base: { ref: { from: string }; sha: { from: string } } } & Changes;

/** What deciding the retargets of one change needs, read once for all its pull requests. */
interface StackFacts {
  /** Deleted branches that were the head of a merged pull request. */
  mergedHeads: Set<string>;
  /** Heads with an open pull request into the default branch (those retargeted here join them). */
  intoDefault: Set<string>;
}

async function stackFacts(tx: EntityManager, repositoryId: string, deleted: string[], defaultBranch: string): Promise<StackFacts> {
  const [row] = await tx.execute<{ merged_heads: string[]; into_default: string[] }[]>(
    `select (select coalesce(jsonb_agg(distinct head_ref), '[]') from pull_requests
              where repository_id = ? and state = 'merged' and head_ref in (select jsonb_array_elements_text(?::jsonb))) as merged_heads,
            (select coalesce(jsonb_agg(distinct head_ref), '[]') from pull_requests
              where repository_id = ? and state = 'open' and base_ref = ?) as into_default`,
    [repositoryId, JSON.stringify(deleted), repositoryId, defaultBranch],
  );
  return { mergedHeads: new Set(row?.merged_heads ?? []), intoDefault: new Set(row?.into_default ?? []) };
}

/**
 * A pull request whose base branch was deleted after that branch's own pull request merged (a
 * stack: B based on A's branch, A merged, A's branch deleted) moves onto the default branch, when
 * that exists, is not its head, still lacks some of its commits, and no other open pull request
 * from the same head goes there (one open pull request per pair). Otherwise it is closed, as any
 * pull request whose base is deleted.
 */
async function retargetStacked(
  dir: string,
  pr: PullRequest,
  defaultBranch: string,
  defaultTip: string | null,
  facts: StackFacts,
): Promise<Retargeted | null> {
  if (!defaultTip || defaultBranch === pr.headRef || defaultBranch === pr.baseRef) return null;
  if (!facts.mergedHeads.has(pr.baseRef) || facts.intoDefault.has(pr.headRef)) return null;
  const commits = await countCommits(dir, defaultTip, pr.headSha);
  if (commits === 0) return null;
  facts.intoDefault.add(pr.headRef);
  const changes = { base: { ref: { from: pr.baseRef }, sha: { from: pr.baseSha } } };
  pr.baseRef = defaultBranch;
  pr.baseSha = defaultTip;
  pr.commitsCount = commits;
  pr.updatedAt = new Date();
  return changes;
}
