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
export const MAX_PATCH_BYTES = 64 * 1024;
/** Files changing more lines than this get no patch without even producing it. */
const MAX_PATCH_LINES = 20_000;

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

/** Whether two commits share any history (a merge base); histories that share none cannot be merged. */
export async function shareHistory(dir: string, base: string, head: string): Promise<boolean> {
  const { code } = await runGitAccepting(['merge-base', base, head], [0, 1], { cwd: dir });
  return code === 0;
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

/**
 * The files the pull request changes (three-dot: against the merge base of
 * base and head, as GitHub shows them), in path order, paged. One `git diff
 * --raw --numstat` lists them all; patches are made only for the page.
 */
export async function listPullFiles(dir: string, base: string, head: string, page: Page): Promise<Connection<PullRequestFile>> {
  const range = `${base}...${head}`;
  const { stdout } = await runGit(['diff', '--no-color', '--no-ext-diff', '-M', '--raw', '--numstat', '-z', '--full-index', range], {
    cwd: dir,
  });
  const files = parseRawNumstat(stdout);
  const slice = files.slice(page.offset, page.offset + page.limit);
  const wanted = slice.filter((file) => file.patchable);
  if (wanted.length) {
    const paths = wanted.flatMap((file) => (file.previousFilename ? [file.previousFilename, file.filename] : [file.filename]));
    const { stdout: diff } = await runGit(
      ['diff', '--no-color', '--no-ext-diff', '-M', range, '--', ...paths.map((path) => `:(literal)${path}`)],
      { cwd: dir },
    );
    // Blocks come in the same order as the listing (path order, same rename detection).
    const blocks = diff.split(/^(?=diff --git )/m).filter((block) => block.startsWith('diff --git '));
    wanted.forEach((file, i) => (file.patch = patchOf(blocks[i])));
  }
  return connection(
    slice.map(({ patchable: _patchable, ...file }) => file),
    files.length,
    page,
  );
}

type ListedFile = PullRequestFile & { patchable: boolean };

/** `--raw` entries (status, paths) followed by as many `--numstat` entries (line counts), NUL-separated. */
function parseRawNumstat(output: string): ListedFile[] {
  const tokens = output.split('\0');
  const files: ListedFile[] = [];
  let i = 0;
  for (; i < tokens.length && tokens[i]!.startsWith(':'); i++) {
    const kind = tokens[i]!.split(' ')[4]![0]!;
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

/** The hunks of one file's diff block (from the first `@@`), or null when there are none or they are too large. */
function patchOf(block: string | undefined): string | null {
  if (!block) return null;
  const start = block.search(/^@@ /m);
  if (start < 0) return null;
  const patch = block.slice(start).replace(/\n$/, '');
  return Buffer.byteLength(patch) > MAX_PATCH_BYTES ? null : patch;
}

export interface MergeTreeResult {
  /** The merged tree; null when the merge conflicts. */
  tree: string | null;
  /** Paths in conflict. */
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
    return code === 0 ? { tree: tree!, conflicts: [] } : { tree: null, conflicts: [...new Set(paths)] };
  } catch (error) {
    if (error instanceof GitCommandError && /unrelated histories/.test(error.stderr)) return { tree: null, conflicts: [] };
    throw error;
  }
}
