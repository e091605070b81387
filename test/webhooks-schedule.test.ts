import { adminClient, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { settledDeliveries } from './support/deliveries.js';
import { eventually, Receiver, type Received } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/**
 * A receiver that never answers, with a backlog: each attempt waits out the timeout, and the retry
 * schedule still holds because attempts run side by side instead of one timeout after another. A
 * healthy webhook on the same repository is not slowed meanwhile. A webhook already failing is
 * sent a burst that becomes due at once, all of it.
 */
const TIMEOUT_MS = 3_000;
const DELAYS_MS = [1_000, 2_000, 4_000];
let server: CairnServer;
let receiver: Receiver;

beforeAll(async () => {
  [server, receiver] = await Promise.all([
    CairnServer.start({
      env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback', CAIRN_WEBHOOK_TIMEOUT: '3s', CAIRN_WEBHOOK_RETRY_DELAYS: '1s,2s,4s' },
    }),
    Receiver.start(),
  ]);
});
afterAll(async () => {
  await receiver.close();
  await server.destroy();
});

/** The attempts that reached the receiver, per delivery id, in order of arrival. */
function byDelivery(received: Received[]): Map<string, Received[]> {
  const deliveries = new Map<string, Received[]>();
  for (const request of received) {
    const id = request.headers['x-cairn-delivery'] as string;
    deliveries.set(id, [...(deliveries.get(id) ?? []), request]);
  }
  return deliveries;
}

test('five deliveries to a receiver that never answers keep their schedule, and a healthy webhook beside them its pace', async () => {
  receiver.on('/never', { delayMs: 60_000 });
  const owner = await createUser(adminClient(server), 'scheduled', ['repo', 'admin:repo_hook']);
  const repo = (await owner.post('/repos', { name: 'backlog' })).body.id as string;
  const never = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/never'), events: ['issues'] })).body.id as string;
  await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/healthy'), events: ['issues'] });

  await Promise.all(Array.from({ length: 5 }, (_, i) => owner.post(`/repos/${repo}/issues`, { title: `backlog ${i}` })));
  const fired = Date.now(); // the five deliveries are written, with their issues, before the POSTs answered
  // (Held back by the window until the first timed out, the last three would come a timeout later.)
  const backlog = await receiver.waitFor('/never', 5, TIMEOUT_MS);
  const backlogIds = new Set(backlog.map((r) => r.headers['x-cairn-delivery'] as string));
  // (The events made beside it go to the receiver that never answers, too: they are left out.)
  const ofBacklog = () => receiver.at('/never').filter((r) => backlogIds.has(r.headers['x-cairn-delivery'] as string));

  // While the backlog hangs, the healthy webhook on the same repository gets each new event at once:
  // from when the backlog's first attempts have timed out and its retries are on the wire. "At once"
  // is well within half a timeout: an event queued behind a hanging attempt would wait out at least
  // one whole timeout, while an answer on a loaded machine (the suite runs files side by side on two
  // cores) can take over 500 ms.
  await eventually(async () => ofBacklog().length >= 10, TIMEOUT_MS + DELAYS_MS[0]! + 3_000, "the backlog's retries on the wire");
  for (let i = 0; i < 5; i++) {
    const sent = Date.now();
    await owner.post(`/repos/${repo}/issues`, { title: `beside ${i}` });
    const arrived = await receiver.waitFor('/healthy', 6 + i, 5_000);
    expect(arrived.at(-1)!.at - sent).toBeLessThan(TIMEOUT_MS / 2);
  }

  // The schedule: the timeout, then 1 s; the timeout, then 2 s; the timeout, then 4 s; the last timeout.
  const ideal = 4 * TIMEOUT_MS + DELAYS_MS.reduce((a, b) => a + b, 0); // 19 s
  await eventually(async () => ofBacklog().length === 20, ideal + 6_000, 'four attempts of each delivery of the backlog');
  const deliveries = byDelivery(ofBacklog());
  expect(deliveries.size).toBe(5);
  for (const tries of deliveries.values()) {
    expect(tries).toHaveLength(4);
    expect(tries[0]!.at - fired).toBeLessThan(1_500); // the first attempt on time, window or not
    // Each gap is the timeout and the delay, plus what a busy machine adds (the record, the retry timer's
    // 100 ms slot, the claim, the send): late by up to 1.5 s. Early only by the 100 ms a claim may take a
    // retry ahead of time, a timer firing early on a busy loop, and the previous request reaching the
    // receiver later after its timeout started than this one: 400 ms. A retry counted from the attempt's
    // start instead of its failure is a second early or more; attempts run one timeout after another, or
    // a retry woken only by the sweep, seconds late.
    for (let retry = 0; retry < 3; retry++) {
      const gap = tries[retry + 1]!.at - tries[retry]!.at;
      expect(gap).toBeGreaterThan(TIMEOUT_MS + DELAYS_MS[retry]! - 400);
      expect(gap).toBeLessThan(TIMEOUT_MS + DELAYS_MS[retry]! + 1_500);
    }
  }
  await eventually(
    async () => (await owner.get(`/repos/${repo}/webhooks/${never}/deliveries?status=failed`)).body.total >= 5,
    TIMEOUT_MS + 4_000,
    'the five deliveries to fail after their last attempt',
  );
  // All of it about on schedule: one timeout after another, the five would take some 60 s, not 19.
  expect(Date.now() - fired).toBeLessThan(ideal + 8_000);
});

test('a webhook already failing is sent what is due at once, not one timeout after another', async () => {
  receiver.on('/already-failing', { status: 500 });
  const owner = await createUser(adminClient(server), 'failing', ['repo', 'admin:repo_hook']);
  const repo = (await owner.post('/repos', { name: 'already-failing' })).body.id as string;
  const hook = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/already-failing'), events: ['*'] })).body.id as string;
  const hookPath = `/repos/${repo}/webhooks/${hook}`;
  await owner.post(`/repos/${repo}/issues`, { title: 'fails' });
  await eventually(async () => (await owner.get(hookPath)).body.failing_since, 10_000, 'the webhook to be failing');
  const before = new Set(receiver.at('/already-failing').map((r) => r.headers['x-cairn-delivery']));

  receiver.on('/already-failing', { delayMs: 60_000 }); // now it hangs, too
  // One push of a branch and ten tags: 22 deliveries committed together, all due at once.
  const git = await GitSandbox.create();
  try {
    const work = await git.init('tags');
    await git.commit(work, 'tagged', { 'README.md': 'tags\n' });
    for (let i = 0; i < 10; i++) await git.git(['tag', `t${i}`], { cwd: work });
    await git.git(['push', '--quiet', remoteUrl(server, 'failing', 'already-failing', owner.token), 'main', '--tags'], { cwd: work });
  } finally {
    await git.cleanup();
  }
  const fresh = () => receiver.at('/already-failing').filter((r) => !before.has(r.headers['x-cairn-delivery']));
  await eventually(async () => fresh().length >= 22, 3_000, 'the 22 new deliveries to be sent');
  // Together, from the first: held back until the first attempts time out, the rest would come a timeout (3 s) after them.
  const arrivals = fresh().map((r) => r.at);
  expect(Math.max(...arrivals) - Math.min(...arrivals)).toBeLessThan(TIMEOUT_MS / 2);
  // Each once: no pause for a duplicate to show up, but nothing left to come. Deactivating the webhook
  // (its first attempts still hanging, their retries a timeout and a second away) starts no attempt
  // more; once those on the wire have run out their timeout and are recorded, the receiver holds all
  // it will ever get, one request for each attempt recorded.
  expect((await owner.patch(hookPath, { active: false })).status).toBe(200);
  const settled = await settledDeliveries(server, [hook], TIMEOUT_MS + 10_000);
  const attempts = settled.filter((d) => !before.has(d.id)).reduce((sum, d) => sum + d.attempts_count, 0);
  expect(fresh()).toHaveLength(attempts);
  expect(new Set(fresh().map((r) => r.headers['x-cairn-delivery'])).size).toBe(fresh().length); // each once
});
