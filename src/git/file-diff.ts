import { DomainError } from '../errors/domain-error.js';
import { ZERO_SHA } from '../ids.js';
import { parseHunks, type Hunk } from './diff-positions.js';
import { GitCommandError, GitLimitExceeded, runGit, runGitAccepting, runGitHead } from './run-git.js';

/**
 * The diff of a few files of a pull request at a commit, as its Files view shows them: from the
 * merge base of the base tip and that commit to that commit, renames found (a renamed file is
 * known by its new path). Bounded like the Files view: the listing of changed files is read up to
 * MAX_LISTING_BYTES, blobs over BIG_FILE are binary (never diffed, so a huge file costs no memory),
 * and the patches of the files asked for come from ONE `git diff` of two trees made for them,
 * whatever their number (diff-positions.ts then reads the hunks).
 */

/** A file of the diff: its hunks, or none for a binary file, a submodule or a diff too large (nothing to comment on). */
export interface FileDiff {
  path: string;
  previousPath: string | null;
  binary: boolean;
  /** Its diff is past MAX_FILE_DIFF_LINES or MAX_FILE_DIFF_BYTES: not read, as GitHub does not show such a diff. */
  tooLarge: boolean;
  hunks: Hunk[];
}

const BIG_FILE = '1m';
const RENAME_LIMIT = 1000;
const MAX_LISTING_BYTES = 8 * 1024 * 1024;
const MAX_PATCH_OUTPUT_BYTES = 16 * 1024 * 1024;
/**
 * A file's diff is read into hunks line by line (diff-positions.ts), some 100 bytes of memory a line:
 * one of a million one-character lines, under BIG_FILE, would take 150 MB. Past these (GitHub's own
 * limits for showing a file's diff) a file is too large to comment on; past MAX_DIFF_LINES the files
 * asked for at once are refused together.
 */
export const MAX_FILE_DIFF_LINES = 20_000;
export const MAX_FILE_DIFF_BYTES = 1024 * 1024;
const MAX_DIFF_LINES = 100_000;
const SUBMODULE = '160000';

interface Side {
  mode: string;
  sha: string;
}
interface Listed {
  path: string;
  previousPath: string | null;
  before: Side | null;
  after: Side | null;
}

/** The best common ancestor of two commits, or null for histories that share none. */
async function mergeBase(dir: string, a: string, b: string): Promise<string | null> {
  const { stdout, code } = await runGitAccepting(['merge-base', a, b], [0, 1], { cwd: dir });
  return code === 0 ? stdout.trim() : null;
}

/** Whether `sha` names a commit of the repository. */
async function isCommit(dir: string, sha: string): Promise<boolean> {
  const { code } = await runGitAccepting(['cat-file', '-e', `${sha}^{commit}`], [0, 1, 128], { cwd: dir });
  return code === 0;
}

/**
 * Whether `commit` is one of a pull request's commits: reachable from its head and not from its base
 * tip (the head itself included).
 */
export async function isPullCommit(dir: string, baseTip: string, head: string, commit: string): Promise<boolean> {
  if (!(await isCommit(dir, commit))) return false;
  const ancestor = async (a: string, b: string) =>
    (await runGitAccepting(['merge-base', '--is-ancestor', a, b], [0, 1], { cwd: dir })).code === 0;
  return (commit === head || (await ancestor(commit, head))) && !(await ancestor(commit, baseTip));
}

/**
 * The files named by `paths` (new paths) in the pull request's diff at `commit`; a path the diff does
 * not touch is absent from the answer.
 */
export async function pullFileDiffs(dir: string, baseTip: string, commit: string, paths: string[]): Promise<Map<string, FileDiff>> {
  const from = (await mergeBase(dir, baseTip, commit)) ?? baseTip;
  const listed = await listFiles(dir, from, commit, new Set(paths));
  return diffFiles(dir, listed);
}

/** The entries of `from..to` whose (new) path is wanted, renames found. */
async function listFiles(dir: string, from: string, to: string, wanted: Set<string>): Promise<Listed[]> {
  const args = [
    ...['-c', `diff.renameLimit=${RENAME_LIMIT}`, 'diff', '--no-color', '--no-ext-diff', '--raw', '-z', '--no-abbrev', '-M'],
    ...[from, to],
  ];
  const { stdout, truncated } = await runGitHead(args, MAX_LISTING_BYTES, { cwd: dir });
  const tokens = stdout.toString('utf8').split('\0');
  if (truncated) tokens.pop();
  const found: Listed[] = [];
  for (let i = 0; i < tokens.length && tokens[i]!.startsWith(':'); i++) {
    const [srcMode, dstMode, srcSha, dstSha, status] = tokens[i]!.slice(1).split(' ') as [string, string, string, string, string];
    const moved = status[0] === 'R' || status[0] === 'C';
    const previous = moved ? tokens[++i] : null;
    const path = tokens[++i];
    if (path === undefined || previous === undefined) break; // cut short
    if (!wanted.has(path)) continue;
    found.push({
      path,
      previousPath: status[0] === 'R' ? previous : null,
      before: srcSha === ZERO_SHA ? null : { mode: srcMode, sha: srcSha },
      after: dstSha === ZERO_SHA ? null : { mode: dstMode, sha: dstSha },
    });
  }
  // Past the listing's bound a wanted path may be among the entries not read: say so rather than "not in the diff".
  if (truncated && found.length < wanted.size) throw new GitLimitExceeded(args, 'output', MAX_LISTING_BYTES);
  return found;
}

/** A tree entry of one side under a name of our own: blobs as plain files (a typechange diffs as content). */
const entry = (side: Side, name: string) =>
  side.mode === SUBMODULE ? `${SUBMODULE} commit ${side.sha}\t${name}` : `100644 blob ${side.sha}\t${name}`;

/**
 * The hunks of the listed files, from one diff between two trees made for them: file i is `f<i>` in
 * both, so nothing in a path can make a hunk land on another file.
 */
async function diffFiles(dir: string, files: Listed[]): Promise<Map<string, FileDiff>> {
  const result = new Map<string, FileDiff>();
  if (!files.length) return result;
  const tree = async (side: 'before' | 'after') => {
    const lines = files.flatMap((file, i) => (file[side] ? [`${entry(file[side], `f${i}`)}\n`] : []));
    return (await runGit(['mktree', '--missing'], { cwd: dir, input: lines.join('') })).stdout.trim();
  };
  const [before, after] = await Promise.all([tree('before'), tree('after')]);
  const { stdout } = await runGit(
    ['-c', `core.bigFileThreshold=${BIG_FILE}`, 'diff', '--no-color', '--no-ext-diff', '--no-renames', '-U3', before, after],
    { cwd: dir, maxOutputBytes: MAX_PATCH_OUTPUT_BYTES },
  );
  const blocks = new Map<string, string>();
  for (const block of diffBlocks(stdout)) {
    const name = /^a\/(f\d+) /.exec(block)?.[1];
    if (name) blocks.set(name, blocks.has(name) ? '' : block); // two blocks: a blob became a submodule or back
  }
  let lines = 0;
  files.forEach((file, i) => {
    const block = blocks.get(`f${i}`) ?? '';
    const submodule = file.before?.mode === SUBMODULE || file.after?.mode === SUBMODULE;
    const binary = submodule || /^Binary files /m.test(block);
    const blockLines = binary ? 0 : lineCount(block);
    const tooLarge = blockLines > MAX_FILE_DIFF_LINES || block.length > MAX_FILE_DIFF_BYTES;
    if (!tooLarge) lines += blockLines;
    if (lines > MAX_DIFF_LINES) {
      throw new DomainError(
        'GIT_LIMIT_EXCEEDED',
        `the diffs of these ${files.length} files hold more than ${MAX_DIFF_LINES} lines together: ask for fewer files at once`,
      );
    }
    const hunks = binary || tooLarge ? [] : parseHunks(block);
    result.set(file.path, { path: file.path, previousPath: file.previousPath, binary, tooLarge: !binary && tooLarge, hunks });
  });
  return result;
}

const DIFF_HEADER = 'diff --git ';

/**
 * Each file's part of a `git diff` output (anything before the first, `--numstat` lines say, left out),
 * after its `diff --git `: views of the output, not copies of it.
 */
export function diffBlocks(output: string): string[] {
  const starts: number[] = [];
  const first = output.startsWith(DIFF_HEADER) ? 0 : output.indexOf(`\n${DIFF_HEADER}`);
  for (let at = first; at !== -1; at = output.indexOf(`\n${DIFF_HEADER}`, at + 1)) {
    starts.push(at === 0 && output.startsWith(DIFF_HEADER) ? DIFF_HEADER.length : at + 1 + DIFF_HEADER.length);
  }
  return starts.map((start, i) => output.slice(start, i + 1 < starts.length ? starts[i + 1]! - DIFF_HEADER.length - 1 : undefined));
}

/** Lines of a text, counted without splitting it. */
function lineCount(text: string): number {
  let count = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) count++;
  return count;
}

/** git's words for commits that are gone or never were. */
export function isMissingCommit(error: unknown): boolean {
  return error instanceof GitCommandError && /bad object|bad revision|unknown revision|invalid revision|not a valid/i.test(error.stderr);
}
