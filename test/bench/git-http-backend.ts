/**
 * git's own HTTP server as a benchmark's anchor: `git http-backend` behind Debian's lighttpd, run
 * as git's documentation sets it up (mod_cgi, GIT_PROJECT_ROOT, every repository exported), reading
 * the same bare repositories the service serves. lighttpd streams the backend's answer as it comes
 * (`server.stream-response-body`) instead of holding the whole pack first.
 *
 * When lighttpd is missing it is installed (`apt-get install lighttpd`) if this process may, or the
 * anchor is skipped with the command that installs it.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { freePort, sleep } from '../support/server.js';

const BACKEND = spawnSync('git', ['--exec-path'], { encoding: 'utf8' }).stdout.trim() + '/git-http-backend';

function lighttpdPath(): string | null {
  const found = spawnSync('sh', ['-c', 'command -v lighttpd || ls /usr/sbin/lighttpd'], { encoding: 'utf8' }).stdout.trim();
  return found ? found.split('\n')[0]! : null;
}

function installLighttpd(): string | null {
  if (process.getuid?.() !== 0) return null;
  spawnSync('apt-get', ['update', '-q'], { stdio: 'ignore' }); // a fresh image has no package lists
  const installed = spawnSync('apt-get', ['install', '-y', '-q', 'lighttpd'], { stdio: 'ignore' });
  return installed.status === 0 ? lighttpdPath() : null;
}

export interface GitHttpBackend {
  /** The base URL: a repository `<name>.git` of the project root is `${url}/<name>.git`. */
  url: string;
  stop(): Promise<void>;
}

/** Starts lighttpd serving `projectRoot` through git http-backend at `/git`; null (with why, on stderr) when it cannot. */
export async function startGitHttpBackend(workDir: string, projectRoot: string): Promise<GitHttpBackend | null> {
  const lighttpd = lighttpdPath() ?? installLighttpd();
  if (!lighttpd) {
    console.error('git http-backend anchor skipped: lighttpd is not installed (apt-get install lighttpd)');
    return null;
  }
  const dir = path.join(workDir, 'lighttpd');
  await fs.mkdir(path.join(dir, 'www'), { recursive: true });
  const port = await freePort();
  const config = path.join(dir, 'lighttpd.conf');
  await fs.writeFile(
    config,
    [
      `server.document-root = "${dir}/www"`,
      `server.bind = "127.0.0.1"`,
      `server.port = ${port}`,
      `server.errorlog = "${dir}/error.log"`,
      `server.modules = ("mod_alias", "mod_cgi", "mod_setenv")`,
      `server.stream-response-body = 1`,
      `alias.url = ("/git" => "${BACKEND}")`,
      `$HTTP["url"] =~ "^/git" {`,
      `  cgi.assign = ("" => "")`,
      `  setenv.add-environment = ("GIT_PROJECT_ROOT" => "${projectRoot}", "GIT_HTTP_EXPORT_ALL" => "")`,
      `}`,
    ].join('\n') + '\n',
  );
  const child = spawn(lighttpd, ['-D', '-f', config], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}/git`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await fetch(`http://127.0.0.1:${port}/`).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill();
      console.error(`git http-backend anchor skipped: lighttpd did not start (see ${dir}/error.log)`);
      return null;
    }
    await sleep(100);
  }
  return {
    url,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill();
      await exited;
    },
  };
}
