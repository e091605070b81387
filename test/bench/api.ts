/**
 * `npm run bench:api`: throughput and latency of one repository read, side by side in one run:
 *  - REST `GET /repos/:id` through the facade (GraphQL executed in-process),
 *  - REST `GET /repos/:id/pulls` (a page of 5 open pull requests),
 *  - the same `GET /repos/:id` with `If-None-Match` naming its ETag (304),
 *  - the equivalent GraphQL query over HTTP (Apollo),
 *  - a bare Express 5 route answering the same JSON after a Bearer check (the ceiling).
 * 32 connections. The targets take turns over several rounds (so a machine whose speed drifts,
 * as a shared VM's does, affects each alike) and the medians are reported, with the CPU time the
 * hypervisor stole meanwhile; "vs bare" is the median of each round's own ratio. Prints a table
 * and a JSON line.
 * BENCH_CPU_PROF=<dir> samples the service's CPU for the whole run and writes a .cpuprofile there on
 * exit; BENCH_TARGETS=graphql,rest (names containing these, case-insensitive) measures only those
 * beside the bare route, for a profile of one path.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { adminClient } from '../support/client.js';
import { GitSandbox, remoteUrl } from '../support/git.js';
import { CairnServer, freePort } from '../support/server.js';
import { cpuProfileEnv, cpuShares, cpuTimes, median, pairedRatio, type Throughput } from './stats.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TARGETS = process.env.BENCH_TARGETS?.toLowerCase().split(',');
const here = path.dirname(fileURLToPath(import.meta.url));

interface Result extends Throughput {
  non2xx: number;
  /** Median over the rounds of this target's req/s over the first target's (the bare route) in the same round. */
  vsBare: number;
}

async function run(options: autocannon.Options, duration: number) {
  return autocannon({ ...options, connections: CONNECTIONS, duration });
}

async function measureAll(targets: Array<{ name: string; options: autocannon.Options }>): Promise<Result[]> {
  for (const target of targets) await run(target.options, 2); // warm-up (JIT, pools, caches)
  const samples = new Map<string, autocannon.Result[]>(targets.map((t) => [t.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const target of targets) samples.get(target.name)!.push(await run(target.options, DURATION));
  }
  const bare = samples.get(targets[0]!.name)!.map((r) => r.requests.average);
  return targets.map(({ name }) => {
    const results = samples.get(name)!;
    return {
      name,
      vsBare: pairedRatio(
        results.map((r) => r.requests.average),
        bare,
      ),
      rps: Math.round(median(results.map((r) => r.requests.average))),
      p50: median(results.map((r) => r.latency.p50)),
      p99: median(results.map((r) => r.latency.p99)),
      errors: results.reduce((sum, r) => sum + r.errors + r.timeouts, 0),
      non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
    };
  });
}

const server = await CairnServer.start({
  embedded: true,
  discardOutput: true,
  env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', ...(await cpuProfileEnv(process.env.BENCH_CPU_PROF)) },
});
try {
  const admin = adminClient(server);
  const repo = (await admin.post('/repos', { name: 'bench', description: 'benchmark target', auto_init: true })).body;
  await admin.post(`/repos/${repo.id}/issues`, { title: 'one open issue' });
  const git = await GitSandbox.create();
  const work = path.join(git.dir, 'bench');
  await git.git(['clone', '--quiet', remoteUrl(server, 'admin', 'bench', server.adminToken), work]);
  for (let i = 0; i < 5; i++) {
    await git.git(['checkout', '--quiet', '-b', `topic-${i}`, 'main'], { cwd: work });
    await git.commit(work, `change ${i}`, { [`topic-${i}.txt`]: `${i}\n` });
    await git.git(['push', '--quiet', 'origin', `topic-${i}`], { cwd: work });
    const pull = await admin.post(`/repos/${repo.id}/pulls`, { title: `Pull request ${i}`, head: `topic-${i}` });
    if (pull.status !== 201) throw new Error(`pull request ${i}: ${pull.status} ${pull.text}`);
  }
  await git.cleanup();
  const read = await admin.get(`/repos/${repo.id}`);
  const record = read.body;
  const etag = read.headers.get('etag')!;

  const bodyFile = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-bench-')), 'repo.json');
  await fs.writeFile(bodyFile, JSON.stringify(record));
  const barePort = await freePort();
  const bare = fork(path.join(here, 'bare-express.js'), [String(barePort), bodyFile, server.adminToken], { stdio: 'ignore' });
  await new Promise((resolve) => bare.once('message', resolve));

  const auth = { authorization: `Bearer ${server.adminToken}` };
  const query = `query($id: ID!) { repository(id: $id) { id name fullName owner { id login } description private defaultBranch empty cloneUrl
    createdAt updatedAt pushedAt openIssuesCount openPullsCount } }`;
  const stealBefore = await cpuTimes();
  const all: Array<{ name: string; options: autocannon.Options }> = [
    { name: 'bare Express route', options: { url: `http://127.0.0.1:${barePort}/repos/${repo.id}`, headers: auth } },
    { name: 'REST GET /repos/:id', options: { url: `${server.url}/repos/${repo.id}`, headers: auth } },
    { name: 'REST GET /repos/:id/pulls', options: { url: `${server.url}/repos/${repo.id}/pulls`, headers: auth } },
    { name: 'REST GET /repos/:id → 304', options: { url: `${server.url}/repos/${repo.id}`, headers: { ...auth, 'if-none-match': etag } } },
    {
      name: 'GraphQL repository(id)',
      options: {
        url: `${server.url}/graphql`,
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables: { id: repo.id } }),
      },
    },
  ];
  const targets = all.filter(({ name }, i) => i === 0 || !TARGETS || TARGETS.some((wanted) => name.toLowerCase().includes(wanted)));
  const results = await measureAll(targets);
  const steal = cpuShares(stealBefore, await cpuTimes()).steal;
  bare.kill();

  console.log(
    `\nbench:api — ${CONNECTIONS} connections, median of ${ROUNDS} × ${DURATION} s per target, ${os.cpus().length} CPUs, ` +
      `LOG_LEVEL=${process.env.LOG_LEVEL ?? 'info'}, CPU stolen by the hypervisor: ${(100 * steal).toFixed(0)}%\n`,
  );
  console.log('target                         req/s    p50 ms   p99 ms   vs bare   errors');
  for (const r of results) {
    console.log(
      `${r.name.padEnd(30)} ${String(r.rps).padStart(6)}   ${String(r.p50).padStart(6)}   ${String(r.p99).padStart(6)}   ${(100 * r.vsBare).toFixed(1).padStart(6)}%   ${r.errors + (r.name.endsWith('304') ? 0 : r.non2xx)}`,
    );
  }
  console.log(`\n${JSON.stringify({ bench: 'api', connections: CONNECTIONS, steal, results })}`);
} finally {
  await server.destroy();
}
