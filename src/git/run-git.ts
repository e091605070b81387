import { existsSync } from 'node:fs';
import { DomainError, notFound } from '../errors/domain-error.js';
import { isNoSpace } from '../errors/no-space.js';
import { gitBounds } from './git-bounds.js';
import { gitLauncher, type ExceededBound } from './git-launcher-host.js';

export interface GitResult {
  stdout: string;
  stderr: string;
}

/** Output any one command may produce in memory, unless it asks for less. */
const MAX_GIT_OUTPUT_BYTES = 64 * 1024 * 1024;

export interface GitOptions {
  cwd?: string;
  input?: string | Buffer;
  env?: NodeJS.ProcessEnv;
  /** Output kept at most; a command that writes more fails with GitLimitExceeded. Default MAX_GIT_OUTPUT_BYTES. */
  maxOutputBytes?: number;
  /** Deadline of long work (maintenance); every other command has CAIRN_GIT_TIMEOUT's. */
  timeoutMs?: number;
}

export class GitCommandError extends Error {
  constructor(
    readonly args: string[],
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(`git ${args[0]} failed (exit ${code}): ${stderr.trim().slice(0, 500)}`);
  }
}

/** What git was stopped at: its deadline, its memory, or output past what the caller may hold. */
type Bound = ExceededBound | 'output';

/**
 * git was stopped at one of its bounds (git-bounds.ts) doing what was asked of this repository: its
 * deadline, its memory, or an answer larger than the caller may hold. A DomainError: a request that
 * meets it is answered 422, since asking again the same way meets the same bound.
 */
export class GitLimitExceeded extends DomainError {
  constructor(
    readonly args: string[],
    readonly bound: Bound,
    /** The bound met: ms for a deadline, bytes for memory or output. */
    limit: number,
  ) {
    const MB = 1024 ** 2;
    super(
      'GIT_LIMIT_EXCEEDED',
      bound === 'deadline'
        ? `git needed more than ${Math.round(limit / 1000)} s for this on this repository and was stopped`
        : bound === 'memory'
          ? `git needed more than ${Math.round(limit / MB)} MB of memory for this on this repository and was stopped`
          : `git's answer for this on this repository is larger than ${Math.round(limit / MB)} MB`,
    );
  }
}

/** The error of a command stopped at its deadline or memory bound, naming the bound it had. */
export function stoppedAt(args: string[], bound: ExceededBound, options: Pick<GitOptions, 'timeoutMs'>): GitLimitExceeded {
  return new GitLimitExceeded(args, bound, bound === 'deadline' ? (options.timeoutMs ?? gitBounds().timeoutMs) : gitBounds().memoryBytes);
}

/**
 * Whether git ran and failed on the repository as it is (a missing object, output or time or memory
 * past its bound), rather than being killed, not starting or finding the disk full: trying the same
 * command again fails again.
 */
export function gitFailedOn(error: unknown): boolean {
  return error instanceof GitLimitExceeded || (error instanceof GitCommandError && error.code !== null && !isNoSpace(error));
}

/**
 * Runs the real `git` binary with arguments (never a shell) and optional
 * stdin, for the small administrative commands whose output fits in memory
 * (bounded: see GitOptions.maxOutputBytes). Pack transfer streams through its
 * own spawn in the transport module.
 */
export async function runGit(args: string[], options: GitOptions = {}): Promise<GitResult> {
  const { stdout, stderr } = await runGitRaw(args, options);
  return { stdout: stdout.toString('utf8'), stderr };
}

/**
 * `runGit` for commands whose other exit codes are answers, not failures
 * (`merge-tree` exits 1 with the conflicts on stdout): resolves with the
 * exit code when it is one of `accepted`.
 */
export async function runGitAccepting(args: string[], accepted: number[], options: GitOptions = {}): Promise<GitResult & { code: number }> {
  const { stdout, stderr, code } = await spawnGit(args, options);
  if (code === null || !accepted.includes(code)) throw failure(args, code, stderr, options.cwd);
  return { stdout: stdout.toString('utf8'), stderr, code };
}

/**
 * At most the first `bytes` bytes of a command's output (it is stopped there), for a prefix of
 * something possibly huge; `truncated` says whether there was more. GitLimitExceeded when git is
 * stopped at its deadline or memory bound first.
 */
export async function runGitHead(
  args: string[],
  bytes: number,
  options: Omit<GitOptions, 'maxOutputBytes'> = {},
): Promise<{ stdout: Buffer; truncated: boolean }> {
  const { stdout, truncated, exceeded } = await tryGitHead(args, bytes, options);
  if (exceeded) throw stoppedAt(args, exceeded, options);
  return { stdout, truncated };
}

/**
 * `runGitHead` for a caller that can do with what git wrote before a bound stopped it (listing
 * paths, commit by commit): `exceeded` says which bound, instead of an error.
 */
export async function tryGitHead(
  args: string[],
  bytes: number,
  options: Omit<GitOptions, 'maxOutputBytes'> = {},
): Promise<{ stdout: Buffer; truncated: boolean; exceeded: ExceededBound | null }> {
  const launched = await gitLauncher.run(args, { ...options, maxOutputBytes: bytes });
  if (launched.code !== 0 && !launched.truncated && !launched.exceeded) throw failure(args, launched.code, launched.stderr, options.cwd);
  return { stdout: launched.stdout, truncated: launched.truncated, exceeded: launched.exceeded };
}

/** `runGit` with stdout as bytes (file contents, which need not be text). */
export async function runGitRaw(args: string[], options: GitOptions = {}): Promise<{ stdout: Buffer; stderr: string }> {
  const { stdout, stderr, code } = await spawnGit(args, options);
  if (code !== 0) throw failure(args, code, stderr, options.cwd);
  return { stdout, stderr };
}

/**
 * Why a command failed. A repository deleted while a request about it ran takes its directory with
 * it (renamed away, then removed: GitStorage.remove): git either cannot start there or fails midway
 * ("not a git repository"). Either way that is the repository not being found, not a failure.
 */
function failure(args: string[], code: number | null, stderr: string, cwd: string | undefined): Error {
  if (cwd && !existsSync(cwd)) return notFound('repository');
  return new GitCommandError(args, code, stderr);
}

/** Every command of this module starts through the launcher (git-launcher-host.ts), never a shell. */
async function spawnGit(args: string[], options: GitOptions): Promise<{ stdout: Buffer; stderr: string; code: number | null }> {
  const limit = options.maxOutputBytes ?? MAX_GIT_OUTPUT_BYTES;
  const launched = await gitLauncher.run(args, { ...options, maxOutputBytes: limit });
  if (launched.exceeded) throw stoppedAt(args, launched.exceeded, options);
  if (launched.truncated) throw new GitLimitExceeded(args, 'output', limit);
  return launched;
}
