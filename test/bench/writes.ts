/**
 * `npm run bench:writes`: issue creation throughput, all into ONE repository (its numbers are
 * handed out one at a time, so this measures how long creation holds the sequence):
 *  1. REST `POST /repos/:id/issues`, no webhook;
 *  2. the same into another repository with a webhook subscribed to `issues` (the fan-out inserts
 *     one delivery per issue in the creating transaction; the delivery worker sends them meanwhile).
 * 32 connections; the targets take turns over several rounds after a warm-up, medians reported.
 * While it runs, the backends waiting on a lock are sampled (pg_stat_activity): the mean number of
 * requests queued behind another's lock; and the CPU time the service and its PostgreSQL used per
 * issue created is read from /proc (a cost a busy shared machine changes much less than req/s). Afterwards it checks, in the database, that each
 * repository's numbers are exactly 1..N (no gap, no duplicate, N = the sequence's last number),
 * that each issue has exactly one `opened` event, and that the webhook target has one delivery per
 * issue; it exits non-zero otherwise.
 * Prints a table and a JSON line per target, the last one
 * `{"bench":"writes","rps":…,"p50":…,"p99":…,"errors":…,"gapFree":true}` (the plain target).
 * BENCH_CPU_PROF=<dir> samples the service's CPU for the whole run and writes a .cpuprofile there on exit.
 */
import os from 'node:os';
import autocannon from 'autocannon';
import pg from 'pg';
import { adminClient } from '../support/client.js';
import { Receiver } from '../support/receiver.js';
import { CairnServer, sleep } from '../support/server.js';
import { cpuProfileEnv, cpuShares, cpuTimes, cpuUsed, median, type Throughput } from './stats.js';
import { databaseOf } from './database.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CPU_PROF = process.env.BENCH_CPU_PROF;

interface Target {
  name: string;
  key: string;
  repo: string;
  options: autocannon.Options;
}

interface Result extends Throughput {
  lockWaiters: number;
  /** CPU ms per created issue: the service process, and PostgreSQL (with anything else it started). */
  serviceCpu: number;
  postgresCpu: number;
}

interface Check {
  issues: number;
  lastNumber: number;
  gapFree: boolean;
  eventsPerIssue: boolean;
  deliveriesPerIssue: boolean | null;
  problems: string[];
}

/** Samples how many backends wait on a lock, every 20 ms, until stopped; returns the mean. */
function sampleLockWaiters(db: pg.Client): () => Promise<number> {
  let running = true;
  const samples: number[] = [];
  const loop = (async () => {
    while (running) {
      const { rows } = await db.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`,
      );
      samples.push(rows[0]!.n);
      await sleep(20);
    }
  })();
  return async () => {
    running = false;
    await loop;
    return samples.length ? samples.reduce((sum, n) => sum + n, 0) / samples.length : 0;
  };
}

async function run(options: autocannon.Options, duration: number) {
  return autocannon({ ...options, connections: CONNECTIONS, duration });
}

async function measureAll(db: pg.Client, pid: number, targets: Target[]): Promise<Result[]> {
  for (const target of targets) await run(target.options, 2); // warm-up (JIT, pools, caches)
  const samples = new Map<string, Array<{ result: autocannon.Result; waiters: number; service: number; postgres: number }>>(
    targets.map((t) => [t.name, []]),
  );
  for (let round = 0; round < ROUNDS; round++) {
    for (const target of targets) {
      const before = await cpuUsed(pid);
      const stop = sampleLockWaiters(db);
      const result = await run(target.options, DURATION);
      const waiters = await stop();
      const after = await cpuUsed(pid);
      const created = Math.max(1, result['2xx']);
      samples.get(target.name)!.push({
        result,
        waiters,
        service: (after.service - before.service) / created,
        postgres: (after.postgres - before.postgres) / created,
      });
    }
  }
  return targets.map(({ name }) => {
    const runs = samples.get(name)!;
    return {
      name,
      rps: Math.round(median(runs.map((r) => r.result.requests.average))),
      p50: median(runs.map((r) => r.result.latency.p50)),
      p99: median(runs.map((r) => r.result.latency.p99)),
      errors: runs.reduce((sum, r) => sum + r.result.errors + r.result.timeouts + r.result.non2xx, 0),
      lockWaiters: Math.round(10 * median(runs.map((r) => r.waiters))) / 10,
      serviceCpu: Math.round(100 * median(runs.map((r) => r.service))) / 100,
      postgresCpu: Math.round(100 * median(runs.map((r) => r.postgres))) / 100,
    };
  });
}

/** Numbers 1..last_number (the repository's sequence) exactly once across issues and pull requests; one `opened` event (and delivery) per issue. */
async function check(db: pg.Client, repo: string, withWebhook: boolean): Promise<Check> {
  const problems: string[] = [];
  const [{ last_number: lastNumber }] = (
    await db.query<{ last_number: number }>('select last_number from repository_counters where repository_id = $1', [repo])
  ).rows as [{ last_number: number }];
  const numbers = (
    await db.query<{ number: number }>(
      `select number from issues where repository_id = $1 union all select number from pull_requests where repository_id = $1 order by 1`,
      [repo],
    )
  ).rows.map((row) => row.number);
  const duplicates = numbers.filter((n, i) => i > 0 && numbers[i - 1] === n);
  const missing = numbers.length === 0 ? 0 : lastNumber - new Set(numbers).size;
  if (duplicates.length) problems.push(`${duplicates.length} duplicate numbers, e.g. ${duplicates.slice(0, 5).join(', ')}`);
  if (missing) problems.push(`${missing} numbers of 1..${lastNumber} missing`);
  if (numbers[0] !== 1 || numbers.at(-1) !== lastNumber)
    problems.push(`numbers run ${numbers[0]}..${numbers.at(-1)}, last_number ${lastNumber}`);

  // Grouped, so the check stays linear in the issues: opened events per issue id, and events of no issue.
  const events = await db.query<{ n: number }>(
    `with opened as (
       select payload->'issue'->>'id' as issue_id, count(*) as n from domain_events
        where repository_id = $1 and type = 'issues' and action = 'opened' group by 1)
     select (select count(*)::int from issues i left join opened o on o.issue_id = i.id
              where i.repository_id = $1 and coalesce(o.n, 0) <> 1)
          + (select count(*)::int from opened o where not exists (select 1 from issues i where i.id = o.issue_id)) as n`,
    [repo],
  );
  const eventsPerIssue = events.rows[0]!.n === 0;
  if (!eventsPerIssue) problems.push(`${events.rows[0]!.n} issues without exactly one opened event, or events without an issue`);

  let deliveriesPerIssue: boolean | null = null;
  if (withWebhook) {
    const deliveries = await db.query<{ issues: number; deliveries: number; distinct_events: number }>(
      `select (select count(*)::int from issues where repository_id = $1) as issues,
              count(*)::int as deliveries, count(distinct d.event_id)::int as distinct_events
         from deliveries d join domain_events e on e.id = d.event_id
        where e.repository_id = $1 and e.type = 'issues'`,
      [repo],
    );
    const row = deliveries.rows[0]!;
    deliveriesPerIssue = row.deliveries === row.issues && row.distinct_events === row.issues;
    if (!deliveriesPerIssue)
      problems.push(`${row.deliveries} deliveries for ${row.issues} issues (${row.distinct_events} distinct events)`);
  }
  return { issues: numbers.length, lastNumber, gapFree: !duplicates.length && !missing, eventsPerIssue, deliveriesPerIssue, problems };
}

const server = await CairnServer.start({
  embedded: true,
  discardOutput: true,
  env: {
    CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    ...(await cpuProfileEnv(CPU_PROF)),
  },
});
const receiver = await Receiver.start();
let failed = false;
try {
  const admin = adminClient(server);
  const plain = (await admin.post('/repos', { name: 'writes' })).body.id as string;
  const hooked = (await admin.post('/repos', { name: 'writes-webhook' })).body.id as string;
  const hook = await admin.post(`/repos/${hooked}/webhooks`, { url: receiver.url('/issues'), events: ['issues'] });
  if (hook.status !== 201) throw new Error(`webhook not created: ${hook.status} ${hook.text}`);
  const db = await databaseOf(server);

  const post = (repo: string): autocannon.Options => ({
    url: `${server.url}/repos/${repo}/issues`,
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'a benchmark issue' }),
  });
  const targets: Target[] = [
    { name: 'REST POST issues', key: 'plain', repo: plain, options: post(plain) },
    { name: 'REST POST issues + webhook', key: 'webhook', repo: hooked, options: post(hooked) },
  ];

  const stealBefore = await cpuTimes();
  const results = await measureAll(db, server.process!.pid!, targets);
  const steal = cpuShares(stealBefore, await cpuTimes()).steal;
  const checks: Check[] = [];
  for (const target of targets) checks.push(await check(db, target.repo, target.key === 'webhook'));
  await db.end();

  console.log(
    `\nbench:writes — ${CONNECTIONS} connections, one repository per target, median of ${ROUNDS} × ${DURATION} s, ` +
      `${os.cpus().length} CPUs, LOG_LEVEL=${process.env.LOG_LEVEL ?? 'info'}, CPU stolen by the hypervisor: ${(100 * steal).toFixed(0)}%\n`,
  );
  console.log(
    'target                       req/s    p50 ms   p99 ms   errors   lock waiters   CPU ms/issue: service  postgres   issues   gap-free',
  );
  results.forEach((r, i) => {
    const c = checks[i]!;
    console.log(
      `${r.name.padEnd(28)} ${String(r.rps).padStart(6)}   ${String(r.p50).padStart(6)}   ${String(r.p99).padStart(6)}   ` +
        `${String(r.errors).padStart(6)}   ${String(r.lockWaiters).padStart(12)}   ${r.serviceCpu.toFixed(2).padStart(21)}  ` +
        `${r.postgresCpu.toFixed(2).padStart(8)}   ${String(c.issues).padStart(6)}   ${c.gapFree}`,
    );
  });
  for (const [i, c] of checks.entries()) {
    if (c.problems.length) {
      failed = true;
      console.error(`\nFAILED: ${results[i]!.name}: ${c.problems.join('; ')}`);
    }
  }
  console.log('');
  // The plain target's line last: it is the figure the goal names.
  for (const i of [1, 0]) {
    const r = results[i]!;
    const c = checks[i]!;
    console.log(
      JSON.stringify({
        bench: 'writes',
        ...(i === 1 ? { target: 'webhook' } : {}),
        rps: r.rps,
        p50: r.p50,
        p99: r.p99,
        errors: r.errors,
        gapFree: c.gapFree && c.eventsPerIssue && c.deliveriesPerIssue !== false,
        lockWaiters: r.lockWaiters,
        serviceCpuMs: r.serviceCpu,
        postgresCpuMs: r.postgresCpu,
        issues: c.issues,
        connections: CONNECTIONS,
        steal,
      }),
    );
  }
} finally {
  await receiver.close();
  await server.destroy();
}
if (failed) process.exit(1);
