import { notFound, type Problems } from '../../errors/domain-error.js';
import { limited } from '../../git/concurrency.js';
import {
  anchorOf,
  diffHunkText,
  hunkDigest,
  hunksByDigest,
  relocate,
  type DiffSide,
  type HunksByDigest,
} from '../../git/diff-positions.js';
import {
  isMissingCommit,
  isPullCommit,
  MAX_FILE_DIFF_BYTES,
  MAX_FILE_DIFF_LINES,
  pullFileDiffs,
  type FileDiff,
} from '../../git/file-diff.js';
import type { GitStorage } from '../../git/storage.js';
import type { Principal } from '../../principal.js';

/** A place a client asks to comment on. */
export interface Placement {
  path: string;
  line: number;
  side: DiffSide;
  startLine: number | null;
  startSide: DiffSide | null;
}

/** Where a thread is at a pull request's head: carried there (its lines where its hunk is now), or outdated. */
export interface AtHead {
  /** The head when carried; when outdated, the commit it was last current on. */
  commitId: string;
  line: number | null;
  startLine: number | null;
  outdated: boolean;
}

/**
 * A place found in the diff at `commitId` (a new thread's `original_*`), and where it is at the head
 * the placement was checked against (`headSha`): the same place when `commitId` is that head.
 */
export interface PlacedThread extends Placement {
  commitId: string;
  headSha: string;
  current: AtHead;
  diffHunk: string;
  hunkDigest: string;
  hunkIndex: number;
  hunkStartIndex: number;
}

/** The facts of a pull request its diff is made from. */
export interface PullSides {
  number: number;
  repositoryId: string;
  baseSha: string;
  headSha: string;
}

const FULL_SHA = /^[0-9a-f]{40}$/;
const MAX_PATH = 4096;

/** The placement of a comment's input, defaults applied (RIGHT; a range's start on the same side). */
export function placementOf(input: {
  path?: string | null;
  line?: number | null;
  side?: DiffSide | null;
  startLine?: number | null;
  startSide?: DiffSide | null;
}): Placement {
  const side = input.side ?? 'RIGHT';
  const startLine = input.startLine ?? null;
  return {
    path: input.path ?? '',
    line: input.line ?? 0,
    side,
    startLine,
    startSide: startLine === null ? null : (input.startSide ?? side),
  };
}

/** The shape of a placement: a path, and positive line numbers. `field` names an input field (`comments[0].line`). */
function checkShape(placement: Placement, problems: Problems, field: (name: string) => string): boolean {
  let ok = true;
  const problem = (name: string, code: string, message: string) => {
    problems.add(field(name), code, message);
    ok = false;
  };
  if (!placement.path.trim()) problem('path', 'missing', 'path is required');
  else if (placement.path.length > MAX_PATH || /[\0\n]/.test(placement.path)) problem('path', 'invalid', 'not a valid path');
  if (!Number.isInteger(placement.line) || placement.line < 1) problem('line', 'missing', 'line is a line number (from 1)');
  if (placement.startLine !== null && placement.startLine < 1) problem('startLine', 'invalid', 'startLine is a line number (from 1)');
  return ok;
}

/**
 * Where a thread anchored in a hunk (its digest, its lines' indexes, `near` its last known line) is in
 * the diff of its file at `head`: in the same hunk, carried there; the hunk changed or gone (or the
 * file no longer in the diff), outdated, keeping `lastCurrent`. The rule of every push
 * (carry-threads.ts), and of a comment made on a commit older than the head.
 */
export function atHead(
  anchor: { digest: string; index: number; startIndex: number; side: DiffSide; startSide: DiffSide | null; near: number },
  lastCurrent: string,
  head: string,
  hunks: HunksByDigest | undefined,
): AtHead {
  const found = hunks ? relocate(hunks, anchor) : null;
  return found
    ? { commitId: head, line: found.line, startLine: found.startLine, outdated: false }
    : { commitId: lastCurrent, line: null, startLine: null, outdated: true };
}

/** The hunks of each file of a diff by digest, each file's hashed once, when first asked for. */
export function digestedFiles(files: Map<string, FileDiff>): (path: string) => HunksByDigest | undefined {
  const digested = new Map<string, HunksByDigest>();
  return (path) => {
    const file = files.get(path);
    if (!file) return undefined;
    if (!digested.has(path)) digested.set(path, hunksByDigest(file.hunks));
    return digested.get(path);
  };
}

/**
 * Where each placement is in the pull request's diff at `commitId` (its Files view at that commit),
 * every problem added to `problems` (a path not in the diff, a binary file, a line outside the
 * hunks: `line_not_in_diff`, a bad range), each under its own field. One bounded diff for all the
 * paths, in a git slot within the viewer's share; a second one at the head when `commitId` is an
 * older commit, to say at once whether each thread is current there (`atHead`). Nothing is written.
 */
export async function placeThreads(
  git: GitStorage,
  viewer: Principal,
  pr: PullSides,
  commitId: string,
  placements: Placement[],
  problems: Problems,
  fieldOf: (index: number, name: string) => string,
): Promise<PlacedThread[]> {
  const shaped = placements.map((placement, i) => checkShape(placement, problems, (name) => fieldOf(i, name)));
  const wanted = [...new Set(placements.filter((_, i) => shaped[i]).map((placement) => placement.path))];
  if (!wanted.length) return [];
  const dir = git.pathFor(pr.repositoryId);
  const diffAt = async (commit: string) => {
    try {
      return await limited(viewer.userId, () => pullFileDiffs(dir, pr.baseSha, commit, wanted));
    } catch (error) {
      if (isMissingCommit(error)) throw notFound(`the commits of pull request #${pr.number}`);
      throw error;
    }
  };
  const files = await diffAt(commitId);
  const headFiles = commitId === pr.headSha ? null : digestedFiles(await diffAt(pr.headSha));
  const placed: PlacedThread[] = [];
  placements.forEach((placement, i) => {
    if (!shaped[i]) return;
    const field = (name: string) => fieldOf(i, name);
    const file = files.get(placement.path);
    if (!file) return problems.add(field('path'), 'path_not_in_diff', `${placement.path} is not changed by the pull request`);
    if (file.binary) return problems.add(field('line'), 'line_not_in_diff', `${placement.path} is binary: it has no lines to comment on`);
    if (file.tooLarge) {
      return problems.add(
        field('line'),
        'line_not_in_diff',
        `${placement.path}'s diff is too large to comment on (more than ${MAX_FILE_DIFF_LINES} lines or ${MAX_FILE_DIFF_BYTES / 1024 / 1024} MiB)`,
      );
    }
    const anchor = anchorOf(file.hunks, placement);
    if ('code' in anchor) return problems.add(field(anchor.field), anchor.code, anchor.message);
    const hunk = file.hunks[anchor.hunk]!;
    const digest = hunkDigest(hunk);
    const current = headFiles
      ? atHead(
          {
            digest,
            index: anchor.index,
            startIndex: anchor.startIndex,
            side: placement.side,
            startSide: placement.startSide,
            near: placement.line,
          },
          commitId,
          pr.headSha,
          headFiles(placement.path),
        )
      : { commitId, line: placement.line, startLine: placement.startLine, outdated: false };
    placed.push({
      ...placement,
      commitId,
      headSha: pr.headSha,
      current,
      diffHunk: diffHunkText(hunk, anchor.index),
      hunkDigest: digest,
      hunkIndex: anchor.index,
      hunkStartIndex: anchor.startIndex,
    });
  });
  return placed;
}

/**
 * The commit a standalone comment's lines refer to: `commitId` when it is one of the pull request's
 * commits (reachable from its head, not from its base), else a problem (and null); the head by default.
 */
export async function commentCommit(
  git: GitStorage,
  pr: PullSides,
  commitId: string | null | undefined,
  problems: Problems,
): Promise<string | null> {
  if (commitId == null || commitId.toLowerCase() === pr.headSha) return pr.headSha;
  const sha = commitId.toLowerCase();
  if (!FULL_SHA.test(sha) || !(await isPullCommit(git.pathFor(pr.repositoryId), pr.baseSha, pr.headSha, sha))) {
    problems.add('commitId', 'not_a_pull_request_commit', `${commitId.slice(0, 64)} is not a commit of pull request #${pr.number}`);
    return null;
  }
  return sha;
}
