/**
 * `npm run bench:statuses`: commit statuses as a busy CI system uses them, 32 connections:
 *  - posting statuses to one repository (`POST /repos/:id/statuses/:sha`, contexts taking turns),
 *    then a check that every status has its `status` event and no post failed;
 *  - reading the combined status of a commit with 50 contexts (`GET /repos/:id/commits/:sha/status`)
 *    side by side with `GET /repos/:id`, in alternating rounds, and the median of each round's ratio.
 * Medians over several rounds; prints a table and a JSON line.
 * BENCH_CPU_PROF=<dir> samples the service's CPU for the whole run and writes a .cpuprofile there on exit;
 * BENCH_ONLY=post or BENCH_ONLY=read runs one half (a profile of one kind of request).
 */
import os from 'node:os';
import autocannon from 'autocannon';
import { adminClient } from '../support/client.js';
import { CairnServer } from '../support/server.js';
import { databaseOf } from './database.js';
import { cpuProfileEnv, cpuShares, cpuTimes, cpuUsed, median, pairedRatio } from './stats.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Distinct contexts the posts take turns over: far below the cap of 1,000 statuses per context in every run. */
const CONTEXTS = 200;
const CPU_PROF = process.env.BENCH_CPU_PROF;
const ONLY = process.env.BENCH_ONLY;

/** CPU ms per request of each target's runs: the service process, and PostgreSQL (less sensitive to a busy machine than req/s). */
const cpuPerRequest = new Map<string, { service: number; postgres: number; requests: number }>();

async function run(options: autocannon.Options, duration: number, target?: string) {
  const before = target ? await cpuUsed(server.process!.pid!) : null;
  const result = await autocannon({ ...options, connections: CONNECTIONS, duration });
  if (target && before) {
    const after = await cpuUsed(server.process!.pid!);
    const sum = cpuPerRequest.get(target) ?? { service: 0, postgres: 0, requests: 0 };
    sum.service += after.service - before.service;
    sum.postgres += after.postgres - before.postgres;
    sum.requests += result.requests.total;
    cpuPerRequest.set(target, sum);
  }
  return result;
}

function cpuOf(target: string) {
  const sum = cpuPerRequest.get(target);
  if (!sum?.requests) return { serviceCpu: NaN, postgresCpu: NaN };
  return { serviceCpu: sum.service / sum.requests, postgresCpu: sum.postgres / sum.requests };
}

interface Measured {
  serviceCpu: number;
  postgresCpu: number;
  rps: number;
  p50: number;
  p99: number;
  failed: number;
}

function summary(target: string, results: autocannon.Result[]): Measured {
  return {
    ...cpuOf(target),
    rps: Math.round(median(results.map((r) => r.requests.average))),
    p50: median(results.map((r) => r.latency.p50)),
    p99: median(results.map((r) => r.latency.p99)),
    failed: results.reduce((sum, r) => sum + r.errors + r.timeouts + r.non2xx, 0),
  };
}

const server = await CairnServer.start({
  embedded: true,
  discardOutput: true,
  env: {
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    ...(await cpuProfileEnv(CPU_PROF)),
  },
});
let failed = false;
try {
  const admin = adminClient(server);
  const repo = (await admin.post('/repos', { name: 'statuses-bench', auto_init: true })).body;
  const sha = (
    await admin.gql<{ repository: { branches: { nodes: Array<{ sha: string }> } } }>(
      'query($id: ID!) { repository(id: $id) { branches { nodes { sha } } } }',
      { id: repo.id },
    )
  ).repository.branches.nodes[0]!.sha;
  const auth = { authorization: `Bearer ${server.adminToken}` };

  // (a) Posting: each request names the next context in turn.
  let next = 0;
  const posting: autocannon.Options = {
    url: `${server.url}/repos/${repo.id}/statuses/${sha}`,
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          body: JSON.stringify({
            state: 'success',
            context: `ci/job-${next++ % CONTEXTS}`,
            description: 'a benchmark status',
            target_url: 'https://ci.example.com/builds/1',
          }),
        }),
      },
    ],
  };
  const posts: autocannon.Result[] = [];
  if (ONLY !== 'read') {
    await run(posting, 2); // warm-up
    for (let round = 0; round < ROUNDS; round++) posts.push(await run(posting, DURATION, 'post'));
  }

  const db = await databaseOf(server);
  const [counted] = (
    await db.query<{ statuses: number; events: number }>(
      `select (select count(*)::int from commit_statuses where repository_id = $1) as statuses,
              (select count(*)::int from domain_events where repository_id = $1 and type = 'status') as events`,
      [repo.id],
    )
  ).rows;
  await db.end();

  // (b) Reading: a commit with 50 contexts (its last posts gave it 200; a fresh commit gets exactly 50).
  const work = await admin.post('/repos', { name: 'statuses-read', auto_init: true });
  const readSha = (
    await admin.gql<{ repository: { branches: { nodes: Array<{ sha: string }> } } }>(
      'query($id: ID!) { repository(id: $id) { branches { nodes { sha } } } }',
      { id: work.body.id },
    )
  ).repository.branches.nodes[0]!.sha;
  for (let i = 0; i < 50; i++) {
    const res = await admin.post(`/repos/${work.body.id}/statuses/${readSha}`, {
      state: i % 7 ? 'success' : 'pending',
      context: `ci/check-${i}`,
    });
    if (res.status !== 201) throw new Error(`status ${i}: ${res.status} ${res.text}`);
  }
  const reads = [
    { name: 'REST GET /repos/:id', options: { url: `${server.url}/repos/${work.body.id}`, headers: auth } },
    {
      name: 'REST GET …/commits/:sha/status (50 contexts)',
      options: { url: `${server.url}/repos/${work.body.id}/commits/${readSha}/status`, headers: auth },
    },
  ];
  const samples = reads.map(() => [] as autocannon.Result[]);
  const stealBefore = await cpuTimes();
  if (ONLY !== 'post') {
    for (const target of reads) await run(target.options, 2); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, target] of reads.entries()) samples[i]!.push(await run(target.options, DURATION, target.name));
    }
  }
  const steal = cpuShares(stealBefore, await cpuTimes()).steal;

  const post = summary('post', posts);
  const repoRead = summary(reads[0]!.name, samples[0]!);
  const combined = summary(reads[1]!.name, samples[1]!);
  const ratio = ONLY
    ? NaN
    : pairedRatio(
        samples[1]!.map((r) => r.requests.average),
        samples[0]!.map((r) => r.requests.average),
      );
  const eventsPerStatus = ONLY === 'read' || (counted!.statuses > 0 && counted!.events === counted!.statuses);

  console.log(
    `\nbench:statuses — ${CONNECTIONS} connections, median of ${ROUNDS} × ${DURATION} s, ${os.cpus().length} CPUs, ` +
      `LOG_LEVEL=${process.env.LOG_LEVEL ?? 'info'}, CPU stolen by the hypervisor: ${(100 * steal).toFixed(0)}%\n`,
  );
  console.log('target                                         req/s    p50 ms   p99 ms   failed   CPU ms/req: service  postgres');
  for (const [name, r] of [
    ['REST POST /repos/:id/statuses/:sha', post],
    [reads[0]!.name, repoRead],
    [reads[1]!.name, combined],
  ] as const) {
    console.log(
      `${name.padEnd(46)} ${String(r.rps).padStart(6)}   ${String(r.p50).padStart(6)}   ${String(r.p99).padStart(6)}   ${String(r.failed).padEnd(6)}` +
        `   ${r.serviceCpu.toFixed(2).padStart(19)}  ${r.postgresCpu.toFixed(2).padStart(8)}`,
    );
  }
  console.log(
    `\nstatuses posted ${counted!.statuses}, status events ${counted!.events}; combined status vs GET /repos/:id: ${ratio.toFixed(2)}×\n`,
  );
  if (!eventsPerStatus || post.failed || combined.failed) {
    failed = true;
    console.error('FAILED: every post must succeed and record its event');
  }
  console.log(
    JSON.stringify({
      bench: 'statuses',
      postRps: post.rps,
      postP99: post.p99,
      postCpu: { service: post.serviceCpu, postgres: post.postgresCpu },
      combinedRps: combined.rps,
      combinedCpu: { service: combined.serviceCpu, postgres: combined.postgresCpu },
      repositoryRps: repoRead.rps,
      repositoryCpu: { service: repoRead.serviceCpu, postgres: repoRead.postgresCpu },
      combinedVsRepository: ratio,
      statuses: counted!.statuses,
      events: counted!.events,
      eventsPerStatus,
      connections: CONNECTIONS,
      steal,
    }),
  );
} finally {
  await server.destroy();
}
if (failed) process.exit(1);
