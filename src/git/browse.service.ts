import type { Principal } from '../principal.js';
import { connection, resolvePage, type PageArgs } from '../graphql/pagination.js';
import type { Repository } from '../repositories/repository.entity.js';
import { listBranches, listCommits, listTags, listTree, readBlob } from './browse.js';
import { limited } from './concurrency.js';
import type { Blob, Commit, TreeEntryConnection } from './git.types.js';
import type { GitStorage } from './storage.js';

/**
 * Browsing a repository's git data (read-only): the use cases behind `Repository`'s git fields.
 * The caller has found the repository and checked the viewer may read it. Each read runs git in one
 * of the browsing slots, within the viewer's share (concurrency.ts `limited`); lists are paged;
 * `ref` defaults to the default branch.
 */
export class RepositoryBrowser {
  constructor(private readonly git: GitStorage) {}

  async branches(viewer: Principal, repo: Repository, page: PageArgs) {
    const listed = await this.read(viewer, repo, (dir) => listBranches(dir, repo.defaultBranch, resolvePage(page)));
    readFrom(
      repo,
      listed.nodes.map((branch) => branch.commit),
    );
    return listed;
  }

  async tags(viewer: Principal, repo: Repository, page: PageArgs) {
    const listed = await this.read(viewer, repo, (dir) => listTags(dir, resolvePage(page)));
    readFrom(
      repo,
      listed.nodes.map((tag) => tag.commit),
    );
    return listed;
  }

  /** An empty repository has no history to list (its default branch does not exist yet): an empty page, not NOT_FOUND. */
  async commits(viewer: Principal, repo: Repository, ref: string | null, page: PageArgs) {
    const resolved = resolvePage(page);
    if (repo.empty && ref == null) return connection([], 0, resolved);
    const listed = await this.read(viewer, repo, (dir) => listCommits(dir, ref ?? repo.defaultBranch, resolved));
    readFrom(repo, listed.nodes);
    return listed;
  }

  tree(viewer: Principal, repo: Repository, ref: string | null, path: string, page: PageArgs): Promise<TreeEntryConnection> {
    const resolved = resolvePage(page);
    return this.read(viewer, repo, (dir) => listTree(dir, ref ?? repo.defaultBranch, path, resolved));
  }

  blob(viewer: Principal, repo: Repository, ref: string | null, path: string): Promise<Blob> {
    return this.read(viewer, repo, (dir) => readBlob(dir, ref ?? repo.defaultBranch, path));
  }

  private read<T>(viewer: Principal, repo: Repository, work: (dir: string) => Promise<T>): Promise<T> {
    return limited(viewer.userId, async () => work(await this.git.servedPath(repo.id)));
  }
}

/** Marks commits with the repository they were read from, for the fields other capabilities add to `Commit` (its statuses). */
function readFrom(repo: Repository, commits: Array<Commit | null>): void {
  for (const commit of commits) if (commit) commit.repositoryId = repo.id;
}
