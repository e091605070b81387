import { createHmac, timingSafeEqual } from 'node:crypto';
import { verify } from '@octokit/webhooks-methods';
import { adminClient, Client, createToken, createUser } from './support/client.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';

let server: CairnServer;
let receiver: Receiver;
let admin: Client;
let owner: Awaited<ReturnType<typeof createUser>>;
let repoId: string;

beforeAll(async () => {
  [server, receiver] = await Promise.all([
    CairnServer.start({ env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback', CAIRN_WEBHOOK_RETRY_DELAYS: '1s', CAIRN_WEBHOOK_TIMEOUT: '3s' } }),
    Receiver.start(),
  ]);
  admin = adminClient(server);
  owner = await createUser(admin, 'hookowner', ['repo', 'admin:repo_hook']);
  repoId = (await owner.post('/repos', { name: 'hooked' })).body.id;
});
afterAll(async () => {
  await receiver.close();
  await server.destroy();
});

/** The seed's check: HMAC-SHA256 of the exact bytes, lowercase hex, compared in constant time. */
function seedSignatureValid(secret: string, raw: Buffer, header: string | string[] | undefined): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(raw).digest('hex')}`);
  const given = Buffer.from(String(header));
  return expected.length === given.length && timingSafeEqual(expected, given);
}

describe('webhook records', () => {
  test('create at /api/repos/:id/webhooks: 201, the record, and a generated secret shown once', async () => {
    const res = await owner.post(`/api/repos/${repoId}/webhooks`, { url: receiver.url('/created'), events: ['issues'] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^hook_[0-9a-z]{26}$/),
      url: receiver.url('/created'),
      events: ['issues'],
      active: true,
      has_secret: true,
      content_type: 'json',
      created_at: expect.any(String),
      updated_at: expect.any(String),
      last_response: null,
      failing_since: null,
      disabled_at: null,
      disabled_reason: null,
      secret: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const again = await owner.get(`/repos/${repoId}/webhooks/${res.body.id}`);
    expect(again.body).not.toHaveProperty('secret');
    const { secret: _secret, ...record } = res.body;
    expect(again.body).toEqual(record);
    expect((await owner.get(`/repos/${repoId}/webhooks`)).body.some((h: { secret?: string }) => 'secret' in h)).toBe(false);
    await owner.delete(`/repos/${repoId}/webhooks/${res.body.id}`);
  });

  test('defaults: events ["push"], active; a chosen secret is not echoed', async () => {
    const res = await owner.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/defaults'), secret: 'chosen' });
    expect(res.body).toMatchObject({ events: ['push'], active: true, has_secret: true });
    expect(res.body).not.toHaveProperty('secret');
    await owner.delete(`/repos/${repoId}/webhooks/${res.body.id}`);
  });

  test('creating a webhook sends nothing', async () => {
    const before = receiver.received.length;
    const res = await owner.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/silent'), events: ['*'] });
    // Every request sent is a delivery, written in the transaction of the change that caused it: once
    // the creation answered, a delivery it caused would be listed already. None is, so none is ever sent.
    expect((await owner.get(`/repos/${repoId}/webhooks/${res.body.id}/deliveries`)).body.total).toBe(0);
    expect(receiver.received.length).toBe(before);
    await owner.delete(`/repos/${repoId}/webhooks/${res.body.id}`);
  });

  test('secrets are encrypted at rest', async () => {
    const res = await owner.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/secret'), secret: 'plain-text-secret-value' });
    const rows = await query(server, 'select * from webhooks where id = $1', [res.body.id]);
    expect(JSON.stringify(rows)).not.toContain('plain-text-secret-value');
    expect(rows[0]!.secret_ciphertext).toMatch(/^v1:/);
    await owner.delete(`/repos/${repoId}/webhooks/${res.body.id}`);
  });

  test.each([
    [{ url: 'not a url' }, 'url'],
    [{ url: 'ftp://127.0.0.1/x' }, 'url'],
    [{ url: 'http://user:pass@127.0.0.1/x' }, 'url'],
    [{ url: `http://127.0.0.1/${'x'.repeat(2100)}` }, 'url'],
    [{ url: 'http://10.1.2.3/hook' }, 'url'],
    [{ url: 'http://127.0.0.1/x', events: [] }, 'events'],
    [{ url: 'http://127.0.0.1/x', events: ['push', 'nonsense'] }, 'events'],
    [{ url: 'http://127.0.0.1/x', events: ['*', 'push'] }, 'events'],
    [{ url: 'http://127.0.0.1/x', secret: '' }, 'secret'],
    [{ url: 5 }, 'url'],
    [{ url: 'http://127.0.0.1/x', events: 'push' }, 'events'],
    [{ url: 'http://127.0.0.1/x', active: 'yes' }, 'active'],
    [{}, 'url'],
  ])('422 %#: bad %s', async (body, field) => {
    const res = await owner.post(`/repos/${repoId}/webhooks`, body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect((await owner.get(`/repos/${repoId}/webhooks`)).body).toEqual([]);
  });

  test('permissions: strangers 404 on private, 403 on public; writers 403; the admin:repo_hook scope is needed', async () => {
    const privateRepo = (await owner.post('/repos', { name: 'private-hooks', private: true })).body.id;
    const stranger = await createUser(admin, 'hookstranger', ['repo', 'admin:repo_hook']);
    expect((await stranger.post(`/repos/${privateRepo}/webhooks`, { url: receiver.url('/x') })).status).toBe(404);
    expect((await stranger.get(`/repos/${privateRepo}/webhooks`)).status).toBe(404);
    expect((await stranger.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/x') })).status).toBe(403);
    expect((await stranger.get(`/repos/${repoId}/webhooks`)).status).toBe(403);

    await owner.put(`/repos/${repoId}/collaborators/hookstranger`, { permission: 'write' });
    expect((await stranger.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/x') })).status).toBe(403);
    await owner.delete(`/repos/${repoId}/collaborators/hookstranger`);

    const noScope = new Client(server, await createToken(admin, 'hookowner', ['repo']));
    const res = await noScope.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/x') });
    expect(res.status).toBe(403);
    expect(res.body.error.message).toContain('admin:repo_hook');
    expect((await noScope.get('/user/webhooks')).status).toBe(403);
  });

  test('PATCH changes url, events and secret (rotation); 422 for bad values; 404 across repositories', async () => {
    const hook = (await owner.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/v1'), secret: 'old' })).body;
    const res = await owner.patch(`/repos/${repoId}/webhooks/${hook.id}`, { url: receiver.url('/v2'), events: ['issues'], secret: 'new' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: hook.id, url: receiver.url('/v2'), events: ['issues'] });
    expect(res.body).not.toHaveProperty('secret');
    expect((await owner.patch(`/repos/${repoId}/webhooks/${hook.id}`, { url: 'gopher://x' })).status).toBe(422);
    expect((await owner.patch(`/repos/${repoId}/webhooks/${hook.id}`, { events: null })).status).toBe(422);

    await owner.post(`/repos/${repoId}/issues`, { title: 'after rotation' });
    const [got] = await receiver.waitFor('/v2');
    expect(seedSignatureValid('new', got!.raw, got!.headers['x-cairn-signature-256'])).toBe(true);

    const other = (await owner.post('/repos', { name: 'other-repo' })).body.id;
    expect((await owner.get(`/repos/${other}/webhooks/${hook.id}`)).status).toBe(404);
    expect((await owner.patch(`/repos/${other}/webhooks/${hook.id}`, { active: false })).status).toBe(404);
    expect((await owner.get(`/repos/${repoId}/webhooks/hook_00000000000000000000000000`)).status).toBe(404);
    expect((await owner.delete(`/repos/${repoId}/webhooks/${hook.id}`)).status).toBe(204);
    expect((await owner.get(`/repos/${repoId}/webhooks/${hook.id}`)).status).toBe(404);
  });
});

describe('deliveries', () => {
  test('headers and signature, checked with the seed algorithm and with @octokit/webhooks-methods', async () => {
    const hook = (
      await owner.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/signed'), events: ['issues'], secret: 'It’s a secret ✓' })
    ).body;
    const issue = (await owner.post(`/repos/${repoId}/issues`, { title: 'signed ✓ ünïcode' })).body;
    const [got] = await receiver.waitFor('/signed');
    const { headers, raw, body } = got!;
    expect(headers['content-type']).toBe('application/json');
    expect(headers['user-agent']).toMatch(/^Cairn-Hookshot\/\d+\.\d+\.\d+$/);
    expect(headers['x-cairn-event']).toBe('issues');
    expect(headers['x-cairn-delivery']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(headers['x-cairn-hook-id']).toBe(hook.id);
    expect(headers['x-cairn-signature-256']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(seedSignatureValid('It’s a secret ✓', raw, headers['x-cairn-signature-256'])).toBe(true);
    expect(await verify('It’s a secret ✓', raw.toString('utf8'), String(headers['x-cairn-signature-256']))).toBe(true);
    expect(await verify('wrong secret', raw.toString('utf8'), String(headers['x-cairn-signature-256']))).toBe(false);
    expect(body).toMatchObject({ event: 'issues', action: 'opened', issue: { number: issue.number, title: 'signed ✓ ünïcode' } });
    expect(body.issue).toEqual(issue); // the payload record is the REST record
    expect(body.repository).toEqual({
      id: repoId,
      name: 'hooked',
      full_name: 'hookowner/hooked',
      owner: { id: owner.userId, login: 'hookowner' },
      private: false,
      default_branch: 'main',
      clone_url: `${server.url}/hookowner/hooked.git`,
    });
    expect(body.sender).toEqual({ id: owner.userId, login: 'hookowner' });
    await owner.delete(`/repos/${repoId}/webhooks/${hook.id}`);
  });

  test('the events filter: ["push"] receives nothing else, ["*"] everything', async () => {
    const repo = (await owner.post('/repos', { name: 'filtered' })).body.id;
    const pushOnly = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/push-only'), events: ['push'] })).body.id;
    const all = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/all'), events: ['*'] })).body.id;
    const members = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/members'), events: ['member', 'repository'] })).body
      .id;
    await owner.post(`/repos/${repo}/issues`, { title: 'one' });
    await createUser(admin, 'filtermember');
    await owner.put(`/repos/${repo}/collaborators/filtermember`, { permission: 'read' });
    await owner.patch(`/repos/${repo}`, { description: 'changed' });
    await receiver.waitFor('/all', 3);
    await receiver.waitFor('/members', 2);
    // The deliveries of each webhook were written with the changes, so these totals are final: nothing
    // more will reach /push-only, /all or /members than what the receiver has now.
    const total = async (hook: string) => (await owner.get(`/repos/${repo}/webhooks/${hook}/deliveries`)).body.total;
    expect([await total(pushOnly), await total(all), await total(members)]).toEqual([0, 3, 2]);
    expect(receiver.at('/push-only')).toHaveLength(0);
    expect(
      receiver
        .at('/all')
        .map((r) => `${r.body.event}.${r.body.action}`)
        .sort(),
    ).toEqual(['issues.opened', 'member.added', 'repository.updated']);
    expect(
      receiver
        .at('/members')
        .map((r) => r.headers['x-cairn-event'])
        .sort(),
    ).toEqual(['member', 'repository']);
    expect(receiver.at('/all').find((r) => r.body.event === 'repository')!.body.changes).toEqual({ description: { from: null } });
  });

  test('an owner-level webhook receives repository created for every repository of its owner', async () => {
    const lone = await createUser(admin, 'loneowner', ['repo', 'admin:repo_hook']);
    const created = await lone.post('/user/webhooks', { url: receiver.url('/owner-level'), events: ['repository', 'issues'] });
    expect(created.status).toBe(201);
    expect((await lone.get('/user/webhooks')).body.map((h: { id: string }) => h.id)).toEqual([created.body.id]);
    const repo = (await lone.post('/repos', { name: 'brand-new' })).body;
    await lone.post(`/repos/${repo.id}/issues`, { title: 'also seen' });
    const got = await receiver.waitFor('/owner-level', 2);
    expect(got[0]!.body).toMatchObject({
      event: 'repository',
      action: 'created',
      repository: { id: repo.id, full_name: 'loneowner/brand-new' },
    });
    expect(got[1]!.body).toMatchObject({ event: 'issues', action: 'opened' });
    // Other owners' repositories are not its business.
    await owner.post('/repos', { name: 'not-lone' });
    // Its deliveries would have been written with the repository: the owner-level hook still has its two.
    expect((await lone.get(`/user/webhooks/${created.body.id}/deliveries`)).body.total).toBe(2);
    expect(receiver.at('/owner-level')).toHaveLength(2);
    // Someone else's owner-level hook is not visible.
    expect((await owner.get(`/user/webhooks/${created.body.id}`)).status).toBe(404);
  });

  test('ping: 202, a ping event with zen, hook_id and the webhook record', async () => {
    const hook = (await owner.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/ping'), events: ['issues'] })).body;
    const res = await owner.post(`/repos/${repoId}/webhooks/${hook.id}/pings`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      id: expect.any(String),
      webhook_id: hook.id,
      event: 'ping',
      action: null,
      status: 'pending',
      redelivery: false,
    });
    const [got] = await receiver.waitFor('/ping');
    expect(got!.headers['x-cairn-event']).toBe('ping');
    expect(got!.headers['x-cairn-delivery']).toBe(res.body.id);
    const { secret: _secret, ...record } = hook;
    expect(got!.body).toMatchObject({ event: 'ping', zen: expect.any(String), hook_id: hook.id, hook: record });
    expect(got!.body.hook).not.toHaveProperty('secret');
    expect(got!.body.repository.id).toBe(repoId);
    await owner.delete(`/repos/${repoId}/webhooks/${hook.id}`);
  });

  test('history: newest first, paging, status and event filters; single delivery with request, response, attempts', async () => {
    receiver.on('/history-fail', { status: 500, body: 'nope' });
    const repo = (await owner.post('/repos', { name: 'history' })).body.id;
    const hook = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/history'), events: ['*'] })).body;
    for (let i = 0; i < 5; i++) await owner.post(`/repos/${repo}/issues`, { title: `h${i}` });
    await owner.patch(`/repos/${repo}`, { description: 'd' });
    await owner.post(`/repos/${repo}/webhooks/${hook.id}/pings`);
    await receiver.waitFor('/history', 7);
    const base = `/repos/${repo}/webhooks/${hook.id}/deliveries`;
    const page = await eventually(async () => {
      const res = await owner.get(`${base}?limit=3`);
      return res.body.data.every((d: { status: string }) => d.status === 'succeeded') && res;
    });
    expect(page.body).toMatchObject({ total: 7, limit: 3, offset: 0, hasMore: true });
    expect(page.body.data[0].event).toBe('ping');
    const all = (await owner.get(`${base}?limit=100`)).body.data;
    const times = all.map((d: { created_at: string }) => d.created_at);
    expect([...times].sort().reverse()).toEqual(times);
    expect((await owner.get(`${base}?event=issues`)).body.total).toBe(5);
    expect((await owner.get(`${base}?event=repository`)).body.total).toBe(1);
    expect((await owner.get(`${base}?status=succeeded`)).body.total).toBe(7);
    expect((await owner.get(`${base}?status=failed`)).body.total).toBe(0);
    expect((await owner.get(`${base}?status=bogus`)).status).toBe(422);
    expect((await owner.get(`${base}?limit=-1`)).status).toBe(400);

    const one = await owner.get(`${base}/${all[1].id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      id: all[1].id,
      status: 'succeeded',
      attempts_count: 1,
      status_code: 200,
      request: {
        url: receiver.url('/history'),
        headers: expect.objectContaining({ 'X-Cairn-Delivery': all[1].id }),
        body: expect.any(String),
      },
      response: { status_code: 200, body: 'thanks', truncated: false, headers: expect.any(Object) },
      attempts: [
        { number: 1, started_at: expect.any(String), duration_ms: expect.any(Number), status_code: 200, error: null, trigger: 'initial' },
      ],
    });
    const sent = receiver.at('/history').find((r) => r.headers['x-cairn-delivery'] === all[1].id)!;
    expect(one.body.request.body).toBe(sent.raw.toString('utf8'));
    expect((await owner.get(`${base}/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await owner.get(`${base}/not-a-uuid`)).status).toBe(404);
  });

  test('redeliver: same UUID and body, trigger redelivery; 409 while pending', async () => {
    const hook = (await owner.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/redeliver'), events: ['issues'] })).body;
    await owner.post(`/repos/${repoId}/issues`, { title: 'redeliver me' });
    const [first] = await receiver.waitFor('/redeliver');
    const id = String(first!.headers['x-cairn-delivery']);
    const base = `/repos/${repoId}/webhooks/${hook.id}/deliveries/${id}`;
    await eventually(async () => (await owner.get(base)).body.status === 'succeeded');

    const res = await owner.post(`${base}/redeliver`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ id, redelivery: true });
    // Read once the redelivery committed: a receiver on loopback may have taken it already.
    expect(['pending', 'succeeded']).toContain(res.body.status);
    const [, second] = await receiver.waitFor('/redeliver', 2);
    expect(second!.headers['x-cairn-delivery']).toBe(id);
    expect(second!.raw.equals(first!.raw)).toBe(true);
    const detail = await eventually(async () => {
      const d = await owner.get(base);
      return d.body.status === 'succeeded' && d.body.attempts_count === 2 && d;
    });
    expect(detail.body.attempts.map((a: { trigger: string }) => a.trigger)).toEqual(['initial', 'redelivery']);
    expect(detail.body.redelivery).toBe(true);
    expect(
      (await owner.post(`/repos/${repoId}/webhooks/${hook.id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`)).status,
    ).toBe(404);

    receiver.on('/redeliver', { delayMs: 1500 });
    await owner.post(`${base}/redeliver`);
    expect((await owner.post(`${base}/redeliver`)).status).toBe(409);
    receiver.on('/redeliver', {});
  });

  test('metrics: deliveries by outcome, delivery latency, queue depth', async () => {
    const metrics = (await owner.get('/metrics', { anonymous: true })).text;
    expect(metrics).toMatch(/cairn_webhook_delivery_attempts_total\{outcome="succeeded"\} [1-9]/);
    expect(metrics).toMatch(/cairn_webhook_delivery_latency_seconds_count [1-9]/);
    expect(metrics).toMatch(/cairn_webhook_queue_depth \d+/);
  });

  test('GraphQL: webhooks, deliveries and their attempts are the same data', async () => {
    const { repository } = await owner.gql(
      `query($id: ID!) { repository(id: $id) { webhooks { id url deliveries(limit: 1) { totalCount nodes { id status attempts { trigger } } } } } }`,
      { id: repoId },
    );
    expect(repository.webhooks.length).toBeGreaterThan(0);
    const rest = await owner.get(`/repos/${repoId}/webhooks`);
    expect(repository.webhooks.map((h: { id: string }) => h.id)).toEqual(rest.body.map((h: { id: string }) => h.id));
  });
});
