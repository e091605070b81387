import { ZERO_SHA } from '../ids.js';
import { Field, Int, ObjectType, registerEnumType } from 'type-graphql';
import { readCommits } from '../git/browse.js';
import type { Commit } from '../git/git.types.js';
import { gitBounds } from '../git/git-bounds.js';
import { objectSizes } from '../git/object-sizes.js';
import { diffBlocks } from '../git/file-diff.js';
import { ownCopy } from '../git/own-strings.js';
import { GitCommandError, GitLimitExceeded, runGit, runGitAccepting, runGitHead, tryGitHead } from '../git/run-git.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';

/** Read-only views of a pull request's git data: its commits, its files, whether it merges cleanly. */

export enum FileStatus {
  ADDED = 'added',
  MODIFIED = 'modified',
  REMOVED = 'removed',
  RENAMED = 'renamed',
}
registerEnumType(FileStatus, { name: 'PullRequestFileStatus' });

/** Patches larger than this are omitted (as GitHub does), the file is still listed. */
const MAX_PATCH_BYTES = 64 * 1024;
/** Blobs larger than this are binary to these diffs: listed without line counts or patch, and never diffed. */
const BIG_FILE = '1m';
/** Blob content one page of files may diff for its patches; files past it are listed with line counts, without patch. */
const PAGE_PATCH_BUDGET_BYTES = 16 * 1024 * 1024;
/** Files a pull request lists at most, in path order (as GitHub's list stops at 3,000). */
const MAX_PULL_FILES = 3000;
/** The listing of changed files read from git at most: far more than MAX_PULL_FILES entries of any sane paths. */
const MAX_LISTING_BYTES = 8 * 1024 * 1024;
/** Rename candidates git compares at most (`-l`, git's own diff.renameLimit); past it renames are not looked for. */
const RENAME_LIMIT = 1000;

@ObjectType('PullRequestFile', { description: 'A file the pull request changes, against the merge base of base and head.' })
export class PullRequestFile {
  @Field()
  filename!: string;

  @Field(() => String, { nullable: true, description: 'The old path of a renamed file.' })
  previousFilename!: string | null;

  @Field(() => FileStatus)
  status!: FileStatus;

  @Field(() => Int)
  additions!: number;

  @Field(() => Int)
  deletions!: number;

  @Field(() => Int)
  changes!: number;

  @Field(() => String, {
    nullable: true,
    description: `The unified diff hunks; null for binary files and patches over ${MAX_PATCH_BYTES / 1024} KiB.`,
  })
  patch!: string | null;
}

/**
 * What is known of (base, head) pairs already measured, by repository directory, base and head:
 * a measure is a fact about two commits, which never change, so it is never stale. A push's ref
 * change counts its pull requests' commits (follow-refs.ts) and the mergeability check that
 * follows in the same process needs the same numbers: it finds them here instead of running git
 * again (see pull-refs.ts for why that process matters). Bounded: the oldest go first.
 */
export interface PairMeasure {
  /** Commits on head that base lacks. */
  commits: number;
  /** Whether head contains base's tip (is up to date with it). */
  containsBase: boolean;
}
const knownPairs = new Map<string, PairMeasure>();
const KNOWN_PAIRS = 10_000;
const pairKey = (dir: string, base: string, head: string) => `${dir}\0${base}\0${head}`;

function remember(dir: string, base: string, head: string, measure: PairMeasure): void {
  const key = pairKey(dir, base, head);
  knownPairs.delete(key);
  knownPairs.set(key, measure);
  if (knownPairs.size > KNOWN_PAIRS) knownPairs.delete(knownPairs.keys().next().value!);
}

/** Commits on `head` that `base` lacks (`base..head`). */
export async function countCommits(dir: string, base: string, head: string): Promise<number> {
  return (await measurePairs(dir, base, [head])).get(head)!.commits;
}

/**
 * Many heads measured against one base with one git process: the commits reachable from any head
 * and not from base (with their parents), then, per head, those reachable from it within that set
 * — how many (the commits base lacks), and whether one of them has base's tip for a parent (the
 * head contains base: a head that contains base has such a commit on its way down to it). Pairs
 * measured before cost nothing; when all were, no git runs.
 */
export async function measurePairs(dir: string, base: string, heads: string[]): Promise<Map<string, PairMeasure>> {
  const measured = new Map<string, PairMeasure>();
  const unique: string[] = [];
  for (const head of new Set(heads)) {
    const known = knownPairs.get(pairKey(dir, base, head));
    if (known) measured.set(head, known);
    else unique.push(head);
  }
  if (!unique.length) return measured;
  const { stdout } = await runGit(['rev-list', '--parents', '--stdin'], { cwd: dir, input: [...unique, `^${base}`].join('\n') + '\n' });
  const parents = new Map<string, string[]>();
  for (const line of stdout.split('\n')) {
    if (!line) continue;
    const [sha, ...rest] = line.split(' ');
    parents.set(sha!, rest);
  }
  for (const head of unique) {
    const seen = new Set<string>();
    let containsBase = head === base;
    const stack = parents.has(head) ? [head] : [];
    while (stack.length) {
      const sha = stack.pop()!;
      if (seen.has(sha)) continue;
      seen.add(sha);
      for (const parent of parents.get(sha) ?? []) {
        if (parent === base) containsBase = true;
        if (parents.has(parent)) stack.push(parent);
      }
    }
    const measure = { commits: seen.size, containsBase };
    measured.set(head, measure);
    remember(dir, base, head, measure);
  }
  return measured;
}

/**
 * Which of `heads` are contained in `base` (nothing to merge): with the counts of measurePairs
 * (a head with no commit base lacks is in it; measurePairs), which the counts of the same pairs that follow —
 * the pushed pull requests' own, the mergeability check's — then find made. A count past git's
 * bounds (a huge divergence) answers with `for-each-ref --merged` instead, which lists no commits.
 */
export async function headsContainedIn(dir: string, base: string, heads: Map<string, string>): Promise<Set<string>> {
  try {
    const measured = await measurePairs(dir, base, [...heads.values()]);
    return new Set([...heads].filter(([, sha]) => measured.get(sha)?.commits === 0).map(([ref]) => ref));
  } catch (error) {
    if (!(error instanceof GitLimitExceeded)) throw error;
    const { stdout } = await runGit(['for-each-ref', `--merged=${base}`, '--format=%(refname)', ...heads.keys()], { cwd: dir });
    return new Set(stdout.split('\n').filter(Boolean));
  }
}

/** The best common ancestor of two commits, or null for histories that share none (and cannot be merged). */
export async function mergeBase(dir: string, base: string, head: string): Promise<string | null> {
  const { stdout, code } = await runGitAccepting(['merge-base', base, head], [0, 1], { cwd: dir });
  return code === 0 ? stdout.trim() : null;
}

/** The pull request's commits, oldest first (the order a reviewer reads them), paged. */
export async function listPullCommits(dir: string, base: string, head: string, page: Page): Promise<Connection<Commit>> {
  // Every sha, to page oldest first: 41 bytes a commit, bounded like any read (some 200,000 commits).
  const { stdout } = await runGit(['rev-list', '--reverse', '--topo-order', head, `^${base}`], {
    cwd: dir,
    maxOutputBytes: 8 * 1024 * 1024,
  });
  const shas = stdout.split('\n').filter(Boolean);
  const slice = shas.slice(page.offset, page.offset + page.limit);
  const commits = await readCommits(dir, slice);
  return connection(
    slice.map((sha) => commits.get(sha)!),
    shas.length,
    page,
  );
}

const STATUS: Record<string, FileStatus> = { A: FileStatus.ADDED, D: FileStatus.REMOVED, R: FileStatus.RENAMED };

/** A listed file with the blobs of both sides, which its line counts and patch are made from. */
type ListedFile = PullRequestFile & { before: Side | null; after: Side | null };
interface Side {
  mode: string;
  sha: string;
}

/**
 * The files the pull request changes (against the merge base of base and head, as GitHub shows
 * them), in path order, paged: at most MAX_PULL_FILES. One `git diff --raw` lists them with the
 * blobs of both sides (changedFiles); the page's line counts and patches are made from those very
 * blobs (see addCountsAndPatches), so each belongs to its file by construction, whatever the paths
 * hold, and no file beyond the page is diffed.
 */
export async function listPullFiles(dir: string, base: string, head: string, page: Page): Promise<Connection<PullRequestFile>> {
  // Against the merge base; histories that share none (a head force-pushed to another history) against base itself.
  const from = (await mergeBase(dir, base, head)) ?? base;
  const files = await changedFiles(dir, from, head);
  const slice = files.slice(page.offset, page.offset + page.limit);
  await addCountsAndPatches(dir, slice);
  return connection(
    slice.map(({ before: _before, after: _after, ...file }) => file),
    files.length,
    page,
  );
}

/**
 * What changed between two commits, the first MAX_PULL_FILES files. Renames are looked for among at
 * most RENAME_LIMIT candidates and within a quarter of git's deadline (it is only a nicety): past
 * either, the files are listed without renames (removed and added). Beyond git's bounds even then
 * (a tree of billions of paths), GIT_LIMIT_EXCEEDED.
 */
async function changedFiles(dir: string, from: string, head: string): Promise<ListedFile[]> {
  const key = `${dir}\0${from}\0${head}`;
  const known = beyondBounds.get(key);
  if (known) throw known;
  const diff = (renames: string[]) => [
    ...['-c', `core.bigFileThreshold=${BIG_FILE}`, '-c', `diff.renameLimit=${RENAME_LIMIT}`, 'diff', '--no-color', '--no-ext-diff'],
    ...['--raw', '-z', '--no-abbrev', ...renames, from, head], // full blob names in the raw entries: counts and patches are made from them
  ];
  try {
    const renamed = await tryGitHead(diff(['-M']), MAX_LISTING_BYTES, { cwd: dir, timeoutMs: gitBounds().timeoutMs / 4 });
    const listing = renamed.exceeded ? await runGitHead(diff(['--no-renames']), MAX_LISTING_BYTES, { cwd: dir }) : renamed;
    return parseRaw(listing.stdout.toString('utf8'), listing.truncated).slice(0, MAX_PULL_FILES);
  } catch (error) {
    if (error instanceof GitLimitExceeded) {
      if (beyondBounds.size >= REMEMBERED_BEYOND_BOUNDS) beyondBounds.delete(beyondBounds.keys().next().value!);
      beyondBounds.set(key, error);
    }
    throw error;
  }
}

/**
 * Changes git could not list within its bounds, by repository and commits (which never change): a
 * page of them asked again is answered at once instead of running git to its bounds again. The
 * oldest are forgotten past REMEMBERED_BEYOND_BOUNDS; a restart forgets them all.
 */
const beyondBounds = new Map<string, GitLimitExceeded>();
const REMEMBERED_BEYOND_BOUNDS = 1000;

/** `--raw` entries (modes, blobs, status, paths), NUL-separated; a last entry cut short is dropped. */
function parseRaw(output: string, truncated: boolean): ListedFile[] {
  const tokens = output.split('\0');
  if (truncated) tokens.pop();
  const files: ListedFile[] = [];
  for (let i = 0; i < tokens.length && tokens[i]!.startsWith(':'); i++) {
    const [srcMode, dstMode, srcSha, dstSha, status] = tokens[i]!.slice(1).split(' ') as [string, string, string, string, string];
    const kind = status[0]!;
    const renamed = kind === 'R' || kind === 'C';
    const from = renamed ? tokens[++i] : null;
    const to = tokens[++i];
    if (to === undefined || from === undefined) break; // cut short
    files.push({
      filename: to,
      previousFilename: kind === 'R' ? from : null,
      status: STATUS[kind] ?? (kind === 'C' ? FileStatus.ADDED : FileStatus.MODIFIED),
      additions: 0,
      deletions: 0,
      changes: 0,
      patch: null,
      before: srcSha === ZERO_SHA ? null : { mode: srcMode, sha: srcSha },
      after: dstSha === ZERO_SHA ? null : { mode: dstMode, sha: dstSha },
    });
  }
  return files;
}

/** A tree entry of one side of a file, under a name of our own: blobs as plain files (so a typechange diffs as content), submodules as themselves. */
const entry = (side: Side, name: string) =>
  side.mode === '160000' ? `160000 commit ${side.sha}\t${name}` : `100644 blob ${side.sha}\t${name}`;

/**
 * Line counts and patches for a page of files, from `git diff` between two trees made for it: file
 * i of the page is `f<i>` in both, holding its blob before and after. Every line and block of that
 * diff is then named `f<i>`: nothing in a path (spaces, newlines, bytes that are not UTF-8) or in a
 * file's content can make a count or patch land on another file. Files whose blobs fit the page's
 * budget get their patch in the same diff; the others only their counts, in a second one.
 */
async function addCountsAndPatches(dir: string, files: ListedFile[]): Promise<void> {
  const sizes = await blobSizes(
    dir,
    files.flatMap((file) => [file.before, file.after]),
  );
  let budget = PAGE_PATCH_BUDGET_BYTES;
  const patched = new Map<string, ListedFile>();
  const counted = new Map<string, ListedFile>();
  files.forEach((file, i) => {
    const size = [file.before, file.after].reduce((sum, side) => sum + (side ? (sizes.get(side.sha) ?? 0) : 0), 0);
    const fits = size <= budget;
    if (fits) budget -= size;
    (fits ? patched : counted).set(`f${i}`, file);
  });
  await Promise.all([diffPage(dir, patched, true), diffPage(dir, counted, false)]);
}

/** One `git diff --numstat` (with `-p`: and patches) of the files `named`, each under its own name. */
async function diffPage(dir: string, named: Map<string, ListedFile>, withPatches: boolean): Promise<void> {
  if (!named.size) return;
  const tree = async (side: 'before' | 'after') => {
    const lines = [...named].flatMap(([name, file]) => (file[side] ? [entry(file[side], name)] : []));
    const input = lines.map((line) => `${line}\n`).join(''); // no line at all is the empty tree (a blank line is an error)
    return (await runGit(['mktree', '--missing'], { cwd: dir, input })).stdout.trim();
  };
  const [before, after] = await Promise.all([tree('before'), tree('after')]);
  const { stdout } = await runGit(
    [
      ...['-c', `core.bigFileThreshold=${BIG_FILE}`, 'diff', '--no-color', '--no-ext-diff', '--no-renames', '--numstat'],
      ...(withPatches ? ['-p'] : []),
      ...[before, after],
    ],
    { cwd: dir },
  );
  // "<added>\t<deleted>\tf<i>" per file ("-" for binary), then with -p the patch blocks.
  const patches = stdout.indexOf('\ndiff --git ');
  for (const line of (patches < 0 ? stdout : stdout.slice(0, patches)).split('\n')) {
    const [added, deleted, name] = line.split('\t');
    const file = name === undefined ? undefined : named.get(name);
    if (!file || added === '-') continue;
    file.additions = Number(added);
    file.deletions = Number(deleted);
    file.changes = file.additions + file.deletions;
  }
  if (!withPatches || patches < 0) return;
  // Blocks start at "diff --git a/f<i> b/f<i>" lines; a line of content in a patch always starts with
  // ' ', '+', '-' or '\\', so only "\n" (never another line break) can start a header.
  const blocks = new Map<string, string[]>();
  for (const block of diffBlocks(stdout)) {
    const name = /^a\/(f\d+) /.exec(block)?.[1];
    if (name) blocks.set(name, [...(blocks.get(name) ?? []), block]);
  }
  for (const [name, file] of named) {
    const found = blocks.get(name);
    file.patch = found?.length === 1 ? patchOf(found[0]!) : null; // two blocks: a blob became a submodule or back
  }
}

/** Sizes of the blobs of these sides (a submodule's commit is of another repository: none). */
function blobSizes(dir: string, sides: Array<Side | null>): Promise<Map<string, number>> {
  return objectSizes(dir, [...new Set(sides.filter((side): side is Side => !!side && side.mode !== '160000').map((side) => side.sha))]);
}

/** The hunks of one file's diff block (from its first `@@` line), or null when there are none or they are too large. */
function patchOf(block: string): string | null {
  const start = block.indexOf('\n@@ ');
  if (start < 0) return null;
  const patch = block.slice(start + 1).replace(/\n$/, '');
  // Its own copy: a view would keep the page's whole diff output alive as long as the answer (own-strings.ts).
  return Buffer.byteLength(patch) > MAX_PATCH_BYTES ? null : ownCopy(patch);
}

/** Conflicting paths kept of one merge: enough to act on, bounded for records and payloads. */
const MAX_CONFLICTS = 100;

export interface MergeTreeResult {
  /** The merged tree; null when the merge conflicts. */
  tree: string | null;
  /** Paths in conflict (the first MAX_CONFLICTS). */
  conflicts: string[];
}

/**
 * The paths in conflict, from `merge-tree -z --name-only` output: the tree, the conflicted paths,
 * an empty field, then the messages, each `<count> <paths…> <type> <text>`. A file/directory
 * conflict lists the file under the name git moved it to in the merged tree (`x~<commit>`), a path
 * in neither branch: its message names both, and the path of the branches is the one listed here.
 */
function conflictedPaths(output: string): string[] {
  const fields = output.split('\0');
  const end = fields.indexOf('', 1);
  const paths = new Set(fields.slice(1, end === -1 ? undefined : end));
  const movedFrom = new Map<string, string>();
  for (let i = end + 1; end !== -1 && i < fields.length;) {
    const count = Number(fields[i]);
    if (!Number.isInteger(count) || count < 0) break;
    const named = fields.slice(i + 1, i + 1 + count);
    const type = fields[i + 1 + count];
    if (type === 'CONFLICT (file/directory)' && named.length === 2) movedFrom.set(named[0]!, named[1]!);
    i += count + 3;
  }
  return [...new Set([...paths].map((path) => movedFrom.get(path) ?? path))];
}

/**
 * Merges two commits without a working tree (`git merge-tree --write-tree`,
 * git ≥ 2.38): the merged tree, or the conflicting paths. Histories without
 * a common ancestor do not merge (as git refuses them): a conflict without paths.
 */
export async function mergeTree(dir: string, ours: string, theirs: string): Promise<MergeTreeResult> {
  const args = ['merge-tree', '--write-tree', '--name-only', '-z', ours, theirs];
  try {
    // Exit 0: merged, the output is the tree. Exit 1: conflicts, the tree (with markers) then the paths.
    const { stdout, code } = await runGitAccepting(args, [0, 1], { cwd: dir });
    if (code === 0) return { tree: stdout.split('\0')[0]!, conflicts: [] };
    return { tree: null, conflicts: conflictedPaths(stdout).slice(0, MAX_CONFLICTS) };
  } catch (error) {
    if (error instanceof GitCommandError && /unrelated histories/.test(error.stderr)) return { tree: null, conflicts: [] };
    throw error;
  }
}
