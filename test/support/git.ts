import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { CairnServer } from './server.js';
import { query } from './server.js';

export interface GitRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The real git client in a sandbox: its own HOME (so no user or system
 * configuration interferes), no prompts, English messages. Work trees live
 * in the sandbox directory.
 */
export class GitSandbox {
  private constructor(readonly dir: string) {}

  static async create(): Promise<GitSandbox> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-git-'));
    await fs.writeFile(
      path.join(dir, '.gitconfig'),
      '[user]\n\tname = Test User\n\temail = test@example.test\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n',
    );
    return new GitSandbox(dir);
  }

  get env(): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      HOME: this.dir,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: '',
      LANG: 'C',
      LC_ALL: 'C',
    };
  }

  path(...parts: string[]): string {
    return path.join(this.dir, ...parts);
  }

  /** Runs git; never throws on a non-zero exit (the caller looks at `code`). */
  run(args: string[], options: { cwd?: string; input?: string | Buffer; env?: Record<string, string> } = {}): Promise<GitRun> {
    return new Promise((resolve, reject) => {
      const child = spawn('git', args, { cwd: options.cwd ?? this.dir, env: { ...this.env, ...options.env } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.on('error', () => undefined); // git may exit without reading its input
      child.stdin.end(options.input ?? '');
    });
  }

  /** Runs git and returns its stdout; throws with stderr when it fails. */
  async git(args: string[], options: { cwd?: string; input?: string | Buffer; env?: Record<string, string> } = {}): Promise<string> {
    const result = await this.run(args, options);
    if (result.code !== 0) throw new Error(`git ${args.join(' ')} failed (${result.code}):\n${result.stderr}`);
    return result.stdout;
  }

  /** A work tree inside the sandbox. */
  async init(name: string): Promise<string> {
    const dir = this.path(name);
    await this.git(['init', '--quiet', dir]);
    return dir;
  }

  /** Writes files (path → content; null deletes) and commits them all (`env`: another author, say). Returns the new commit's sha. */
  async commit(cwd: string, message: string, files: Record<string, string | Buffer | null>, env?: Record<string, string>): Promise<string> {
    for (const [file, content] of Object.entries(files)) {
      const target = path.join(cwd, file);
      if (content === null) {
        await fs.rm(target, { force: true });
      } else {
        await fs.mkdir(path.dirname(target), { recursive: true });
        await fs.writeFile(target, content);
      }
    }
    await this.git(['add', '--all'], { cwd });
    await this.git(['commit', '--quiet', '--allow-empty', '-m', message], { cwd, env });
    return (await this.git(['rev-parse', 'HEAD'], { cwd })).trim();
  }

  async cleanup(): Promise<void> {
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}

/** The clone URL of a repository on a test server, with a token as the Basic password (or none: anonymous). */
export function remoteUrl(server: CairnServer, owner: string, repo: string, token?: string): string {
  const base = new URL(server.url);
  if (token) {
    base.username = 'x';
    base.password = token;
  }
  return `${base.toString().replace(/\/$/, '')}/${owner}/${repo}.git`;
}

export interface RecordedEvent {
  id: string;
  type: string;
  action: string | null;
  payload: any;
}

/** The outbox rows of one repository recorded after `afterId`, oldest first. */
export function eventsOf(server: CairnServer, repositoryId: string, afterId = '0'): Promise<RecordedEvent[]> {
  return query<RecordedEvent>(
    server,
    'select id::text, type, action, payload from domain_events where repository_id = $1 and domain_events.id > $2 order by domain_events.id',
    [repositoryId, afterId],
  );
}

/** The id of the latest outbox row (to look at what happens after this point). */
export async function lastEventId(server: CairnServer): Promise<string> {
  const rows = await query<{ id: string | null }>(server, 'select max(id)::text as id from domain_events');
  return rows[0]?.id ?? '0';
}
