/**
 * `npm run bench:pulls`: pull requests where users feel them, each beside its baseline in one run.
 *
 * 1. Listing: one repository with BENCH_PULLS (10,000) open pull requests and as many issues.
 *    `GET …/pulls?limit=30` at page 1 and at offset 9,900 beside `GET …/issues?limit=30` at the same
 *    offsets, 32 connections, the four targets taking turns over several rounds (medians).
 * 2. Merge: `PUT …/merge` (merge method) on a repository of 5,000 files and 2,000 commits,
 *    BENCH_MERGES pull requests merged one after another; p50/p99.
 * 3. Mergeability: a push to a head branch → `mergeable` known for the new head, over 50 pushes;
 *    p50/p99, measured from the moment `git push` returns (its events are committed by then).
 * 4. git processes the service starts per push to a pull request's head (recording, following,
 *    mergeability, pull refs), beside the count before pull refs (git-processes.ts).
 *    `BENCH_PULLS_ONLY=processes` runs this part alone.
 *
 * Prints a table and a JSON line.
 */
import os from 'node:os';
import autocannon from 'autocannon';
import { adminClient, type Client } from '../support/client.js';
import { GitSandbox, remoteUrl } from '../support/git.js';
import { countGitProcessesPerPush, type ProcessCount } from './git-processes.js';
import { CairnServer, sleep } from '../support/server.js';
import { median, percentile } from './stats.js';

const PULLS = Number(process.env.BENCH_PULLS ?? 10_000);
const MERGES = Number(process.env.BENCH_MERGES ?? 60);
const MERGEABILITY_PUSHES = Number(process.env.BENCH_PUSHES ?? 50);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const FILES = 5_000;
const COMMITS = 2_000;

const round = (ms: number) => Math.round(ms * 10) / 10;

/** Runs `work` over `items`, `limit` at a time. */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/** git fast-import input: a blob inline, a commit on a branch. */
const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
let clock = 1_700_000_000;
function commit(ref: string, message: string, files: Record<string, string>, from?: string, mark?: number): string {
  const lines = [`commit ${ref}`];
  if (mark) lines.push(`mark :${mark}`);
  lines.push(`committer Bench <bench@example.test> ${clock++} +0000`, data(message).trimEnd());
  if (from) lines.push(`from ${from}`);
  for (const [path, content] of Object.entries(files)) lines.push(`M 100644 inline ${path}`, data(content).trimEnd());
  return lines.join('\n') + '\n\n';
}

async function importHistory(git: GitSandbox, dir: string, stream: string): Promise<void> {
  await git.git(['fast-import', '--quiet'], { cwd: dir, input: stream });
  await git.git(['checkout', '--quiet', '-f', 'main'], { cwd: dir });
}

async function measureListing(server: CairnServer, git: GitSandbox, admin: Client) {
  const repo = (await admin.post('/repos', { name: 'listing' })).body;
  const work = await git.init('listing');
  let stream = commit('refs/heads/main', 'base', { 'README.md': '# listing\n' }, undefined, 1);
  for (let i = 0; i < PULLS; i++) stream += commit(`refs/heads/b${i}`, `change ${i}`, { [`b/${i}.txt`]: `${i}\n` }, ':1');
  await importHistory(git, work, stream);
  let started = performance.now();
  await git.git(['push', '--quiet', remoteUrl(server, 'admin', 'listing', server.adminToken), 'refs/heads/*:refs/heads/*'], { cwd: work });
  const pushMs = performance.now() - started;

  started = performance.now();
  const numbers = Array.from({ length: PULLS }, (_, i) => i);
  await pool(numbers, 16, async (i) => {
    const res = await admin.post(`/repos/${repo.id}/pulls`, { title: `Pull request ${i}`, head: `b${i}`, body: 'benchmark' });
    if (res.status !== 201) throw new Error(`open #${i}: ${res.status} ${res.text}`);
  });
  const openRate = PULLS / ((performance.now() - started) / 1000);
  started = performance.now();
  await pool(numbers, 16, async (i) => {
    const res = await admin.post(`/repos/${repo.id}/issues`, { title: `Issue ${i}`, body: 'benchmark' });
    if (res.status !== 201) throw new Error(`issue #${i}: ${res.status} ${res.text}`);
  });
  const issueRate = PULLS / ((performance.now() - started) / 1000);
  // Measured on an idle service: the mergeability checks the openings queued run first.
  started = performance.now();
  while ((await admin.get(`/repos/${repo.id}/pulls/${PULLS}`)).body.mergeable === null) await sleep(200);
  const settleMs = performance.now() - started;

  const auth = { authorization: `Bearer ${server.adminToken}` };
  const offset = Math.max(0, PULLS - 100);
  const targets = [
    { name: 'GET …/issues?limit=30', path: `/repos/${repo.id}/issues?limit=30` },
    { name: 'GET …/pulls?limit=30', path: `/repos/${repo.id}/pulls?limit=30` },
    { name: `GET …/issues?offset=${offset}`, path: `/repos/${repo.id}/issues?limit=30&offset=${offset}` },
    { name: `GET …/pulls?offset=${offset}`, path: `/repos/${repo.id}/pulls?limit=30&offset=${offset}` },
  ];
  const run = (path: string, duration: number) =>
    autocannon({ url: `${server.url}${path}`, headers: auth, connections: CONNECTIONS, duration });
  for (const target of targets) await run(target.path, 2); // warm-up
  const samples = new Map<string, autocannon.Result[]>(targets.map((t) => [t.name, []]));
  for (let r = 0; r < ROUNDS; r++) for (const target of targets) samples.get(target.name)!.push(await run(target.path, DURATION));
  const results = targets.map(({ name }) => {
    const list = samples.get(name)!;
    return {
      name,
      rps: Math.round(median(list.map((x) => x.requests.average))),
      p50: median(list.map((x) => x.latency.p50)),
      p99: median(list.map((x) => x.latency.p99)),
      errors: list.reduce((sum, x) => sum + x.errors + x.timeouts + x.non2xx, 0),
    };
  });
  return { pushMs, openRate, issueRate, settleMs, results };
}

/** A repository of FILES files and COMMITS commits, with MERGES + 1 branches off its tip, each changing its own file. */
async function bigRepository(server: CairnServer, git: GitSandbox, admin: Client, name: string, branches: number) {
  const repo = (await admin.post('/repos', { name })).body;
  const work = await git.init(name);
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`src/module-${Math.floor(i / 100)}/file-${i}.txt`] = `file ${i}\n`.repeat(20);
  let stream = commit('refs/heads/main', 'import 5,000 files', files, undefined, 1);
  for (let c = 2; c <= COMMITS; c++) {
    const touched: Record<string, string> = {};
    for (let k = 0; k < 3; k++) {
      const i = (c * 7 + k * 1_009) % FILES;
      touched[`src/module-${Math.floor(i / 100)}/file-${i}.txt`] = `file ${i} at commit ${c}\n`.repeat(20);
    }
    stream += commit('refs/heads/main', `commit ${c}`, touched, `:${c - 1}`, c);
  }
  for (let b = 0; b < branches; b++)
    stream += commit(`refs/heads/topic-${b}`, `topic ${b}`, { [`topics/${b}.txt`]: `topic ${b}\n` }, `:${COMMITS}`);
  await importHistory(git, work, stream);
  await git.git(['push', '--quiet', remoteUrl(server, 'admin', name, server.adminToken), 'refs/heads/*:refs/heads/*'], { cwd: work });
  return { id: repo.id as string, work };
}

async function measureMerges(server: CairnServer, git: GitSandbox, admin: Client) {
  const { id } = await bigRepository(server, git, admin, 'merging', MERGES);
  const numbers: number[] = [];
  for (let b = 0; b < MERGES; b++)
    numbers.push((await admin.post(`/repos/${id}/pulls`, { title: `Topic ${b}`, head: `topic-${b}` })).body.number);
  await sleep(2_000); // let the first mergeability checks settle; later ones run beside the merges, as in life
  const timings: number[] = [];
  for (const number of numbers) {
    const started = performance.now();
    const res = await admin.put(`/repos/${id}/pulls/${number}/merge`, { method: 'merge' });
    timings.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`merge #${number}: ${res.status} ${res.text}`);
  }
  // The service's own account of each merge: making the commit, then the ref transaction.
  const logged = server.logs().filter((line) => line.msg === 'pull request merged' && line.repositoryId === id);
  const part = (key: string) =>
    round(
      percentile(
        logged.map((line) => Number(line[key])),
        50,
      ),
    );
  return {
    p50: round(percentile(timings, 50)),
    p99: round(percentile(timings, 99)),
    max: round(Math.max(...timings)),
    buildP50: part('buildMs'),
    recordP50: part('recordMs'),
  };
}

async function measureMergeability(server: CairnServer, git: GitSandbox, admin: Client) {
  const { id, work } = await bigRepository(server, git, admin, 'checking', 1);
  const number = (await admin.post(`/repos/${id}/pulls`, { title: 'Topic', head: 'topic-0' })).body.number;
  await git.git(['checkout', '--quiet', 'topic-0'], { cwd: work });
  const remote = remoteUrl(server, 'admin', 'checking', server.adminToken);
  const timings: number[] = [];
  const pushes: number[] = [];
  for (let i = 0; i < MERGEABILITY_PUSHES; i++) {
    const sha = await git.commit(work, `step ${i}`, { [`topics/step-${i}.txt`]: `${i}\n` });
    const pushStarted = performance.now();
    await git.git(['push', '--quiet', remote, 'topic-0'], { cwd: work });
    const pushed = performance.now();
    pushes.push(pushed - pushStarted);
    for (;;) {
      const pr = (await admin.get(`/repos/${id}/pulls/${number}`)).body;
      if (pr.head.sha === sha && pr.mergeable !== null) break;
      if (performance.now() - pushed > 30_000) throw new Error('mergeability not known within 30 s');
      await sleep(5);
    }
    timings.push(performance.now() - pushed);
  }
  return {
    p50: round(percentile(timings, 50)),
    p99: round(percentile(timings, 99)),
    pushP50: round(percentile(pushes, 50)),
  };
}

/**
 * git processes per push to a pull request's head before pull refs (commit 3cf1eb4, measured with
 * git-processes.ts): recording the push, following it, and the mergeability check.
 */
const PROCESSES_BEFORE_PULL_REFS = 14;
const PROCESS_PUSHES = Number(process.env.BENCH_PROCESS_PUSHES ?? 10);

function printProcesses(count: ProcessCount): void {
  const commands = Object.entries(count.byCommand)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([command, n]) => `${command} ${round(n)}`)
    .join(', ');
  console.log(
    `git processes per push to a pull request's head (${count.pushes} pushes): ${round(count.perPush)} (before pull refs ${PROCESSES_BEFORE_PULL_REFS}): ${commands}`,
  );
}

const git = await GitSandbox.create();
if (process.env.BENCH_PULLS_ONLY === 'processes') {
  try {
    const processes = await countGitProcessesPerPush(git, PROCESS_PUSHES);
    printProcesses(processes);
    console.log(`\n${JSON.stringify({ bench: 'pulls', processes })}`);
  } finally {
    await git.cleanup();
  }
  process.exit(0);
}
// The service's log is kept (info level: one line per request, as in production) for its own timings.
const server = await CairnServer.start({ embedded: true, env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' } });
try {
  const admin = adminClient(server);
  const listing = await measureListing(server, git, admin);
  const merges = await measureMerges(server, git, admin);
  const mergeability = await measureMergeability(server, git, admin);
  const processes = await countGitProcessesPerPush(git, PROCESS_PUSHES);

  const [issuesFirst, pullsFirst, issuesDeep, pullsDeep] = listing.results;
  console.log(
    `\nbench:pulls — ${os.cpus().length} CPUs, ${PULLS} pull requests and issues, ${CONNECTIONS} connections, median of ${ROUNDS} × ${DURATION} s\n`,
  );
  console.log('target                            req/s    p50 ms   p99 ms   errors');
  for (const r of listing.results) {
    console.log(
      `${r.name.padEnd(32)} ${String(r.rps).padStart(6)}   ${String(r.p50).padStart(6)}   ${String(r.p99).padStart(6)}   ${r.errors}`,
    );
  }
  console.log(
    `\npulls ÷ issues: page 1 ${(pullsFirst!.rps / issuesFirst!.rps).toFixed(2)}, offset ${PULLS - 100} ${(pullsDeep!.rps / issuesDeep!.rps).toFixed(2)} (floor 0.8)`,
  );
  console.log(
    `set-up: push of ${PULLS} branches ${(listing.pushMs / 1000).toFixed(1)} s; opened ${listing.openRate.toFixed(0)} pull requests/s, ${listing.issueRate.toFixed(0)} issues/s (16 clients); their mergeability settled ${(listing.settleMs / 1000).toFixed(1)} s later`,
  );
  console.log(
    `\nmerge (merge method, ${FILES} files, ${COMMITS} commits, ${MERGES} merges): p50 ${merges.p50} ms, p99 ${merges.p99} ms, max ${merges.max} ms (floor p50 ≤ 300); ` +
      `in the service, p50: making the commit ${merges.buildP50} ms, the ref transaction ${merges.recordP50} ms`,
  );
  console.log(
    `mergeability after a push (${MERGEABILITY_PUSHES} pushes): p50 ${mergeability.p50} ms, p99 ${mergeability.p99} ms (floor p99 ≤ 1000); the push itself p50 ${mergeability.pushP50} ms`,
  );
  printProcesses(processes);
  console.log(`\n${JSON.stringify({ bench: 'pulls', listing, merges, mergeability, processes })}`);
} finally {
  await server.destroy();
  await git.cleanup();
}
