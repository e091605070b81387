import { spawn } from 'node:child_process';
import * as fsSync from 'node:fs';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import isomorphicGit from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { adminClient, createUser } from './support/client.js';
import { remoteUrl } from './support/git.js';
import { alice, git, gitHost, server } from './support/git-host.js';
import { eventually } from './support/receiver.js';
import { CairnServer, sleep } from './support/server.js';

/**
 * The pack cache: clones asking for the same objects of a repository at about the same time share
 * one pack-objects run; the first makes the pack into a file while streaming it, the others wait
 * and send the file. Fetches (which have objects already) are never cached; a new state of the
 * repository gets a pack of its own; a client hanging up while its pack is made stops the making
 * and fails nobody else; CAIRN_PACK_CACHE bounds it (and 0 turns it off).
 */
gitHost();

const cacheDir = (of: CairnServer) => path.join(of.dataDir, 'tmp', 'pack-cache');
const cached = async (of: CairnServer, suffix: string) =>
  (await fs.readdir(cacheDir(of)).catch(() => [] as string[])).filter((name) => name.endsWith(suffix));

/** A repository of `owner` holding `mb` MB of random files over three commits; its work tree. */
async function repositoryOf(of: CairnServer, owner: Awaited<ReturnType<typeof createUser>>, name: string, mb: number) {
  const repo = await emptyRepositoryOf(of, owner, name);
  for (let i = 0; i < 3; i++) {
    await git.commit(repo.work, `part ${i}`, { [`data/${i}.bin`]: randomBytes(Math.ceil((mb * 1024 * 1024) / 3)) });
  }
  await git.git(['push', '--quiet', repo.url, 'main'], { cwd: repo.work });
  return repo;
}

async function emptyRepositoryOf(of: CairnServer, owner: Awaited<ReturnType<typeof createUser>>, name: string) {
  const res = await owner.post('/repos', { name });
  expect(res.status).toBe(201);
  const work = await git.init(`${name}-src`);
  return { id: (res.body as { id: string }).id, url: remoteUrl(of, owner.login, name, owner.token), work };
}

/**
 * A repository whose clone keeps pack-objects busy for seconds before it writes anything: 400 files
 * alike (100 KB each, a few bytes apart) pushed twice without deltas, as two packs, and a delta
 * window of 1,000 in the repository's own config (which no client can set: the test writes it), so
 * a clone's pack-objects compares each file with all the others first (some 6 s of CPU here).
 * `restore` takes the window back out.
 */
async function slowToPackRepositoryOf(of: CairnServer, owner: Awaited<ReturnType<typeof createUser>>, name: string) {
  const repo = await emptyRepositoryOf(of, owner, name);
  const base = randomBytes(100 * 1024);
  const files: Record<string, Buffer> = {};
  for (let i = 0; i < 400; i++) {
    const file = Buffer.from(base);
    for (let k = 0; k < 20; k++) file[(i * 7919 + k * 104_729) % file.length] = (i + k) % 256;
    files[`alike/${i}.bin`] = file;
  }
  for (const round of ['first', 'second']) {
    if (round === 'second') for (const name of Object.keys(files)) files[name] = Buffer.concat([files[name]!, Buffer.from('.')]);
    await git.commit(repo.work, round, files);
    await git.git(['-c', 'pack.window=0', 'push', '--quiet', repo.url, 'main'], { cwd: repo.work });
  }
  const config = path.join(of.dataDir, 'repositories', `${repo.id}.git`, 'config');
  await git.git(['config', '-f', config, 'pack.window', '1000']);
  return { ...repo, restore: () => git.git(['config', '-f', config, '--unset', 'pack.window']) };
}

/** `git pack-objects` processes working in the repository, wherever they are in the process tree. */
async function packObjectsIn(of: CairnServer, repositoryId: string): Promise<number> {
  const dir = await fs.realpath(path.join(of.dataDir, 'repositories', `${repositoryId}.git`));
  let found = 0;
  for (const pid of (await fs.readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    const [line, cwd] = await Promise.all([
      fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''),
      fs.readlink(`/proc/${pid}/cwd`).catch(() => ''),
    ]);
    if (line.split('\0').slice(0, 2).join(' ') === 'git pack-objects' && cwd === dir) found++;
  }
  return found;
}

const headOf = (dir: string) => git.git(['rev-parse', 'HEAD'], { cwd: dir }).then((sha) => sha.trim());

describe('clones share packs', () => {
  test('six clones at once get the whole history from one cached pack; a later clone is sent that same file', async () => {
    const repo = await repositoryOf(server, alice, 'shared', 3);
    const dests = Array.from({ length: 6 }, (_, i) => git.path(`shared-${i}`));
    const runs = await Promise.all(dests.map((dest) => git.run(['clone', '--quiet', '--no-checkout', repo.url, dest])));
    expect(runs.map((run) => run.code)).toEqual(dests.map(() => 0));
    for (const dest of dests) {
      expect(await headOf(dest)).toBe(await headOf(repo.work));
      await git.git(['fsck', '--no-dangling', '--no-progress'], { cwd: dest });
    }
    const packs = await cached(server, '.pack');
    expect(packs).toHaveLength(1);
    expect(await cached(server, '.tmp')).toEqual([]);

    const before = await fs.stat(path.join(cacheDir(server), packs[0]!));
    await git.git(['clone', '--quiet', '--no-checkout', repo.url, git.path('shared-later')]);
    const after = await fs.stat(path.join(cacheDir(server), packs[0]!));
    expect({ ino: after.ino, mtime: after.mtimeMs }).toEqual({ ino: before.ino, mtime: before.mtimeMs });
    expect(await headOf(git.path('shared-later'))).toBe(await headOf(repo.work));
  });

  test('isomorphic-git, a client of its own, clones twice at once and again: all three whole, one pack made for them', async () => {
    const repo = await repositoryOf(server, alice, 'isomorphic', 2);
    const packsBefore = await cached(server, '.pack');
    const clone = (name: string) =>
      isomorphicGit.clone({
        fs: fsSync,
        http,
        dir: git.path(name),
        url: `${server.url}/alice/isomorphic.git`,
        noCheckout: true,
        onAuth: () => ({ username: 'alice', password: alice.token }),
      });
    await Promise.all([clone('isomorphic-a'), clone('isomorphic-b')]);
    await clone('isomorphic-c');
    for (const name of ['isomorphic-a', 'isomorphic-b', 'isomorphic-c']) {
      expect(await isomorphicGit.resolveRef({ fs: fsSync, dir: git.path(name), ref: 'HEAD' })).toBe(await headOf(repo.work));
      await git.git(['fsck', '--no-dangling', '--no-progress'], { cwd: git.path(name) }); // git's own reading of what it wrote
    }
    expect((await cached(server, '.pack')).length).toBe(packsBefore.length + 1);
  });

  test('a fetch is packed for its client alone; a clone of the repository’s new state gets a pack of its own', async () => {
    const repo = await repositoryOf(server, alice, 'moving', 1);
    await git.git(['clone', '--quiet', repo.url, git.path('moving-old')]);
    const packsBefore = await cached(server, '.pack');

    const next = await git.commit(repo.work, 'next', { 'more.txt': 'more\n' });
    await git.git(['push', '--quiet', repo.url, 'main'], { cwd: repo.work });
    await git.git(['fetch', '--quiet', 'origin'], { cwd: git.path('moving-old') });
    expect((await git.git(['rev-parse', 'origin/main'], { cwd: git.path('moving-old') })).trim()).toBe(next);
    expect(await cached(server, '.pack')).toEqual(packsBefore);

    await git.git(['clone', '--quiet', '--no-checkout', repo.url, git.path('moving-new')]);
    expect(await headOf(git.path('moving-new'))).toBe(next);
    expect((await cached(server, '.pack')).length).toBe(packsBefore.length + 1);
  });

  test('shallow clones of the same depth share a pack too', async () => {
    const repo = await repositoryOf(server, alice, 'shallow', 1);
    const packsBefore = await cached(server, '.pack');
    for (const name of ['shallow-a', 'shallow-b']) {
      await git.git(['clone', '--quiet', '--no-checkout', '--depth', '1', repo.url, git.path(name)]);
      expect(await headOf(git.path(name))).toBe(await headOf(repo.work));
      expect((await git.git(['rev-list', '--count', 'HEAD'], { cwd: git.path(name) })).trim()).toBe('1');
    }
    expect((await cached(server, '.pack')).length).toBe(packsBefore.length + 1);
  });

  test('a client hanging up while its pack is being made stops the making: nothing is cached, no pack-objects is left, the clones after it succeed', async () => {
    const repo = await slowToPackRepositoryOf(server, alice, 'hang-up');
    const packsBefore = await cached(server, '.pack');
    // The first clone is cut off as soon as its pack-objects runs, while it still searches deltas,
    // seconds before it would write anything.
    const first = spawn('git', ['clone', '--quiet', '--no-checkout', repo.url, git.path('hang-up-0')], {
      env: git.env,
      detached: true,
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => first.once('exit', resolve));
    const deadline = Date.now() + 20_000;
    while ((await packObjectsIn(server, repo.id)) === 0 && Date.now() < deadline) await sleep(5);
    process.kill(-first.pid!, 'SIGKILL');
    await exited;
    // Stopped within moments; left alone it would work for seconds more.
    await eventually(async () => (await packObjectsIn(server, repo.id)) === 0, 2_000, 'no pack-objects left in the repository');
    await eventually(async () => (await cached(server, '.tmp')).length === 0, 2_000, 'no half-made pack left in the cache');
    expect(await cached(server, '.pack')).toEqual(packsBefore);

    await repo.restore(); // the clones after it pack at the usual speed

    const dests = Array.from({ length: 3 }, (_, i) => git.path(`hang-up-${i + 1}`));
    const runs = await Promise.all(dests.map((dest) => git.run(['clone', '--quiet', '--no-checkout', repo.url, dest])));
    expect(runs.map((run) => run.code)).toEqual([0, 0, 0]);
    for (const dest of dests) expect(await headOf(dest)).toBe(await headOf(repo.work));
    expect((await cached(server, '.pack')).length).toBe(packsBefore.length + 1);
  });
});

describe('CAIRN_PACK_CACHE', () => {
  test('3m: a 2 MB clone is cached, the next would pass the budget and is not; 0: nothing is cached; a budget above the free disk: nothing is cached', async () => {
    const servers = await Promise.all(['3m', '0', '100000g'].map((budget) => CairnServer.start({ env: { CAIRN_PACK_CACHE: budget } })));
    try {
      const [small, off, beyondDisk] = servers as [CairnServer, CairnServer, CairnServer];
      for (const [i, of] of servers.entries()) {
        const owner = await createUser(adminClient(of), 'alice');
        for (const name of ['first', 'second']) {
          const repo = await repositoryOf(of, owner, `budget-${i}-${name}`, 2);
          await git.git(['clone', '--quiet', '--no-checkout', repo.url, git.path(`budget-${i}-${name}`)]);
          expect(await headOf(git.path(`budget-${i}-${name}`))).toBe(await headOf(repo.work));
        }
      }
      expect(await cached(small, '.pack')).toHaveLength(1); // 2 MB held, 2 MB more would pass 3 MB
      expect(await cached(off, '.pack')).toEqual([]);
      expect(await cached(beyondDisk, '.pack')).toEqual([]);
    } finally {
      await Promise.all(servers.map((of) => of.destroy()));
    }
  });
});
