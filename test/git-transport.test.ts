import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import zlib from 'node:zlib';
import { adminClient, createUser } from './support/client.js';
import { remoteUrl } from './support/git.js';
import { alice, git, gitHost, server } from './support/git-host.js';
import { metricValue } from './support/metrics.js';
import { commandsOf } from './support/process-tree.js';
import { CairnServer, makeDataDir, query, sleep } from './support/server.js';

gitHost();

async function createRepo(name: string, extra: Record<string, unknown> = {}) {
  const res = await alice.post('/repos', { name, ...extra });
  expect(res.status).toBe(201);
  return res.body as { id: string; name: string };
}

/** A work tree with a little history: nested paths, an executable, a binary file, three commits. */
async function makeHistory(name: string): Promise<string> {
  const dir = await git.init(name);
  await git.commit(dir, 'first', { 'README.md': '# hello\n', 'src/main.c': 'int main() { return 0; }\n' });
  await fs.writeFile(path.join(dir, 'run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
  await git.commit(dir, 'second', { 'bin/data.bin': Buffer.from([0, 1, 2, 255]) });
  await git.commit(dir, 'third', { 'README.md': '# hello\n\nmore\n', 'src/main.c': null });
  return dir;
}

describe('clone, push, clone back', () => {
  test('an empty repository clones; a push fills it; a clone gives back the same history and files', async () => {
    const repo = await createRepo('round-trip');
    const url = remoteUrl(server, 'alice', 'round-trip', alice.token);

    const empty = await git.run(['clone', url, git.path('empty-clone')]);
    expect(empty.code).toBe(0);
    expect(empty.stderr).toContain('cloned an empty repository');

    const source = await makeHistory('round-trip-src');
    await git.git(['push', '--quiet', url, 'main'], { cwd: source });

    await git.git(['clone', '--quiet', url, git.path('round-trip-back')]);
    const log = (cwd: string) => git.git(['log', '--format=%H %T %s', 'main'], { cwd });
    expect(await log(git.path('round-trip-back'))).toBe(await log(source));
    const files = (cwd: string) => git.git(['ls-files', '-s'], { cwd });
    expect(await files(git.path('round-trip-back'))).toBe(await files(source));
    expect(await fs.readFile(git.path('round-trip-back', 'bin/data.bin'))).toEqual(Buffer.from([0, 1, 2, 255]));

    // The empty clone fetches the pushed history too.
    await git.git(['pull', '--quiet', 'origin', 'main'], { cwd: git.path('empty-clone') });
    expect(await log(git.path('empty-clone'))).toBe(await log(source));

    const record = (await alice.get(`/repos/${repo.id}`)).body;
    expect(record.empty).toBe(false);
    expect(record.pushed_at).toEqual(expect.any(String));
  });

  test('the .git suffix is optional and names are case-insensitive', async () => {
    await createRepo('Suffix');
    const source = await makeHistory('suffix-src');
    await git.git(['push', '--quiet', remoteUrl(server, 'alice', 'Suffix', alice.token), 'main'], { cwd: source });
    const plain = `${server.url}/ALICE/suffix`;
    const cloned = await git.run(['clone', '--quiet', plain, git.path('suffix-plain')]);
    expect(cloned.code).toBe(0);
    expect(await git.git(['rev-parse', 'HEAD'], { cwd: git.path('suffix-plain') })).toBe(
      await git.git(['rev-parse', 'HEAD'], { cwd: source }),
    );
  });

  test('fetch after new pushes transfers only what is new', async () => {
    await createRepo('incremental');
    const url = remoteUrl(server, 'alice', 'incremental', alice.token);
    const source = await makeHistory('incremental-src');
    await git.git(['push', '--quiet', url, 'main'], { cwd: source });
    const clone = git.path('incremental-clone');
    await git.git(['clone', '--quiet', url, clone]);
    const next = await git.commit(source, 'fourth', { 'new.txt': 'new\n' });
    await git.git(['push', '--quiet', url, 'main'], { cwd: source });
    await git.git(['pull', '--quiet', '--ff-only'], { cwd: clone });
    expect((await git.git(['rev-parse', 'HEAD'], { cwd: clone })).trim()).toBe(next);
  });
});

describe('protocol features', () => {
  let url: string;
  let source: string;
  beforeAll(async () => {
    await createRepo('features');
    url = remoteUrl(server, 'alice', 'features', alice.token);
    source = await makeHistory('features-src');
    await git.git(['push', '--quiet', url, 'main'], { cwd: source });
  });

  test('protocol v2 is spoken when the client asks for it (Git-Protocol header)', async () => {
    const traced = await git.run(['-c', 'protocol.version=2', 'ls-remote', url], { env: { GIT_TRACE_PACKET: '1' } });
    expect(traced.code).toBe(0);
    expect(traced.stderr).toMatch(/git< version 2/);
    expect(traced.stdout).toContain('refs/heads/main');

    const v0 = await git.run(['-c', 'protocol.version=0', 'ls-remote', url], { env: { GIT_TRACE_PACKET: '1' } });
    expect(v0.code).toBe(0);
    expect(v0.stderr).not.toMatch(/git< version 2/);
    expect(v0.stdout).toBe(traced.stdout);
  });

  test('--depth 1 makes a shallow clone of one commit', async () => {
    const dir = git.path('shallow');
    await git.git(['clone', '--quiet', '--depth', '1', url, dir]);
    expect((await git.git(['rev-list', '--count', 'HEAD'], { cwd: dir })).trim()).toBe('1');
    expect((await git.git(['rev-parse', '--is-shallow-repository'], { cwd: dir })).trim()).toBe('true');
    // and can be deepened later
    await git.git(['fetch', '--quiet', '--unshallow'], { cwd: dir });
    expect((await git.git(['rev-list', '--count', 'HEAD'], { cwd: dir })).trim()).toBe('3');
  });

  test('--filter=blob:none makes a partial clone that fetches blobs on demand', async () => {
    const dir = git.path('partial');
    await git.git(['clone', '--quiet', '--no-checkout', '--filter=blob:none', url, dir]);
    expect((await git.git(['config', 'remote.origin.promisor'], { cwd: dir })).trim()).toBe('true');
    const missing = await git.git(['rev-list', '--objects', '--missing=print', 'HEAD'], { cwd: dir });
    expect(missing).toMatch(/^\?[0-9a-f]{40}$/m); // blobs are not there yet
    await git.git(['checkout', '--quiet', 'main'], { cwd: dir }); // fetches the blobs it needs
    expect(await fs.readFile(path.join(dir, 'README.md'), 'utf8')).toBe('# hello\n\nmore\n');
  });

  test('info/refs answers with the advertisement content type and no-cache headers', async () => {
    const res = await fetch(`${server.url}/alice/features.git/info/refs?service=git-upload-pack`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-git-upload-pack-advertisement');
    expect(res.headers.get('cache-control')).toBe('no-cache, max-age=0, must-revalidate');
    expect(res.headers.get('pragma')).toBe('no-cache');
    expect(res.headers.get('expires')).toBe('Fri, 01 Jan 1980 00:00:00 GMT');
    const body = await res.text();
    expect(body.startsWith('001e# service=git-upload-pack\n0000')).toBe(true);
    expect(body).toContain('refs/heads/main');

    const v2 = await fetch(`${server.url}/alice/features.git/info/refs?service=git-upload-pack`, {
      headers: { 'git-protocol': 'version=2' },
    });
    const v2body = await v2.text();
    expect(v2body.startsWith('000eversion 2\n')).toBe(true);
  });

  test('a gzip-compressed request body is accepted (hand-made v0 fetch)', async () => {
    const head = (await git.git(['rev-parse', 'HEAD'], { cwd: source })).trim();
    const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
    const request = `${pkt(`want ${head} ofs-delta\n`)}0000${pkt('done\n')}`;
    const res = await fetch(`${server.url}/alice/features.git/git-upload-pack`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'gzip' },
      body: zlib.gzipSync(request),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-git-upload-pack-result');
    expect(res.headers.get('cache-control')).toBe('no-cache, max-age=0, must-revalidate');
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.subarray(0, 8).toString()).toBe('0008NAK\n');
    expect(body.subarray(8, 12).toString()).toBe('PACK');
  });

  test('many clones at once all succeed', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => git.run(['clone', '--quiet', url, git.path(`crowd-${i}`)])));
    expect(results.map((r) => r.code)).toEqual(Array(8).fill(0));
  });

  test("a fetch's pack comes through a socket only the service's user may reach, and a connection without its token is dropped", async () => {
    await git.git(['clone', '--quiet', url, git.path('through-socket')]);
    const dir = path.join(server.dataDir, 'tmp', 'git-output');
    const socketPath = path.join(dir, `git-output-${server.process!.pid}.sock`);
    expect((await fs.stat(socketPath)).isSocket()).toBe(true);
    expect((await fs.stat(dir)).mode & 0o777).toBe(0o700);

    // A stranger's connection: a wrong token is dropped at once and given nothing.
    const strayAnswer = async (said: Buffer) => {
      const stray = net.connect(socketPath);
      let received = 0;
      stray.on('data', (chunk: Buffer) => (received += chunk.length));
      stray.on('error', () => undefined);
      stray.write(said);
      await new Promise((resolve) => stray.once('close', resolve));
      return received;
    };
    expect(await strayAnswer(randomBytes(16))).toBe(0);
    expect(await strayAnswer(randomBytes(40))).toBe(0);

    // One left open and silent beside clones takes nothing from them.
    const silent = net.connect(socketPath);
    silent.on('error', () => undefined);
    const clones = await Promise.all(
      Array.from({ length: 3 }, (_, i) => git.run(['clone', '--quiet', url, git.path(`beside-stray-${i}`)])),
    );
    silent.destroy();
    expect(clones.map((r) => r.code)).toEqual([0, 0, 0]);
    const head = (cwd: string) => git.git(['rev-parse', 'HEAD^{tree}'], { cwd });
    for (let i = 0; i < 3; i++) expect(await head(git.path(`beside-stray-${i}`))).toBe(await head(source));
    expect(server.logCount('git output socket unavailable: packs go through pipes, at more CPU')).toBe(0);
  });
});

describe('hostile and malformed requests never get a 5xx', () => {
  beforeAll(() => createRepo('target'));

  test.each([
    '/alice/..%2F..%2Fetc.git/info/refs?service=git-upload-pack',
    '/alice/%2e%2e/info/refs?service=git-upload-pack',
    '/..%2Falice/target.git/info/refs?service=git-upload-pack',
    '/alice/target%00.git/info/refs?service=git-upload-pack',
    '/alice/%E0%A4%A.git/info/refs?service=git-upload-pack',
    '/al_ice/target.git/info/refs?service=git-upload-pack',
    '/alice/.git/info/refs?service=git-upload-pack',
    `/alice/${'x'.repeat(300)}.git/info/refs?service=git-upload-pack`,
  ])('%s → 404', async (pathAndQuery) => {
    const res = await fetch(`${server.url}${pathAndQuery}`, { headers: { authorization: `Bearer ${alice.token}` } });
    expect(res.status).toBe(404);
  });

  test('the dumb protocol and unknown services are refused (403)', async () => {
    for (const query of ['', '?service=git-upload-archive', '?service=upload-pack']) {
      const res = await fetch(`${server.url}/alice/target.git/info/refs${query}`);
      expect(res.status).toBe(403);
    }
  });

  test('wrong method → 405, wrong content type → 415, bad gzip → 400, garbage → 400', async () => {
    const endpoint = `${server.url}/alice/target.git/git-upload-pack`;
    expect((await fetch(endpoint)).status).toBe(405);
    expect((await fetch(`${server.url}/alice/target.git/info/refs?service=git-upload-pack`, { method: 'POST' })).status).toBe(405);
    const post = (headers: Record<string, string>, body: string | Buffer) =>
      fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/x-git-upload-pack-request', ...headers }, body });
    expect((await post({ 'content-type': 'application/json' }, '{}')).status).toBe(415);
    expect((await post({ 'content-encoding': 'br' }, 'x')).status).toBe(415);
    expect((await post({ 'content-encoding': 'gzip' }, 'definitely not gzip')).status).toBe(400);
    expect((await post({}, 'garbage that is not pkt-line')).status).toBe(400);
    const receive = await fetch(`${server.url}/alice/target.git/git-receive-pack`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-git-receive-pack-request', authorization: `Bearer ${alice.token}` },
      body: 'zzzz not a push',
    });
    expect(receive.status).toBeLessThan(500);
  });
});

describe('a data dir too long for a socket name', () => {
  let longDir: CairnServer;
  beforeAll(async () => {
    // A data dir of 96 bytes: the output socket's path would be 130 or so, past the 107 a socket's
    // name may have (Node refuses it: EINVAL), and cut short at 107 it would name `tmp/git-ou`,
    // outside its own directory.
    const base = await makeDataDir();
    const dataDir = path.join(base, 'd'.repeat(96 - base.length - 1));
    await fs.mkdir(dataDir);
    longDir = await CairnServer.start({ dataDir });
  });
  afterAll(() => longDir.destroy());

  test('fetches go through pipes: said once in the log, and a clone is whole', async () => {
    const carol = await createUser(adminClient(longDir), 'carol');
    expect((await carol.post('/repos', { name: 'piped' })).status).toBe(201);
    const url = remoteUrl(longDir, 'carol', 'piped', carol.token);
    const source = await makeHistory('piped-src');
    await git.git(['push', '--quiet', url, 'main'], { cwd: source });
    await git.git(['clone', '--quiet', url, git.path('piped-back')]);
    const log = (cwd: string) => git.git(['log', '--format=%H %T', 'main'], { cwd });
    expect(await log(git.path('piped-back'))).toBe(await log(source));
    expect(longDir.logCount('git output socket unavailable: packs go through pipes, at more CPU')).toBe(1);
    // No socket made, in its directory or cut short beside it.
    expect(await fs.readdir(path.join(longDir.dataDir, 'tmp', 'git-output'))).toEqual([]);
    expect((await fs.readdir(path.join(longDir.dataDir, 'tmp'))).filter((name) => name.startsWith('git-o'))).toEqual(['git-output']);
  });
});

describe('limits and settings', () => {
  let limited: CairnServer;
  let bob: Awaited<ReturnType<typeof createUser>>;
  beforeAll(async () => {
    limited = await CairnServer.start({ env: { CAIRN_GIT_MAX_PUSH_SIZE: '64k', CAIRN_GIT_ANONYMOUS_READ: 'false' } });
    bob = await createUser(adminClient(limited), 'bob');
    expect((await bob.post('/repos', { name: 'small', auto_init: true })).status).toBe(201);
  });
  afterAll(() => limited.destroy());

  test('a push over CAIRN_GIT_MAX_PUSH_SIZE is refused with a message the git client prints', async () => {
    const url = remoteUrl(limited, 'bob', 'small', bob.token);
    const dir = git.path('too-big');
    await git.git(['clone', '--quiet', url, dir]);
    await fs.writeFile(path.join(dir, 'big.bin'), randomBytes(512 * 1024)); // incompressible
    await git.git(['add', 'big.bin'], { cwd: dir });
    await git.git(['commit', '--quiet', '-m', 'too big'], { cwd: dir });
    const pushed = await git.run(['push', 'origin', 'main'], { cwd: dir });
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain('remote: fatal: pack exceeds maximum allowed size');

    // A small push still goes through.
    await git.git(['reset', '--quiet', '--hard', 'HEAD~1'], { cwd: dir });
    await git.commit(dir, 'small', { 'small.txt': 'ok\n' });
    expect((await git.run(['push', 'origin', 'main'], { cwd: dir })).code).toBe(0);
  });

  test('CAIRN_GIT_ANONYMOUS_READ=false: anonymous fetch of a public repository gets a 401 challenge', async () => {
    const res = await fetch(`${limited.url}/bob/small.git/info/refs?service=git-upload-pack`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="Cairn"');
    const clone = await git.run(['clone', `${limited.url}/bob/small.git`, git.path('anon-refused')]);
    expect(clone.code).not.toBe(0);
    expect((await git.run(['clone', '--quiet', remoteUrl(limited, 'bob', 'small', bob.token), git.path('anon-token')])).code).toBe(0);
  });
});

/** Git processes the server is running (its descendants named git*). */
async function gitChildren(serverPid: number): Promise<number[]> {
  const parents = new Map<number, { ppid: number; comm: string }>();
  for (const name of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await fs.readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    parents.set(Number(name), { ppid: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]), comm });
  }
  const below = (pid: number) => {
    for (let p = parents.get(pid)?.ppid; p; p = parents.get(p)?.ppid) if (p === serverPid) return true;
    return false;
  };
  return [...parents].filter(([pid, info]) => info.comm.startsWith('git') && below(pid)).map(([pid]) => pid);
}

async function until(condition: () => Promise<boolean>, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await sleep(50);
  }
  return condition();
}

describe('clients that go away', () => {
  let url: string;
  beforeAll(async () => {
    await createRepo('abandoned');
    url = remoteUrl(server, 'alice', 'abandoned', alice.token);
    const dir = await git.init('abandoned-src');
    await git.commit(dir, 'big', { 'noise.bin': randomBytes(8 * 1024 * 1024) });
    await git.git(['push', '--quiet', url, 'main'], { cwd: dir });
  });

  test('a push abandoned mid-upload leaves no git behind and does not keep the repository locked', async () => {
    const request = http.request(`${server.url}/alice/abandoned.git/git-receive-pack`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${alice.token}`,
        'content-type': 'application/x-git-receive-pack-request',
        'transfer-encoding': 'chunked',
      },
    });
    request.on('error', () => undefined);
    const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
    request.write(`${pkt(`${'0'.repeat(40)} ${'1'.repeat(40)} refs/heads/x\0report-status\n`)}0000PACK`);
    expect(await until(async () => (await gitChildren(server.process!.pid!)).length > 0)).toBe(true); // receive-pack waits for the pack
    request.destroy();
    expect(await until(async () => (await gitChildren(server.process!.pid!)).length === 0)).toBe(true);

    const dir = git.path('after-abandon');
    await git.git(['clone', '--quiet', url, dir]);
    await git.commit(dir, 'after', { 'after.txt': 'a\n' });
    expect((await git.run(['push', 'origin', 'main'], { cwd: dir })).code).toBe(0);
  });

  test('a push whose whole request arrived before its client left never leaves git waiting', async () => {
    const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
    const packHeader = Buffer.from('5041434b0000000200000000', 'hex'); // "PACK", version 2, no objects
    const emptyPack = Buffer.concat([packHeader, createHash('sha1').update(packHeader).digest()]);
    const body = Buffer.concat([
      Buffer.from(`${pkt(`${'0'.repeat(40)} ${'1'.repeat(40)} refs/heads/gone\0report-status\n`)}0000`),
      emptyPack,
    ]);
    const head = [
      'POST /alice/abandoned.git/git-receive-pack HTTP/1.1',
      `Host: 127.0.0.1:${server.port}`,
      `Authorization: Bearer ${alice.token}`,
      'Content-Type: application/x-git-receive-pack-request',
      `Content-Length: ${body.length}`,
      'Connection: close',
      '',
      '',
    ].join('\r\n');
    // The whole request, then gone at once: it lands while the server still authenticates or waits for the lock.
    for (let i = 0; i < 20; i++) {
      await new Promise<void>((resolve) => {
        const socket = net.connect(server.port, '127.0.0.1', () => {
          socket.write(Buffer.concat([Buffer.from(head), body]), () => {
            socket.destroy();
            resolve();
          });
        });
        socket.on('error', () => resolve());
      });
    }
    expect(await until(async () => (await gitChildren(server.process!.pid!)).length === 0)).toBe(true);
    const dir = git.path('after-race');
    await git.git(['clone', '--quiet', url, dir]);
    await git.commit(dir, 'after the race', { 'race.txt': 'r\n' });
    const push = await git.run(['push', 'origin', 'main'], {
      cwd: dir,
      env: { GIT_HTTP_LOW_SPEED_LIMIT: '1', GIT_HTTP_LOW_SPEED_TIME: '20' },
    });
    expect(push.code).toBe(0);
  });

  test('a clone abandoned mid-download stops its git at once', async () => {
    const head = (await git.git(['ls-remote', url, 'refs/heads/main'])).slice(0, 40);
    const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const request = http.request(`${server.url}/alice/abandoned.git/git-upload-pack`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-git-upload-pack-request' },
      });
      request.on('response', resolve).on('error', reject);
      request.end(`${pkt(`want ${head} ofs-delta\n`)}0000${pkt('done\n')}`);
    });
    response.pause(); // read nothing: git soon blocks on a full socket
    response.on('error', () => undefined);
    const running = await gitChildren(server.process!.pid!);
    expect(running.length).toBeGreaterThan(0);
    // Its pack goes into the service's output socket (git-output.ts), not a pipe: git's stdout is
    // the accepted end of a connection to it.
    const commands = await commandsOf(running);
    const uploadPack = running.find((_, i) => commands[i]!.split(' ').includes('upload-pack'))!;
    const inode = /^socket:\[(\d+)\]$/.exec(await fs.readlink(`/proc/${uploadPack}/fd/1`))?.[1];
    const unixSockets = (await fs.readFile('/proc/net/unix', 'utf8')).split('\n').map((line) => line.trim().split(/\s+/));
    expect(unixSockets.find((fields) => fields[6] === inode)?.[7]).toBe(
      path.join(server.dataDir, 'tmp', 'git-output', `git-output-${server.process!.pid}.sock`),
    );
    response.destroy();
    expect(await until(async () => (await gitChildren(server.process!.pid!)).length === 0)).toBe(true);
  });
});

describe('one account cannot monopolise pushes; ref names git accepts but nobody can use are refused', () => {
  /** A push that sends its command and the start of a pack, then stalls (holding or waiting for the lock). */
  function stalledPush(repo: string, token: string): http.ClientRequest {
    const request = http.request(`${server.url}/alice/${repo}.git/git-receive-pack`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/x-git-receive-pack-request',
        'transfer-encoding': 'chunked',
      },
    });
    request.on('error', () => undefined);
    const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
    request.write(`${pkt(`${'0'.repeat(40)} ${'1'.repeat(40)} refs/heads/stall\0report-status\n`)}0000PACK`);
    return request;
  }

  test('past 8 pushes in flight an account gets 429; other pushes go on meanwhile', async () => {
    await createRepo('crowded');
    await createRepo('elsewhere');
    const stalled = Array.from({ length: 8 }, () => stalledPush('crowded', alice.token));
    try {
      await until(async () => (await gitChildren(server.process!.pid!)).length > 0);
      // All eight counted against the account (one holding the lock, seven in line for it) before
      // the ninth push, the probe, comes.
      expect(await until(async () => (await metricValue(server.url, 'cairn_git_pushes_in_flight')) === 8)).toBe(true);
      // ...in memory: none of them holds a database connection polling for it. A connection that
      // holds an advisory lock (this push's holder, another repository's maintenance) may still
      // show the statement that took it: only one that holds none is waiting.
      const polling = await query<{ n: number }>(
        server,
        `select count(*)::int as n from pg_stat_activity a
          where a.datname = current_database() and a.pid <> pg_backend_pid() and a.query like '%pg_try_advisory_lock%'
            and not exists (select 1 from pg_locks l where l.pid = a.pid and l.locktype = 'advisory' and l.granted)`,
      );
      expect(polling[0]!.n).toBe(0);
      const dir = await git.init('ninth');
      await git.commit(dir, 'ninth', { 'n.txt': 'n\n' });
      const ninth = await git.run(['push', remoteUrl(server, 'alice', 'elsewhere', alice.token), 'main'], { cwd: dir });
      expect(ninth.code).not.toBe(0);
      expect(ninth.stderr).toMatch(/Too many pushes in progress from this account|429/);

      const bob = await createUser(adminClient(server), 'bob-pusher');
      await bob.post('/repos', { name: 'own' });
      const bobs = await git.run(['push', remoteUrl(server, 'bob-pusher', 'own', bob.token), 'main'], { cwd: dir });
      expect(bobs.code).toBe(0);
    } finally {
      for (const request of stalled) request.destroy();
    }
    expect(await until(async () => (await gitChildren(server.process!.pid!)).length === 0)).toBe(true);
    const dir = await git.init('after-crowd');
    await git.commit(dir, 'after', { 'a.txt': 'a\n' });
    expect((await git.run(['push', remoteUrl(server, 'alice', 'elsewhere', alice.token), 'main'], { cwd: dir })).code).toBe(0);
  });

  test.each(['refs/heads/-x', 'refs/heads/HEAD', 'refs/tags/--upload-pack=evil'])(
    'a push creating %s is refused, with the reason',
    async (ref) => {
      await createRepo(`odd-${ref.replace(/[^a-z]/gi, '')}`);
      const dir = await git.init(`odd-${ref.length}-${ref.replace(/[^a-z]/gi, '')}`);
      await git.commit(dir, 'odd', { 'o.txt': 'o\n' });
      const push = await git.run(['push', remoteUrl(server, 'alice', `odd-${ref.replace(/[^a-z]/gi, '')}`, alice.token), `main:${ref}`], {
        cwd: dir,
      });
      expect(push.code).not.toBe(0);
      expect(push.stderr).toMatch(/may not start with '-' or be HEAD/);
    },
  );
});
