import { verify } from '@octokit/webhooks-methods';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { eventually } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';

/**
 * Webhook request bodies held at once are bounded in bytes, not only in count: an account whose
 * events are large, sent to receivers that never answer, cannot make the service hold them all.
 * The bound here is CAIRN_WEBHOOK_MEMORY=2m, of which failing webhooks hold at most half. The receiver sees what the service holds: a request's body is in the
 * service's memory from its claim until its attempt is recorded, which is after the receiver's
 * connection closes.
 */
const MEMORY = 2 * 1024 * 1024;
const SECRET = 'memory-secret';

/** A receiver that counts the body bytes of the requests it holds open, per path prefix. */
class CountingReceiver {
  readonly requests: Array<{ path: string; raw: Buffer; signature: string }> = [];
  private readonly open = new Map<string, number>();
  readonly peak = new Map<string, number>();
  private readonly server = http.createServer((req, res) => {
    const kind = (req.url ?? '/').split('/')[1]!;
    const bytes = Number(req.headers['content-length'] ?? 0);
    for (const key of [kind, 'all']) {
      this.open.set(key, (this.open.get(key) ?? 0) + bytes);
      this.peak.set(key, Math.max(this.peak.get(key) ?? 0, this.open.get(key)!));
    }
    res.once('close', () => {
      for (const key of [kind, 'all']) this.open.set(key, this.open.get(key)! - bytes);
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.requests.push({ path: req.url ?? '/', raw: Buffer.concat(chunks), signature: String(req.headers['x-cairn-signature-256']) });
      if (kind !== 'hang') res.end('ok'); // a hanging receiver never answers: the service times out
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  at(prefix: string) {
    return this.requests.filter((r) => r.path.startsWith(prefix));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

let server: CairnServer;
let receiver: CountingReceiver;
let sandbox: GitSandbox;
let owner: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  receiver = new CountingReceiver();
  [server, sandbox] = await Promise.all([
    CairnServer.start({
      env: {
        CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback',
        CAIRN_WEBHOOK_MEMORY: '2m',
        CAIRN_WEBHOOK_TIMEOUT: '1s',
        // One attempt per delivery within the test: the retry comes an hour later.
        CAIRN_WEBHOOK_RETRY_DELAYS: '1h',
      },
    }),
    GitSandbox.create(),
    receiver.start(),
  ]);
  owner = await createUser(adminClient(server), 'heavy', ['repo', 'admin:repo_hook']);
});
afterAll(async () => {
  await Promise.all([receiver.close(), sandbox.cleanup(), server.destroy()]);
});
afterEach(() => server.assertRunning());

async function webhook(repo: string, path: string, events: string[]): Promise<string> {
  const created = await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url(path), events, secret: SECRET });
  expect(created.status).toBe(201);
  return created.body.id as string;
}

const attemptsOf = (hookIds: string[]) =>
  query<{ attempts_count: number }>(
    server,
    `select attempts_count from deliveries where webhook_id = any($1::text[]) and event = 'issues'`,
    [hookIds],
  );

test('large bodies for receivers that hang are sent a few at a time, every one, and a healthy webhook is not held back', async () => {
  const repo = (await owner.post('/repos', { name: 'large-events' })).body.id as string;
  const hanging: string[] = [];
  for (let i = 0; i < 4; i++) hanging.push(await webhook(repo, `/hang/${i}`, ['issues']));
  const healthy = await webhook(repo, '/ok', ['issues']);
  // A ping each first: the hanging webhooks are known to fail, the healthy one to succeed.
  for (const hook of [...hanging, healthy]) expect((await owner.post(`/repos/${repo}/webhooks/${hook}/pings`)).status).toBe(202);
  const known = async (hook: string) => (await owner.get(`/repos/${repo}/webhooks/${hook}`)).body.last_response?.status_code !== undefined;
  await eventually(async () => (await Promise.all([...hanging, healthy].map(known))).every(Boolean), 15_000, 'the pings answered');
  receiver.requests.length = 0;
  receiver.peak.clear();

  // 65,000 control characters take 6 bytes each in JSON: ~390 KB an event, 16 deliveries to the
  // hanging receivers, ~6 MB together, three times the whole bound.
  for (let i = 0; i < 4; i++) {
    const created = await owner.post(`/repos/${repo}/issues`, { title: `large ${i}`, body: '\x01'.repeat(65_000) });
    expect(created.status).toBe(201);
  }

  // Every delivery is attempted, none twice (the retry is an hour away), within a few timeouts.
  await eventually(
    async () => (await attemptsOf(hanging)).filter((d) => d.attempts_count >= 1).length === 16,
    60_000,
    'every hanging delivery attempted',
  );
  expect((await attemptsOf(hanging)).map((d) => d.attempts_count)).toEqual(Array(16).fill(1));
  await eventually(async () => receiver.at('/ok').length >= 4, 15_000, 'the healthy webhook to receive its 4 events');

  const hangs = receiver.at('/hang/');
  expect(hangs).toHaveLength(16);
  const largest = Math.max(...hangs.map((r) => r.raw.length));
  expect(largest).toBeGreaterThan(380_000);
  // Failing webhooks hold at most half the bound, or one body alone past it (without the bound: all 16, ~6 MB).
  expect(receiver.peak.get('hang')).toBeLessThanOrEqual(Math.max(MEMORY / 2, largest));
  expect(receiver.peak.get('all')).toBeLessThanOrEqual(MEMORY + largest);
  // A healthy webhook's deliveries are not queued behind the hanging ones': its last came before theirs.
  const lastOk = Math.max(...receiver.at('/ok').map((r) => receiver.requests.indexOf(r)));
  const lastHang = Math.max(...hangs.map((r) => receiver.requests.indexOf(r)));
  expect(lastOk).toBeLessThan(lastHang);
  expect(receiver.at('/ok')).toHaveLength(4);
  expect(await attemptsOf([healthy])).toEqual(Array(4).fill({ attempts_count: 1 }));

  // What arrived is what was signed (a third-party verifier).
  for (const r of [...hangs, ...receiver.at('/ok')]) expect(await verify(SECRET, r.raw.toString('utf8'), r.signature)).toBe(true);
}, 90_000);

test('a push event larger than the whole bound is still delivered, alone; its messages are budgeted in JSON bytes, its names cut', async () => {
  const repo = (await owner.post('/repos', { name: 'large-push' })).body;
  await webhook(repo.id, '/big', ['push']);
  const work = await sandbox.init('big');
  // Git sets no bound on a name: the event holds its first 256 characters.
  let tip = await sandbox.commit(work, 'first', { 'README.md': 'big\n' }, { GIT_AUTHOR_NAME: 'N'.repeat(5_000) });
  const tree = (await sandbox.git(['rev-parse', 'HEAD^{tree}'], { cwd: work })).trim();
  const message = sandbox.path('message.txt');
  for (let i = 0; i < 40; i++) {
    await fs.writeFile(message, `commit ${i}\n\n${'\x01'.repeat(60_000)}\n`);
    tip = (await sandbox.git(['commit-tree', tree, '-p', tip, '-F', message], { cwd: work })).trim();
  }
  const pushed = await sandbox.run(['push', '--quiet', remoteUrl(server, 'heavy', 'large-push', owner.token), `${tip}:refs/heads/main`], {
    cwd: work,
  });
  expect(pushed).toEqual(expect.objectContaining({ code: 0 }));

  await eventually(async () => receiver.at('/big').length >= 1, 20_000, 'the push event');
  const [push] = receiver.at('/big');
  expect(push!.raw.length).toBeGreaterThan(MEMORY); // larger than the whole bound: sent all the same
  expect(await verify(SECRET, push!.raw.toString('utf8'), push!.signature)).toBe(true);
  const payload = JSON.parse(push!.raw.toString('utf8')) as { commits: Array<{ message: string; author: object }> };
  expect(payload.commits).toHaveLength(41);
  expect(payload.commits[0]!.author).toEqual({ name: `${'N'.repeat(256)}…`, email: 'test@example.test' });
  // Whole messages take ~360 KB each in JSON: 4 MiB of them are kept whole, the rest cut short.
  const bytes = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;
  const whole = payload.commits.filter((c) => !c.message.endsWith('…'));
  expect(whole.length).toBeGreaterThan(5);
  expect(whole.length).toBeLessThan(15);
  expect(whole.reduce((sum, c) => sum + bytes(c.message), 0)).toBeLessThan(4 * 1024 * 1024 + 400_000);
  expect(payload.commits.filter((c) => c.message.endsWith('…')).every((c) => c.message.length <= 1025)).toBe(true);
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(receiver.at('/big')).toHaveLength(1);
}, 60_000);
