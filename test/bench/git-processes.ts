/**
 * git processes the service starts for one push to a pull request's head: its own server whose PATH
 * leads `git` through a shim that logs each command line, then execs the real git. What git itself
 * starts below those (receive-pack's index-pack, hooks) finds git on git's exec path, not through
 * the shim: the figure is the commands Cairn runs, which is what its own code decides.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { adminClient } from '../support/client.js';
import type { GitSandbox } from '../support/git.js';
import { PullRepo } from '../support/pulls.js';
import { CairnServer, sleep } from '../support/server.js';

/** How long the log must stay still for the work a push started (recording, mergeability) to count as done. */
const QUIET_MS = 1_000;

export interface ProcessCount {
  pushes: number;
  /** git processes per push, all commands together. */
  perPush: number;
  /** Per push, by git subcommand. */
  byCommand: Record<string, number>;
}

/** The subcommand of a logged command line (`-c name=value` and other options before it skipped). */
function subcommand(line: string): string {
  const args = line.split(/\s+/);
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-c' || args[i] === '-C') i++;
    else if (!args[i]!.startsWith('-')) return args[i]!;
  }
  return '?';
}

async function lines(log: string): Promise<string[]> {
  return (await fs.readFile(log, 'utf8').catch(() => '')).split('\0').filter(Boolean);
}

/** Waits until nothing new has been logged for QUIET_MS (the background work after a push is over). */
async function quiet(log: string): Promise<string[]> {
  let seen = -1;
  for (;;) {
    const now = await lines(log);
    if (now.length === seen) return now;
    seen = now.length;
    await sleep(QUIET_MS); // stillness over time is what is measured here
  }
}

export async function countGitProcessesPerPush(git: GitSandbox, pushes: number): Promise<ProcessCount> {
  const shims = git.path('git-shim');
  await fs.mkdir(shims, { recursive: true });
  const log = path.join(shims, 'commands.log');
  const realGit = execFileSync('sh', ['-c', 'command -v git']).toString().trim();
  const shim = path.join(shims, 'git');
  // One record a command, NUL-terminated (arguments may hold newlines: a commit message), in one write.
  await fs.writeFile(shim, `#!/bin/sh\nprintf '%.300s\\0' "$*" >> '${log}'\nexec '${realGit}' "$@"\n`);
  await fs.chmod(shim, 0o755);

  const server = await CairnServer.start({ embedded: true, env: { PATH: `${shims}:${process.env.PATH}` } });
  try {
    const admin = Object.assign(adminClient(server), { login: 'admin' });
    const repo = await PullRepo.create(server, git, admin, 'processes');
    await repo.commit('topic', 'first', { 'topic.txt': 'first\n' });
    await repo.run(['push', '--quiet', 'origin', 'topic']);
    const number = (await admin.post(`/repos/${repo.id}/pulls`, { title: 'Topic', head: 'topic' })).body.number;
    const settled = async (sha: string) => {
      for (;;) {
        const pr = (await admin.get(`/repos/${repo.id}/pulls/${number}`)).body;
        if (pr.head.sha === sha && pr.mergeable !== null) return;
        await sleep(20);
      }
    };
    await settled(await repo.run(['rev-parse', 'topic']).then((out) => out.trim()));
    const before = (await quiet(log)).length;
    for (let i = 0; i < pushes; i++) {
      const sha = await repo.commit('topic', `step ${i}`, { [`steps/${i}.txt`]: `${i}\n` });
      await repo.run(['push', '--quiet', 'origin', 'topic']);
      await settled(sha);
      await quiet(log); // one push's work at a time, as a pusher who waits for CI would see it
    }
    const measured = (await quiet(log)).slice(before);
    const byCommand: Record<string, number> = {};
    for (const line of measured) byCommand[subcommand(line)] = (byCommand[subcommand(line)] ?? 0) + 1 / pushes;
    return { pushes, perPush: measured.length / pushes, byCommand };
  } finally {
    await server.destroy();
  }
}
