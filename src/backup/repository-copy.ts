import fs from 'node:fs/promises';
import path from 'node:path';
import { gitBounds, LONG_WORK_FACTOR } from '../git/git-bounds.js';
import { peelToCommits } from '../git/commits.js';
import { runGit } from '../git/run-git.js';
import { applyPullRefs, pullRef } from '../pulls/pull-refs.js';
import type { SnapshotRepository } from './database-dump.js';

/** How often a copy is started again after a file vanished under it (loose objects packed, packs replaced by git's own gc). */
const COPY_ATTEMPTS = 5;

/**
 * Copies a live bare repository for a backup, and gives the copy exactly the refs the database
 * recorded in the snapshot (`refs`), and HEAD its default branch. The caller holds the repository's
 * maintenance lock, so Cairn's maintenance cannot prune objects those refs need meanwhile; pushes go
 * on, and a push whose refs moved on disk but are not recorded in the snapshot leaves no ref in the
 * copy (its objects may be there, unreferenced: harmless, and pruned by a later gc).
 *
 * Refs are not copied at all: the copy gets a fresh ref store from the snapshot (`update-ref`
 * refuses an object the copy lacks), then the whole history of those refs is checked present.
 */
export async function copyRepository(source: string, target: string, snapshot: SnapshotRepository): Promise<void> {
  if (!(await isRepository(source))) {
    throw new Error(`repository ${snapshot.id} was deleted after the database snapshot (${source} is gone): run the backup again`);
  }
  // Refs already on disk when the copy starts point at objects present then, which nothing removes
  // while the lock is held: the check below need not walk again what they reach. (A repository git
  // will not read, say one of another user, gets the whole walk.)
  const before = await refsOnDisk(source).catch(() => []);
  await copyFiles(source, target);
  await setRefs(target, snapshot);
  await checkHistoryPresent(target, snapshot, before);
}

async function isRepository(dir: string): Promise<boolean> {
  return fs.stat(path.join(dir, 'HEAD')).then(
    () => true,
    () => false,
  );
}

/**
 * The files of the repository but its refs and what git is in the middle of writing: the
 * quarantined objects of pushes in progress (`objects/incoming-*`, `objects/tmp_objdir-incoming-*`),
 * objects and packs being written (`tmp_*` under `objects/`), lock files, and Cairn's files of the
 * processes at work on it (`cairn-push.*`, a push's details; `cairn-revoked-locks`, the lock fence),
 * which a restored site, whose pushes are all recorded, has no use for. Its reflogs (`logs/`) go
 * too: they name old objects of refs the copy may not have. The `refs/` directories stay (git wants
 * them), without their files.
 */
async function copyFiles(source: string, target: string): Promise<void> {
  const skipped = (relative: string[]) => {
    const name = relative.at(-1)!;
    if (relative.length === 1) return name === 'packed-refs' || name === 'logs' || name.startsWith('cairn-');
    if (relative[0] === 'objects' && (name.startsWith('tmp_') || name.startsWith('incoming-'))) return true;
    return name.endsWith('.lock');
  };
  for (let attempt = 1; ; attempt++) {
    try {
      await fs.cp(source, target, {
        recursive: true,
        verbatimSymlinks: true,
        errorOnExist: true,
        force: false,
        filter: async (file) => {
          const relative = path.relative(source, file).split(path.sep);
          if (relative[0] === '') return true; // the repository's directory itself
          if (skipped(relative)) return false;
          if (relative[0] !== 'refs') return true;
          return (await fs.lstat(file).catch(() => null))?.isDirectory() ?? false;
        },
      });
      return;
    } catch (error) {
      // git replaces files as it works (the `gc --auto` a push runs packs loose objects, rewrites packs):
      // a file listed then gone fails the copy, which is made again from the start.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === COPY_ATTEMPTS || !(await isRepository(source))) throw error;
      await fs.rm(target, { recursive: true, force: true });
    }
  }
}

/** Writes the snapshot's refs into the copy's empty ref store, packed, and points HEAD at the default branch. */
async function setRefs(dir: string, snapshot: SnapshotRepository): Promise<void> {
  if (snapshot.refs.length) {
    const input = snapshot.refs.map((ref) => `create ${ref.name} ${ref.sha}\n`).join('');
    await git(dir, ['update-ref', '--no-deref', '--stdin'], input).catch((error: Error) => {
      throw new Error(
        `repository ${snapshot.id}: the copy lacks an object a recorded ref points at, run the backup again\n${error.message}`,
      );
    });
  }
  await setMergedPullHeads(dir, snapshot.mergedPullHeads);
  await git(dir, ['pack-refs', '--all', '--prune']);
  await git(dir, ['symbolic-ref', 'HEAD', `refs/heads/${snapshot.defaultBranch}`]);
}

/**
 * A merged pull request keeps `refs/pull/<n>/head` at the head it merged (the pull refs of open
 * ones are made again by the restored site: restore.ts). A head the copy lacks (merged before pull
 * refs kept heads, and pruned since) gets no ref rather than failing the backup: no record names it.
 */
async function setMergedPullHeads(dir: string, heads: SnapshotRepository['mergedPullHeads']): Promise<void> {
  const present = await peelToCommits(
    dir,
    heads.map((head) => head.sha),
  );
  await applyPullRefs(
    dir,
    heads.filter((head) => present.get(head.sha) === head.sha).map((head) => ({ ref: pullRef(head.number, 'head'), sha: head.sha })),
  );
}

/**
 * Walks every object the snapshot's refs reach but the refs found on disk before the copy did not:
 * usually nothing (the refs have not moved) or the objects of the pushes since. A missing one fails
 * the backup loudly rather than leaving a repository that cannot be cloned.
 */
async function checkHistoryPresent(dir: string, snapshot: SnapshotRepository, before: string[]): Promise<void> {
  if (!snapshot.refs.length) return;
  const revisions = [...snapshot.refs.map((ref) => ref.sha), ...before.map((sha) => `^${sha}`)].join('\n');
  // --ignore-missing: a ref found before that pointed at an object not copied (moved and pruned since) excludes nothing.
  await git(dir, ['rev-list', '--objects', '--quiet', '--ignore-missing', '--stdin'], `${revisions}\n`).catch((error: Error) => {
    throw new Error(`repository ${snapshot.id}: the copy lacks objects its recorded refs need, run the backup again\n${error.message}`);
  });
}

/** The distinct objects the refs on disk point at. */
async function refsOnDisk(dir: string): Promise<string[]> {
  const listed = await git(dir, ['for-each-ref', '--format=%(objectname)']);
  return [...new Set(listed.split('\n').filter((line) => /^[0-9a-f]{40,64}$/.test(line)))];
}

/**
 * Runs git in a repository the way the service does (run-git.ts: through the launcher, with its
 * environment — no replace objects, no prompts — and its bounds), long work's deadline: a backup
 * walks whole histories.
 */
async function git(dir: string, args: string[], input?: string): Promise<string> {
  return (await runGit(args, { cwd: dir, input, timeoutMs: gitBounds().timeoutMs * LONG_WORK_FACTOR })).stdout;
}
