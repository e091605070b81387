import { adminClient, createUser } from './support/client.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/**
 * The outbox promise: once an API call has succeeded, its deliveries
 * exist and survive any crash. The service and its embedded PostgreSQL are
 * killed with SIGKILL in the middle of a burst of 500 events; after a restart
 * on the same data dir, every event whose call answered 201 reaches the
 * receiver at least once.
 */
test('kill -9 of the service and its database during a burst of 500 events loses no acknowledged event', async () => {
  const receiver = await Receiver.start();
  let server = await CairnServer.start({ embedded: true, detached: true, env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' } });
  try {
    const owner = await createUser(adminClient(server), 'crashy', ['repo', 'admin:repo_hook']);
    const repo = (await owner.post('/repos', { name: 'burst' })).body.id;
    await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/events'), events: ['issues'] });
    // A receiver slower than the service's quick-answer mark (1 s): the service sends it one delivery
    // at a time, so nearly every acknowledged event is still queued when the service dies, however
    // fast or slow this machine creates issues.
    receiver.on('/events', { delayMs: 1_200 });

    const acknowledged = new Set<number>();
    let sent = 0;
    let killed = false;
    const worker = async () => {
      while (sent < 500) {
        sent++;
        try {
          const res = await owner.post(`/repos/${repo}/issues`, { title: `burst ${sent}` });
          if (res.status === 201) acknowledged.add(res.body.number);
        } catch {
          /* the service is gone: this call was not acknowledged */
        }
        if (!killed && acknowledged.size >= 150) {
          killed = true;
          await server.killAll();
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    expect(killed).toBe(true);
    expect(acknowledged.size).toBeGreaterThanOrEqual(150);

    const beforeRestart = receiver.at('/events').length;
    expect(beforeRestart).toBeLessThan(acknowledged.size); // a backlog was left behind
    receiver.on('/events', {}); // quick now: the backlog is delivered by the next process
    server = await server.restart();
    const delivered = () => new Set(receiver.at('/events').map((r) => r.body?.issue?.number as number));
    await eventually(
      async () => [...acknowledged].every((n) => delivered().has(n)),
      60_000,
      `all ${acknowledged.size} acknowledged events to be delivered`,
    );
    expect(receiver.at('/events').length).toBeGreaterThan(beforeRestart); // the restart did deliver the backlog
    // Every acknowledged issue exists after the restart, too.
    expect((await owner.get(`/repos/${repo}/issues?limit=1`)).body.total).toBeGreaterThanOrEqual(acknowledged.size);
  } finally {
    await receiver.close();
    await server.destroy();
  }
}, 120_000);
