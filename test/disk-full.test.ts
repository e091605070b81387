import { gql } from '@urql/core';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * The data dir is a small file system (a 128 MiB tmpfs: the embedded PostgreSQL, the repositories
 * and spooled bodies all in it) that a push fills, and a runaway file fills to the last byte; then
 * the same with the database on another disk, so that git meets the full disk first. While it
 * is full: pushes are refused by git, saying why; API writes answer 507 `insufficient_storage` (REST
 * and GraphQL), never 500, and change nothing; a repository that could not be created leaves no
 * directory behind; `/readyz` and the metrics say so. Once space is freed the service recovers by
 * itself: the first write succeeds within seconds, and every delivery the receiver answered is
 * recorded as succeeded, none sent twice.
 */
const MiB = 1024 * 1024;
let receiver: Receiver;
let git: GitSandbox;
const mounts: string[] = [];

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error('this test mounts a tmpfs: it runs as root (as CI does)');
  [receiver, git] = await Promise.all([Receiver.start(), GitSandbox.create()]);
});
afterAll(async () => {
  await Promise.all([receiver?.close(), git?.cleanup()]);
  for (const mount of mounts) {
    execFileSync('umount', ['-l', mount]);
    await fs.rmdir(mount);
  }
});

/** A 128 MiB tmpfs for a data dir (unmounted after the tests). */
async function smallDisk(): Promise<string> {
  const mount = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=128m,mode=0755', 'tmpfs', mount]);
  mounts.push(mount);
  return mount;
}

/** The repository directories on a data dir (not the file naming the site). */
const repositoryDirs = async (mount: string) =>
  (await fs.readdir(path.join(mount, 'repositories'))).filter((name) => name.endsWith('.git'));

const freeBytes = async (mount: string) => {
  const stats = await fs.statfs(mount);
  return stats.bavail * stats.bsize;
};

/** Fills what is left of the file system with one file, as a runaway log would. */
async function fillUp(file: string): Promise<void> {
  const handle = await fs.open(file, 'w');
  try {
    // MiB writes until one fails, then pages: not one byte more fits.
    for (const size of [MiB, 4096]) {
      try {
        for (;;) await handle.write(Buffer.alloc(size));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    await handle.close();
  }
}

test('a full disk answers 507 and changes nothing; freeing space brings the service back by itself', async () => {
  const mount = await smallDisk();
  // No maintenance while the test runs: repacking the big push needs as much space again, and on a
  // slow run it came due (10 s after the push) and took the space the test frees for its own writes.
  const env = { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback', CAIRN_GIT_MAINTENANCE_DELAY: '5m' };
  const server = await CairnServer.start({ embedded: true, dataDir: mount, env });
  try {
    await fullEmbedded(server, mount);
  } finally {
    await server.destroy();
  }
});

async function fullEmbedded(server: CairnServer, mount: string): Promise<void> {
  const owner = await createUser(adminClient(server), 'filler', ['repo', 'admin:repo_hook']);
  const repo = (await owner.post('/repos', { name: 'full' })).body.id as string;
  await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/hook'), events: ['issues', 'push'] });
  const remote = remoteUrl(server, 'filler', 'full', owner.token);
  const work = await git.init('full');

  // A push takes most of the space left (a blob git cannot compress), a runaway file the rest.
  const big = Math.max(0, (await freeBytes(mount)) - 24 * MiB);
  const before = await git.commit(work, 'a large file', { 'data.bin': randomBytes(big) });
  await git.git(['push', '--quiet', remote, 'HEAD:main'], { cwd: work });
  await fillUp(path.join(mount, 'runaway.log'));
  expect(await freeBytes(mount)).toBe(0);

  // A push is refused by git, saying why, and moves nothing.
  await git.commit(work, 'one more', { 'more.bin': randomBytes(2 * MiB) });
  const push = await git.run(['push', remote, 'HEAD:main'], { cwd: work });
  expect(push.code).not.toBe(0);
  expect(push.stderr).toMatch(/No space left on device|unpack failed|index-pack/i);
  expect(await git.git(['ls-remote', remote, 'refs/heads/main'])).toMatch(new RegExp(`^${before}\\s`));

  // API writes: 201 while PostgreSQL still finds room in its pages, then 507, never anything else.
  const statuses: number[] = [];
  for (let i = 0; i < 200 && !statuses.includes(507); i++) {
    const res = await owner.post(`/repos/${repo}/issues`, { title: `while full ${i}` });
    statuses.push(res.status);
    if (res.status === 507) {
      expect(res.body.error.code).toBe('insufficient_storage');
      expect(res.body.error.message).toMatch(/disk is full/);
      expect(res.headers.get('retry-after')).toBeTruthy();
    }
  }
  expect(statuses.filter((status) => status !== 201 && status !== 507)).toEqual([]);
  expect(statuses).toContain(507);
  const acknowledged = statuses.filter((status) => status === 201).length;

  // Through a GraphQL client (urql): the error's code, and the HTTP status a retrying client reads.
  const urql = urqlClient(server, owner.token);
  const graphql = await urql
    .mutation(
      gql`
        mutation ($input: CreateIssueInput!) {
          createIssue(input: $input) {
            number
          }
        }
      `,
      { input: { repositoryId: repo, title: 'through GraphQL while full' } },
    )
    .toPromise();
  expect(graphql.error?.graphQLErrors[0]?.extensions?.code).toBe('INSUFFICIENT_STORAGE');
  expect((graphql.error?.response as Response | undefined)?.status).toBe(507);

  // A repository that cannot be made whole is not made at all: no row, no directory.
  const created = await owner.post('/repos', { name: 'born-full', auto_init: true });
  expect(created.status).toBe(507);
  expect((await owner.get('/repos/filler/born-full/resolve')).status).toBe(404);
  expect(await repositoryDirs(mount)).toEqual([`${repo}.git`]);

  const ready = await fetch(`${server.url}/readyz`);
  expect(ready.status).toBe(503);
  expect(await ready.json()).toEqual({ status: 'not_ready', reason: 'disk_full' });
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toMatch(/^cairn_disk_available_bytes\{dir="data"\} 0$/m);
  expect(metrics).toMatch(/^cairn_disk_full_refusals_total\{store="database"\} [1-9]/m);

  // Space is freed: the next writes succeed within seconds, without a restart.
  await fs.rm(path.join(mount, 'runaway.log'));
  const freed = Date.now();
  await eventually(
    async () => (await owner.post(`/repos/${repo}/issues`, { title: 'after' })).status === 201,
    10_000,
    'a write to succeed',
  );
  const recoveredMs = Date.now() - freed;
  expect(recoveredMs).toBeLessThan(10_000);
  // Ready again once no write has been refused for 5 s.
  await eventually(async () => (await fetch(`${server.url}/readyz`)).status === 200, 7_000, '/readyz to answer 200');
  await git.git(['push', '--quiet', remote, 'HEAD:main'], { cwd: work });
  expect((await owner.post('/repos', { name: 'born-after', auto_init: true })).status).toBe(201);

  // Nothing acknowledged was lost, nothing refused was half made.
  const issues = await owner.get(`/repos/${repo}/issues?state=all&limit=100`);
  expect(issues.body.total).toBe(acknowledged + 1);
  // Every delivery the receiver answered 200 is recorded as succeeded, and none was sent twice.
  const expected = acknowledged + 1 + 2; // the issues, the first push and the last
  await receiver.waitFor('/hook', expected, 15_000);
  const ids = receiver.at('/hook').map((request) => request.headers['x-cairn-delivery']);
  expect(new Set(ids).size).toBe(ids.length);
  const hook = (await owner.get(`/repos/${repo}/webhooks`)).body[0].id as string;
  await eventually(
    async () => (await owner.get(`/repos/${repo}/webhooks/${hook}/deliveries?status=succeeded&limit=1`)).body.total === expected,
    15_000,
    'every delivery to be recorded as succeeded',
  );
  // The refusals are logged as the site's condition (at most one line in a while), never as a failed request.
  const errors = server.logs().filter((line) => (line.level as number) >= 50);
  expect(errors.map((line) => line.msg)).toContain('disk full: a write was refused, answering 507');
  expect(errors.filter((line) => line.msg !== 'disk full: a write was refused, answering 507')).toEqual([]);
  console.log(`disk full: ${acknowledged} writes before the first 507; first write ${recoveredMs} ms after space was freed`);
}

test('with the database elsewhere, a repository git cannot create on the full disk answers 507 and leaves nothing behind', async () => {
  const mount = await smallDisk();
  const server = await CairnServer.start({ dataDir: mount }); // on the shared test cluster: its disk has room
  try {
    const owner = await createUser(adminClient(server), 'gitfull', ['repo']);
    const repo = (await owner.post('/repos', { name: 'before' })).body.id as string;
    // Words a client sends are never read as the disk's condition: a GraphQL error quoting them stays 400.
    const quoted = await owner.graphql(`{ repository(id: "${repo}") { issues(state: "x: No space left on device") { totalCount } } }`);
    expect(quoted.status).toBe(400);
    // Exported at 0 from start-up; still 0: nothing was refused for a full disk.
    expect(await (await fetch(`${server.url}/metrics`)).text()).not.toMatch(/^cairn_disk_full_refusals_total\{[^}]*\} [1-9]/m);
    await fillUp(path.join(mount, 'runaway.log'));

    for (const autoInit of [true, false]) {
      const created = await owner.post('/repos', { name: `born-full-${autoInit}`, auto_init: autoInit });
      expect(created.status).toBe(507);
      expect(created.body.error).toMatchObject({ code: 'insufficient_storage', message: expect.stringMatching(/server's disk is full/) });
      expect((await owner.get(`/repos/gitfull/born-full-${autoInit}/resolve`)).status).toBe(404);
    }
    expect(await repositoryDirs(mount)).toEqual([`${repo}.git`]);
    // What needs only the database still works.
    expect((await owner.post(`/repos/${repo}/issues`, { title: 'the database has room' })).status).toBe(201);
    expect(await (await fetch(`${server.url}/readyz`)).json()).toEqual({ status: 'not_ready', reason: 'disk_full' });
    expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/^cairn_disk_full_refusals_total\{store="files"\} [1-9]/m);

    await fs.rm(path.join(mount, 'runaway.log'));
    expect((await owner.post('/repos', { name: 'born-after', auto_init: true })).status).toBe(201);
    await eventually(async () => (await fetch(`${server.url}/readyz`)).status === 200, 7_000, '/readyz to answer 200');
    const clone = await git.run(['clone', '--quiet', remoteUrl(server, 'gitfull', 'born-after', owner.token), git.path('born-after')]);
    expect(clone.code).toBe(0);
  } finally {
    await server.destroy();
  }
});
