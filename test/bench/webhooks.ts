/**
 * `npm run bench:webhooks`: the delivery engine against real receivers on loopback.
 *  1. latency: events at 40/s to a fast receiver; event → first attempt received, p50/p99
 *     (measured from the moment the API call that makes the event is sent);
 *  2. burst: 5,000 events as fast as 32 API clients can make them, in 32 repositories (one
 *     repository's issues are numbered one at a time), all to one owner-level webhook;
 *     deliveries/s from the first to the last delivery received, and how long after the last
 *     event the last delivery came;
 *  3. backlog, one webhook: one `git push` of 2,500 tags records 5,000 events (push and
 *     tag_create for each) in one transaction; deliveries/s of the engine for one webhook;
 *  4. backlog, 20 webhooks: 250 events fanned out to 20 webhooks (5,000 deliveries);
 *  5. isolation: the latency run again with a receiver that hangs for the whole timeout
 *     beside the fast one; the fast one's p99 against its solo p99 from run 1.
 * Prints a table and a JSON line.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { adminClient, createUser } from '../support/client.js';
import { GitSandbox, remoteUrl } from '../support/git.js';
import { Receiver } from '../support/receiver.js';
import { CairnServer, sleep } from '../support/server.js';

const RATE = 40;
const LATENCY_SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const BURST = 5_000;

/** CPU time (user, system, steal, …) from /proc/stat, to report how much the hypervisor took. */
async function cpuTimes(): Promise<number[]> {
  const line = (await fs.readFile('/proc/stat', 'utf8').catch(() => 'cpu 0')).split('\n')[0]!;
  return line.trim().split(/\s+/).slice(1).map(Number);
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

const server = await CairnServer.start({
  embedded: true,
  discardOutput: true,
  env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' },
});
const receiver = await Receiver.start();
try {
  const owner = await createUser(adminClient(server), 'bench', ['repo', 'admin:repo_hook']);
  const newRepo = async (name: string, paths: string[]) => {
    const repo = (await owner.post('/repos', { name })).body.id as string;
    for (const path of paths) await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url(path), events: ['issues'] });
    return repo;
  };

  /** Events at RATE/s for `seconds`; returns the latency of each event at `path`, in ms. */
  const paced = async (repo: string, path: string, seconds: number): Promise<number[]> => {
    const sentAt = new Map<string, number>();
    const total = RATE * seconds;
    const start = Date.now();
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE;
      if (due > Date.now()) await sleep(due - Date.now());
      const title = `${path}-${i}`;
      sentAt.set(title, Date.now());
      calls.push(owner.post(`/repos/${repo}/issues`, { title }));
    }
    await Promise.all(calls);
    await receiver.waitFor(path, total, 60_000);
    return receiver.at(path).map((r) => r.at - sentAt.get(r.body.issue.title)!);
  };

  const cpuBefore = await cpuTimes();
  // Warm-up: JIT, connection pools, the receiver's keep-alive sockets.
  await paced(await newRepo('warm-up', ['/warm-up']), '/warm-up', 5);

  // 1. latency, solo
  const soloRepo = await newRepo('latency', ['/fast-solo']);
  const solo = await paced(soloRepo, '/fast-solo', LATENCY_SECONDS);

  // 2. burst of 5,000 events in 32 repositories, one owner-level webhook
  const burster = await createUser(adminClient(server), 'burster', ['repo', 'admin:repo_hook']);
  await burster.post('/user/webhooks', { url: receiver.url('/burst'), events: ['issues'] });
  const burstRepos: string[] = [];
  for (let i = 0; i < 32; i++) burstRepos.push((await burster.post('/repos', { name: `burst-${i}` })).body.id);
  let made = 0;
  const burstStart = Date.now();
  await Promise.all(
    burstRepos.map(async (repo) => {
      while (made < BURST) {
        made++;
        await burster.post(`/repos/${repo}/issues`, { title: `b${made}` });
      }
    }),
  );
  const eventsDone = Date.now();
  const burst = await receiver.waitFor('/burst', BURST, 300_000);
  const burstFirst = Math.min(...burst.map((r) => r.at));
  const burstLast = Math.max(...burst.map((r) => r.at));

  // 3. backlog for one webhook: one push of 2,500 tags
  const sandbox = await GitSandbox.create();
  const tagRepo = await newRepo('tags', ['/tags']);
  await owner.post(`/repos/${tagRepo}/webhooks`, { url: receiver.url('/tags'), events: ['push', 'tag_create'] });
  const work = await sandbox.init('tags');
  await sandbox.commit(work, 'tagged', { 'README.md': 'tags\n' });
  const head = (await sandbox.git(['rev-parse', 'HEAD'], { cwd: work })).trim();
  const tags = Array.from({ length: 2_500 }, (_, i) => `${head} refs/tags/t${i}`);
  await fs.writeFile(path.join(work, '.git', 'packed-refs'), `${tags.join('\n')}\n`);
  const pushStart = Date.now();
  await sandbox.git(['push', '--quiet', remoteUrl(server, 'bench', 'tags', owner.token), '--tags'], { cwd: work });
  const pushDone = Date.now();
  const tagDeliveries = await receiver.waitFor('/tags', 5_000, 300_000);
  const tagFirst = Math.min(...tagDeliveries.map((r) => r.at));
  const tagLast = Math.max(...tagDeliveries.map((r) => r.at));
  await sandbox.cleanup();

  // 4. backlog: 250 events × 20 webhooks
  const fanPaths = Array.from({ length: 20 }, (_, i) => `/fan-${i}`);
  const fanRepo = await newRepo('fan-out', fanPaths);
  const fanStart = Date.now();
  await Promise.all(
    Array.from({ length: 10 }, async (_, w) => {
      for (let i = w; i < 250; i += 10) await owner.post(`/repos/${fanRepo}/issues`, { title: `f${i}` });
    }),
  );
  const fanEventsDone = Date.now();
  for (const path of fanPaths) await receiver.waitFor(path, 250, 300_000);
  const fanLast = Math.max(...fanPaths.flatMap((p) => receiver.at(p).map((r) => r.at)));

  // 5. isolation: a receiver hanging for the whole timeout beside the fast one
  receiver.on('/hang', { delayMs: 11_000 });
  const pairRepo = await newRepo('isolation', ['/fast-pair', '/hang']);
  const beside = await paced(pairRepo, '/fast-pair', LATENCY_SECONDS);

  const results = {
    latency: { events: solo.length, rate: RATE, p50: percentile(solo, 50), p99: percentile(solo, 99), max: Math.max(...solo) },
    burst: {
      events: BURST,
      eventsPerSecond: Math.round((BURST * 1000) / (eventsDone - burstStart)),
      deliveriesPerSecond: Math.round((BURST * 1000) / Math.max(1, burstLast - burstFirst)),
      lastDeliveryAfterLastEventMs: burstLast - eventsDone,
    },
    oneWebhookBacklog: {
      events: 5_000,
      pushMs: pushDone - pushStart,
      deliveriesPerSecond: Math.round((5_000 * 1000) / Math.max(1, tagLast - tagFirst)),
    },
    backlog: {
      deliveries: 5_000,
      deliveriesPerSecond: Math.round((5_000 * 1000) / Math.max(1, fanLast - fanStart)),
      eventsMadeInMs: fanEventsDone - fanStart,
    },
    isolation: {
      fastP50: percentile(beside, 50),
      fastP99: percentile(beside, 99),
      soloP99: percentile(solo, 99),
      ratio: Math.round((100 * percentile(beside, 99)) / percentile(solo, 99)) / 100,
      hangingRequestsSeen: receiver.at('/hang').length,
    },
  };
  const cpuAfter = await cpuTimes();
  const delta = cpuAfter.map((v, i) => v - (cpuBefore[i] ?? 0));
  const steal =
    (delta[7] ?? 0) /
    Math.max(
      1,
      delta.reduce((sum, v) => sum + v, 0),
    );
  console.log(
    `\nbench:webhooks — ${os.cpus().length} CPUs, embedded PostgreSQL, receivers on loopback, CPU stolen by the hypervisor: ${(100 * steal).toFixed(0)}%\n`,
  );
  console.log(
    `event → first attempt at ${RATE}/s (${solo.length} events):   p50 ${results.latency.p50} ms   p99 ${results.latency.p99} ms   max ${results.latency.max} ms`,
  );
  console.log(
    `burst of ${BURST} events (32 repositories, 1 owner-level webhook):   events made at ${results.burst.eventsPerSecond}/s, delivered at ${results.burst.deliveriesPerSecond}/s, ` +
      `last delivery ${results.burst.lastDeliveryAfterLastEventMs} ms after the last event`,
  );
  console.log(
    `one push of 2,500 tags = 5,000 events, 1 webhook:   push took ${results.oneWebhookBacklog.pushMs} ms, delivered at ${results.oneWebhookBacklog.deliveriesPerSecond}/s`,
  );
  console.log(`backlog of 5,000 deliveries (250 events × 20 webhooks):   ${results.backlog.deliveriesPerSecond} deliveries/s`);
  console.log(
    `fast receiver beside one hanging for the timeout:   p50 ${results.isolation.fastP50} ms   p99 ${results.isolation.fastP99} ms ` +
      `(solo p99 ${results.isolation.soloP99} ms, ×${results.isolation.ratio})`,
  );
  console.log(`\n${JSON.stringify({ bench: 'webhooks', steal, results })}`);
} finally {
  await receiver.close();
  await server.destroy();
}
