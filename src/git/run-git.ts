import { existsSync } from 'node:fs';
import { notFound } from '../errors/domain-error.js';
import { gitLauncher } from './git-launcher-host.js';

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
  /** Output kept at most; a command that writes more fails with GitOutputTooLarge. Default MAX_GIT_OUTPUT_BYTES. */
  maxOutputBytes?: number;
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

/**
 * Whether git ran and failed on the repository as it is (a missing object, output past its bound),
 * rather than being killed or not starting: trying the same command again fails again.
 */
export function gitFailedOn(error: unknown): boolean {
  return error instanceof GitOutputTooLarge || (error instanceof GitCommandError && error.code !== null);
}

/** A command wrote more than it was allowed to keep in memory; it was stopped. */
class GitOutputTooLarge extends GitCommandError {
  constructor(args: string[], limit: number) {
    super(args, null, `output past ${limit} bytes`);
  }
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
 * something possibly huge; `truncated` says whether there was more.
 */
export async function runGitHead(
  args: string[],
  bytes: number,
  options: Omit<GitOptions, 'maxOutputBytes'> = {},
): Promise<{ stdout: Buffer; truncated: boolean }> {
  const launched = await gitLauncher.run(args, { ...options, maxOutputBytes: bytes });
  if (launched.code !== 0 && !launched.truncated) throw failure(args, launched.code, launched.stderr, options.cwd);
  return { stdout: launched.stdout, truncated: launched.truncated };
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
  if (launched.truncated) throw new GitOutputTooLarge(args, limit);
  return launched;
}
