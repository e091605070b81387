import { createHmac } from 'node:crypto';
import { adminClient, createUser } from './support/client.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';

/**
 * What a webhook owner relies on beyond the happy path: once a webhook is
 * deactivated, deleted or disabled, nothing more reaches its receiver; many
 * hanging receivers do not hold up a healthy one; retries are counted from
 * the failure; secrets and tokens never reach the logs; a process with
 * another key than the site's does not start.
 */
type Owner = Awaited<ReturnType<typeof createUser>>;
let server: CairnServer;
let receiver: Receiver;
let owner: Owner;

beforeAll(async () => {
  [server, receiver] = await Promise.all([
    CairnServer.start({
      env: {
        CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback',
        CAIRN_WEBHOOK_TIMEOUT: '3s',
        CAIRN_WEBHOOK_RETRY_DELAYS: '1s,2s',
        // The disable test's streak reaches it within seconds. No test here needs a webhook to keep failing
        // longer: the retry schedule is tested on a process where nothing is disabled (below).
        CAIRN_WEBHOOK_DISABLE_AFTER: '4s',
        LOG_LEVEL: 'debug',
      },
    }),
    Receiver.start(),
  ]);
  owner = await createUser(adminClient(server), 'isolated', ['repo', 'admin:repo_hook']);
});
afterAll(async () => {
  await receiver.close();
  await server.destroy();
});

/** A repository whose webhook on `path` receives `issues` events, and `count` events fired at once. */
async function burst(name: string, path: string, count: number) {
  const repo = (await owner.post('/repos', { name })).body.id as string;
  const hook = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url(path), events: ['issues'] })).body;
  await Promise.all(Array.from({ length: count }, (_, i) => owner.post(`/repos/${repo}/issues`, { title: `event ${i}` })));
  return { repo, hook, hookPath: `/repos/${repo}/webhooks/${hook.id}` };
}

/**
 * Waits until the webhook can send nothing more: none of its deliveries is pending (deactivating or
 * disabling cancels them in its transaction, and only a pending delivery of an active webhook is
 * claimed) and none is claimed with its attempt unrecorded. An attempt is recorded after its answer,
 * so every request the webhook will ever send has reached the receiver by then.
 */
async function settled(hookId: string): Promise<void> {
  await eventually(
    async () => {
      const [row] = await query<{ n: number }>(
        server,
        `select count(*)::int as n from deliveries where webhook_id = $1 and (status = 'pending' or claimed_until is not null)`,
        [hookId],
      );
      return row!.n === 0;
    },
    15_000,
    'the attempts in flight to end',
  );
}

/** Requests that reached `path` later than `since` (plus a little for a request already on the wire). */
const arrivedAfter = (path: string, since: number) => receiver.at(path).filter((r) => r.at > since + 100);

describe('nothing is sent once a webhook is switched off', () => {
  test('deactivated: of 50 deliveries to a slow receiver, none starts after the PATCH', async () => {
    receiver.on('/slow-deactivate', { delayMs: 1_500 });
    const { hook, hookPath } = await burst('deactivate-burst', '/slow-deactivate', 50);
    await receiver.waitFor('/slow-deactivate', 1);
    expect((await owner.patch(hookPath, { active: false })).body.active).toBe(false);
    const switchedOff = Date.now();
    await settled(hook.id);
    expect(arrivedAfter('/slow-deactivate', switchedOff)).toHaveLength(0);
    const pending = (await owner.get(`${hookPath}/deliveries?status=pending`)).body.total;
    expect(pending).toBe(0);
  });

  test('deleted: none starts after the DELETE, and attempts in flight end quietly', async () => {
    receiver.on('/slow-delete', { delayMs: 1_500 });
    const { repo, hook, hookPath } = await burst('delete-burst', '/slow-delete', 50);
    await receiver.waitFor('/slow-delete', 1);
    expect((await owner.delete(hookPath)).status).toBe(204);
    const deleted = Date.now();
    // Its deliveries went with it: nothing is left to claim. Only attempts claimed before the DELETE
    // can still be sent, and they went on the wire as they were claimed: wait for their answers.
    expect(await query(server, 'select count(*)::int as n from deliveries where webhook_id = $1', [hook.id])).toEqual([{ n: 0 }]);
    await eventually(async () => receiver.unanswered('/slow-delete') === 0, 15_000, 'the requests in flight to be answered');
    // A marker recorded after those answers came back: a ping through another webhook, recorded by the
    // same recorder once answered, so the attempts in flight have ended (and would have logged) by then.
    const marker = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/after-delete'), events: ['issues'] })).body;
    const ping = (await owner.post(`/repos/${repo}/webhooks/${marker.id}/pings`)).body;
    await eventually(
      async () => (await owner.get(`/repos/${repo}/webhooks/${marker.id}/deliveries/${ping.id}`)).body.status === 'succeeded',
      15_000,
      'the marker ping to be recorded',
    );
    expect(arrivedAfter('/slow-delete', deleted)).toHaveLength(0);
    expect(server.logs().filter((line) => (line.level as number) >= 50)).toEqual([]);
  });

  test('disabled for consistent failure: nothing reaches the receiver after disabled_at', async () => {
    receiver.on('/failing-burst', { status: 500, delayMs: 200 });
    const { hookPath } = await burst('disable-burst', '/failing-burst', 30);
    const hook = await eventually(
      async () => {
        const res = await owner.get(hookPath);
        return res.body.active === false && res.body;
      },
      20_000,
      'the webhook to be disabled',
    );
    expect(hook.disabled_reason).toBe('consistent_failure');
    await settled(hook.id);
    expect(receiver.at('/failing-burst').length).toBeGreaterThanOrEqual(2);
    expect(arrivedAfter('/failing-burst', Date.parse(hook.disabled_at))).toHaveLength(0);
  });
});

test('72 hanging receivers on the same host do not delay a healthy webhook beside them', async () => {
  receiver.on('/hang-many', { delayMs: 10_000 });
  const hanging: string[] = [];
  for (let r = 0; r < 4; r++) {
    const repo = (await owner.post('/repos', { name: `hanging-${r}` })).body.id as string;
    await Promise.all(
      Array.from({ length: 18 }, () => owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/hang-many'), events: ['issues'] })),
    );
    hanging.push(repo);
  }
  await Promise.all(hanging.map((repo) => owner.post(`/repos/${repo}/issues`, { title: 'to the hanging receivers' })));
  // As soon as 64 hold a request open (a fixed pool of 64 job slots or sockets would be full), not
  // later: by then the first would be timing out and freeing what they held.
  await receiver.waitFor('/hang-many', 64);

  const healthy = (await owner.post('/repos', { name: 'healthy-beside' })).body.id as string;
  await owner.post(`/repos/${healthy}/webhooks`, { url: receiver.url('/fast-beside'), events: ['issues'] });
  const fired = Date.now();
  await owner.post(`/repos/${healthy}/issues`, { title: 'to the healthy receiver' });
  const [arrived] = await receiver.waitFor('/fast-beside', 1, 5_000);
  expect(arrived!.at - fired).toBeLessThan(1_000);
});

test('secrets and tokens never reach the logs, even at debug level', async () => {
  receiver.on('/secretive', { status: 200 });
  const repo = (await owner.post('/repos', { name: 'secretive' })).body.id as string;
  const chosen = 'chosen-secret-that-must-never-be-logged';
  const hook = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/secretive'), events: ['issues'], secret: chosen })).body;
  const generatedHook = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/secretive'), events: ['issues'] })).body;
  const rotated = 'rotated-secret-that-must-never-be-logged';
  await owner.patch(`/repos/${repo}/webhooks/${hook.id}`, { secret: rotated });
  await owner.post(`/repos/${repo}/issues`, { title: 'signed with every secret' });
  await receiver.waitFor('/secretive', 2);
  expect(generatedHook.secret).toMatch(/^[0-9a-f]{64}$/);
  for (const secret of [chosen, rotated, generatedHook.secret, owner.token, server.adminToken]) {
    expect(server.output).not.toContain(secret);
  }
  expect(server.logs().some((line) => line.msg === 'request')).toBe(true); // the check read real log lines
});

test('an unknown event filter on the history is 422, like an unknown status', async () => {
  const { hookPath } = await burst('filters', '/filters', 0);
  for (const query of ['event=bogus', 'status=bogus']) {
    const res = await owner.get(`${hookPath}/deliveries?${query}`);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
  }
});

/**
 * A process of their own: CAIRN_WEBHOOK_DISABLE_AFTER at its default (7 days), so a streak of failures
 * never disables a webhook here. With the file's 4 s, the retry test's last attempt (due ~3.7 s into its
 * streak) raced the disable: with retries running late, a 5 s sweep in between could cancel it.
 */
describe('on a process keyed with CAIRN_SECRET_KEY, whose webhooks are never disabled meanwhile', () => {
  const env = {
    CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback',
    CAIRN_WEBHOOK_RETRY_DELAYS: '1s,2s',
    CAIRN_SECRET_KEY: 'the first key, at least thirty-two chars',
  };
  let keyed: CairnServer;
  beforeAll(async () => {
    keyed = await CairnServer.start({ env });
  });
  afterAll(() => keyed.destroy());

  test('retries are counted from the failure, not from the start of the attempt', async () => {
    receiver.on('/slow-failure', { status: 500, delayMs: 700 });
    const bob = await createUser(adminClient(keyed), 'retried', ['repo', 'admin:repo_hook']);
    const repo = (await bob.post('/repos', { name: 'slow-failure' })).body.id as string;
    await bob.post(`/repos/${repo}/webhooks`, { url: receiver.url('/slow-failure'), events: ['issues'] });
    await bob.post(`/repos/${repo}/issues`, { title: 'fails slowly' });
    const attempts = await receiver.waitFor('/slow-failure', 3, 15_000);
    // Each attempt takes 700 ms to fail (from its arrival here); the next is due 1 s, then 2 s, after that
    // failure: gaps of 1.7 s and 2.7 s at the least, less only the 100 ms a claim may take a retry early
    // and a timer firing a little early on a busy loop. Counted from the start of the attempt they would be
    // 1 s and 2 s (plus the record, the claim and the send). A busy machine only lengthens a gap: the upper
    // bound is loose, enough to tell a retry woken by the 5 s sweep or a 1 s job slot instead of its timer.
    const gap1 = attempts[1]!.at - attempts[0]!.at;
    const gap2 = attempts[2]!.at - attempts[1]!.at;
    expect(gap1).toBeGreaterThanOrEqual(1_500);
    expect(gap1).toBeLessThan(1_700 + 1_200);
    expect(gap2).toBeGreaterThanOrEqual(2_500);
    expect(gap2).toBeLessThan(2_700 + 1_200);
  });

  test("a process whose CAIRN_SECRET_KEY is not the site's refuses to start, naming the setting; the site's key delivers", async () => {
    const alice = await createUser(adminClient(keyed), 'rekeyed', ['repo', 'admin:repo_hook']);
    const repo = (await alice.post('/repos', { name: 'rekeyed' })).body.id as string;
    const created = (await alice.post(`/repos/${repo}/webhooks`, { url: receiver.url('/rekeyed'), events: ['issues'] })).body;
    await keyed.stop();
    // Secrets sealed with one key would never be delivered under another: the process does not start.
    await expect(keyed.restart({ CAIRN_SECRET_KEY: 'a different key, also thirty-two chars' })).rejects.toThrow(
      /CAIRN_SECRET_KEY is not the key this site's webhook secrets are encrypted with/,
    );
    keyed = await keyed.restart({ CAIRN_SECRET_KEY: env.CAIRN_SECRET_KEY });
    await alice.post(`/repos/${repo}/issues`, { title: 'signed with the site key' });
    const [delivery] = await receiver.waitFor('/rekeyed', 1);
    const expected = createHmac('sha256', created.secret).update(delivery!.raw).digest('hex');
    expect(delivery!.headers['x-cairn-signature-256']).toBe(`sha256=${expected}`);
  });
});
