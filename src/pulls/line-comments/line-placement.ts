import { notFound, type Problems } from '../../errors/domain-error.js';
import { limited } from '../../git/concurrency.js';
import { anchorOf, diffHunkText, hunkDigest, type DiffSide } from '../../git/diff-positions.js';
import { isMissingCommit, isPullCommit, pullFileDiffs } from '../../git/file-diff.js';
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

/** A place found in the diff: what a new thread stores. */
export interface PlacedThread extends Placement {
  commitId: string;
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
 * Where each placement is in the pull request's diff at `commitId` (its Files view at that commit),
 * every problem added to `problems` (a path not in the diff, a binary file, a line outside the
 * hunks: `line_not_in_diff`, a bad range), each under its own field. One bounded diff for all the
 * paths, in a git slot within the viewer's share. Nothing is written.
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
  let files;
  try {
    files = await limited(viewer.userId, () => pullFileDiffs(dir, pr.baseSha, commitId, wanted));
  } catch (error) {
    if (isMissingCommit(error)) throw notFound(`the commits of pull request #${pr.number}`);
    throw error;
  }
  const placed: PlacedThread[] = [];
  placements.forEach((placement, i) => {
    if (!shaped[i]) return;
    const field = (name: string) => fieldOf(i, name);
    const file = files.get(placement.path);
    if (!file) return problems.add(field('path'), 'path_not_in_diff', `${placement.path} is not changed by the pull request`);
    if (file.binary) return problems.add(field('line'), 'line_not_in_diff', `${placement.path} is binary: it has no lines to comment on`);
    const anchor = anchorOf(file.hunks, placement);
    if ('code' in anchor) return problems.add(field(anchor.field), anchor.code, anchor.message);
    const hunk = file.hunks[anchor.hunk]!;
    placed.push({
      ...placement,
      commitId,
      diffHunk: diffHunkText(hunk, anchor.index),
      hunkDigest: hunkDigest(hunk),
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
