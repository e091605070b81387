import { spawn } from 'node:child_process';

export interface GitResult {
  stdout: string;
  stderr: string;
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
 * Runs the real `git` binary with arguments (never a shell) and optional
 * stdin, for the small administrative commands whose output fits in memory.
 * Pack transfer streams through its own spawn in the transport module.
 */
export function runGit(
  args: string[],
  options: { cwd?: string; input?: string | Buffer; env?: NodeJS.ProcessEnv } = {},
): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, {
      cwd: options.cwd,
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const result = { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
      if (code === 0) resolve(result);
      else reject(new GitCommandError(args, code, result.stderr));
    });
    child.stdin.on('error', () => undefined); // git may exit before reading all input
    child.stdin.end(options.input ?? '');
  });
}
