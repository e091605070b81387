import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { commandsOf, treeOf } from './support/process-tree.js';
import { eventually } from './support/receiver.js';
import { CairnServer, freePort, makeDataDir, ROOT, sleep } from './support/server.js';
import { ESTABLISHED, loopbackConnections } from './support/tcp.js';

/**
 * Ctrl-C on `npm start` signals the whole process group, as a terminal (or systemd's stop) does:
 * the service hears SIGINT twice — from the terminal and forwarded by npm — which is one request
 * to stop gracefully: what is in flight finishes, and its database stops after it, cleanly. A
 * signal sent deliberately later still means "exit now". SIGTERM (systemd's stop) during a merge lets it land.
 */
let git: GitSandbox;
beforeAll(async () => {
  git = await GitSandbox.create();
});
afterAll(() => git.cleanup());

interface Started {
  npm: ChildProcess;
  url: string;
  port: number;
  adminToken: string;
  dataDir: string;
  output: () => string;
  /** The service's node process (npm's child), and when it has exited and its output is all read. */
  service: number;
  serviceExited: () => Promise<void>;
}

/** `npm start` in a process group of its own, as a terminal runs a foreground job, on its embedded database. */
async function npmStart(): Promise<Started> {
  const [port, dataDir] = await Promise.all([freePort(), makeDataDir()]);
  const adminToken = `cairn_pat_${'s'.repeat(43)}`;
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      HOST: '127.0.0.1',
      CAIRN_DATA_DIR: dataDir,
      CAIRN_ADMIN_TOKEN: adminToken,
      CAIRN_RATE_LIMIT: '100000',
    },
  });
  let output = '';
  npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (npm.exitCode !== null) throw new Error(`npm start exited:\n${output}`);
    if (Date.now() > deadline) throw new Error(`npm start not ready:\n${output}`);
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    await sleep(200);
  }
  const service = Number(
    spawnSync('ps', ['-o', 'pid=', '--ppid', String(npm.pid)], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')[0],
  );
  expect(spawnSync('cat', [`/proc/${service}/cmdline`], { encoding: 'utf8' }).stdout).toContain('main.js');
  // Closed once npm and the service (which writes to the same pipes) are both gone: all they said is read.
  const outputClosed = new Promise<void>((resolve) => npm.once('close', () => resolve()));
  const serviceExited = async () => {
    while (alive(service)) await sleep(50);
    await outputClosed;
  };
  return { npm, url, port, adminToken, dataDir, output: () => output, service, serviceExited };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The embedded PostgreSQL of a data dir, while it runs. */
async function postmasterOf(dataDir: string): Promise<number | null> {
  try {
    const pid = Number((await fs.readFile(`${dataDir}/postgres/postmaster.pid`, 'utf8')).split('\n')[0]);
    return alive(pid) ? pid : null;
  } catch {
    return null;
  }
}

/** Removes a data dir once nothing runs on it (its PostgreSQL killed if it still does). */
async function removeDataDir(dataDir: string): Promise<void> {
  const pid = await postmasterOf(dataDir);
  if (pid) process.kill(pid, 'SIGKILL');
  // Its backends notice the postmaster gone and exit on their own time, writing meanwhile: a
  // directory they still fill is tried again (ENOTEMPTY), as fs.rm's retries are for.
  await fs.rm(dataDir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
}

/** Messages of the service's JSON log lines. */
const messages = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => (JSON.parse(line) as { msg: string }).msg);

/** The service said it stopped, by the graceful path (not the second signal's), and no step failed; what it said. */
function expectStoppedGracefully(started: Started): string[] {
  const said = messages(started.output());
  expect(said).toContain('stopped');
  expect(said).not.toContain('second signal: exiting now');
  expect(said.filter((m) => m === 'Cairn failed to start' || m === 'shutdown failed')).toEqual([]);
  return said;
}

/** `body` in ten pieces over `seconds`, so that a request is still in flight when the signal comes. */
function trickled(body: Buffer, seconds: number): ReadableStream<Uint8Array> {
  const pieces = 10;
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      for (let i = 0; i < pieces; i++) {
        controller.enqueue(body.subarray(Math.floor((i * body.length) / pieces), Math.floor(((i + 1) * body.length) / pieces)));
        await sleep((seconds * 1000) / pieces);
      }
      controller.close();
    },
  });
}

/**
 * A push sent as git's client sends it, but slowly: `seconds` for its body (a pack of one blob), so
 * that it is in flight when the signal comes. Resolves to the service's answer.
 */
async function slowPush(started: Started, token: string, seconds: number): Promise<{ status: number; body: string }> {
  const bare = git.path(`slow-${Date.now()}.git`);
  const run = (args: string[], input?: string) =>
    spawnSync('git', args, { cwd: bare, env: git.env, input, encoding: 'utf8' }).stdout.trim();
  spawnSync('git', ['init', '--quiet', '--bare', bare]);
  const blob = run(['hash-object', '-w', '--stdin'], 'x'.repeat(40_000) + Math.random());
  const tree = run(['mktree'], `100644 blob ${blob}\tslow.txt\n`);
  const sha = run(['commit-tree', tree, '-m', 'slow']);
  const pack = spawnSync('git', ['pack-objects', '--stdout', '--compression=0'], {
    cwd: bare,
    env: git.env,
    input: `${sha}\n${tree}\n${blob}\n`,
  }).stdout;
  const command = `${'0'.repeat(40)} ${sha} refs/heads/main\0report-status\n`;
  const body = Buffer.concat([Buffer.from(`${(command.length + 4).toString(16).padStart(4, '0')}${command}0000`), pack]);
  const answer = await fetch(`${started.url}/alice/slow.git/git-receive-pack`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`alice:${token}`).toString('base64')}`,
      'content-type': 'application/x-git-receive-pack-request',
    },
    body: trickled(body, seconds),
    duplex: 'half',
  } as RequestInit);
  const text = await answer.text();
  if (answer.status !== 200) console.log(`push answered ${answer.status}: ${text}`);
  return { status: answer.status, body: text };
}

/**
 * Until git's receive-pack runs for the push (its command line under the service): the signal then
 * comes in the middle of it, however loaded the machine. Counted in flight is not enough: git is
 * started in a session of its own so that a Ctrl-C meant for the service does not reach it, but a
 * signal to the group in the instant between its fork and that new session still kills it.
 */
const receivingPush = (started: Started) =>
  eventually(
    async () => (await commandsOf(await treeOf(started.service))).some((command) => command.includes('receive-pack')),
    30_000,
    'git receiving the push',
  );

async function aliceOn(started: Started) {
  const admin = adminClient({ url: started.url, adminToken: started.adminToken } as CairnServer);
  const alice = await createUser(admin, 'alice');
  expect((await alice.post('/repos', { name: 'slow' })).status).toBe(201);
  return alice;
}

test('Ctrl-C (SIGINT to the group of npm start) during a push: the push lands, the service and its database stop cleanly', async () => {
  const started = await npmStart();
  try {
    const alice = await aliceOn(started);
    const pushed = slowPush(started, alice.token, 3);
    await receivingPush(started);
    process.kill(-started.npm.pid!, 'SIGINT');
    const answer = await pushed;
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('ok refs/heads/main');
    await started.serviceExited();
    expect(await postmasterOf(started.dataDir)).toBeNull(); // stopped by the service, after the push
    const said = expectStoppedGracefully(started);
    // The SIGINT reaches the service twice (from the group, forwarded by npm): one request to stop,
    // so never "exiting now" (expectStoppedGracefully). The two may arrive before the service runs
    // and be merged into one by the kernel, so "signal repeated: already stopping" is not always logged.
    expect(said).toContain('signal received');
    expect(said).not.toContain('embedded PostgreSQL exited; restarting it');
  } finally {
    await removeDataDir(started.dataDir);
  }
}, 90_000);

test('a second signal sent deliberately later exits at once', async () => {
  const started = await npmStart();
  try {
    const alice = await aliceOn(started);
    const pushed = slowPush(started, alice.token, 20).catch(() => null);
    await receivingPush(started);
    process.kill(-started.npm.pid!, 'SIGINT');
    await sleep(2000);
    const second = Date.now();
    process.kill(-started.npm.pid!, 'SIGINT');
    await started.serviceExited();
    expect(Date.now() - second).toBeLessThan(3000);
    expect(messages(started.output())).toContain('second signal: exiting now');
    await pushed;
  } finally {
    await removeDataDir(started.dataDir);
  }
}, 90_000);

/**
 * A JSON request whose body is sent in ten pieces over `seconds`, on a connection of its own:
 * `begun` resolves once the service has read all that has come so far — its head included, so
 * the service is serving the request — and `answer` with the service's answer.
 */
function slowRequest(started: Started, path: string, method: string, token: string, json: unknown, seconds: number) {
  const body = Buffer.from(JSON.stringify(json));
  const request = http.request(`${started.url}${path}`, {
    method,
    agent: false,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': body.length },
  });
  const answer = new Promise<{ status: number; body: Record<string, any> }>((resolve, reject) => {
    request.on('error', reject);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) }));
      response.on('error', reject);
    });
  });
  // Paced as trickled() paces a fetch's body. The head goes with the first piece; once both are
  // handed to the kernel, they are the service's to read.
  const write = (piece: Uint8Array) =>
    new Promise<void>((resolve, reject) => request.write(piece, (error) => (error ? reject(error) : resolve())));
  let markSent!: () => void;
  const firstSent = new Promise<void>((resolve) => (markSent = resolve));
  const sending = (async () => {
    for await (const piece of trickled(body, seconds)) {
      await write(piece);
      markSent();
    }
    request.end();
  })();
  // (Raced with the sending: a write that fails fails `begun` too, instead of leaving it waiting.)
  const begun = Promise.race([firstSent, sending]).then(() =>
    eventually(
      async () => {
        const [ends] = (await loopbackConnections(started.port, [request.socket!.localPort!])).values();
        return ends?.service?.state === ESTABLISHED && ends.service.unread === 0 && ends.client?.unsent === 0;
      },
      10_000,
      'the service to be reading the request',
    ),
  );
  return { begun, answer: Promise.all([answer, sending]).then(([answered]) => answered) };
}

test('SIGTERM to the group of npm start during a merge: the merge lands and its client is told so', async () => {
  const started = await npmStart();
  try {
    const alice = await aliceOn(started);
    const id = (await alice.get('/repos/alice/slow/resolve')).body.id as string;
    const work = await git.init(`merge-${Date.now()}`);
    const remote = `http://alice:${alice.token}@127.0.0.1:${started.port}/alice/slow.git`;
    await git.commit(work, 'base', { 'a.txt': 'a\n' });
    await git.git(['push', '--quiet', remote, 'HEAD:main'], { cwd: work });
    await git.git(['checkout', '--quiet', '-b', 'topic'], { cwd: work });
    await git.commit(work, 'topic', { 'b.txt': 'b\n' });
    await git.git(['push', '--quiet', remote, 'topic'], { cwd: work });
    expect((await alice.post(`/repos/${id}/pulls`, { title: 'topic', head: 'topic', base: 'main' })).status).toBe(201);

    const merging = slowRequest(started, `/repos/${id}/pulls/1/merge`, 'PUT', alice.token, { commit_title: 'merged while stopping' }, 2);
    await merging.begun;
    process.kill(-started.npm.pid!, 'SIGTERM');
    const answer = await merging.answer;
    expect(answer.status).toBe(200);
    expect(answer.body.merged).toBe(true);
    await started.serviceExited();
    // What the client was told is what the repository holds.
    const main = spawnSync('git', ['--git-dir', `${started.dataDir}/repositories/${id}.git`, 'rev-parse', 'refs/heads/main'], {
      encoding: 'utf8',
    });
    expect(main.stdout.trim()).toBe(answer.body.sha);
    expectStoppedGracefully(started);
  } finally {
    await removeDataDir(started.dataDir);
  }
}, 90_000);
