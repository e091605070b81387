import { adminClient, Client, createUser } from './support/client.js';
import { settledDeliveries } from './support/deliveries.js';
import { Receiver, eventually } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/**
 * Several service processes on one database: migrations and bootstrap
 * happen once, every event becomes exactly one delivery per webhook, and
 * each delivery is attempted by one process only; what one process keeps
 * to answer again is not answered once another has changed it.
 */
test('two processes on one database deliver every event exactly once; a combined status one keeps is answered anew once another changed it', async () => {
  const env = { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback', CAIRN_SECRET_KEY: 'a shared key for every process of this test!!' };
  const first = await CairnServer.start({ env });
  const receiver = await Receiver.start();
  let second: CairnServer | undefined;
  let third: CairnServer | undefined;
  try {
    // Two more processes start at the same time on the same database: migrations and bootstrap race.
    [second, third] = await Promise.all([
      CairnServer.start({ env, shareDatabaseWith: first }),
      CairnServer.start({ env, shareDatabaseWith: first }),
    ]);
    const owner = await createUser(adminClient(first), 'shared', ['repo', 'admin:repo_hook']);
    const viaSecond = new Client(second, owner.token);
    const viaThird = new Client(third, owner.token);
    const repo = (await owner.post('/repos', { name: 'shared' })).body.id;
    const hook = (await viaSecond.post(`/repos/${repo}/webhooks`, { url: receiver.url('/once'), events: ['issues'] })).body.id as string;

    const clients = [owner, viaSecond, viaThird];
    const made = await Promise.all(Array.from({ length: 90 }, (_, i) => clients[i % 3]!.post(`/repos/${repo}/issues`, { title: `e${i}` })));
    expect(made.every((r) => r.status === 201)).toBe(true);

    await receiver.waitFor('/once', 90, 30_000);
    // No pause for a duplicate to show up: once every delivery is settled (none pending, none claimed),
    // nothing is on its way any more; 90 deliveries attempted once each are all the receiver may hold.
    const deliveries = await settledDeliveries(first, [hook], 30_000);
    const got = receiver.at('/once');
    expect(deliveries).toHaveLength(90);
    expect(deliveries.every((d) => d.status === 'succeeded' && d.attempts_count === 1)).toBe(true);
    expect(got).toHaveLength(90);
    expect(new Set(got.map((r) => r.headers['x-cairn-delivery'])).size).toBe(90);
    expect(new Set(got.map((r) => r.body.issue.number)).size).toBe(90);
    const users = await eventually(async () => (await adminClient(third!).gql('{ viewer { login } }')).viewer.login);
    expect(users).toBe('admin');

    // A combined status one process keeps to answer again is answered anew once another process changed it.
    const kept = (await owner.post('/repos', { name: 'kept', auto_init: true })).body.id as string;
    const combined = async () => (await owner.get(`/repos/${kept}/commits/main/status`)).body;
    const { sha } = await combined();
    expect((await viaSecond.post(`/repos/${kept}/statuses/${sha}`, { state: 'success', context: 'ci/a' })).status).toBe(201);
    expect(await combined()).toMatchObject({ state: 'success', total_count: 1, repository: { private: false } });
    expect((await viaThird.post(`/repos/${kept}/statuses/${sha}`, { state: 'failure', context: 'ci/b' })).status).toBe(201);
    expect(await combined()).toMatchObject({ state: 'failure', total_count: 2, repository: { private: false } });
    expect((await viaSecond.patch(`/repos/${kept}`, { private: true })).status).toBe(200);
    expect(await combined()).toMatchObject({ state: 'failure', total_count: 2, repository: { private: true } });
  } finally {
    await receiver.close();
    await third?.destroy(true);
    await second?.destroy(true);
    await first.destroy();
  }
}, 120_000);
