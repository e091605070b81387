import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { DomainError, notFound } from '../errors/domain-error.js';
import type { Logger } from '../logger.js';
import { ZERO_SHA } from '../ids.js';
import { REVOKED_LOCKS_FILE } from './hooks.js';
import { GitCommandError, runGit } from './run-git.js';

export interface InitialFile {
  path: string;
  content: string;
}

export interface Signature {
  name: string;
  email: string;
}

/** Revoked lock holdings a repository's fence remembers: far more than can be waiting on one repository. */
const REVOKED_KEPT = 64;

/** The file in the repositories directory that names the site it belongs to. */
const SITE_MARKER = '.cairn-site';

/**
 * Bare repositories on disk, one directory per repository id (`<root>/<id>.git`, the root being
 * CAIRN_REPOSITORIES_DIR), so renaming a repository moves nothing.
 */
export class GitStorage {
  constructor(
    readonly root: string,
    private readonly log: Logger,
    private readonly orm: MikroORM,
  ) {}

  /**
   * The directory of a repository the database knows, for serving it. Missing while its record is
   * still there, it is not the repository that is gone but this process's view of the shared
   * repositories storage (CAIRN_REPOSITORIES_DIR not mounted, or another directory): logged, and
   * answered 503 naming it rather than as a request git could not process. Missing with its record
   * gone, it was deleted while this request ran: 404.
   */
  async servedPath(repositoryId: string): Promise<string> {
    const dir = this.pathFor(repositoryId);
    try {
      await fs.access(path.join(dir, 'HEAD'));
      return dir;
    } catch {
      const [recorded] = await this.orm.em.fork().execute(`select 1 from repositories where id = ?`, [repositoryId]);
      if (!recorded) throw notFound('repository');
      this.log.error(
        { repositoryId, dir, repositoriesDir: this.root },
        'repository data missing: the database knows it, CAIRN_REPOSITORIES_DIR has no directory for it',
      );
      throw new DomainError(
        'UNAVAILABLE',
        "this repository's data cannot be found on this server's repositories storage; try again later",
        [],
        30,
      );
    }
  }

  pathFor(repositoryId: string): string {
    if (!/^repo_[0-9a-z]+$/.test(repositoryId)) throw new Error(`not a repository id: ${repositoryId}`);
    return path.join(this.root, `${repositoryId}.git`);
  }

  /** Creates the bare repository; one that could not be made whole (a full disk) is removed again. */
  async create(repositoryId: string, defaultBranch: string): Promise<void> {
    const dir = this.pathFor(repositoryId);
    await fs.mkdir(this.root, { recursive: true });
    try {
      await runGit(['init', '--quiet', '--bare', `--initial-branch=${defaultBranch}`, dir]);
      // Serving settings: partial clone, and no reflog churn on the server.
      await runGit(['config', 'uploadpack.allowFilter', 'true'], { cwd: dir });
      await runGit(['config', 'uploadpack.allowAnySHA1InWant', 'true'], { cwd: dir });
      await runGit(['config', 'receive.denyNonFastForwards', 'false'], { cwd: dir });
      await runGit(['config', 'core.logAllRefUpdates', 'false'], { cwd: dir });
    } catch (error) {
      await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Removes a repository's data. It is renamed away first, so it disappears at once even when large.
   * A git process still running in it (a merge being prepared) may write a last object meanwhile:
   * the removal is tried again a few times, and what still remains is removed at the next start-up.
   */
  async remove(repositoryId: string): Promise<void> {
    const dir = this.pathFor(repositoryId);
    const doomed = `${dir}.deleted-${randomBytes(4).toString('hex')}`;
    try {
      await fs.rename(dir, doomed);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await fs.rm(doomed, { recursive: true, force: true });
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  /** Points HEAD (what a clone checks out) at the default branch. */
  async setDefaultBranch(repositoryId: string, branch: string): Promise<void> {
    await runGit(['symbolic-ref', 'HEAD', `refs/heads/${branch}`], { cwd: this.pathFor(repositoryId) });
  }

  async hasBranch(repositoryId: string, branch: string): Promise<boolean> {
    try {
      await runGit(['show-ref', '--verify', '--quiet', `refs/heads/${branch}`], { cwd: this.pathFor(repositoryId) });
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Writes the objects of a first commit made from the given files (`auto_init`) and returns its sha;
   * no ref points at it until the ref transaction sets one.
   */
  async writeInitialCommit(repositoryId: string, author: Signature, message: string, files: InitialFile[]): Promise<string> {
    const cwd = this.pathFor(repositoryId);
    const entries: string[] = [];
    for (const file of files) {
      const { stdout } = await runGit(['hash-object', '-w', '--stdin'], { cwd, input: file.content });
      entries.push(`100644 blob ${stdout.trim()}\t${file.path}`);
    }
    const tree = (await runGit(['mktree'], { cwd, input: `${entries.join('\n')}\n` })).stdout.trim();
    const env = {
      GIT_AUTHOR_NAME: author.name,
      GIT_AUTHOR_EMAIL: author.email,
      GIT_COMMITTER_NAME: author.name,
      GIT_COMMITTER_EMAIL: author.email,
    };
    return (await runGit(['commit-tree', tree, '-m', message], { cwd, env })).stdout.trim();
  }

  /**
   * Moves refs from the values the caller expects them to have, all or none (`update-ref --stdin`
   * is one ref transaction). False when a ref no longer has its expected value (or is being moved
   * by another git right now): nothing moved then. `fence`: the repository lock it runs under
   * (hooks.ts fencedBy), whose revocation refuses the change.
   */
  async compareAndSwap(
    repositoryId: string,
    updates: Array<{ ref: string; before: string; after: string }>,
    fence?: { config: string[]; env: Record<string, string> },
  ): Promise<boolean> {
    if (!updates.length) return true;
    const input = updates
      .map(({ ref, before, after }) => (after === ZERO_SHA ? `delete ${ref} ${before}\n` : `update ${ref} ${after} ${before}\n`))
      .join('');
    try {
      const config = (fence?.config ?? []).flatMap((setting) => ['-c', setting]);
      await runGit([...config, 'update-ref', '--stdin'], { cwd: this.pathFor(repositoryId), input, env: fence?.env });
      return true;
    } catch (error) {
      if (error instanceof GitCommandError && error.stderr.includes('cannot lock ref')) return false;
      throw error;
    }
  }

  /**
   * Fences a repository-lock holding taken from its holder (repository-lock.ts): its token joins
   * the repository's list of revoked holdings, which git's reference-transaction hook checks before
   * any ref moves (hooks.ts). The list keeps the last REVOKED_KEPT tokens, written whole and renamed
   * into place. A repository without a directory has no refs to fence.
   */
  async revokeLock(repositoryId: string, token: string): Promise<void> {
    const file = path.join(this.pathFor(repositoryId), REVOKED_LOCKS_FILE);
    const kept = (await fs.readFile(file, 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .slice(-(REVOKED_KEPT - 1));
    if (kept.includes(token)) return;
    try {
      await fs.writeFile(`${file}.${token}`, [...kept, token, ''].join('\n'));
      await fs.rename(`${file}.${token}`, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }

  /** Repository ids that have a directory on disk (for start-up reconciliation). */
  async listIds(): Promise<string[]> {
    try {
      const names = await fs.readdir(this.root);
      return names.filter((name) => /^repo_[0-9a-z]+\.git$/.test(name)).map((name) => name.slice(0, -4));
    } catch {
      return [];
    }
  }

  /**
   * Whether a repository's directory has not changed for `ms` (nor its refs, nor its objects'
   * fan-out). Measured against the file system's own clock (a file written now in the root), not
   * this machine's: on shared storage the two may differ. Anything that cannot be read counts as
   * changed.
   */
  async untouchedFor(repositoryId: string, ms: number): Promise<boolean> {
    const dir = this.pathFor(repositoryId);
    const probe = path.join(this.root, `.clock-${randomBytes(4).toString('hex')}`);
    await fs.writeFile(probe, '');
    try {
      const since = (await fs.stat(probe)).mtimeMs - ms;
      for (const part of ['', 'refs', 'objects']) {
        const stats = await fs
          .stat(path.join(dir, part))
          .catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? null : 'unreadable'));
        if (stats === 'unreadable' || (stats && stats.mtimeMs > since)) return false;
      }
      return true;
    } finally {
      await fs.rm(probe, { force: true });
    }
  }

  /**
   * Marks the repositories directory as this site's (`.cairn-site`, naming the database's site id),
   * or refuses it when it is another's: a process on the wrong database (an empty embedded one, a
   * staging copy) would otherwise take every repository for an orphan.
   */
  async claimFor(siteId: string): Promise<void> {
    await fs.mkdir(this.root, { recursive: true });
    const marker = path.join(this.root, SITE_MARKER);
    await fs.writeFile(marker, `${siteId}\n`, { flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    const owner = (await fs.readFile(marker, 'utf8')).trim();
    if (owner !== siteId) {
      throw new Error(
        `CAIRN_REPOSITORIES_DIR (${this.root}) belongs to another site than this database's (${SITE_MARKER} names ${owner}, the database ${siteId}): check DATABASE_URL and CAIRN_REPOSITORIES_DIR`,
      );
    }
  }

  /** Leftovers of interrupted deletions. */
  async removeLeftovers(): Promise<void> {
    try {
      for (const name of await fs.readdir(this.root)) {
        if (name.includes('.deleted-')) await fs.rm(path.join(this.root, name), { recursive: true, force: true });
      }
    } catch {
      /* no repositories yet */
    }
  }
}
