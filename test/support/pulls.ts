import type { Client } from './client.js';
import { GitSandbox, remoteUrl } from './git.js';
import { eventually } from './receiver.js';
import type { CairnServer } from './server.js';

/**
 * A repository with a local work tree that pushes to it with the real git
 * client, for pull request tests: `main` holds `files`, and branches are made
 * and pushed from the work tree the way a contributor would.
 */
export class PullRepo {
  private constructor(
    readonly server: CairnServer,
    readonly git: GitSandbox,
    readonly owner: Client & { login: string },
    readonly id: string,
    readonly name: string,
    readonly work: string,
    readonly remote: string,
  ) {}

  /** Creates `owner/name` (public unless `private`), commits `files` on main and pushes main. */
  static async create(
    server: CairnServer,
    git: GitSandbox,
    owner: Client & { login: string },
    name: string,
    files: Record<string, string> = { 'README.md': `# ${name}\n` },
    options: { private?: boolean } = {},
  ): Promise<PullRepo> {
    const created = await owner.post('/repos', { name, private: options.private ?? false });
    if (created.status !== 201) throw new Error(`cannot create ${name}: ${created.text}`);
    const work = await git.init(`${name}-work-${Date.now()}`);
    const remote = remoteUrl(server, owner.login, name, owner.token);
    await git.git(['remote', 'add', 'origin', remote], { cwd: work });
    await git.commit(work, 'initial', files);
    await git.git(['push', '--quiet', 'origin', 'main'], { cwd: work });
    return new PullRepo(server, git, owner, created.body.id, name, work, remote);
  }

  /** Runs git in the work tree; returns stdout (throws with stderr on failure). */
  run(args: string[], env?: Record<string, string>): Promise<string> {
    return this.git.git(args, { cwd: this.work, env });
  }

  /** Checks out `branch` (created from `from`, default main, when it does not exist yet). */
  async checkout(branch: string, from = 'main'): Promise<void> {
    const exists = (await this.git.run(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { cwd: this.work })).code === 0;
    await this.run(exists ? ['checkout', '--quiet', branch] : ['checkout', '--quiet', '-b', branch, from]);
  }

  /**
   * Commits `files` (null deletes) on `branch` (created from main if needed) and returns the sha.
   * Does not push. `author` sets another author (name, email, and optionally a date git accepts).
   */
  async commit(
    branch: string,
    message: string,
    files: Record<string, string | null>,
    author?: { name: string; email: string; date?: string },
  ): Promise<string> {
    await this.checkout(branch);
    const env = author
      ? { GIT_AUTHOR_NAME: author.name, GIT_AUTHOR_EMAIL: author.email, ...(author.date ? { GIT_AUTHOR_DATE: author.date } : {}) }
      : undefined;
    return this.git.commit(this.work, message, files, env);
  }

  /** Merges `branch` into main in the work tree (`git merge --no-ff`, a merge made outside the API); returns the new main tip. Does not push. */
  async mergeLocally(branch: string): Promise<string> {
    await this.checkout('main');
    await this.run(['merge', '--quiet', '--no-ff', '--no-edit', branch]);
    return (await this.run(['rev-parse', 'HEAD'])).trim();
  }

  /** Pushes branches (refspecs) with the owner's token, or another client's. */
  async push(refspecs: string[], as?: Client & { login: string }, extra: string[] = []): Promise<void> {
    const url = as ? remoteUrl(this.server, this.owner.login, this.name, as.token) : 'origin';
    await this.run(['push', '--quiet', ...extra, url, ...refspecs]);
  }

  /** The sha a branch has on the server (via the REST/GraphQL-free route: ls-remote with the real client). */
  async remoteSha(branch: string): Promise<string | null> {
    const out = await this.run(['ls-remote', 'origin', `refs/heads/${branch}`]);
    return out.split(/\s+/)[0] || null;
  }

  /** Fetches from the server and returns `git log` of a ref as parsed records, newest first. */
  async history(
    ref: string,
    limit = 50,
  ): Promise<
    Array<{ sha: string; parents: string[]; author: string; authorDate: string; committer: string; subject: string; body: string }>
  > {
    await this.run(['fetch', '--quiet', 'origin']);
    const out = await this.run([
      'log',
      `--max-count=${limit}`,
      '-z',
      '--format=%H%x1f%P%x1f%an <%ae>%x1f%aI%x1f%cn <%ce>%x1f%s%x1f%b',
      ref,
    ]);
    return out
      .split('\0')
      .filter(Boolean)
      .map((record) => {
        const [sha, parents, author, authorDate, committer, subject, body] = record.replace(/^\n/, '').split('\x1f') as string[];
        return {
          sha: sha!,
          parents: parents ? parents.split(' ') : [],
          author: author!,
          authorDate: authorDate!,
          committer: committer!,
          subject: subject!,
          body: body!,
        };
      });
  }

  /** A file's content at a ref on the server (after a fetch), or null when it is not there. */
  async fileAt(ref: string, path: string): Promise<string | null> {
    await this.run(['fetch', '--quiet', 'origin']);
    const result = await this.git.run(['show', `${ref}:${path}`], { cwd: this.work });
    return result.code === 0 ? result.stdout : null;
  }

  /** Opens a pull request as `as` (default: the owner); returns the response. */
  open(body: Record<string, unknown>, as: Client = this.owner) {
    return as.post(`/repos/${this.id}/pulls`, body);
  }

  get(number: number, as: Client = this.owner) {
    return as.get(`/repos/${this.id}/pulls/${number}`);
  }

  /** Waits until the pull request's mergeability is known and returns the record. */
  async mergeable(number: number, timeoutMs = 10_000): Promise<any> {
    return eventually(
      async () => {
        const res = await this.get(number);
        return res.body?.mergeable !== null && res.body?.mergeable !== undefined ? res.body : null;
      },
      timeoutMs,
      `mergeability of #${number}`,
    );
  }
}
