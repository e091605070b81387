/**
 * `npm run bench:retries`: does a receiver that never answers keep its retry schedule under a
 * backlog? Timeout 5 s, retries after 2 s, 4 s and 8 s: each delivery's four attempts should end
 * 4 × 5 + 2 + 4 + 8 = 34 s after its event (the baseline: the schedule itself). Backlogs of 5 and
 * of 60 deliveries made at once; for each, when the last delivery was recorded failed, and how late
 * the latest attempt started against its schedule. Beside the backlog, a healthy webhook on the same
 * repository: event (a repository edit) → delivery p99 during the backlog against before it.
 * Prints a table and a JSON line.
 */
import { adminClient, createUser } from '../support/client.js';
import { eventually, Receiver, type Received } from '../support/receiver.js';
import { CairnServer, sleep } from '../support/server.js';
import { percentile } from './stats.js';

const TIMEOUT_MS = 5_000;
const DELAYS_MS = [2_000, 4_000, 8_000];
const SCHEDULE_MS = 4 * TIMEOUT_MS + DELAYS_MS.reduce((a, b) => a + b, 0);
/** BENCH_BACKLOGS=5 runs the small backlog alone (an engine that serialises retries takes minutes over 60). */
const BACKLOGS = (process.env.BENCH_BACKLOGS ?? '5,60').split(',').map(Number);

const server = await CairnServer.start({
  embedded: true,
  discardOutput: true,
  env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback', CAIRN_WEBHOOK_TIMEOUT: '5s', CAIRN_WEBHOOK_RETRY_DELAYS: '2s,4s,8s', LOG_LEVEL: 'warn' },
});
const receiver = await Receiver.start();
try {
  const owner = await createUser(adminClient(server), 'bench', ['repo', 'admin:repo_hook']);

  /** Event → arrival at `path` for `count` events one after another, in ms. */
  const healthyLatencies = async (repo: string, path: string, count: number) => {
    const latencies: number[] = [];
    for (let i = 0; i < count; i++) {
      const sent = Date.now();
      await owner.patch(`/repos/${repo}`, { description: `beside ${i}` });
      const arrived = await receiver.waitFor(path, receiver.at(path).length + 1, 10_000);
      latencies.push(arrived.at(-1)!.at - sent);
      await sleep(100);
    }
    return latencies;
  };

  const run = async (backlog: number) => {
    const never = `/never-${backlog}`;
    const healthy = `/healthy-${backlog}`;
    receiver.on(never, { delayMs: 120_000 });
    const repo = (await owner.post('/repos', { name: `backlog-${backlog}` })).body.id as string;
    const hook = (await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url(never), events: ['issues'], active: false })).body
      .id as string;
    // The healthy webhook is sent the repository's edits, so that the backlog alone goes to the other.
    await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url(healthy), events: ['repository'] });
    const before = await healthyLatencies(repo, healthy, 20);
    await owner.patch(`/repos/${repo}/webhooks/${hook}`, { active: true });

    const fired = Date.now();
    await Promise.all(Array.from({ length: backlog }, (_, i) => owner.post(`/repos/${repo}/issues`, { title: `backlog ${i}` })));
    // Every delivery's first attempt (an engine that falls behind may retry some before it starts others).
    const idsSoFar = () => new Set(receiver.at(never).map((r) => r.headers['x-cairn-delivery'] as string));
    const ids = await eventually(async () => idsSoFar().size >= backlog && idsSoFar(), 3 * SCHEDULE_MS, 'every first attempt');
    await sleep(TIMEOUT_MS + 500); // the backlog's first attempts have timed out: now retries run
    const during = await healthyLatencies(repo, healthy, 20);

    await eventually(
      async () => (await owner.get(`/repos/${repo}/webhooks/${hook}/deliveries?status=failed&limit=1`)).body.total >= backlog,
      3 * SCHEDULE_MS,
      `the ${backlog} deliveries to fail`,
    );
    const doneMs = Date.now() - fired;
    // Lateness: each attempt against the previous one's start + timeout + delay (the first against the event).
    const attempts = new Map<string, Received[]>();
    for (const r of receiver.at(never)) {
      const id = r.headers['x-cairn-delivery'] as string;
      if (ids.has(id)) attempts.set(id, [...(attempts.get(id) ?? []), r]);
    }
    let maxLateMs = 0;
    for (const tries of attempts.values()) {
      maxLateMs = Math.max(maxLateMs, tries[0]!.at - fired);
      for (let i = 1; i < tries.length; i++) {
        maxLateMs = Math.max(maxLateMs, tries[i]!.at - tries[i - 1]!.at - TIMEOUT_MS - DELAYS_MS[i - 1]!);
      }
    }
    await owner.delete(`/repos/${repo}/webhooks/${hook}`);
    return {
      backlog,
      scheduleMs: SCHEDULE_MS,
      doneMs,
      maxLateMs,
      healthyP99BeforeMs: percentile(before, 99),
      healthyP99DuringMs: percentile(during, 99),
    };
  };

  const results = [];
  for (const backlog of BACKLOGS) results.push(await run(backlog));
  console.log(`\nbench:retries — a receiver that never answers; timeout ${TIMEOUT_MS / 1000} s, retries after 2 s, 4 s, 8 s\n`);
  for (const r of results) {
    console.log(
      `backlog of ${r.backlog}: all failed after ${(r.doneMs / 1000).toFixed(1)} s (schedule ${r.scheduleMs / 1000} s), ` +
        `latest attempt ${r.maxLateMs} ms behind its time;   healthy webhook beside it p99 ${r.healthyP99DuringMs} ms (before the backlog ${r.healthyP99BeforeMs} ms)`,
    );
  }
  console.log(`\n${JSON.stringify({ bench: 'retries', results })}`);
} finally {
  await receiver.close();
  await server.destroy();
}
