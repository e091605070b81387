import { adminClient, createUser } from './support/client.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer, query, sleep } from './support/server.js';

type Owner = Awaited<ReturnType<typeof createUser>>;
let receiver: Receiver;
beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(() => receiver.close());

/** A repository with one webhook on `path`, and a way to fire `issues` events at it. */
async function hooked(owner: Owner, path: string, name: string, url = receiver.url(path)) {
  const repo = (await owner.post('/repos', { name })).body.id as string;
  const hook = (await owner.post(`/repos/${repo}/webhooks`, { url, events: ['issues'] })).body;
  const deliveries = `/repos/${repo}/webhooks/${hook.id}/deliveries`;
  return {
    repo,
    hook,
    deliveries,
    fire: (title = 'event') => owner.post(`/repos/${repo}/issues`, { title }),
    only: async () => {
      const list = await owner.get(deliveries);
      return list.body.data.length === 1 ? (await owner.get(`${deliveries}/${list.body.data[0].id}`)).body : null;
    },
  };
}

describe('retries, timeouts and redirects (loopback receivers, retries 1s,2s, timeout 1s)', () => {
  let server: CairnServer;
  let owner: Owner;
  beforeAll(async () => {
    server = await CairnServer.start({
      env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback', CAIRN_WEBHOOK_RETRY_DELAYS: '1s,2s', CAIRN_WEBHOOK_TIMEOUT: '1s' },
    });
    owner = await createUser(adminClient(server), 'retrier', ['repo', 'admin:repo_hook']);
  });
  afterAll(() => server.destroy());

  test('a failing receiver: same UUID and identical bytes on every attempt, retries after 1 s then 2 s, then failed', async () => {
    receiver.on('/always-500', { status: 500 });
    const h = await hooked(owner, '/always-500', 'always-failing');
    await h.fire('never accepted');
    const committed = Date.now(); // the delivery was written with the issue, before the POST answered
    const attempts = await receiver.waitFor('/always-500', 3);
    expect(attempts[0]!.at - committed).toBeLessThan(1000); // first attempt within 1 s of the change
    const ids = new Set(attempts.map((a) => a.headers['x-cairn-delivery']));
    expect(ids.size).toBe(1);
    expect(attempts[1]!.raw.equals(attempts[0]!.raw) && attempts[2]!.raw.equals(attempts[0]!.raw)).toBe(true);
    expect(new Set(attempts.map((a) => a.headers['x-cairn-signature-256'])).size).toBe(1);
    const gap1 = attempts[1]!.at - attempts[0]!.at;
    const gap2 = attempts[2]!.at - attempts[1]!.at;
    expect(Math.abs(gap1 - 1000)).toBeLessThan(1000);
    expect(Math.abs(gap2 - 2000)).toBeLessThan(1000);

    const done = await eventually(async () => {
      const d = await h.only();
      return d?.status === 'failed' && d;
    });
    expect(done).toMatchObject({ attempts_count: 3, next_attempt_at: null, completed_at: expect.any(String), status_code: 500 });
    expect(done.attempts.map((a: { trigger: string }) => a.trigger)).toEqual(['initial', 'retry', 'retry']);
    // Gave up after the last retry: the only delivery is failed (never claimed again) with its three
    // attempts recorded, each after its request reached the receiver, so three is all it will ever get.
    expect(receiver.at('/always-500')).toHaveLength(3);
    const hook = (await owner.get(`/repos/${h.repo}/webhooks/${h.hook.id}`)).body;
    expect(hook).toMatchObject({ active: true, failing_since: expect.any(String), last_response: { status_code: 500, error: 'HTTP 500' } });
  });

  test('a retry that succeeds ends the delivery and the failure streak', async () => {
    receiver.on('/flaky', { status: 503 });
    const h = await hooked(owner, '/flaky', 'flaky');
    await h.fire();
    await receiver.waitFor('/flaky', 1);
    receiver.on('/flaky', { status: 204 });
    const done = await eventually(async () => {
      const d = await h.only();
      return d?.status === 'succeeded' && d;
    });
    expect(done.attempts.map((a: { status_code: number }) => a.status_code)).toEqual([503, 204]);
    const hook = await eventually(async () => {
      const res = await owner.get(`/repos/${h.repo}/webhooks/${h.hook.id}`);
      return res.body.failing_since === null && res.body;
    });
    expect(hook.last_response).toMatchObject({ status_code: 204, error: null });
  });

  test('a receiver slower than the timeout fails the attempt', async () => {
    receiver.on('/slow', { delayMs: 2500 });
    const h = await hooked(owner, '/slow', 'slow');
    await h.fire();
    const detail = await eventually(async () => {
      const d = await h.only();
      return d?.attempts?.length >= 1 && d;
    });
    expect(detail.attempts[0]).toMatchObject({ status_code: null, error: 'timed out after 1000 ms', trigger: 'initial' });
    expect(detail.attempts[0].duration_ms).toBeGreaterThanOrEqual(950);
    expect(detail.attempts[0].duration_ms).toBeLessThan(2000);
  });

  test('a 302 is a failure and is not followed', async () => {
    receiver.on('/moved', { status: 302, headers: { location: receiver.url('/moved-target') } });
    const h = await hooked(owner, '/moved', 'moved');
    await h.fire();
    await receiver.waitFor('/moved', 1);
    const detail = await eventually(async () => {
      const d = await h.only();
      return d?.attempts?.length >= 1 && d;
    });
    expect(detail.attempts[0]).toMatchObject({ status_code: 302, error: 'HTTP 302' });
    expect(detail.status).toBe('pending'); // a retry is scheduled
    // The attempt is recorded once its request ended: a redirect followed would have reached the target by then.
    expect(receiver.at('/moved-target')).toHaveLength(0);
  });

  test('deactivating a webhook cancels its pending deliveries; nothing more is sent until it is active again', async () => {
    receiver.on('/deactivate', { status: 500 });
    const h = await hooked(owner, '/deactivate', 'deactivated');
    await h.fire();
    await receiver.waitFor('/deactivate', 1);
    const patched = await owner.patch(`/repos/${h.repo}/webhooks/${h.hook.id}`, { active: false });
    expect(patched.body.active).toBe(false);
    const cancelled = await eventually(async () => {
      const d = await h.only();
      return d?.status === 'cancelled' && d;
    });
    expect(cancelled.completed_at).not.toBeNull();
    await h.fire('while inactive');
    // Deliveries are written with the change: the event fired while inactive made none, and the one
    // delivery there is is cancelled (never claimed again), its one attempt already received.
    expect((await owner.get(h.deliveries)).body.total).toBe(1);
    expect(receiver.at('/deactivate')).toHaveLength(1);
    expect((await owner.post(`/repos/${h.repo}/webhooks/${h.hook.id}/pings`)).status).toBe(409);

    receiver.on('/deactivate', { status: 200 });
    await owner.patch(`/repos/${h.repo}/webhooks/${h.hook.id}`, { active: true });
    await h.fire('active again');
    await receiver.waitFor('/deactivate', 2);
  });

  test('deleting a webhook stops its retries', async () => {
    receiver.on('/deleted', { status: 500 });
    const h = await hooked(owner, '/deleted', 'deleted-hook');
    await h.fire();
    await receiver.waitFor('/deleted', 1);
    expect((await owner.delete(`/repos/${h.repo}/webhooks/${h.hook.id}`)).status).toBe(204);
    const deleted = Date.now();
    expect(await query(server, 'select count(*)::int as n from deliveries where webhook_id = $1', [h.hook.id])).toEqual([{ n: 0 }]);
    // Its next attempt, had the DELETE not stopped the schedule, is due 1 s after the last one that arrived
    // before the DELETE answered (2 s after a retry): wait until a second past that, and nothing may have
    // started after the DELETE (plus a little for a request already on the wire as it answered). A sleep:
    // a retry that does not come is time passing, with nothing to wait on.
    const before = receiver.at('/deleted').filter((r) => r.at <= deleted);
    expect(before.length).toBeLessThan(3); // the schedule (three attempts) was still running when the DELETE answered
    const nextDue = before.at(-1)!.at + (before.length === 1 ? 1_000 : 2_000);
    await sleep(Math.max(nextDue + 1_000 - Date.now(), 0));
    expect(receiver.at('/deleted').filter((r) => r.at > deleted + 100)).toEqual([]);
  });

  test('a hanging receiver does not hold up another webhook', async () => {
    receiver.on('/hang', { delayMs: 5_000 });
    const repo = (await owner.post('/repos', { name: 'two-receivers' })).body.id;
    await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/hang'), events: ['issues'] });
    await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/beside-hang'), events: ['issues'] });
    await Promise.all(Array.from({ length: 40 }, (_, i) => owner.post(`/repos/${repo}/issues`, { title: `burst ${i}` })));
    const committed = Date.now(); // all 40 deliveries of each webhook are written
    const beside = await receiver.waitFor('/beside-hang', 40, 5_000);
    // Within one webhook timeout (1 s) of the last event: none waited for a hanging attempt to time out.
    expect(Math.max(...beside.map((r) => r.at)) - committed).toBeLessThan(1_000);
    expect(receiver.at('/hang').length).toBeLessThanOrEqual(40);
  });
});

describe('destination policy, auto-disable and retention (default policy "external")', () => {
  let server: CairnServer;
  let owner: Owner;
  beforeAll(async () => {
    server = await CairnServer.start({
      env: { CAIRN_WEBHOOK_RETRY_DELAYS: '1s,1s,1s,1s,1s,1s,1s,1s', CAIRN_WEBHOOK_DISABLE_AFTER: '3s', CAIRN_DELIVERY_RETENTION: '6s' },
    });
    owner = await createUser(adminClient(server), 'guarded', ['repo', 'admin:repo_hook']);
  });
  afterAll(() => server.destroy());

  test.each([
    'http://127.0.0.1/x',
    'http://127.1.2.3:8080/x',
    'http://10.0.0.5/x',
    'http://172.16.0.1/x',
    'http://192.168.1.1/x',
    'http://169.254.169.254/latest/meta-data',
    'http://100.64.0.1/x',
    'http://0.0.0.0/x',
    'http://[::1]/x',
    'http://[::ffff:127.0.0.1]/x',
    'http://[::127.0.0.1]/x',
    'http://[64:ff9b::a9fe:a9fe]/x',
    'http://[2002:7f00:1::]/x',
    'http://[fd00::1]/x',
    'http://[fe80::1]/x',
    'http://224.0.0.1/x',
    'http://2130706433/x',
    'http://0x7f.0.0.1/x',
  ])('a literal forbidden address is refused at creation: %s', async (url) => {
    const repo = (await owner.get('/repos?owner=guarded')).body.data[0]?.id ?? (await owner.post('/repos', { name: 'guarded' })).body.id;
    const res = await owner.post(`/repos/${repo}/webhooks`, { url });
    expect(res.status).toBe(422);
    expect(res.body.error.details[0]).toMatchObject({ field: 'url', code: 'forbidden_destination' });
  });

  test('a host name that resolves to loopback is refused when dialled; nothing reaches the receiver', async () => {
    const h = await hooked(owner, '/ssrf', 'rebinding', `http://localhost:${receiver.port}/ssrf`);
    expect(h.hook.id).toBeDefined();
    await h.fire();
    const detail = await eventually(async () => {
      const d = await h.only();
      return d?.attempts?.length >= 1 && d;
    });
    // The host as the URL gives it, never the addresses it resolved to (test/identity-privacy.test.ts has more).
    expect(detail.attempts[0].error).toBe('destination refused by policy: localhost is not allowed by CAIRN_WEBHOOK_ALLOWED_HOSTS');
    expect(detail.attempts[0].status_code).toBeNull();
    expect(receiver.at('/ssrf')).toHaveLength(0);
    await owner.delete(`/repos/${h.repo}/webhooks/${h.hook.id}`);
  });

  test('a webhook failing consistently for the window is disabled, its deliveries cancelled; re-activation clears it', async () => {
    const h = await hooked(owner, '/never', 'consistently-failing', `http://localhost:${receiver.port}/never`);
    await h.fire('first');
    const hook = await eventually(
      async () => {
        const res = await owner.get(`/repos/${h.repo}/webhooks/${h.hook.id}`);
        return res.body.active === false && res.body;
      },
      20_000,
      'the webhook to be disabled',
    );
    expect(hook).toMatchObject({
      disabled_reason: 'consistent_failure',
      disabled_at: expect.any(String),
      failing_since: expect.any(String),
    });
    const failingFor = Date.parse(hook.disabled_at) - Date.parse(hook.failing_since);
    expect(failingFor).toBeGreaterThanOrEqual(3000);
    const detail = await h.only();
    expect(detail.status).toBe('cancelled');
    expect(detail.attempts.length).toBeGreaterThanOrEqual(3);

    await h.fire('while disabled');
    // Deliveries are written in the transaction of the change: the total is final once it answered.
    expect((await owner.get(h.deliveries)).body.total).toBe(1);

    const back = await owner.patch(`/repos/${h.repo}/webhooks/${h.hook.id}`, { active: true });
    expect(back.body).toMatchObject({ active: true, failing_since: null, disabled_at: null, disabled_reason: null });
    await owner.delete(`/repos/${h.repo}/webhooks/${h.hook.id}`);
  });

  test('delivery history older than the retention is purged', async () => {
    const h = await hooked(owner, '/old', 'retention', `http://localhost:${receiver.port}/old`);
    await owner.patch(`/repos/${h.repo}/webhooks/${h.hook.id}`, { active: false });
    await owner.patch(`/repos/${h.repo}/webhooks/${h.hook.id}`, { active: true });
    await owner.post(`/repos/${h.repo}/webhooks/${h.hook.id}/pings`);
    await eventually(async () => (await owner.get(h.deliveries)).body.total === 1);
    await owner.patch(`/repos/${h.repo}/webhooks/${h.hook.id}`, { active: false }); // finished: cancelled
    await eventually(async () => (await owner.get(h.deliveries)).body.total === 0, 20_000, 'the purge');
    expect(
      await query(
        server,
        'select count(*)::int as n from delivery_attempts a join deliveries d on d.id = a.delivery_id where d.webhook_id = $1',
        [h.hook.id],
      ),
    ).toEqual([{ n: 0 }]);
  });
});
