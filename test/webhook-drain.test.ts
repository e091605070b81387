import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { eventually } from './support/receiver.js';
import { CairnServer, sleep } from './support/server.js';

/**
 * The drain of a backlog: a receiver that answers quickly is sent it many
 * requests at a time (more than the 16 of a fixed limit), one that answers
 * slowly or fails is paced only until the window has held deliveries back
 * for half a second, and attempts
 * recorded in batches are all recorded.
 */

interface Arrival {
  delivery: string;
  at: number;
  /** Requests to this path held by the receiver when this one arrived, itself included. */
  inflight: number;
}

/** How a path answers one request. */
type Answer = (delivery: string, body: { ref?: string }) => { status: number; delayMs: number };

/** A receiver that knows how many requests it holds at once, per path. */
class CountingReceiver {
  readonly arrivals = new Map<string, Arrival[]>();
  private readonly holding = new Map<string, number>();
  private readonly answers = new Map<string, Answer>();
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const path = req.url ?? '/';
      const delivery = String(req.headers['x-cairn-delivery']);
      const inflight = (this.holding.get(path) ?? 0) + 1;
      this.holding.set(path, inflight);
      this.at(path).push({ delivery, at: Date.now(), inflight });
      const { status, delayMs } = (this.answers.get(path) ?? (() => ({ status: 200, delayMs: 0 })))(
        delivery,
        JSON.parse(Buffer.concat(chunks).toString('utf8')),
      );
      await sleep(delayMs); // the receiver's answer time, which the drain under test paces itself by
      this.holding.set(path, this.holding.get(path)! - 1);
      res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
    });
  });

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  on(path: string, answer: Answer): void {
    this.answers.set(path, answer);
  }

  at(path: string): Arrival[] {
    if (!this.arrivals.has(path)) this.arrivals.set(path, []);
    return this.arrivals.get(path)!;
  }

  /** Closes the connections it holds idle (kept alive), as its keep-alive timer would. */
  closeIdleConnections(): void {
    this.server.closeIdleConnections();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

type Owner = Awaited<ReturnType<typeof createUser>>;
let server: CairnServer;
let receiver: CountingReceiver;
let sandbox: GitSandbox;
let owner: Owner;

beforeAll(async () => {
  [server, receiver, sandbox] = await Promise.all([
    // Failed attempts stay pending for an hour: no retry runs while a test looks.
    CairnServer.start({ env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback', CAIRN_WEBHOOK_RETRY_DELAYS: '1h' } }),
    new CountingReceiver().start(),
    GitSandbox.create(),
  ]);
  owner = await createUser(adminClient(server), 'drainer', ['repo', 'admin:repo_hook']);
});
afterAll(async () => {
  await Promise.all([sandbox.cleanup(), receiver.close(), server.destroy()]);
});

/**
 * A repository whose webhook on `path` gets push and tag_create events, and one push of `tags`
 * tags: 2 × `tags` deliveries committed at once, a backlog for one webhook.
 */
async function pushBacklog(name: string, path_: string, tags: number) {
  const repo = (await owner.post('/repos', { name })).body.id as string;
  const hook = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url(path_), events: ['push', 'tag_create'] })).body;
  const work = await sandbox.init(name);
  await sandbox.commit(work, 'tagged', { 'README.md': 'tags\n' });
  const head = (await sandbox.git(['rev-parse', 'HEAD'], { cwd: work })).trim();
  const refs = Array.from({ length: tags }, (_, i) => `${head} refs/tags/t${i}`);
  await fs.writeFile(path.join(work, '.git', 'packed-refs'), `${refs.join('\n')}\n`);
  await sandbox.git(['push', '--quiet', remoteUrl(server, 'drainer', name, owner.token), '--tags'], { cwd: work });
  return { hookPath: `/repos/${repo}/webhooks/${hook.id}` };
}

async function arrived(path_: string, count: number, timeoutMs: number): Promise<Arrival[]> {
  try {
    return await eventually(
      async () => receiver.at(path_).length >= count && receiver.at(path_),
      timeoutMs,
      `${count} requests at ${path_}`,
    );
  } catch (error) {
    // What a failure needs to be understood: how far the drain got, and what the service said meanwhile.
    const said = server
      .logs()
      .filter((line) => typeof line.level === 'number' && line.level >= 40)
      .slice(-20);
    throw new Error(
      `${(error as Error).message}: ${receiver.at(path_).length} arrived; the service's last warnings:\n${JSON.stringify(said, null, 1)}`,
    );
  }
}

const most = (arrivals: Arrival[]) => Math.max(0, ...arrivals.map((a) => a.inflight));

test('a receiver that answers quickly is sent a backlog many requests at a time, up to the maximum of 64', async () => {
  // Held 150 ms (quick): however slowly a busy machine sends, many are held at once.
  receiver.on('/fast', () => ({ status: 200, delayMs: 150 }));
  await pushBacklog('fast', '/fast', 300);
  const got = await arrived('/fast', 600, 60_000);
  // A fixed limit would hold 16; the window grows past it within a few round trips.
  expect(most(got)).toBeGreaterThan(16);
  expect(most(got)).toBeLessThanOrEqual(64);
});

test('a receiver that answers slowly is paced for a moment, never past the schedule: the backlog goes at once after half a second', async () => {
  receiver.on('/slow', () => ({ status: 200, delayMs: 2_500 }));
  const { hookPath } = await pushBacklog('slow', '/slow', 5);
  const got = await arrived('/slow', 10, 15_000);
  const first = got[0]!.at;
  // The window starts at two; once it has held the rest back 500 ms, they go whatever the window, long
  // before the first answer (2.5 s). The 500 ms run from when the first claim returned, before the first
  // two were sent: a slow first send shortens what is seen here, so the paced part is checked over half
  // of it. Unpaced, the rest would come with the first two; waiting for an answer, 2.5 s after them.
  expect(most(got.filter((a) => a.at < first + 250))).toBeLessThanOrEqual(2);
  expect(got.every((a) => a.at < first + 1_800)).toBe(true);
  expect(new Set(got.map((a) => a.delivery)).size).toBe(10);
  await owner.delete(hookPath);
}, 40_000);

test('a slow receiver while events keep coming: each first attempt within about a second of its event', async () => {
  // Answers (2xx, slow) and new events wake the drain all the while: the overdue claim is a deadline they do not put off.
  receiver.on('/steady-slow', () => ({ status: 200, delayMs: 3_000 }));
  const repo = (await owner.post('/repos', { name: 'steady-slow' })).body.id as string;
  const hook = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/steady-slow'), events: ['issues'] })).body.id as string;
  // When each event's POST was answered: its delivery was committed with the issue, before the answer.
  const committed: number[] = [];
  for (let i = 0; i < 16; i++) {
    await owner.post(`/repos/${repo}/issues`, { title: `steady ${i}` });
    committed.push(Date.now());
    await sleep(200); // the events' pace: they keep coming while the receiver is slow, which is what is tested
  }
  const got = await arrived('/steady-slow', 16, 10_000);
  // Within a second of its commit (the overdue claim's 500 ms, a claim and a send); put off by the wake-ups,
  // the deadline would hold them until the events stop or the first slow answers (3 s) come.
  for (const [i, at] of committed.entries()) {
    expect(got.filter((a) => a.at <= at + 1_000).length).toBeGreaterThanOrEqual(i + 1);
  }
  const arrivals = got.map((a) => a.at).sort((x, y) => x - y);
  console.log(`slowest first attempt ${Math.max(...committed.map((at, i) => arrivals[i]! - at))} ms after its event's answer`);
  await owner.delete(`/repos/${repo}/webhooks/${hook}`);
}, 40_000);

test('a receiver that fails is sent what is due at once: no delivery waits for another to fail', async () => {
  receiver.on('/failing', () => ({ status: 500, delayMs: 300 }));
  const { hookPath } = await pushBacklog('failing', '/failing', 5);
  const got = await arrived('/failing', 10, 20_000);
  expect(got.every((a) => a.at < got[0]!.at + 1_200)).toBe(true);
  expect(new Set(got.map((a) => a.delivery)).size).toBe(10);
  // Each failed once and waits for its retry, an hour away.
  await eventually(async () => (await owner.get(`${hookPath}/deliveries?status=pending`)).body.total === 10, 5_000, 'ten pending');
  expect(receiver.at('/failing')).toHaveLength(10);
});

test('attempts recorded in batches are all recorded: 400 deliveries, each with its one attempt and its outcome', async () => {
  // Tags t0, t50, t100 and t150 fail, so some batches mix successes and failures waiting for their retry.
  const fails = (body: { ref?: string }) => Number(/t(\d+)$/.exec(body.ref ?? '')?.[1]) % 50 === 0;
  const failed = new Set<string>();
  receiver.on('/recorded', (delivery, body) => {
    if (fails(body)) failed.add(delivery);
    return { status: fails(body) ? 500 : 200, delayMs: 5 };
  });
  const { hookPath } = await pushBacklog('recorded', '/recorded', 200);
  const got = await arrived('/recorded', 400, 60_000);
  expect(new Set(got.map((a) => a.delivery)).size).toBe(400); // each sent once
  expect(failed.size).toBe(8); // push and tag_create of 4 tags

  const listed = await eventually(
    async () => {
      const all: Array<{ id: string; status: string; attempts_count: number; status_code: number }> = [];
      for (let offset = 0; ; offset += 100) {
        const page = (await owner.get(`${hookPath}/deliveries?limit=100&offset=${offset}`)).body;
        all.push(...page.data);
        if (!page.hasMore) break;
      }
      return all.every((d) => d.attempts_count === 1) && all;
    },
    15_000,
    'every delivery to show its attempt',
  );
  expect(listed).toHaveLength(400);
  for (const d of listed) {
    expect(d).toMatchObject(failed.has(d.id) ? { status: 'pending', status_code: 500 } : { status: 'succeeded', status_code: 200 });
  }
  // Each attempt row is there, numbered and with its answer: the failed ones and a dozen others.
  for (const d of [...listed.filter((one) => failed.has(one.id)), ...listed.slice(0, 12)]) {
    const one = (await owner.get(`${hookPath}/deliveries/${d.id}`)).body;
    expect(one.attempts).toEqual([expect.objectContaining({ number: 1, status_code: d.status_code, trigger: 'initial' })]);
  }
}, 90_000);

test('a receiver closing its idle kept-alive connections as a burst arrives loses nothing: every delivery arrives and succeeds at once', async () => {
  const repo = (await owner.post('/repos', { name: 'reused' })).body.id as string;
  const hook = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/reused'), events: ['push', 'tag_create'] })).body;
  const work = await sandbox.init('reused');
  await sandbox.commit(work, 'tagged', { 'README.md': 'tags\n' });
  const head = (await sandbox.git(['rev-parse', 'HEAD'], { cwd: work })).trim();
  const pushTags = async (prefix: string) => {
    const refs = Array.from({ length: 10 }, (_, i) => `${head} refs/tags/${prefix}${i}`);
    await fs.writeFile(path.join(work, '.git', 'packed-refs'), `${refs.join('\n')}\n`);
    await sandbox.git(['push', '--quiet', remoteUrl(server, 'drainer', 'reused', owner.token), '--tags'], { cwd: work });
  };
  // A first burst leaves Cairn's connections to the receiver open and idle.
  await pushTags('a');
  await arrived('/reused', 20, 20_000);
  // The second burst's first request makes the receiver close the idle ones, while Cairn sends the rest on them.
  let closed = false;
  receiver.on('/reused', () => {
    if (!closed) receiver.closeIdleConnections();
    closed = true;
    return { status: 200, delayMs: 0 };
  });
  await pushTags('b');
  const got = await arrived('/reused', 40, 20_000);
  expect(new Set(got.map((a) => a.delivery)).size).toBe(40);
  const hookPath = `/repos/${repo}/webhooks/${hook.id}`;
  const listed = await eventually(
    async () => {
      const page = (await owner.get(`${hookPath}/deliveries?limit=100`)).body;
      return page.data.every((d: { status: string }) => d.status === 'succeeded') && page.data;
    },
    10_000,
    'every delivery to succeed',
  );
  expect(listed).toHaveLength(40);
  for (const d of listed) expect(d).toMatchObject({ status: 'succeeded', attempts_count: 1 });
});
