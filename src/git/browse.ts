import { invalid, notFound } from '../errors/domain-error.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';
import { isValidBranchName } from '../repositories/names.js';
import { peelToCommits } from './commits.js';
import { Blob, Branch, Commit, MAX_TREE_LISTING_MIB, Tag, TreeEntryType, type TreeEntryConnection } from './git.types.js';
import { jsonBytes } from './json-bytes.js';
import { objectSizes } from './object-sizes.js';
import { nulPage, ownCopy } from './own-strings.js';
import { GitCommandError, runGit, runGitHead, runGitRaw } from './run-git.js';

/** Blobs larger than this are described but their text is not returned. */
const MAX_BLOB_TEXT_BYTES = 1024 * 1024;
/**
 * git output one read for a page holds at most (ref lists, a page of commits): an answer past it is
 * GIT_LIMIT_EXCEEDED, not a process's worth of memory. Reads run in a few slots at once (concurrency.ts).
 */
const MAX_READ_BYTES = 8 * 1024 * 1024;

/**
 * Read-only views of a repository's git data for GraphQL (branches, tags,
 * history, trees, files). Every revision and path from a client is checked
 * before it reaches git, and passed where git cannot mistake it for an option.
 */

const COMMIT_FORMAT = '%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B';
const COMMIT_FIELDS = 10;

function parseCommits(output: string): Commit[] {
  const fields = output.split('\0');
  const commits: Commit[] = [];
  for (let i = 0; i + COMMIT_FIELDS <= fields.length; i += COMMIT_FIELDS) {
    const [sha, tree, parents, an, ae, ad, cn, ce, cd, body] = fields.slice(i, i + COMMIT_FIELDS) as string[];
    const message = body!.replace(/\n+$/, '');
    commits.push({
      sha: sha!,
      treeSha: tree!,
      parents: parents ? parents.split(' ') : [],
      author: { name: an!, email: ae!, date: ad! },
      committer: { name: cn!, email: ce!, date: cd! },
      message,
      messageHeadline: message.split('\n')[0]!,
    });
  }
  return commits;
}

/** Commits by sha, in one `git log --no-walk`. */
export async function readCommits(dir: string, shas: string[]): Promise<Map<string, Commit>> {
  const unique = [...new Set(shas)];
  if (!unique.length) return new Map();
  const { stdout } = await runGit(['log', '--no-walk=unsorted', '--stdin', '-z', `--format=${COMMIT_FORMAT}`], {
    cwd: dir,
    input: unique.join('\n') + '\n',
    maxOutputBytes: MAX_READ_BYTES,
  });
  return new Map(parseCommits(stdout).map((commit) => [commit.sha, commit]));
}

/**
 * The commit a client's revision names: a full sha, a branch or tag name, or
 * a full ref name. NOT_FOUND when there is none (an empty repository included).
 */
async function resolveCommit(dir: string, revision: string): Promise<string> {
  if (!isValidBranchName(revision)) throw invalid('ref', 'invalid_format', `"${revision.slice(0, 100)}" is not a branch, tag or commit`);
  try {
    const { stdout } = await runGit(['rev-parse', '--verify', '--quiet', '--end-of-options', `${revision}^{commit}`], { cwd: dir });
    return stdout.trim();
  } catch (error) {
    if (error instanceof GitCommandError) throw notFound('ref');
    throw error;
  }
}

/** A path inside the tree: `a/b/c` (surrounding slashes ignored); never `..`, `.`, empty parts, NUL or newline. */
function normalizePath(path: string): string {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return '';
  const parts = trimmed.split('/');
  if (trimmed.length > 4096 || /[\0\n]/.test(trimmed) || parts.some((part) => part === '' || part === '.' || part === '..')) {
    throw invalid('path', 'invalid_format', 'not a valid path in the repository');
  }
  return trimmed;
}

async function refs(dir: string, patterns: string[], sort: string, format: string): Promise<string[]> {
  const { stdout } = await runGit(['for-each-ref', `--sort=${sort}`, `--format=${format}%00`, ...patterns], {
    cwd: dir,
    maxOutputBytes: MAX_READ_BYTES,
  });
  // Each record ends with NUL + newline; messages may contain newlines but never NUL.
  return stdout.split('\0\n').filter(Boolean);
}

/** Branches in name order. */
export async function listBranches(dir: string, defaultBranch: string, page: Page): Promise<Connection<Branch>> {
  const all = (await refs(dir, ['refs/heads/'], 'refname', '%(objectname) %(refname)')).map((line) => ({
    sha: line.slice(0, 40),
    ref: line.slice(41),
  }));
  const slice = all.slice(page.offset, page.offset + page.limit);
  const commits = await readCommits(
    dir,
    slice.map((branch) => branch.sha),
  );
  const nodes = slice.map((branch) => {
    // Copies: the listing's views would keep all of it (up to MAX_READ_BYTES) as long as the answer.
    const [ref, sha] = [ownCopy(branch.ref), ownCopy(branch.sha)];
    const name = ref.slice('refs/heads/'.length);
    return { name, ref, sha, isDefault: name === defaultBranch, commit: commits.get(sha)! };
  });
  return connection(nodes, all.length, page);
}

/** Tags, newest first (by the tag's date, or its commit's for a lightweight tag); the messages of the page's only. */
export async function listTags(dir: string, page: Page): Promise<Connection<Tag>> {
  const all = (await refs(dir, ['refs/tags/'], '-creatordate', '%(objectname)%00%(objecttype)%00%(refname)')).map((record) => {
    const [sha, type, ref] = record.split('\0') as [string, string, string];
    return { sha, ref, annotated: type === 'tag' };
  });
  // Copies: the listing's views would keep all of it (up to MAX_READ_BYTES) as long as the answer.
  const slice = all.slice(page.offset, page.offset + page.limit).map((tag) => ({ ...tag, sha: ownCopy(tag.sha), ref: ownCopy(tag.ref) }));
  const annotated = slice.filter((tag) => tag.annotated).map((tag) => tag.ref);
  // Tag names hold no glob characters (git refuses them), so each pattern is the ref itself (or a prefix of others, dropped here).
  const messages = new Map(
    annotated.length
      ? (await refs(dir, annotated, 'refname', '%(refname)%00%(contents)')).map((record) => {
          const [ref, contents] = record.split('\0') as [string, string];
          return [ref, contents.replace(/\n+$/, '')];
        })
      : [],
  );
  const peeled = await peelToCommits(
    dir,
    slice.map((tag) => tag.sha),
  );
  const commits = await readCommits(
    dir,
    [...peeled.values()].filter((sha): sha is string => !!sha),
  );
  const nodes = slice.map((tag) => {
    const commitSha = peeled.get(tag.sha);
    return {
      ...tag,
      name: tag.ref.slice('refs/tags/'.length),
      message: tag.annotated ? (messages.get(tag.ref) ?? '') : null,
      commit: (commitSha && commits.get(commitSha)) || null,
    };
  });
  return connection(nodes, all.length, page);
}

/** History from a revision, newest first (git log order). */
export async function listCommits(dir: string, revision: string, page: Page): Promise<Connection<Commit>> {
  const tip = await resolveCommit(dir, revision);
  const [count, log] = await Promise.all([
    runGit(['rev-list', '--count', tip], { cwd: dir }),
    page.limit === 0
      ? Promise.resolve({ stdout: '' })
      : runGit(['log', '-z', `--format=${COMMIT_FORMAT}`, `--skip=${page.offset}`, `--max-count=${page.limit}`, tip], {
          cwd: dir,
          maxOutputBytes: MAX_READ_BYTES,
        }),
  ]);
  return connection(parseCommits(log.stdout), Number(count.stdout.trim()), page);
}

/**
 * A page of the entries of the directory at `path` (the root when empty), in git's order. One
 * `ls-tree` reads at most MAX_TREE_LISTING_MIB of entries (a directory may hold millions: past that
 * the listing is `truncated`); only the page's blobs have their sizes looked up. NOT_FOUND when the
 * path is missing or not a directory.
 */
export async function listTree(dir: string, revision: string, path: string, page: Page): Promise<TreeEntryConnection> {
  const tip = await resolveCommit(dir, revision);
  const at = normalizePath(path);
  const args = ['ls-tree', '-z', '--end-of-options', `${tip}:${at}`];
  let listing: Awaited<ReturnType<typeof runGitHead>>;
  try {
    listing = await runGitHead(args, MAX_TREE_LISTING_MIB * 1024 * 1024, { cwd: dir });
  } catch (error) {
    if (error instanceof GitCommandError) throw notFound('tree');
    throw error;
  }
  const { total, records } = nulPage(listing.stdout, page.offset, page.limit);
  // "<mode> <type> <sha>\t<name>" per entry.
  const entries = records.map((record) => {
    const tab = record.indexOf('\t');
    const [mode, type, sha] = record.slice(0, tab).split(' ') as [string, string, string];
    const name = record.slice(tab + 1);
    return { name, path: at ? `${at}/${name}` : name, type: type as TreeEntryType, mode, sha, size: null as number | null };
  });
  const sizes = await objectSizes(
    dir,
    entries.filter((entry) => entry.type === TreeEntryType.BLOB).map((entry) => entry.sha),
  );
  for (const entry of entries) if (entry.type === TreeEntryType.BLOB) entry.size = sizes.get(entry.sha) ?? null;
  return { ...connection(entries, total, page), truncated: listing.truncated };
}

/** The file at `path`. NOT_FOUND when it is missing or not a file. */
export async function readBlob(dir: string, revision: string, path: string): Promise<Blob> {
  const tip = await resolveCommit(dir, revision);
  const at = normalizePath(path);
  if (!at) throw notFound('blob');
  const { stdout } = await runGit(['cat-file', '--batch-check=%(objectname) %(objecttype) %(objectsize)'], {
    cwd: dir,
    input: `${tip}:${at}\n`,
  });
  const match = /^([0-9a-f]{40}) blob (\d+)$/.exec(stdout.trim());
  if (!match) throw notFound('blob');
  const sha = match[1]!;
  const size = Number(match[2]);
  if (size > MAX_BLOB_TEXT_BYTES) return { path: at, sha, size, isBinary: false, text: null };
  const { stdout: content } = await runGitRaw(['cat-file', 'blob', sha], { cwd: dir });
  // git's own test for binary content: a NUL in the first 8000 bytes. Invalid UTF-8 counts too.
  let text: string | null = null;
  if (!content.subarray(0, 8000).includes(0)) {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(content);
    } catch {
      text = null;
    }
  }
  // Text is answered up to 1 MiB of JSON: control characters take six bytes there, so twenty blobs
  // of them would make an answer of 120 MB, serialised in one go on the event loop.
  if (text !== null && jsonBytes(text) > MAX_BLOB_TEXT_BYTES) return { path: at, sha, size, isBinary: false, text: null };
  return { path: at, sha, size, isBinary: text === null, text };
}
