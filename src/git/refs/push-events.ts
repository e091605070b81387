import { mapLimit } from '../../concurrency/slots.js';
import type { CommitsNewTo } from './journal.js';
import { NO_PUSH_DETAILS, type PushCertificate, type PushDetails } from './push-details.js';
import { briefMessage, describeCommits, hasNewCommits, isAncestor, newCommits, peelToCommits, type PushCommit } from '../commits.js';
import type { RefUpdate, RefUpdatePlan } from './ref-updates.js';
import { ZERO_SHA } from '../../ids.js';
import { gitBounds } from '../git-bounds.js';
import { GitLimitExceeded } from '../run-git.js';

/** Who a ref change is credited to: `sender` of the events and `pusher` of the push payload. */
export interface GitActor {
  id: string;
  login: string;
  /** `pusher.email`: the user's commit email, public or no-reply (src/auth/commit-identity.ts), never the account email. */
  email: string;
}

/**
 * `push`: ref, before, after, commits and pusher, plus `created`, `deleted`, `forced`, `head_commit`,
 * `total_commits`, and what the push said beside its refs: `push_options` (`git push -o`) and
 * `push_certificate` (`git push --signed`).
 */
interface PushFields {
  ref: string;
  before: string;
  after: string;
  created: boolean;
  deleted: boolean;
  forced: boolean;
  /** null when the commits were not walked (commits_truncated). */
  total_commits: number | null;
  /** The commits were not listed nor counted: past the walks one change may make (Walks). */
  commits_truncated: boolean;
  commits: PushCommit[];
  head_commit: PushCommit | null;
  pusher: { name: string; email: string };
  push_options: string[];
  push_certificate: PushCertificate | null;
}

/** `branch_create`, `branch_delete`, `tag_create`, `tag_delete`. */
interface RefEventFields {
  ref: string;
  ref_name: string;
  ref_type: 'branch' | 'tag';
  sha: string;
}

declare module '../../events/event-map.js' {
  interface PlainEvents {
    push: PushFields;
    branch_create: RefEventFields;
    branch_delete: RefEventFields;
    tag_create: RefEventFields;
    tag_delete: RefEventFields;
  }
}

/** An event to record, in order, for a set of ref updates. */
export type EventDraft =
  | { type: 'push'; actor: GitActor; fields: PushFields }
  | { type: 'branch_create' | 'branch_delete' | 'tag_create' | 'tag_delete'; actor: GitActor; fields: RefEventFields };

/** A ref update with what the events say of it: whether it rewrote history. */
export interface DescribedUpdate extends RefUpdate {
  forced: boolean;
}

type RefKind = { type: 'branch'; name: string } | { type: 'tag'; name: string } | null;

function refKind(ref: string): RefKind {
  if (ref.startsWith('refs/heads/')) return { type: 'branch', name: ref.slice('refs/heads/'.length) };
  if (ref.startsWith('refs/tags/')) return { type: 'tag', name: ref.slice('refs/tags/'.length) };
  return null;
}

/**
 * The events for a set of ref updates, per update in order:
 * `branch_create`/`tag_create` when it creates a branch or tag, `push`, and
 * `branch_delete`/`tag_delete` when it deletes one.
 *
 * `push.commits` are the commits new to the repository (reachable from the
 * new tip and from none of the tips it had before), at most 2048 (the newest,
 * oldest first), `total_commits` counts them all; `head_commit` is the commit
 * the ref now points at (a tag peeled), null for a deletion. With
 * `newTo: 'branch'` each update lists instead the commits new to its own ref,
 * reachable from the new tip and not from the old one: a merge (and its replay
 * from the journal) lists the pull request's commits, already in the
 * repository on the head branch, as well as the merge commit. Without
 * `paths`, commits list no paths (`paths_truncated`): an attempt with them
 * ended its process.
 */
export async function pushEventDrafts(
  dir: string,
  plan: RefUpdatePlan,
  actors: { push: GitActor; outside: GitActor },
  { newTo = 'repository', details = NO_PUSH_DETAILS, paths = true }: { newTo?: CommitsNewTo; details?: PushDetails; paths?: boolean } = {},
): Promise<{ drafts: EventDraft[]; updates: DescribedUpdate[] }> {
  const { updates, previousTips } = plan;
  const peeled = await peelToCommits(
    dir,
    updates.flatMap((update) => [update.before, update.after]).filter((sha) => sha !== ZERO_SHA),
  );

  // Every update is measured against the same previous tips, so updates to one
  // tip share one answer; and when no tip brings anything new (tags of known
  // commits, deletions) no update needs a git process of its own. A push of
  // thousands of refs then costs a handful of processes, not thousands.
  const tips = [...new Set(updates.filter((update) => peeled.get(update.after)).map((update) => update.after))];
  const anyNew = tips.length > 0 && (await hasNewCommits(dir, tips, previousTips));
  const nothingNew = Promise.resolve<Listed>({ total: 0, shas: [] });
  const walks = new Walks(dir);
  const listNew = (tip: string) => (anyNew ? walks.list(tip, previousTips) : nothingNew);
  const listNewToBranch = (update: RefUpdate) =>
    walks.list(update.after, update.before === ZERO_SHA ? previousTips : [update.before], `${update.before} ${update.after}`);

  const perUpdate = await mapLimit(updates, 4, async (update) => {
    const head = update.after === ZERO_SHA ? null : (peeled.get(update.after) ?? null);
    const list = newTo === 'branch' ? listNewToBranch : (u: RefUpdate) => listNew(u.after);
    const [listed, forced] = await Promise.all([head ? list(update) : nothingNew, wasForced(dir, update, peeled)]);
    return { update, head, listed, forced };
  });
  const listings = boundListings(perUpdate.map(({ listed }) => listed.shas));

  // Heads first, then each listing newest first: what the description budgets reach first (commits.ts).
  const described = await describeCommits(
    dir,
    [...perUpdate.flatMap(({ head }) => (head ? [head] : [])), ...listings.flatMap((shas) => [...shas].reverse())],
    { paths },
  );

  const payloads = new PayloadBudget();
  const drafts: EventDraft[] = [];
  for (const [index, { update, head, listed, forced }] of perUpdate.entries()) {
    const shown = payloads.take(
      head ? (described.get(head) ?? null) : null,
      listings[index]!.map((sha) => described.get(sha)).filter((commit): commit is PushCommit => !!commit),
    );
    const actor = actors[update.cause];
    const kind = refKind(update.ref);
    const created = update.before === ZERO_SHA;
    const deleted = update.after === ZERO_SHA;
    const refEvent = (action: 'create' | 'delete', sha: string): EventDraft => ({
      type: `${kind!.type}_${action}` as const,
      actor,
      fields: { ref: update.ref, ref_name: kind!.name, ref_type: kind!.type, sha },
    });

    if (kind && created) drafts.push(refEvent('create', update.after));
    drafts.push({
      type: 'push',
      actor,
      fields: {
        ref: update.ref,
        before: update.before,
        after: update.after,
        created,
        deleted,
        forced,
        total_commits: shown.dropped ? null : listed.total,
        commits_truncated: listed.total === null || shown.dropped,
        commits: shown.commits,
        head_commit: shown.head,
        pusher: { name: actor.login, email: actor.email },
        // Only the refs the push itself moved carry what it said; changes found beside it carry nothing.
        push_options: update.cause === 'push' ? details.options : [],
        push_certificate: update.cause === 'push' ? details.certificate : null,
      },
    });
    if (kind && deleted) drafts.push(refEvent('delete', update.before));
  }
  return { drafts, updates: perUpdate.map(({ update, forced }) => ({ ...update, forced })) };
}

/** The commit descriptions the `push` events of one change hold in all, counted each time an event holds one. */
const PAYLOAD_BUDGET_BYTES = 8 * 1024 * 1024;
/** What a commit's description holds besides its message and paths (ids, names, dates, keys). */
const COMMIT_OVERHEAD_BYTES = 400;

/**
 * The budgets of commits.ts count each commit once, but a commit is held by every event that lists
 * it or has it as `head_commit` — a push of 20,000 refs to one commit with a 64 KiB message would
 * repeat it 20,000 times. Events take their descriptions from this budget in order; past it an
 * event holds brief ones (message cut to its first 1 KiB, no paths: `paths_truncated`), and past
 * it again only its head, brief, and no commits (`commits_truncated`, `total_commits: null`).
 */
class PayloadBudget {
  private left = PAYLOAD_BUDGET_BYTES;

  take(head: PushCommit | null, commits: PushCommit[]): { head: PushCommit | null; commits: PushCommit[]; dropped: boolean } {
    const whole = [head, ...commits].reduce((sum, commit) => sum + (commit ? sizeOf(commit) : 0), 0);
    if (whole <= this.left) {
      this.left -= whole;
      return { head, commits, dropped: false };
    }
    const brief = commits.map(briefly);
    const briefHead = head && briefly(head);
    const briefSize = [briefHead, ...brief].reduce((sum, commit) => sum + (commit ? sizeOf(commit) : 0), 0);
    if (briefSize <= this.left) {
      this.left -= briefSize;
      return { head: briefHead, commits: brief, dropped: false };
    }
    this.left -= briefHead ? sizeOf(briefHead) : 0;
    return { head: briefHead, commits: [], dropped: true };
  }
}

function briefly(commit: PushCommit): PushCommit {
  return {
    ...commit,
    message: briefMessage(commit.message),
    added: [],
    modified: [],
    removed: [],
    paths_truncated: commit.paths_truncated || commit.added.length + commit.modified.length + commit.removed.length > 0,
  };
}

const sizes = new WeakMap<PushCommit, number>();

function sizeOf(commit: PushCommit): number {
  const known = sizes.get(commit);
  if (known !== undefined) return known;
  const paths = [commit.added, commit.modified, commit.removed].reduce(
    (sum, list) => sum + list.reduce((n, path) => n + path.length + 3, 0),
    0,
  );
  const size = COMMIT_OVERHEAD_BYTES + commit.message.length + paths;
  sizes.set(commit, size);
  return size;
}

/** The commits an event lists, and how many there are in all (null: not walked). */
interface Listed {
  total: number | null;
  shas: string[];
}

/** Distinct walks of history one change's events make at most. */
const MAX_WALKS = 100;

/**
 * The walks of history that list and count each event's new commits, one per distinct question
 * (updates to one tip share theirs). A push of thousands of refs to thousands of new tips — an
 * import with its tags, each walking the history new to the repository — would take hours under
 * the repository's lock: past MAX_WALKS walks, or once walking has taken CAIRN_GIT_TIMEOUT in all,
 * or for a walk git cannot make within its bounds, an event lists and counts nothing
 * (`commits_truncated`).
 */
class Walks {
  private readonly started = Date.now();
  private readonly byQuestion = new Map<string, Promise<Listed>>();

  constructor(private readonly dir: string) {}

  list(tip: string, exclude: Iterable<string>, question = tip): Promise<Listed> {
    let listed = this.byQuestion.get(question);
    if (listed) return listed;
    if (this.byQuestion.size >= MAX_WALKS || Date.now() - this.started > gitBounds().timeoutMs) return Promise.resolve(NOT_WALKED);
    listed = newCommits(this.dir, tip, exclude).catch((error: unknown) => {
      if (error instanceof GitLimitExceeded) return NOT_WALKED;
      throw error;
    });
    this.byQuestion.set(question, listed);
    return listed;
  }
}

const NOT_WALKED: Listed = { total: null, shas: [] };

/** Commits the `push` events of one change list together (each at most MAX_PUSH_COMMITS): two full lists. */
const MAX_LISTED_PER_CHANGE = 4096;

/**
 * Each event's list of commits, within MAX_LISTED_PER_CHANGE for the change: the first events keep
 * theirs; the one that reaches the bound keeps its newest commits that fit, and later ones list none
 * (`total_commits` still counts them). A push of many refs to many new commits — an import with its
 * tags, each tag listing the history new to the repository — stays a bounded description.
 */
function boundListings(lists: string[][]): string[][] {
  let room = MAX_LISTED_PER_CHANGE;
  return lists.map((shas) => {
    const kept = shas.slice(Math.max(0, shas.length - room));
    room -= kept.length;
    return kept;
  });
}

/** A push is forced when the old tip is not an ancestor of the new one (history was rewritten). */
async function wasForced(dir: string, update: RefUpdate, peeled: Map<string, string | null>): Promise<boolean> {
  if (update.before === ZERO_SHA || update.after === ZERO_SHA) return false;
  const from = peeled.get(update.before);
  const to = peeled.get(update.after);
  if (!from || !to) return true; // not commits: nothing can fast-forward
  return !(await isAncestor(dir, from, to));
}
