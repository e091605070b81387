import { Field, Int, ObjectType, registerEnumType } from 'type-graphql';
import { readCommits } from '../git/browse.js';
import type { Commit } from '../git/git.types.js';
import { GitCommandError, runGit, runGitAccepting } from '../git/run-git.js';
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
/** Files changing more lines than this get no patch without even producing it. */
const MAX_PATCH_LINES = 20_000;
/** Blobs larger than this are binary to these diffs: listed without line counts or patch, and never diffed. */
const BIG_FILE = '1m';
/** Blob content one page of files may diff for its patches; files past it are listed without. */
const PAGE_PATCH_BUDGET_BYTES = 16 * 1024 * 1024;

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

/** Commits on `head` that `base` lacks (`base..head`). */
export async function countCommits(dir: string, base: string, head: string): Promise<number> {
  const { stdout } = await runGit(['rev-list', '--count', head, `^${base}`], { cwd: dir });
  return Number(stdout.trim());
}

/**
 * `countCommits` for many heads against one base with one git process: the
 * commits reachable from any head and not from base (with their parents),
 * then, per head, those reachable from it within that set — the same
 * numbers, for what a mergeability pass needs after a base branch moved.
 */
export async function countCommitsOf(dir: string, base: string, heads: string[]): Promise<Map<string, number>> {
  const unique = [...new Set(heads)];
  const { stdout } = await runGit(['rev-list', '--parents', '--stdin'], { cwd: dir, input: [...unique, `^${base}`].join('\n') + '\n' });
  const parents = new Map<string, string[]>();
  for (const line of stdout.split('\n')) {
    if (!line) continue;
    const [sha, ...rest] = line.split(' ');
    parents.set(sha!, rest);
  }
  const counts = new Map<string, number>();
  for (const head of unique) {
    const seen = new Set<string>();
    const stack = parents.has(head) ? [head] : [];
    while (stack.length) {
      const sha = stack.pop()!;
      if (seen.has(sha)) continue;
      seen.add(sha);
      for (const parent of parents.get(sha) ?? []) if (parents.has(parent)) stack.push(parent);
    }
    counts.set(head, seen.size);
  }
  return counts;
}

/** The best common ancestor of two commits, or null for histories that share none (and cannot be merged). */
export async function mergeBase(dir: string, base: string, head: string): Promise<string | null> {
  const { stdout, code } = await runGitAccepting(['merge-base', base, head], [0, 1], { cwd: dir });
  return code === 0 ? stdout.trim() : null;
}

/** The pull request's commits, oldest first (the order a reviewer reads them), paged. */
export async function listPullCommits(dir: string, base: string, head: string, page: Page): Promise<Connection<Commit>> {
  const { stdout } = await runGit(['rev-list', '--reverse', '--topo-order', head, `^${base}`], { cwd: dir });
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
const ZERO = '0'.repeat(40);

/** A listed file with the blobs of both sides, which its patch is made from. */
type ListedFile = PullRequestFile & { before: Side | null; after: Side | null; patchable: boolean };
interface Side {
  mode: string;
  sha: string;
}

/**
 * The files the pull request changes (against the merge base of base and
 * head, as GitHub shows them), in path order, paged. One `git diff --raw
 * --numstat` lists them all with the blobs of both sides; the page's patches
 * are made from those very blobs (see addPatches), so each patch belongs to
 * its file by construction, whatever the paths hold.
 */
export async function listPullFiles(dir: string, base: string, head: string, page: Page): Promise<Connection<PullRequestFile>> {
  // Against the merge base; histories that share none (a head force-pushed to another history) against base itself.
  const from = (await mergeBase(dir, base, head)) ?? base;
  const { stdout } = await runGit(
    [
      '-c',
      `core.bigFileThreshold=${BIG_FILE}`,
      'diff',
      '--no-color',
      '--no-ext-diff',
      '-M',
      '--raw',
      '--no-abbrev', // full blob names in the raw entries: the patches are made from them
      '--numstat',
      '-z',
      from,
      head,
    ],
    { cwd: dir },
  );
  const files = parseRawNumstat(stdout);
  const slice = files.slice(page.offset, page.offset + page.limit);
  await addPatches(dir, slice);
  return connection(
    slice.map(({ before: _before, after: _after, patchable: _patchable, ...file }) => file),
    files.length,
    page,
  );
}

/** `--raw` entries (modes, blobs, status, paths) followed by as many `--numstat` entries (line counts), NUL-separated. */
function parseRawNumstat(output: string): ListedFile[] {
  const tokens = output.split('\0');
  const files: ListedFile[] = [];
  let i = 0;
  for (; i < tokens.length && tokens[i]!.startsWith(':'); i++) {
    const [srcMode, dstMode, srcSha, dstSha, status] = tokens[i]!.slice(1).split(' ') as [string, string, string, string, string];
    const kind = status[0]!;
    const renamed = kind === 'R' || kind === 'C';
    const from = renamed ? tokens[++i]! : null;
    const to = tokens[++i]!;
    files.push({
      filename: to,
      previousFilename: kind === 'R' ? from : null,
      status: STATUS[kind] ?? (kind === 'C' ? FileStatus.ADDED : FileStatus.MODIFIED),
      additions: 0,
      deletions: 0,
      changes: 0,
      patch: null,
      before: srcSha === ZERO ? null : { mode: srcMode, sha: srcSha },
      after: dstSha === ZERO ? null : { mode: dstMode, sha: dstSha },
      patchable: true,
    });
  }
  for (const file of files) {
    const [added, deleted] = tokens[i]!.split('\t');
    i += tokens[i]!.endsWith('\t') ? 3 : 1; // a rename's paths follow as two more tokens
    const binary = added === '-';
    file.additions = binary ? 0 : Number(added);
    file.deletions = binary ? 0 : Number(deleted);
    file.changes = file.additions + file.deletions;
    file.patchable = !binary && file.changes > 0 && file.changes <= MAX_PATCH_LINES;
  }
  return files;
}

/** A tree entry of one side of a file, under a name of our own: blobs as plain files (so a typechange diffs as content), submodules as themselves. */
const entry = (side: Side, name: string) =>
  side.mode === '160000' ? `160000 commit ${side.sha}\t${name}` : `100644 blob ${side.sha}\t${name}`;

/**
 * Patches for a page of files, with one `git diff` between two trees made for
 * it: file i of the page is `f<i>` in both, holding its blob before and after.
 * Every block of that diff is then named `f<i>`: nothing in a path (spaces,
 * newlines, bytes that are not UTF-8) or in a file's content can make a patch
 * land on another file, and renames are the ones the listing found.
 */
async function addPatches(dir: string, files: ListedFile[]): Promise<void> {
  const sizes = await blobSizes(
    dir,
    files.filter((file) => file.patchable).flatMap((file) => [file.before, file.after]),
  );
  let budget = PAGE_PATCH_BUDGET_BYTES;
  const chosen = new Map<string, ListedFile>();
  files.forEach((file, i) => {
    if (!file.patchable) return;
    const size = [file.before, file.after].reduce((sum, side) => sum + (side ? (sizes.get(side.sha) ?? 0) : 0), 0);
    if (size > budget) return;
    budget -= size;
    chosen.set(`f${i}`, file);
  });
  if (!chosen.size) return;
  const tree = async (side: 'before' | 'after') => {
    const lines = [...chosen].flatMap(([name, file]) => (file[side] ? [entry(file[side], name)] : []));
    const input = lines.map((line) => `${line}\n`).join(''); // no line at all is the empty tree (a blank line is an error)
    return (await runGit(['mktree', '--missing'], { cwd: dir, input })).stdout.trim();
  };
  const [before, after] = await Promise.all([tree('before'), tree('after')]);
  const { stdout } = await runGit(
    ['-c', `core.bigFileThreshold=${BIG_FILE}`, 'diff', '--no-color', '--no-ext-diff', '--no-renames', before, after],
    { cwd: dir },
  );
  // Blocks start at "diff --git a/f<i> b/f<i>" lines; a line of content in a patch always starts with
  // ' ', '+', '-' or '\', so only "\n" (never another line break) can start a header.
  const blocks = new Map<string, string[]>();
  for (const block of `\n${stdout}`.split('\ndiff --git ').slice(1)) {
    const name = /^a\/(f\d+) /.exec(block)?.[1];
    if (name) blocks.set(name, [...(blocks.get(name) ?? []), block]);
  }
  for (const [name, file] of chosen) {
    const found = blocks.get(name);
    file.patch = found?.length === 1 ? patchOf(found[0]!) : null; // two blocks: a blob became a submodule or back
  }
}

async function blobSizes(dir: string, sides: Array<Side | null>): Promise<Map<string, number>> {
  const shas = [...new Set(sides.filter((side): side is Side => !!side && side.mode !== '160000').map((side) => side.sha))];
  const sizes = new Map<string, number>();
  if (!shas.length) return sizes;
  const { stdout } = await runGit(['cat-file', '--batch-check=%(objectname) %(objectsize)'], { cwd: dir, input: shas.join('\n') + '\n' });
  for (const line of stdout.split('\n')) {
    const [sha, size] = line.split(' ');
    if (sha && size) sizes.set(sha, Number(size));
  }
  return sizes;
}

/** The hunks of one file's diff block (from its first `@@` line), or null when there are none or they are too large. */
function patchOf(block: string): string | null {
  const start = block.indexOf('\n@@ ');
  if (start < 0) return null;
  const patch = block.slice(start + 1).replace(/\n$/, '');
  return Buffer.byteLength(patch) > MAX_PATCH_BYTES ? null : patch;
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
 * Merges two commits without a working tree (`git merge-tree --write-tree`,
 * git ≥ 2.38): the merged tree, or the conflicting paths. Histories without
 * a common ancestor do not merge (as git refuses them): a conflict without paths.
 */
export async function mergeTree(dir: string, ours: string, theirs: string): Promise<MergeTreeResult> {
  const args = ['merge-tree', '--write-tree', '--name-only', '--no-messages', '-z', ours, theirs];
  try {
    // Exit 0: merged, the output is the tree. Exit 1: conflicts, the tree (with markers) then the paths.
    const { stdout, code } = await runGitAccepting(args, [0, 1], { cwd: dir });
    const [tree, ...paths] = stdout.split('\0').filter(Boolean);
    return code === 0 ? { tree: tree!, conflicts: [] } : { tree: null, conflicts: [...new Set(paths)].slice(0, MAX_CONFLICTS) };
  } catch (error) {
    if (error instanceof GitCommandError && /unrelated histories/.test(error.stderr)) return { tree: null, conflicts: [] };
    throw error;
  }
}
