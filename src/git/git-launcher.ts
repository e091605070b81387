import { spawn } from 'node:child_process';

/**
 * The helper process that starts git commands for the service (see
 * git-launcher-host.ts). It receives `{id, args, cwd, input, env}` over IPC,
 * runs git (never a shell) and answers `{id, code, stdout, stderr}`. It ends
 * with the service: when the IPC channel closes, it exits.
 */
interface Request {
  id: number;
  args: string[];
  cwd?: string;
  input?: Uint8Array | string;
  env?: Record<string, string | undefined>;
}

process.on('message', (request: Request) => {
  const child = spawn('git', request.args, {
    cwd: request.cwd,
    env: { ...process.env, GIT_TERMINAL_PROMPT: '0', ...request.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const answer = (code: number | null, stderr: string) => process.send?.({ id: request.id, code, stdout: Buffer.concat(out), stderr });
  child.on('error', (error) => answer(null, String(error)));
  child.on('close', (code) => answer(code, Buffer.concat(err).toString('utf8')));
  child.stdin.on('error', () => undefined); // git may exit before reading all input
  child.stdin.end(request.input ?? '');
});
process.on('disconnect', () => process.exit(0));
