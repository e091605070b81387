/**
 * `npm run bench`: every figure users feel, each beside its baseline measured in the same run, in
 * one table. Runs the benchmark scripts one after another (each starts its own service, so none
 * warms another) and reads the JSON line each prints last:
 *  - api: REST and GraphQL reads beside a bare Express route answering the same JSON;
 *  - writes: REST issue creation on one repository;
 *  - statuses: posting commit statuses to one repository, and a combined status beside GET /repos/:id;
 *  - conversations: comments created on one issue; a deep page of comments beside one of issues; the
 *    SQL statements of a page of pull requests with their nested lists, for 3 and for 30;
 *  - protection: a push to a protected branch beside one to an unprotected branch;
 *  - webhooks: the drain of one push of 1,500 tags (3,000 deliveries) to one fast receiver;
 *  - startup: `npm start` → /readyz, and the service's resident memory idle and after load;
 *  - git: a ~100 MB clone through Cairn beside `git clone --no-local` of the same bare repository, and
 *    16 concurrent clones beside git http-backend behind lighttpd serving it.
 * BENCH_ONLY=api,writes runs a subset. Each script's own output goes to stderr as it runs.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ONLY = process.env.BENCH_ONLY?.split(',');
const SCRIPTS = ['api', 'writes', 'statuses', 'conversations', 'protection', 'webhooks', 'startup', 'git'].filter(
  (name) => !ONLY || ONLY.includes(name),
);

type Figures = Record<string, any>;

/** Runs one script, echoing its output to stderr, and returns its last JSON line. */
function run(name: string): Promise<Figures> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(here, `${name}.js`)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk;
      process.stderr.write(chunk);
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const last = out
        .trim()
        .split('\n')
        .reverse()
        .find((line) => line.startsWith('{"bench"'));
      if (code !== 0 || !last) reject(new Error(`bench:${name} exited ${code} without its figures`));
      else resolve(JSON.parse(last) as Figures);
    });
  });
}

const figures: Record<string, Figures> = {};
const failures: string[] = [];
for (const name of SCRIPTS) {
  process.stderr.write(`\n=== bench:${name} ===\n`);
  try {
    figures[name] = await run(name);
  } catch (error) {
    failures.push(String(error));
  }
}

const rows: Array<[string, string, string, string]> = [];
const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? '—' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const api = figures.api;
if (api) {
  type ApiResult = { name: string; rps: number; vsBare: number };
  const result = (name: string) => (api.results as ApiResult[]).find((r) => r.name === name);
  const bare = result('bare Express route')?.rps;
  for (const [label, name, floor] of [
    ['REST GET /repos/:id', 'REST GET /repos/:id', '0.35'],
    ['REST GET /repos/:id/pulls', 'REST GET /repos/:id/pulls', ''],
    ['REST GET /repos/:id, If-None-Match → 304', 'REST GET /repos/:id → 304', ''],
    ['GraphQL repository(id)', 'GraphQL repository(id)', '0.20'],
  ] as const) {
    const measured = result(name);
    rows.push([
      `${label} vs bare Express + Bearer check`,
      `${fmt(measured?.rps)} vs ${fmt(bare)} req/s`,
      `**${fmt(measured?.vsBare, 2)}**`,
      floor,
    ]);
  }
}
if (figures.writes)
  rows.push(['REST POST /repos/:id/issues (one repository, 32 connections)', '', `**${fmt(figures.writes.rps)} req/s**`, '2,500']);
if (figures.statuses) {
  const s = figures.statuses;
  rows.push([
    'REST POST /repos/:id/statuses/:sha (one repository, 32 connections, events recorded)',
    '',
    `**${fmt(s.postRps)} req/s**`,
    '1,000',
  ]);
  rows.push([
    'REST GET /repos/:id/commits/:sha/status (50 contexts) vs GET /repos/:id',
    `${fmt(s.combinedRps)} vs ${fmt(s.repositoryRps)} req/s`,
    `**${fmt(s.combinedVsRepository, 2)}×**`,
    '0.8×',
  ]);
}
if (figures.conversations) {
  const c = figures.conversations;
  rows.push([
    'REST POST /repos/:id/issues/:n/comments (one issue, 32 connections, events recorded)',
    '',
    `**${fmt(c.commentCreateRps)} req/s**`,
    '1,000',
  ]);
  rows.push([
    'REST GET …/issues/:n/comments vs GET …/issues, both at offset 9,900 of 10,000',
    `${fmt(c.commentsPageRps)} vs ${fmt(c.issuesPageRps)} req/s`,
    `**${fmt(c.commentsVsIssuesPage, 2)}×**`,
    '0.8×',
  ]);
  rows.push([
    'GraphQL: pull requests with labels, assignees, last 5 reviews — SQL statements for 3 and for 30',
    `${fmt(c.statementsFor3Pulls)} and ${fmt(c.statementsFor30Pulls)}`,
    `**${c.statementsFor3Pulls === c.statementsFor30Pulls ? 'constant' : 'grows'}**`,
    'constant',
  ]);
  rows.push([
    'GraphQL page of 30 pull requests (labels, assignees, review counts) vs REST GET …/pulls?limit=30',
    `${fmt(c.graphqlPullsPageRps)} vs ${fmt(c.restPullsListRps)} req/s`,
    `**${fmt(c.graphqlPullsPageVsRest, 2)}×**`,
    '0.8×',
  ]);
}
if (figures.protection) {
  const p = figures.protection;
  rows.push([
    'git push to a protected branch vs an unprotected one (median)',
    `${fmt(p.protectedMs, 1)} vs ${fmt(p.unprotectedMs, 1)} ms`,
    `**${fmt(p.ratio, 2)}×**`,
    '≤ 1.10×',
  ]);
}
if (figures.webhooks?.drain) {
  rows.push([
    `webhook drain: one push of ${fmt(figures.webhooks.drain.deliveries / 2)} tags (${fmt(figures.webhooks.drain.deliveries)} deliveries) to one fast receiver`,
    `the push itself took ${fmt(figures.webhooks.drain.pushMs / 1000, 1)} s`,
    `**${fmt(figures.webhooks.drain.perSecond)} deliveries/s**`,
    '4,000',
  ]);
}
if (figures.startup) {
  const s = figures.startup;
  rows.push(['`npm start` → `/readyz` 200 on an existing data dir', '', `**${fmt(s.startMs / 1000, 2)} s**`, '2 s']);
  // After load: as it ends (the webhook drain's figure is taken then too), and once the service has been quiet for 5 s.
  const endOfLoad = Math.max(s.endOfLoadMb, figures.webhooks?.rssAfterMb ?? 0);
  rows.push([
    'node RSS idle after start / after load (as it ends → 5 s later)',
    '',
    `**${s.idleMb} MB / ${endOfLoad} → ${s.afterLoadMb} MB**`,
    '100 / 200',
  ]);
}
if (figures.git) {
  const g = figures.git;
  rows.push([
    '~100 MB clone (pack made for it) vs `git clone --no-local` of the same bare repository',
    `${fmt(g.cloneMs?.cairn)} vs ${fmt(g.cloneMs?.local)} ms (pack cached: ${fmt(g.cloneCachedMedianMs)} ms)`,
    `**${fmt(g.cloneRatio, 2)}×**`,
    '1.2×',
  ]);
  rows.push([
    `${fmt(g.crowdClones)} concurrent clones, total wall, vs git http-backend behind lighttpd (same repository)`,
    g.crowdVsHttpBackend === null ? 'skipped: no lighttpd' : `${fmt(g.crowdCairnMedianMs)} vs ${fmt(g.crowdBackendMedianMs)} ms`,
    g.crowdVsHttpBackend === null ? '—' : `**${fmt(g.crowdVsHttpBackend, 2)}×**`,
    '≤ 1.0×',
  ]);
}

console.log(`\nnpm run bench — ${os.cpus().length} CPUs, ${new Date().toISOString()}\n`);
console.log('| figure | side by side | now | floor |');
console.log('|---|---|---|---|');
for (const row of rows) console.log(`| ${row.join(' | ')} |`);
for (const failure of failures) console.log(`\nnot measured: ${failure}`);
console.log(`\n${JSON.stringify({ bench: 'all', figures })}`);
if (failures.length) process.exitCode = 1;
