import { verify } from '@octokit/webhooks-methods';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { adminClient, Client, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer, makeDataDir, onCluster, ROOT } from './support/server.js';

/**
 * `cairn backup` and `cairn restore` as an operator runs them: the real CLI beside a real Cairn on
 * its own embedded PostgreSQL, while it serves (a push in flight), and while it is stopped. What a
 * restored site serves is read through the API and git only.
 */
const env = { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' };
const SECRET = 'kept secret ✓';

let site: CairnServer;
let restored: CairnServer | undefined;
let external: CairnServer | undefined;
let receiver: Receiver;
let git: GitSandbox;
/** Backups and the data dirs restored into. */
let scratch: string;
let owner: Awaited<ReturnType<typeof createUser>>;
let repoId: string;
let hookId: string;
/** The site as the backup must keep it: before the push held in flight. */
const before = { lsRemote: '', branches: [] as unknown[], tags: [] as unknown[], pushDeliveries: 0, inFlight: '' };

beforeAll(async () => {
  [site, receiver, git] = await Promise.all([CairnServer.start({ embedded: true, env }), Receiver.start(), GitSandbox.create()]);
  scratch = await makeDataDir(); // traversable: restored embedded databases live in it
  owner = await createUser(adminClient(site), 'keeper', ['repo', 'admin:repo_hook']);
}, 60_000);
afterAll(async () => {
  await Promise.all([restored?.destroy(), external?.destroy(), site?.destroy(), receiver?.close(), git?.cleanup()]);
  await fs.rm(scratch, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `cairn …` as a child process, with the environment the service has (the data dir by --data-dir). */
function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, 'dist/src/cli.js'), ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env, ...extraEnv } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const refsOf = (client: Client) =>
  client
    .gql(`query($id: ID!) { repository(id: $id) { branches { nodes { name sha } } tags { nodes { name sha } } } }`, { id: repoId })
    .then((data) => ({ branches: data.repository.branches.nodes as unknown[], tags: data.repository.tags.nodes as unknown[] }));

const pushDeliveries = async (client: Client) =>
  (await client.get(`/repos/${repoId}/webhooks/${hookId}/deliveries?event=push&limit=100`)).body.total as number;

/** A listing of a directory's entries, to show a refused command changed nothing. */
const listing = async (dir: string) => (await fs.readdir(dir, { recursive: true })).sort();

test('a backup while a push is in flight, restored into a new data dir: the push is in neither half, everything recorded is in both', async () => {
  // A repository with two branches and an annotated tag, an issue, and a webhook with a secret and deliveries.
  repoId = (await owner.post('/repos', { name: 'kept' })).body.id;
  hookId = (await owner.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/kept'), events: ['push', 'issues'], secret: SECRET })).body
    .id;
  const work = await git.init('kept');
  await git.git(['remote', 'add', 'origin', remoteUrl(site, 'keeper', 'kept', owner.token)], { cwd: work });
  await git.commit(work, 'first', { 'README.md': 'kept\n' });
  await git.git(['push', '--quiet', 'origin', 'main'], { cwd: work });
  await git.git(['checkout', '--quiet', '-b', 'feature'], { cwd: work });
  await git.commit(work, 'feature work', { 'feature.txt': 'f\n' });
  await git.git(['tag', '-a', 'v1', '-m', 'version 1'], { cwd: work });
  await git.git(['push', '--quiet', 'origin', 'feature', 'v1'], { cwd: work });
  await git.git(['checkout', '--quiet', '-b', 'done', 'main'], { cwd: work });
  await git.commit(work, 'done work', { 'done.txt': 'd\n' });
  await git.git(['push', '--quiet', 'origin', 'done'], { cwd: work });
  await git.git(['checkout', '--quiet', 'main'], { cwd: work });
  expect((await owner.post(`/repos/${repoId}/issues`, { title: 'kept issue', body: 'still here after a restore' })).status).toBe(201);
  // Pull requests: #2 open (its head and merge refs), #3 squash-merged (its head ref stays, at the head it merged).
  expect((await owner.post(`/repos/${repoId}/pulls`, { title: 'open', head: 'feature', base: 'main' })).body.number).toBe(2);
  expect((await owner.post(`/repos/${repoId}/pulls`, { title: 'merged', head: 'done', base: 'main' })).body.number).toBe(3);
  await eventually(async () => (await owner.get(`/repos/${repoId}/pulls/3`)).body.mergeable === true, 20_000, '#3 mergeable');
  expect((await owner.put(`/repos/${repoId}/pulls/3/merge`, { method: 'squash' })).status).toBe(200);
  await git.git(['pull', '--quiet', '--ff-only', 'origin', 'main'], { cwd: work });
  await eventually(async () => (await owner.get(`/repos/${repoId}/pulls/2`)).body.mergeable === true, 20_000, '#2 mergeable');
  await eventually(
    async () => {
      const res = await owner.get(`/repos/${repoId}/webhooks/${hookId}/deliveries?limit=100`);
      return res.body.total >= 5 && res.body.data.every((d: { status: string }) => d.status === 'succeeded');
    },
    20_000,
    'the deliveries to succeed',
  );
  before.lsRemote = await git.git(['ls-remote', remoteUrl(site, 'keeper', 'kept', owner.token)]);
  Object.assign(before, await refsOf(owner), { pushDeliveries: await pushDeliveries(owner) });
  expect(before.lsRemote).toMatch(/\trefs\/pull\/2\/merge\n/);
  expect(before.branches).toHaveLength(3);
  expect(before.tags).toHaveLength(1);

  // A push held in flight: git has moved its ref on disk, Cairn records it once the post-receive hook ends.
  const hookFile = path.join(site.dataDir, 'git-hooks', 'post-receive');
  const realHook = await fs.readFile(hookFile, 'utf8');
  const marker = path.join(scratch, 'in-flight');
  const release = path.join(scratch, 'release');
  await fs.writeFile(
    hookFile,
    `#!/bin/sh\ntouch '${marker}'\ni=0\nwhile [ ! -e '${release}' ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done\n${realHook.replace(/^#!.*\n/, '')}`,
    { mode: 0o755 },
  );
  before.inFlight = await git.commit(work, 'in flight during the backup', { 'late.txt': 'late\n' });
  const pushing = git.run(['push', 'origin', 'main'], { cwd: work });
  await eventually(async () => existsSync(marker), 20_000, 'the push to reach its post-receive hook');
  const bare = path.join(site.dataDir, 'repositories', `${repoId}.git`);
  expect((await git.git(['-C', bare, 'rev-parse', 'refs/heads/main'])).trim()).toBe(before.inFlight);

  const backupDir = path.join(scratch, 'backup-running');
  const backup = await cli(['backup', backupDir, '--data-dir', site.dataDir]);
  await fs.writeFile(release, '');
  expect(backup).toMatchObject({ code: 0, stderr: '' });
  expect(backup.stdout).toMatch(/^backed up \d+ tables \(\d+ rows\) and 1 repository into .*: [\d.]+ \w+ in [\d.]+ s\n/);
  expect(backup.stdout).toMatch(/This backup is secret/);
  expect((await pushing).code).toBe(0);
  await fs.writeFile(hookFile, realHook, { mode: 0o755 });
  // The push was recorded, after the backup: the site itself has moved on.
  await eventually(async () => (await pushDeliveries(owner)) === before.pushDeliveries + 1, 20_000, 'the push event of the site');

  expect((await fs.stat(backupDir)).mode & 0o777).toBe(0o700);
  const manifest = JSON.parse(await fs.readFile(path.join(backupDir, 'manifest.json'), 'utf8'));
  const tables = manifest.tables.map((t: { name: string }) => t.name);
  expect(tables).toEqual(expect.arrayContaining(['users', 'repositories', 'git_refs', 'issues', 'webhooks', 'deliveries', 'site_values']));
  expect(tables).not.toContain('agenda_jobs');
  expect(tables).not.toContain('git_push_journal');
  expect(manifest.repositories).toEqual([{ id: repoId, defaultBranch: 'main', refs: 4 }]);
  expect(manifest.secretKey).toBe('in-backup');

  // Restored into a new data dir (and its default repositories dir), then served.
  await site.stop();
  const restoreDir = path.join(scratch, 'restored');
  const restore = await cli(['restore', backupDir, '--data-dir', restoreDir]);
  expect(restore).toMatchObject({ code: 0, stderr: '' });
  expect(restore.stdout).toMatch(/^restored \d+ tables \(\d+ rows\) and 1 repository into /);
  expect(restore.stdout).toMatch(/the site's key came with the backup/);
  expect(existsSync(path.join(restoreDir, 'postgres', 'postmaster.pid'))).toBe(false); // the restore stopped its database
  restored = await CairnServer.start({ embedded: true, dataDir: restoreDir, env });

  const again = new Client(restored, owner.token); // the token works
  // Every ref as it was, pull refs included; the open pull request's test merge is made again (a new commit of the same merge).
  const withoutTestMerges = (listing: string) => listing.replace(/^\w+\trefs\/pull\/\d+\/merge\n/gm, '');
  const restoredRefs = () => git.git(['ls-remote', remoteUrl(restored!, 'keeper', 'kept', owner.token)]);
  const testMerge = await eventually(
    async () => /^(\w+)\trefs\/pull\/2\/merge$/m.exec(await restoredRefs())?.[1],
    20_000,
    'the test merge of #2',
  );
  expect(withoutTestMerges(await restoredRefs())).toBe(withoutTestMerges(before.lsRemote));
  await git.git(['fetch', '--quiet', remoteUrl(restored, 'keeper', 'kept', owner.token), 'pull/2/merge'], { cwd: work });
  const tipOf = (name: string) => new RegExp(`^(\\w+)\\trefs/heads/${name}$`, 'm').exec(before.lsRemote)![1];
  expect((await git.git(['-C', work, 'rev-list', '--parents', '-n', '1', testMerge])).trim()).toBe(
    `${testMerge} ${tipOf('main')} ${tipOf('feature')}`,
  );
  expect(await refsOf(again)).toEqual({ branches: before.branches, tags: before.tags });
  expect(before.lsRemote).not.toContain(before.inFlight);
  const clone = git.path('restored-clone');
  await git.git(['clone', '--quiet', '--mirror', remoteUrl(restored, 'keeper', 'kept', owner.token), clone]);
  await git.git(['-C', clone, 'fsck', '--connectivity-only', '--no-dangling']);
  expect((await again.get(`/repos/${repoId}/issues/1`)).body).toMatchObject({ title: 'kept issue', body: 'still here after a restore' });
  expect(await pushDeliveries(again)).toBe(before.pushDeliveries); // no push event for the push in flight

  // The webhook's secret decrypts under the restored site's key: a new event is signed with it.
  await again.post(`/repos/${repoId}/issues`, { title: 'after the restore' });
  const signed = await eventually(
    async () => receiver.at('/kept').find((r) => r.body?.issue?.title === 'after the restore'),
    20_000,
    'the event of the restored site',
  );
  expect(await verify(SECRET, signed.raw.toString('utf8'), String(signed.headers['x-cairn-signature-256']))).toBe(true);
}, 120_000);

test('a backup while the service is stopped starts and stops the embedded database; it restores into an empty DATABASE_URL', async () => {
  await site.stop();
  expect(site.postmasterPid()).toBeUndefined();
  const backupDir = path.join(scratch, 'backup-stopped');
  const backup = await cli(['backup', backupDir, '--data-dir', site.dataDir]);
  expect(backup).toMatchObject({ code: 0, stderr: '' });
  expect(site.postmasterPid()).toBeUndefined(); // not left running

  // An external PostgreSQL: an empty database of the suite's cluster, and a repositories directory of its own.
  const cluster = process.env.CAIRN_TEST_DATABASE_URL!;
  const name = `cairn_restore_${process.pid}_${Date.now()}`;
  await onCluster(cluster, `create database ${name}`);
  const databaseUrl = cluster.replace(/\/[^/]*$/, `/${name}`);
  const repositoriesDir = path.join(scratch, 'external-repositories');
  try {
    const restore = await cli(['restore', backupDir, '--data-dir', path.join(scratch, 'external-data')], {
      DATABASE_URL: databaseUrl,
      CAIRN_REPOSITORIES_DIR: repositoriesDir,
    });
    expect(restore).toMatchObject({ code: 0, stderr: '' });
    expect(restore.stdout).toMatch(/into the database of DATABASE_URL/);
    external = await CairnServer.start({ env: { ...env, DATABASE_URL: databaseUrl, CAIRN_REPOSITORIES_DIR: repositoriesDir } });
    // Taken after the push was recorded: the push is in both halves now.
    const branches = (await refsOf(new Client(external, owner.token))).branches;
    expect(branches).toContainEqual({ name: 'main', sha: before.inFlight });
    expect(await pushDeliveries(new Client(external, owner.token))).toBe(before.pushDeliveries + 1);

    // Restoring again into that database, now a site's, is refused.
    const again = await cli(['restore', backupDir, '--data-dir', path.join(scratch, 'external-data')], {
      DATABASE_URL: databaseUrl,
      CAIRN_REPOSITORIES_DIR: path.join(scratch, 'other-repositories'),
    });
    expect(again).toMatchObject({ code: 1, stdout: '' });
    expect(again.stderr).toMatch(/the database DATABASE_URL names is not empty/);
    expect(existsSync(path.join(scratch, 'other-repositories'))).toBe(false);
  } finally {
    await external?.stop();
    await onCluster(cluster, `drop database if exists ${name} with (force)`);
  }
}, 120_000);

test('refused, exit 1 and nothing changed: a non-empty target, another repositories dir, a directory that is no backup, a data dir with a database, a non-empty repositories dir, a newer backup', async () => {
  const backupDir = path.join(scratch, 'backup-running');

  const occupied = path.join(scratch, 'occupied');
  await fs.mkdir(occupied);
  await fs.writeFile(path.join(occupied, 'keep.txt'), 'mine\n');
  const intoOccupied = await cli(['backup', occupied, '--data-dir', site.dataDir]);
  expect(intoOccupied).toMatchObject({ code: 1, stdout: '' });
  expect(intoOccupied.stderr).toMatch(/occupied is not empty: back up into a new or empty directory/);
  expect(await listing(occupied)).toEqual(['keep.txt']);

  const elsewhere = await makeDataDir(); // not the repositories directory the service has
  const wrongRepositories = await cli(['backup', path.join(scratch, 'never'), '--data-dir', site.dataDir], {
    CAIRN_REPOSITORIES_DIR: elsewhere,
  });
  expect(wrongRepositories).toMatchObject({ code: 1, stdout: '' });
  expect(wrongRepositories.stderr).toMatch(/is not this site's repositories directory \(it has no \.cairn-site\)/);
  expect(existsSync(path.join(scratch, 'never'))).toBe(false);
  expect(await listing(elsewhere)).toEqual([]);
  await fs.rm(elsewhere, { recursive: true, force: true });

  const fromNothing = await cli(['restore', occupied, '--data-dir', path.join(scratch, 'never')]);
  expect(fromNothing).toMatchObject({ code: 1, stdout: '' });
  expect(fromNothing.stderr).toMatch(/occupied is not a Cairn backup/);
  expect(existsSync(path.join(scratch, 'never'))).toBe(false);

  const siteBefore = await listing(path.join(site.dataDir, 'repositories'));
  const ontoSite = await cli(['restore', backupDir, '--data-dir', site.dataDir]);
  expect(ontoSite).toMatchObject({ code: 1, stdout: '' });
  expect(ontoSite.stderr).toMatch(/already holds a database/);
  expect(await listing(path.join(site.dataDir, 'repositories'))).toEqual(siteBefore);

  const fresh = await makeDataDir();
  await fs.mkdir(path.join(fresh, 'repositories'));
  await fs.writeFile(path.join(fresh, 'repositories', 'stray.txt'), 'not a repository\n');
  const ontoRepositories = await cli(['restore', backupDir, '--data-dir', fresh]);
  expect(ontoRepositories).toMatchObject({ code: 1, stdout: '' });
  expect(ontoRepositories.stderr).toMatch(/the repositories directory .* is not empty/);
  expect(await listing(fresh)).toEqual(['repositories', 'repositories/stray.txt']);

  const newer = path.join(scratch, 'newer');
  await fs.cp(backupDir, newer, { recursive: true });
  const manifest = JSON.parse(await fs.readFile(path.join(newer, 'manifest.json'), 'utf8'));
  manifest.migrations.push('Migration29991231000000_FromTheFuture');
  await fs.writeFile(path.join(newer, 'manifest.json'), JSON.stringify(manifest));
  const fromNewer = await cli(['restore', newer, '--data-dir', path.join(scratch, 'never')]);
  expect(fromNewer).toMatchObject({ code: 1, stdout: '' });
  expect(fromNewer.stderr).toMatch(/made by a newer Cairn.*Migration29991231000000_FromTheFuture/);
  expect(existsSync(path.join(scratch, 'never'))).toBe(false);
  await fs.rm(fresh, { recursive: true, force: true });
});

test('a backup whose rows do not load: the restore fails, exit 1, and leaves neither a database nor repositories behind', async () => {
  const damaged = path.join(scratch, 'damaged');
  await fs.cp(path.join(scratch, 'backup-running'), damaged, { recursive: true });
  await fs.appendFile(path.join(damaged, 'database', 'issues.copy'), 'not\ta row of issues\n');
  const target = await makeDataDir();
  const restore = await cli(['restore', damaged, '--data-dir', target]);
  expect(restore).toMatchObject({ code: 1, stdout: '' });
  expect(restore.stderr).toMatch(/^cairn restore failed: the rows of table issues did not load: /);
  expect(await listing(target)).toEqual([]);
  await fs.rm(target, { recursive: true, force: true });
});
