import fs from 'node:fs/promises';
import path from 'node:path';
import { adminClient, createUser, noreplyEmail } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId, remoteUrl } from './support/git.js';
import { CairnServer, query, sleep } from './support/server.js';

const ZERO = '0'.repeat(40);

let server: CairnServer;
let git: GitSandbox;
let alice: Awaited<ReturnType<typeof createUser>>;
let bob: Awaited<ReturnType<typeof createUser>>;
let hookFile: string;
let realHook: string;

beforeAll(async () => {
  [server, git] = await Promise.all([CairnServer.start({ detached: true }), GitSandbox.create()]);
  const admin = adminClient(server);
  alice = await createUser(admin, 'alice');
  bob = await createUser(admin, 'bob');
  hookFile = path.join(server.dataDir, 'git-hooks', 'post-receive');
  realHook = await fs.readFile(hookFile, 'utf8');
});
afterAll(async () => {
  await Promise.all([server.destroy(), git.cleanup()]);
});
afterEach(() => fs.writeFile(hookFile, realHook, { mode: 0o755 })); // a restart rewrites it too

const bare = (id: string) => path.join(server.dataDir, 'repositories', `${id}.git`);
const refOnDisk = async (id: string, ref: string) =>
  (await git.run(['rev-parse', '--verify', '--quiet', ref], { cwd: bare(id) })).stdout.trim();

/** A repository of alice's with bob as a writer, one pushed commit, and bob's clone of it. */
async function setUp(name: string) {
  const repo = (await alice.post('/repos', { name })).body as { id: string };
  await alice.put(`/repos/${repo.id}/collaborators/bob`, { permission: 'write' });
  const work = await git.init(`${name}-work`);
  await git.commit(work, 'base', { 'base.txt': 'base\n' });
  await git.git(['push', '--quiet', remoteUrl(server, 'alice', name, bob.token), 'main'], { cwd: work });
  await git.git(['remote', 'add', 'origin', remoteUrl(server, 'alice', name, bob.token)], { cwd: work });
  await git.git(['fetch', '--quiet', 'origin'], { cwd: work });
  return { id: repo.id, work, base: (await git.git(['rev-parse', 'HEAD'], { cwd: work })).trim() };
}

test('kill -9 between the ref update and the event write: start-up records the push, credited to its pusher', async () => {
  const repo = await setUp('interrupted');
  const one = await git.commit(repo.work, 'one', { 'one.txt': '1\n' });
  const two = await git.commit(repo.work, 'two', { 'two.txt': '2\n' });
  // The hook that would report the push now stalls, so the refs have moved and nothing is recorded.
  await fs.writeFile(hookFile, '#!/bin/sh\nsleep 60\n', { mode: 0o755 });
  const before = await lastEventId(server);
  const pushing = git.run(['push', 'origin', 'main'], { cwd: repo.work });
  const deadline = Date.now() + 20_000;
  while ((await refOnDisk(repo.id, 'refs/heads/main')) !== two && Date.now() < deadline) await sleep(50);
  expect(await refOnDisk(repo.id, 'refs/heads/main')).toBe(two);
  expect(await eventsOf(server, repo.id, before)).toEqual([]);
  expect(await query(server, 'select user_id from git_push_journal where repository_id = $1', [repo.id])).toEqual([
    { user_id: bob.userId },
  ]);

  await server.killAll(); // the service and its git processes, at once
  expect((await pushing).code).not.toBe(0); // the client never heard back
  server = await server.restart();

  const events = await eventsOf(server, repo.id, before);
  expect(events.map((e) => e.type)).toEqual(['push']);
  expect(events[0]!.payload).toMatchObject({
    ref: 'refs/heads/main',
    before: repo.base,
    after: two,
    created: false,
    deleted: false,
    forced: false,
    total_commits: 2,
    sender: { id: bob.userId, login: 'bob' },
    pusher: { name: 'bob', email: noreplyEmail(server, bob) },
  });
  expect(events[0]!.payload.commits.map((c: any) => c.id)).toEqual([one, two]);
  expect(await query(server, 'select * from git_push_journal where repository_id = $1', [repo.id])).toEqual([]);

  // Nothing is recorded twice: another restart finds nothing to do, and the next push carries on.
  await server.stop();
  server = await server.restart();
  expect(await eventsOf(server, repo.id, events[0]!.id)).toEqual([]);
  const three = await git.commit(repo.work, 'three', { 'three.txt': '3\n' });
  await git.git(['push', '--quiet', 'origin', 'main'], { cwd: repo.work });
  const next = await eventsOf(server, repo.id, events[0]!.id);
  expect(next.map((e) => [e.type, e.payload.before, e.payload.after])).toEqual([['push', two, three]]);
});

test('refs changed on disk while the service was down: start-up records them, credited to the owner', async () => {
  const repo = await setUp('behind-the-back');
  await git.git(['push', '--quiet', 'origin', 'main:refs/heads/doomed'], { cwd: repo.work });
  const hotfix = await git.commit(repo.work, 'hotfix', { 'fix.txt': 'fix\n' });
  await git.git(['push', '--quiet', bare(repo.id), 'HEAD:refs/heads/scratch'], { cwd: repo.work }); // objects only, via the file system
  const before = await lastEventId(server);

  await server.stop();
  await git.git(['update-ref', 'refs/heads/hotfix', hotfix], { cwd: bare(repo.id) });
  await git.git(['update-ref', '-d', 'refs/heads/scratch'], { cwd: bare(repo.id) });
  await git.git(['update-ref', '-d', 'refs/heads/doomed'], { cwd: bare(repo.id) });
  server = await server.restart();
  expect(server.logs().find((line) => line.msg === 'repository refs reconciled')).toMatchObject({ changed: 1 });

  const events = await eventsOf(server, repo.id, before);
  // `scratch` came and went while nobody watched: it was never recorded, so nothing is said about it.
  expect(events.map((e) => `${e.type} ${e.payload.ref}`)).toEqual([
    'push refs/heads/doomed',
    'branch_delete refs/heads/doomed',
    'branch_create refs/heads/hotfix',
    'push refs/heads/hotfix',
  ]);
  for (const event of events) expect(event.payload.sender).toEqual({ id: alice.userId, login: 'alice' });
  expect(events[0]!.payload).toMatchObject({ before: repo.base, after: ZERO, deleted: true });
  expect(events[3]!.payload).toMatchObject({ before: ZERO, after: hotfix, created: true, total_commits: 1 });
});

test('receive-pack killed after moving a ref (no report): the push is still recorded at once, from the disk', async () => {
  const repo = await setUp('no-report');
  const next = await git.commit(repo.work, 'next', { 'next.txt': 'n\n' });
  await fs.writeFile(hookFile, '#!/bin/sh\nkill -9 $PPID\n', { mode: 0o755 }); // the hook's parent is receive-pack
  const before = await lastEventId(server);
  await git.run(['push', 'origin', 'main'], { cwd: repo.work }); // the client sees a failure
  expect(await refOnDisk(repo.id, 'refs/heads/main')).toBe(next);
  const events = await eventsOf(server, repo.id, before);
  expect(events.map((e) => e.type)).toEqual(['push']);
  expect(events[0]!.payload).toMatchObject({ before: repo.base, after: next, total_commits: 1, sender: { login: 'bob' } });
});

test('SIGTERM during a push: the push finishes and records its events before the service stops', async () => {
  const repo = await setUp('graceful');
  const next = await git.commit(repo.work, 'during shutdown', { 'late.txt': 'late\n' });
  await fs.writeFile(hookFile, realHook.replace('#!/bin/sh\n', '#!/bin/sh\nsleep 2\n'), { mode: 0o755 });
  const before = await lastEventId(server);
  const pushing = git.run(['push', 'origin', 'main'], { cwd: repo.work });
  const deadline = Date.now() + 20_000;
  while ((await refOnDisk(repo.id, 'refs/heads/main')) !== next && Date.now() < deadline) await sleep(50);
  expect(await server.stop()).toBe(0);
  expect((await pushing).code).toBe(0);
  server = await server.restart();
  expect(server.logs().find((line) => line.msg === 'repository refs reconciled')).toMatchObject({ changed: 0 });
  const events = await eventsOf(server, repo.id, before);
  expect(events.map((e) => [e.type, e.payload.after, e.payload.sender.login])).toEqual([['push', next, 'bob']]);
});

test('auto_init repositories and untouched ones give no events at start-up', async () => {
  const repo = (await alice.post('/repos', { name: 'quiet', auto_init: true })).body;
  const before = await lastEventId(server);
  await server.stop();
  server = await server.restart();
  expect(server.logs().find((line) => line.msg === 'repository refs reconciled')).toMatchObject({ changed: 0 });
  expect(await eventsOf(server, repo.id, before)).toEqual([]);
});

test('start-up asks git only about repositories whose ref storage changed since their refs were recorded', async () => {
  const repo = await setUp('fingerprinted');
  await server.stop();
  server = await server.restart(); // every repository's fingerprint is recorded by now
  await server.stop();
  server = await server.restart();
  const untouched = server.logs().find((line) => line.msg === 'repository refs reconciled');
  expect(untouched).toMatchObject({ journal: 0, compared: 0, changed: 0 });
  expect(untouched!.repositories).toBeGreaterThan(3);

  // A branch moved by hand while the service was down: that repository alone is compared, and recorded.
  const moved = await git.commit(repo.work, 'by hand', { 'hand.txt': 'h\n' });
  await git.git(['push', '--quiet', bare(repo.id), 'HEAD:refs/heads/by-hand'], { cwd: repo.work });
  await server.stop();
  await git.git(['update-ref', 'refs/heads/main', moved], { cwd: bare(repo.id) });
  server = await server.restart();
  expect(server.logs().find((line) => line.msg === 'repository refs reconciled')).toMatchObject({ compared: 1, changed: 1 });
});
