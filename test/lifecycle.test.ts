import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { adminClient, createUser } from './support/client.js';
import { CairnServer, makeDataDir, ROOT } from './support/server.js';

const run = promisify(execFile);

describe('configuration', () => {
  test.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['HOST', 'not a host!'],
    ['CAIRN_BASE_URL', 'ftp://example.com'],
    ['CAIRN_BASE_URL', 'http://example.com/cairn?x=1'],
    ['DATABASE_URL', 'mysql://localhost/db'],
    ['CAIRN_WEBHOOK_TIMEOUT', '10'],
    ['CAIRN_WEBHOOK_RETRY_DELAYS', '10s,soon'],
    ['CAIRN_WEBHOOK_DISABLE_AFTER', '-1d'],
    ['CAIRN_DELIVERY_RETENTION', '30 days'],
    ['CAIRN_WEBHOOK_ALLOWED_HOSTS', 'intranet!'],
    ['CAIRN_WEBHOOK_ALLOWED_HOSTS', '10.0.0.0/99'],
    ['CAIRN_WEBHOOK_ALLOWED_HOSTS', '999.1.2.3/8'],
    ['CAIRN_GIT_ANONYMOUS_READ', 'maybe'],
    ['CAIRN_GIT_MAX_PUSH_SIZE', 'lots'],
    ['CAIRN_GIT_MAINTENANCE_DELAY', '6m'],
    ['CAIRN_SECRET_KEY', 'short'],
    ['CAIRN_ADMIN_TOKEN', 'has spaces in it, too many'],
    ['LOG_LEVEL', 'loud'],
    ['MONGODB_URL', 'http://mongo'],
  ])('a bad %s (%p) stops start-up with a message naming it', async (variable, value) => {
    const dataDir = await makeDataDir();
    try {
      const failure = await run(process.execPath, [path.join(ROOT, 'dist/rest-facade/main.js')], {
        env: { PATH: process.env.PATH, CAIRN_DATA_DIR: dataDir, [variable]: value },
      }).then(
        () => null,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failure).not.toBeNull();
      expect(failure!.code).toBe(2);
      expect(failure!.stderr).toContain(variable);
      expect(existsSync(path.join(dataDir, 'postgres'))).toBe(false);
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  });
});

test('an unreachable MONGODB_URL stops start-up with a message naming it', async () => {
  const failure = await CairnServer.start({ env: { MONGODB_URL: 'mongodb://127.0.0.1:9/cairn' } }).then(
    async (server) => {
      await server.destroy();
      return null;
    },
    (error: Error) => error.message,
  );
  expect(failure).toMatch(/exited with 1 during start-up/);
  expect(failure).toMatch(/MONGODB_URL: cannot connect to MongoDB/);
});

test('a start that finds its port taken comes up on another, with the site admin the first attempt made', async () => {
  // The tests' harness does this when another file's server takes the port it chose. The first
  // attempt made the site admin before it failed to listen: its token is the one that works.
  const squatter = net.createServer();
  await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
  const taken = (squatter.address() as net.AddressInfo).port;
  try {
    const server = await CairnServer.start({ port: taken });
    try {
      expect(server.port).not.toBe(taken);
      expect((await createUser(adminClient(server), 'alice')).login).toBe('alice');
    } finally {
      await server.destroy();
    }
  } finally {
    squatter.close();
  }
});

/** PostgreSQL's own lock file: gone after a clean shutdown. */
const postmasterPid = (server: CairnServer) => path.join(server.dataDir, 'postgres', 'postmaster.pid');
/** Alive and not a zombie waiting to be reaped. */
const isRunning = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

describe('embedded PostgreSQL lifecycle', () => {
  let server: CairnServer;
  afterAll(() => server?.destroy());

  test('first start initialises the database in the data dir; SIGTERM stops cleanly; data survives a restart', async () => {
    server = await CairnServer.start({ embedded: true, detached: true });
    expect(existsSync(path.join(server.dataDir, 'postgres', 'PG_VERSION'))).toBe(true);
    // The service reaches its database over a Unix socket in the database directory (TCP only as a fallback).
    const ready = server.logs().find((line) => line.msg === 'embedded PostgreSQL ready');
    expect(ready?.unixSocket).toBe(true);
    expect(existsSync(path.join(server.dataDir, 'postgres', `.s.PGSQL.${ready?.port}`))).toBe(true);
    const admin = adminClient(server);
    const alice = await createUser(admin, 'alice');
    const repo = (await alice.post('/repos', { name: 'durable', auto_init: true })).body;
    await alice.post(`/repos/${repo.id}/issues`, { title: 'remember me' });

    const pgPid = Number(readFileSync(postmasterPid(server), 'utf8').split('\n')[0]);
    const postmasterUid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pgPid}/status`, 'utf8'))![1];
    expect(Number(postmasterUid)).not.toBe(0); // PostgreSQL refuses root: it runs as its own user
    const code = await server.stop();
    // A failed shutdown shows what the service logged about it.
    expect({ code, errors: code === 0 ? [] : server.logs().filter((line) => Number(line.level) >= 40) }).toEqual({ code: 0, errors: [] });
    expect(existsSync(postmasterPid(server))).toBe(false);
    expect(isRunning(pgPid)).toBe(false);

    server = await server.restart();
    expect((await alice.get(`/repos/${repo.id}/issues/1`)).body.title).toBe('remember me');
  });

  test('after kill -9 of the service alone, the orphaned PostgreSQL is stopped and the service comes back', async () => {
    const pgPid = Number(readFileSync(postmasterPid(server), 'utf8').split('\n')[0]);
    await server.kill();
    expect(isRunning(pgPid)).toBe(true); // the orphan still holds the data dir
    server = await server.restart();
    expect(isRunning(pgPid)).toBe(false);
    const alice = await createUser(adminClient(server), 'alice2');
    expect((await alice.get('/repos?owner=alice')).body.total).toBe(1);
  });

  test('after kill -9 of the service and its database together, crash recovery keeps every committed change', async () => {
    const admin = adminClient(server);
    const bob = await createUser(admin, 'bob');
    const repo = (await bob.post('/repos', { name: 'crashy' })).body;
    const created = await Promise.all(
      Array.from({ length: 20 }, (_, i) => bob.post(`/repos/${repo.id}/issues`, { title: `before crash ${i}` })),
    );
    expect(created.every((r) => r.status === 201)).toBe(true);
    await server.killAll();
    expect(existsSync(postmasterPid(server))).toBe(true); // stale lock file left behind

    server = await server.restart();
    expect((await bob.get(`/repos/${repo.id}/issues?limit=100`)).body.total).toBe(20);
  });

  test('a shutdown during a burst answers what it accepted; everything answered 201 is kept', async () => {
    const carol = await createUser(adminClient(server), 'carol');
    const repo = (await carol.post('/repos', { name: 'burst' })).body;
    const requests = Array.from({ length: 60 }, (_, i) =>
      carol.post(`/repos/${repo.id}/issues`, { title: `burst ${i}` }).then(
        (res) => res.status,
        () => 'refused',
      ),
    );
    const stopped = new Promise((resolve) => setTimeout(() => resolve(server.stop()), 30));
    const outcomes = await Promise.all(requests);
    expect(outcomes.every((o) => o === 201 || o === 'refused')).toBe(true);
    const accepted = outcomes.filter((o) => o === 201).length;
    // The old process must be gone first: its last step stops the PostgreSQL a new one would start on.
    expect(await stopped).toBe(0);
    server = await server.restart();
    expect((await carol.get(`/repos/${repo.id}/issues?limit=100`)).body.total).toBe(accepted);
  });

  test('a database that stops answering does not hold a shutdown: it fails after its deadline, naming the step, and PostgreSQL still stops', async () => {
    const pgPid = Number(readFileSync(postmasterPid(server), 'utf8').split('\n')[0]);
    const backends = (await run('pgrep', ['-P', String(pgPid)])).stdout.split('\n').filter(Boolean).map(Number);
    const frozen = [pgPid, ...backends];
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    const started = Date.now();
    let code: number | null;
    try {
      code = await server.stop();
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
    }
    const took = Date.now() - started;
    expect(code).toBe(1);
    expect(took).toBeLessThan(25_000); // the HTTP grace is immediate here; the deadline of the rest is 10 s
    const failure = server.logs().find((line) => line.msg === 'shutdown failed');
    expect((failure?.err as { message?: string } | undefined)?.message).toMatch(/^shutdown step "[^"]+" still running after 10000 ms$/);
    // The exit hook's fast shutdown reaches PostgreSQL once it runs again.
    for (let i = 0; i < 100 && isRunning(pgPid); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(isRunning(pgPid)).toBe(false);
    server = await server.restart();
    expect((await adminClient(server).get('/repos?limit=1')).status).toBe(200);
  }, 60_000);
});
