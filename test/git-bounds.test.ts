import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { commandsOf, TreeGuard, treeOf } from './support/process-tree.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer, sleep } from './support/server.js';

/**
 * One account with a repository of its own tries to take the service down with pushes of under a
 * megabyte: 100,000 empty files, a "git bomb" of 10^10 paths, a push killed while it is described,
 * a push trickled just fast enough for the pace rule. Each is survived, bounded and recorded, and
 * the service stays up for everyone — watched from outside: the service's process tree is killed
 * past GUARD_BYTES, so a regression fails here instead of eating the machine.
 */
const GUARD_BYTES = 3 * 1024 ** 3;
/** The push timeout of the last tests only: the pushes before take their time on a loaded machine (200 refs run 600 hooks). */
const PUSH_TIMEOUT_S = 25;
const ZERO = '0'.repeat(40);

let server: CairnServer;
let guard: TreeGuard;
let git: GitSandbox;
let receiver: Receiver;
let alice: Awaited<ReturnType<typeof createUser>>;
let bob: Awaited<ReturnType<typeof createUser>>;
/** A repository of another account, read while alice's pushes are worked on. */
let bobs: string;

const env = { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' };

function watch(started: CairnServer): TreeGuard {
  return new TreeGuard(started.process!.pid!, GUARD_BYTES);
}

beforeAll(async () => {
  [server, git, receiver] = await Promise.all([CairnServer.start({ env, detached: true }), GitSandbox.create(), Receiver.start()]);
  guard = watch(server);
  const admin = adminClient(server);
  alice = await createUser(admin, 'alice', ['repo', 'admin:repo_hook']);
  bob = await createUser(admin, 'bob');
  bobs = (await bob.post('/repos', { name: 'bobs' })).body.id;
});
afterAll(async () => {
  guard.stop();
  await Promise.all([server.destroy(), git.cleanup(), receiver.close()]);
});
afterEach(() => {
  expect(guard.exceeded).toBe(false);
  server.assertRunning(); // a service that died (at its heap's limit, say) fails the test that killed it
});

/** A repository of alice's with a webhook for pushes at `/<name>` of the receiver. */
async function repository(name: string): Promise<string> {
  const id = (await alice.post('/repos', { name })).body.id as string;
  const hook = await alice.post(`/repos/${id}/webhooks`, { url: receiver.url(`/${name}`), events: ['push'], secret: 's' });
  expect(hook.status).toBe(201);
  return id;
}

/** A bare repository in the sandbox holding one commit of `tree`; returns its sha. */
async function commitOf(bare: string, tree: string, message: string): Promise<string> {
  return (await git.git(['commit-tree', tree, '-m', message], { cwd: bare })).trim();
}

/** Names of 246 characters: listed whole, 100,000 of them are 25 MB of paths, twice in a payload. */
const LONG = 'p'.repeat(240);

/** 100,000 entries of the empty blob at the root: a pack of some 420 KB. */
async function manyEmptyFiles(bare: string): Promise<string> {
  const empty = (await git.git(['hash-object', '-w', '-t', 'blob', '--stdin'], { cwd: bare, input: '' })).trim();
  const entries = Array.from({ length: 100_000 }, (_, i) => `100644 blob ${empty}\t${LONG}${String(i).padStart(6, '0')}\n`).join('');
  return commitOf(bare, (await git.git(['mktree'], { cwd: bare, input: entries })).trim(), 'a hundred thousand empty files');
}

/** A blob, a tree of ten of it, then nine levels of trees of ten of the previous tree: 10^10 paths in 12 objects. */
async function gitBomb(bare: string): Promise<string> {
  const blob = (await git.git(['hash-object', '-w', '--stdin'], { cwd: bare, input: 'boom\n' })).trim();
  let tree = (
    await git.git(['mktree'], { cwd: bare, input: Array.from({ length: 10 }, (_, i) => `100644 blob ${blob}\tf${i}\n`).join('') })
  ).trim();
  for (let level = 0; level < 9; level++) {
    const entries = Array.from({ length: 10 }, (_, i) => `040000 tree ${tree}\td${i}\n`).join('');
    tree = (await git.git(['mktree'], { cwd: bare, input: entries })).trim();
  }
  return commitOf(bare, tree, 'a bomb');
}

async function bareRepository(name: string): Promise<string> {
  const dir = git.path(`${name}.git`);
  await git.git(['init', '--quiet', '--bare', dir]);
  return dir;
}

const push = (bare: string, name: string, sha: string, ref = 'main') =>
  git.run(['push', '--quiet', remoteUrl(server, 'alice', name, alice.token), `${sha}:refs/heads/${ref}`], { cwd: bare });

/** A `git-receive-pack` request body creating `refs` at `sha`, with `pack`: what git's client sends. */
function receivePackBody(sha: string, refs: string[], pack: Buffer): Buffer {
  const pktLine = (line: string) => `${(Buffer.byteLength(line) + 4).toString(16).padStart(4, '0')}${line}`;
  const commands = refs.map((ref, i) => pktLine(`${ZERO} ${sha} ${ref}${i === 0 ? '\0report-status side-band-64k' : ''}\n`));
  return Buffer.concat([Buffer.from(`${commands.join('')}0000`), pack]);
}

/** A pack of `objects` of a bare repository, stored uncompressed. */
const packOf = (bare: string, objects: string[]) =>
  spawnSync('git', ['pack-objects', '--stdout', '--compression=0'], { cwd: bare, env: git.env, input: `${objects.join('\n')}\n` }).stdout;

/** How long another account's read of its own repository takes right now. */
async function othersRead(repositoryId: string): Promise<number> {
  const started = performance.now();
  expect((await bob.get(`/repos/${repositoryId}`)).status).toBe(200);
  return performance.now() - started;
}

describe('pushes that describe to no end', () => {
  test('100,000 empty files: the push event lists 3,000 paths, paths_truncated; the service stays up and restarts', async () => {
    await repository('many');
    const bare = await bareRepository('many');
    const sha = await manyEmptyFiles(bare);
    const started = performance.now();
    const pushed = await push(bare, 'many', sha);
    const elapsed = performance.now() - started;
    expect(pushed).toEqual(expect.objectContaining({ code: 0 })); // a failure shows what git said
    const [delivery] = await receiver.waitFor('/many');
    const event = delivery!.body;
    expect(event.commits).toHaveLength(1);
    expect(event.commits[0]).toMatchObject({ id: sha, paths_truncated: true, modified: [], removed: [] });
    expect(event.commits[0].added).toHaveLength(3000);
    expect(event.commits[0].added.slice(0, 2)).toEqual([`${LONG}000000`, `${LONG}000001`]);
    expect(event.head_commit).toMatchObject({ id: sha, paths_truncated: true });
    expect(delivery!.raw.length).toBeLessThan(2_000_000);
    console.log(`100,000 empty files: push ${Math.round(elapsed)} ms, service tree peak ${guard.peakMb} MB`);

    guard.stop();
    await server.stop();
    server = await server.restart();
    guard = watch(server);
    expect(await othersRead(bobs)).toBeLessThan(3000);
  }, 180_000); // making 100,000 files, pushing them and a restart: 11 s alone, over 60 s in a loaded run

  test('a git bomb (10^10 paths in 833 bytes): its git is stopped at the memory bound, the push lands without paths, others are served', async () => {
    const id = await repository('bomb');
    const bare = await bareRepository('bomb');
    const sha = await gitBomb(bare);
    const started = performance.now();
    const pushing = push(bare, 'bomb', sha);
    let slowest = 0;
    for (let i = 0; i < 5; i++) {
      await sleep(500); // spreads the five samples of others' reads over the push: a measurement's pace
      slowest = Math.max(slowest, await othersRead(bobs));
    }
    const pushed = await pushing;
    const elapsed = performance.now() - started;
    expect(pushed).toEqual(expect.objectContaining({ code: 0 })); // a failure shows what git said
    expect(slowest).toBeLessThan(3000);
    const [delivery] = await receiver.waitFor('/bomb');
    expect(delivery!.body.commits[0]).toMatchObject({ id: sha, added: [], modified: [], removed: [], paths_truncated: true });
    expect(guard.peakBytes).toBeLessThan(2.5 * 1024 ** 3);
    console.log(`git bomb: push ${Math.round(elapsed)} ms, service tree peak ${guard.peakMb} MB`);

    // The repository is not held: its owner pushes on top at once, and browsing it is bounded too.
    const work = git.path('bomb-work');
    await git.git(['clone', '--quiet', '--no-checkout', remoteUrl(server, 'alice', 'bomb', alice.token), work]);
    const emptyTree = (await git.git(['mktree'], { cwd: work, input: '' })).trim();
    const defused = (await git.git(['commit-tree', emptyTree, '-p', sha, '-m', 'defused'], { cwd: work })).trim();
    const again = await git.run(['push', '--quiet', 'origin', `${defused}:refs/heads/main`], { cwd: work });
    expect(again.code).toBe(0);
    const browsed = await alice.gql(
      'query($id: ID!, $ref: String) { repository(id: $id) { tree(ref: $ref) { totalCount nodes { name } } } }',
      {
        id,
        ref: sha,
      },
    );
    expect(browsed.repository.tree.totalCount).toBe(10);

    // A pull request bringing the bomb back: its files are more than git may list within its bounds, answered so.
    const bombTree = (await git.git(['rev-parse', `${sha}^{tree}`], { cwd: work })).trim();
    const back = (await git.git(['commit-tree', bombTree, '-p', defused, '-m', 'the bomb again'], { cwd: work })).trim();
    expect((await git.run(['push', '--quiet', 'origin', `${back}:refs/heads/again`], { cwd: work })).code).toBe(0);
    const pr = await alice.post(`/repos/${id}/pulls`, { title: 'boom', head: 'again', base: 'main' });
    expect(pr.status).toBe(201);
    const files = await alice.get(`/repos/${id}/pulls/${pr.body.number}/files`);
    expect(files.status).toBe(422);
    expect(files.body.error.code).toBe('git_limit_exceeded');
    await eventually(async () => (await alice.get(`/repos/${id}/pulls/${pr.body.number}`)).body.mergeable !== null, 60_000, 'mergeability');
    expect(guard.peakBytes).toBeLessThan(2.5 * 1024 ** 3);

    guard.stop();
    await server.stop();
    server = await server.restart();
    guard = watch(server);
    expect(await othersRead(bobs)).toBeLessThan(3000);
  }, 180_000);

  test('a process killed while it describes a push: the restart records the push without paths instead of dying again', async () => {
    await repository('killed');
    const bare = await bareRepository('killed');
    const sha = await gitBomb(bare);
    const pushing = push(bare, 'killed', sha);
    // Kill everything while git works on the push's paths (the diff-tree the launcher started).
    await eventually(
      async () => (await commandsOf(await treeOf(server.process!.pid!))).some((command) => command.includes('diff-tree')),
      30_000,
      'the description under way',
    );
    guard.stop();
    await server.killAll();
    expect((await pushing).code).not.toBe(0);

    const started = performance.now();
    server = await server.restart();
    guard = watch(server);
    console.log(`restart after a kill mid-description: ready in ${Math.round(performance.now() - started)} ms`);
    const [delivery] = await receiver.waitFor('/killed');
    expect(delivery!.body).toMatchObject({ after: sha, commits: [{ id: sha, added: [], paths_truncated: true }] });
    expect(
      server.logs().some((line) => line.msg === 'an attempt to describe these ref changes ended its process; recording them without paths'),
    ).toBe(true);
  }, 120_000);
});

describe('what the events of one push hold is bounded, however the push repeats a commit', () => {
  /** A commit whose message is 61 KB, on an empty tree. */
  async function longMessage(bare: string): Promise<string> {
    const tree = (await git.git(['mktree'], { cwd: bare, input: '' })).trim();
    return (await git.git(['commit-tree', tree, '-F', '-'], { cwd: bare, input: `long\n\n${'m'.repeat(61_000)}\n` })).trim();
  }

  test('200 branches at one commit of a 61 KB message: the first events hold it, the rest briefly, the service stays up', async () => {
    await repository('fan');
    const bare = await bareRepository('fan');
    const sha = await longMessage(bare);
    const refspecs = Array.from({ length: 200 }, (_, i) => `${sha}:refs/heads/b${String(i).padStart(3, '0')}`);
    const started = performance.now();
    const pushed = await git.run(['push', '--quiet', remoteUrl(server, 'alice', 'fan', alice.token), ...refspecs], { cwd: bare });
    console.log(`200 branches at one commit: push ${Math.round(performance.now() - started)} ms`);
    expect(pushed).toEqual(expect.objectContaining({ code: 0 })); // a failure shows what git said
    const deliveries = await receiver.waitFor('/fan', 200, 60_000);
    const lengths = deliveries.map((delivery) => delivery.body.head_commit.message.length as number);
    expect(Math.max(...lengths)).toBeGreaterThan(60_000);
    expect(Math.min(...lengths)).toBeLessThanOrEqual(1025);
    expect(deliveries.reduce((sum, delivery) => sum + delivery.raw.length, 0)).toBeLessThan(12 * 1024 * 1024);
    expect(await othersRead(bobs)).toBeLessThan(3000);
  }, 90_000);

  test('2,100 commits of 61 KB messages: one event within its budgets, messages past them brief', async () => {
    await repository('messages');
    const bare = await bareRepository('messages');
    const message = `long\n\n${'m'.repeat(61_000)}\n`;
    const stream = Array.from(
      { length: 2100 },
      (_, i) =>
        `commit refs/heads/main\ncommitter A <a@example.test> ${1_600_000_000 + i} +0000\ndata ${Buffer.byteLength(message)}\n${message}\n`,
    ).join('');
    await git.git(['fast-import', '--quiet'], { cwd: bare, input: stream });
    const pushed = await git.run(['push', '--quiet', remoteUrl(server, 'alice', 'messages', alice.token), 'main'], { cwd: bare });
    expect(pushed).toEqual(expect.objectContaining({ code: 0 })); // a failure shows what git said
    const [delivery] = await receiver.waitFor('/messages', 1, 60_000);
    const event = delivery!.body;
    expect(event).toMatchObject({ total_commits: 2100, commits_truncated: false });
    expect(event.commits).toHaveLength(2048);
    expect(event.commits.at(-1).message.length).toBeGreaterThan(60_000); // the newest, first in line for the budget
    expect(event.commits[0].message.length).toBeLessThanOrEqual(1025); // the oldest listed, past it
    expect(delivery!.raw.length).toBeLessThan(9 * 1024 * 1024);
    expect(await othersRead(bobs)).toBeLessThan(3000);
  }, 90_000);

  test('a push of more than 5,000 refs is refused whole, with the reason git prints', async () => {
    const id = await repository('refs');
    const bare = await bareRepository('refs');
    const blob = (await git.git(['hash-object', '-w', '--stdin'], { cwd: bare, input: 'one\n' })).trim();
    const tree = (await git.git(['mktree'], { cwd: bare, input: `100644 blob ${blob}\tone.txt\n` })).trim();
    const sha = await commitOf(bare, tree, 'one');
    // What `git push origin main 'refs/tags/*'` sends for 5,001 tags, sent directly: git's own client
    // spends some 20 s of CPU preparing that many refs, the server's answer is the same.
    const refs = ['refs/heads/main', ...Array.from({ length: 5001 }, (_, i) => `refs/tags/t${i}`)];
    const pushed = await fetch(`http://127.0.0.1:${server.port}/alice/refs.git/git-receive-pack`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`alice:${alice.token}`).toString('base64')}`,
        'content-type': 'application/x-git-receive-pack-request',
      },
      body: receivePackBody(sha, refs, packOf(bare, [sha, tree, blob])),
    });
    expect(pushed.status).toBe(200);
    const answer = Buffer.from(await pushed.arrayBuffer()).toString('latin1');
    expect(answer).toContain('it updates 5002 refs, at most 5000 are accepted in one push');
    expect(answer).toContain('ng refs/heads/main pre-receive hook declined');
    expect((await alice.get(`/repos/${id}`)).body.empty).toBe(true);
  });
});

describe('a push holds its repository at most CAIRN_GIT_PUSH_TIMEOUT', () => {
  beforeAll(async () => {
    guard.stop();
    await server.stop();
    server = await server.restart({ CAIRN_GIT_PUSH_TIMEOUT: `${PUSH_TIMEOUT_S}s` });
    guard = watch(server);
  });

  test('a push trickled above the pace floor is cut at the timeout, and the owner pushes at once', async () => {
    await repository('slow');
    const bare = await bareRepository('slow');
    const blob = (
      await git.git(['hash-object', '-w', '--stdin'], { cwd: bare, input: Buffer.alloc(120_000, 'x').toString() + Math.random() })
    ).trim();
    const tree = (await git.git(['mktree'], { cwd: bare, input: `100644 blob ${blob}\tbig.txt\n` })).trim();
    const sha = await commitOf(bare, tree, 'slowly');
    const body = receivePackBody(sha, ['refs/heads/main'], packOf(bare, [sha, tree, blob]));
    expect(body.length).toBeGreaterThan(100_000);

    // 2 KiB a second: above the 1 KiB/s floor, so only the timeout can end it (the whole body would take a minute).
    const started = performance.now();
    const outcome = await new Promise<{ status: number | null; ms: number }>((resolve) => {
      const socket = net.connect(server.port, '127.0.0.1');
      let head = '';
      let sent = 0;
      const timer = setInterval(() => {
        if (sent >= body.length) return;
        socket.write(body.subarray(sent, sent + 2048));
        sent += 2048;
      }, 1000);
      const done = () => {
        clearInterval(timer);
        const status = /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1];
        resolve({ status: status ? Number(status) : null, ms: performance.now() - started });
      };
      socket.on('data', (chunk) => (head += chunk.toString('latin1')));
      socket.on('close', done);
      socket.on('error', () => undefined);
      const basic = Buffer.from(`alice:${alice.token}`).toString('base64');
      socket.write(
        [
          'POST /alice/slow.git/git-receive-pack HTTP/1.1',
          `Host: 127.0.0.1:${server.port}`,
          `Authorization: Basic ${basic}`,
          'Content-Type: application/x-git-receive-pack-request',
          `Content-Length: ${body.length}`,
          '',
          '',
        ].join('\r\n'),
      );
    });
    console.log(`a push trickled at 2 KiB/s: answered ${outcome.status} after ${Math.round(outcome.ms)} ms`);
    // 408, unless the reset of a connection cut while the client still sends overtakes the answer.
    expect([408, null]).toContain(outcome.status);
    expect(outcome.ms).toBeGreaterThan(PUSH_TIMEOUT_S * 1000 - 500);
    expect(outcome.ms).toBeLessThan(PUSH_TIMEOUT_S * 1000 + 5000);

    const owner = performance.now();
    const pushed = await push(bare, 'slow', sha);
    expect(pushed).toEqual(expect.objectContaining({ code: 0 })); // a failure shows what git said
    expect(performance.now() - owner).toBeLessThan(5000); // a lock left held would make it wait out the timeout or be refused
    const [delivery] = await receiver.waitFor('/slow');
    expect(delivery!.body.after).toBe(sha);
  }, 90_000);
});
