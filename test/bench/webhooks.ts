/**
 * `npm run bench:webhooks`: the delivery engine against real receivers on loopback.
 *  1. latency: events at 40/s to a fast receiver; event → first attempt received, p50/p99
 *     (measured from the moment the API call that makes the event is sent);
 *  2. burst: 5,000 events as fast as 32 API clients can make them, in 32 repositories (one
 *     repository's issues are numbered one at a time), all to one owner-level webhook;
 *     deliveries/s from the first to the last delivery received, and how long after the last
 *     event the last delivery came;
 *  3. backlog, one webhook (the drain figure): one `git push` of 1,500 tags records 3,000 events
 *     (push and tag_create for each) in one transaction, 3,000 deliveries to one fast receiver;
 *     deliveries/s of the engine for one webhook, and the service's RSS right after the drain;
 *  4. backlog, 20 webhooks: one push of 125 tags, 250 events to 20 webhooks (5,000 deliveries);
 *  5. isolation: a fast receiver's p99 beside a webhook whose receiver hangs for the whole
 *     timeout, against a fast receiver alone, in alternating rounds (median of the p99s).
 * Latencies are from the event (the issue's created_at) to the attempt's arrival; the
 * latency run also reports them from the moment the API call was sent.
 * Prints a table and a JSON line. BENCH_ONLY=drain runs the warm-up and scenario 3 alone;
 * BENCH_CPU_PROF=<dir> samples the service's CPU for the whole run and writes a .cpuprofile there on exit.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { adminClient, createUser } from '../support/client.js';
import { GitSandbox, remoteUrl } from '../support/git.js';
import { Receiver } from '../support/receiver.js';
import { CairnServer, sleep } from '../support/server.js';
import { cpuProfileEnv, cpuTimes, percentile } from './stats.js';

const RATE = 40;
const LATENCY_SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const BURST = 5_000;
const ISOLATION_ROUNDS = 5;
const ROUND_SECONDS = 8;
const DRAIN_TAGS = 1_500;
const drainOnly = process.env.BENCH_ONLY === 'drain';

/** Resident memory of a process in MiB, from /proc/<pid>/status (null where there is no /proc). */
async function rssMb(pid: number | undefined): Promise<number | null> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  return kb ? Math.round(Number(kb) / 1024) : null;
}

const server = await CairnServer.start({
  embedded: true,
  discardOutput: true,
  env: {
    CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    ...(await cpuProfileEnv(process.env.BENCH_CPU_PROF)),
  },
});
const receiver = await Receiver.start();
try {
  const owner = await createUser(adminClient(server), 'bench', ['repo', 'admin:repo_hook']);
  const newRepo = async (name: string, paths: string[]) => {
    const repo = (await owner.post('/repos', { name })).body.id as string;
    for (const path of paths) await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url(path), events: ['issues'] });
    return repo;
  };

  /**
   * Events at RATE/s for `seconds`. Returns, per event received at `path`, ms
   * from the API call being sent (`fromRequest`, API time included) and from
   * the event itself (`fromEvent`: the issue's created_at, written in the
   * transaction that records the event; same machine, same clock).
   */
  const paced = async (repo: string, path: string, seconds: number): Promise<{ fromRequest: number[]; fromEvent: number[] }> => {
    const sentAt = new Map<string, number>();
    const total = RATE * seconds;
    const already = receiver.at(path).length;
    const start = Date.now();
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE;
      if (due > Date.now()) await sleep(due - Date.now());
      const title = `${path}-${start}-${i}`;
      sentAt.set(title, Date.now());
      calls.push(owner.post(`/repos/${repo}/issues`, { title }));
    }
    await Promise.all(calls);
    await receiver.waitFor(path, already + total, 60_000);
    const got = receiver.at(path).slice(already);
    return {
      fromRequest: got.map((r) => r.at - sentAt.get(r.body.issue.title)!),
      fromEvent: got.map((r) => r.at - Date.parse(r.body.issue.created_at)),
    };
  };

  const cpuBefore = await cpuTimes();
  // Warm-up: JIT, connection pools, the receiver's keep-alive sockets.
  await paced(await newRepo('warm-up', ['/warm-up']), '/warm-up', 5);

  // 1. latency, solo
  const latencyRun = async () => {
    const soloRepo = await newRepo('latency', ['/fast-solo']);
    const latency = await paced(soloRepo, '/fast-solo', LATENCY_SECONDS);
    return {
      events: latency.fromEvent.length,
      rate: RATE,
      p50: percentile(latency.fromEvent, 50),
      p99: percentile(latency.fromEvent, 99),
      max: Math.max(...latency.fromEvent),
      fromRequestP50: percentile(latency.fromRequest, 50),
      fromRequestP99: percentile(latency.fromRequest, 99),
    };
  };

  // 2. burst of 5,000 events in 32 repositories, one owner-level webhook
  const burstRun = async () => {
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
    return {
      events: BURST,
      eventsPerSecond: Math.round((BURST * 1000) / (eventsDone - burstStart)),
      deliveriesPerSecond: Math.round((BURST * 1000) / Math.max(1, burstLast - burstFirst)),
      lastDeliveryAfterLastEventMs: burstLast - eventsDone,
    };
  };

  // 3 and 4. backlogs made by one push each (its events and deliveries commit in one
  // transaction, so the engine starts from a full queue); deliveries/s first to last.
  const sandbox = await GitSandbox.create();
  const pushTags = async (name: string, count: number, paths: string[]) => {
    const repo = (await owner.post('/repos', { name })).body.id as string;
    for (const path of paths) await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url(path), events: ['push', 'tag_create'] });
    const work = await sandbox.init(name);
    await sandbox.commit(work, 'tagged', { 'README.md': 'tags\n' });
    const head = (await sandbox.git(['rev-parse', 'HEAD'], { cwd: work })).trim();
    const tags = Array.from({ length: count }, (_, i) => `${head} refs/tags/t${i}`);
    await fs.writeFile(path.join(work, '.git', 'packed-refs'), `${tags.join('\n')}\n`);
    const pushStart = Date.now();
    await sandbox.git(['push', '--quiet', remoteUrl(server, 'bench', name, owner.token), '--tags'], { cwd: work });
    const pushMs = Date.now() - pushStart;
    for (const path of paths) await receiver.waitFor(path, 2 * count, 300_000);
    const times = paths.flatMap((p) => receiver.at(p).map((r) => r.at));
    const deliveries = times.length;
    return {
      pushMs,
      deliveries,
      deliveriesPerSecond: Math.round((deliveries * 1000) / Math.max(1, Math.max(...times) - Math.min(...times))),
    };
  };

  // 5. isolation, in alternating rounds so that solo and paired figures see the same machine
  //    (this VM's hypervisor steals CPU in bursts): solo on one repository, then paired on
  //    another whose hanging webhook is switched on for the round and off after it.
  const isolationRun = async () => {
    receiver.on('/hang', { delayMs: 11_000 });
    const isolatedRepo = await newRepo('isolation-solo', ['/fast-alone']);
    const pairRepo = await newRepo('isolation', ['/fast-pair']);
    const hang = (await owner.post(`/repos/${pairRepo}/webhooks`, { url: receiver.url('/hang'), events: ['issues'], active: false })).body
      .id as string;
    const rounds: Array<{ soloP99: number; pairP99: number }> = [];
    for (let round = 0; round < ISOLATION_ROUNDS; round++) {
      const alone = await paced(isolatedRepo, '/fast-alone', ROUND_SECONDS);
      await owner.patch(`/repos/${pairRepo}/webhooks/${hang}`, { active: true });
      const beside = await paced(pairRepo, '/fast-pair', ROUND_SECONDS);
      await owner.patch(`/repos/${pairRepo}/webhooks/${hang}`, { active: false });
      rounds.push({ soloP99: percentile(alone.fromEvent, 99), pairP99: percentile(beside.fromEvent, 99) });
    }
    const soloP99 = percentile(
      rounds.map((r) => r.soloP99),
      50,
    );
    const pairP99 = percentile(
      rounds.map((r) => r.pairP99),
      50,
    );
    return {
      rounds,
      soloP99,
      fastP99: pairP99,
      ratio: Math.round((100 * pairP99) / Math.max(1, soloP99)) / 100,
      hangingRequestsSeen: receiver.at('/hang').length,
    };
  };

  const latency = drainOnly ? null : await latencyRun();
  const burst = drainOnly ? null : await burstRun();
  const oneWebhook = await pushTags('tags', DRAIN_TAGS, ['/tags']);
  const rssAfterMb = await rssMb(server.process?.pid);
  const twentyWebhooks = drainOnly
    ? null
    : await pushTags(
        'fan-out',
        125,
        Array.from({ length: 20 }, (_, i) => `/fan-${i}`),
      );
  await sandbox.cleanup();
  const isolation = drainOnly ? null : await isolationRun();

  const drain = { deliveries: oneWebhook.deliveries, perSecond: oneWebhook.deliveriesPerSecond, pushMs: oneWebhook.pushMs };
  const results = {
    latency,
    burst,
    oneWebhookBacklog: { events: 2 * DRAIN_TAGS, ...oneWebhook, rssAfterMb },
    twentyWebhooksBacklog: twentyWebhooks && { events: 250, webhooks: 20, ...twentyWebhooks },
    isolation,
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
  if (latency) {
    console.log(
      `event → first attempt at ${RATE}/s (${latency.events} events):   p50 ${latency.p50} ms   p99 ${latency.p99} ms   ` +
        `max ${latency.max} ms   (from the API call: p50 ${latency.fromRequestP50} ms, p99 ${latency.fromRequestP99} ms)`,
    );
  }
  if (burst) {
    console.log(
      `burst of ${BURST} events (32 repositories, 1 owner-level webhook):   events made at ${burst.eventsPerSecond}/s, delivered at ${burst.deliveriesPerSecond}/s, ` +
        `last delivery ${burst.lastDeliveryAfterLastEventMs} ms after the last event`,
    );
  }
  console.log(
    `one push of ${DRAIN_TAGS} tags = ${2 * DRAIN_TAGS} deliveries, 1 webhook:   push took ${oneWebhook.pushMs} ms, ` +
      `delivered at ${oneWebhook.deliveriesPerSecond}/s, service RSS after the drain ${rssAfterMb} MiB`,
  );
  if (twentyWebhooks) {
    console.log(
      `one push of 125 tags = 250 events × 20 webhooks = ${twentyWebhooks.deliveries} deliveries:   push took ${twentyWebhooks.pushMs} ms, ` +
        `delivered at ${twentyWebhooks.deliveriesPerSecond}/s`,
    );
  }
  if (isolation) {
    console.log(
      `fast receiver beside one hanging for the timeout (${ISOLATION_ROUNDS} alternating rounds of ${ROUND_SECONDS} s, median of p99s):   ` +
        `p99 ${isolation.fastP99} ms, solo p99 ${isolation.soloP99} ms, ×${isolation.ratio}   ` +
        `[${isolation.rounds.map((r) => `${r.soloP99}/${r.pairP99}`).join(', ')}]`,
    );
  }
  console.log(`\n${JSON.stringify({ bench: 'webhooks', steal, drain, rssAfterMb, results })}`);
} finally {
  await receiver.close();
  await server.destroy();
}
