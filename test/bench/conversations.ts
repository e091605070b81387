/**
 * `npm run bench:conversations`: issue and pull request pages as frontends and bots use them.
 *  - Creating comments on one issue (`POST /repos/:id/issues/:number/comments`), 32 connections, then
 *    a check that every comment has its `issue_comment` event and no request failed.
 *  - The comments of an issue with at least 10,000 of them, the page at offset 9,900, side by side with
 *    the issues list of a repository with 10,000 issues at the same offset, in alternating rounds: the
 *    median of each round's ratio.
 *  - A GraphQL query for pull requests with their labels, assignees and last 5 reviews, for 30 and for
 *    3 of them: the SQL statements each sent (`Server-Timing: sql;count=N`), which must be equal.
 *  - A pull-request list page as a GraphQL frontend asks for it (30 pull requests with their labels,
 *    assignees and review counts) side by side with the REST list of the same 30
 *    (`GET …/pulls?limit=30`), in alternating rounds: the median of each round's ratio.
 * Medians over several rounds; prints a table and a JSON line.
 */
import os from 'node:os';
import autocannon from 'autocannon';
import { adminClient, createUser, type Client } from '../support/client.js';
import { GitSandbox } from '../support/git.js';
import { PullRepo } from '../support/pulls.js';
import { CairnServer } from '../support/server.js';
import { databaseOf } from './database.js';
import { cpuShares, cpuTimes, median, pairedRatio } from './stats.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LISTED = 10_000;
const OFFSET = 9_900;

/** A pull-request list as a frontend renders it: who, labels, assignees, how many reviews. */
const PULL_LIST_PAGE = `query($id: ID!) { repository(id: $id) { pullRequests(limit: 30) { totalCount hasMore nodes {
  id number title state draft createdAt updatedAt user { login } labels { name color } assignees { login } reviews { totalCount } } } } }`;

const run = (options: autocannon.Options, duration = DURATION) => autocannon({ ...options, connections: CONNECTIONS, duration });
const failures = (r: autocannon.Result) => r.errors + r.timeouts + r.non2xx;

const server = await CairnServer.start({ embedded: true, discardOutput: true, env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' } });
const git = await GitSandbox.create();
let failed = false;
try {
  const admin = adminClient(server);
  const auth = { authorization: `Bearer ${server.adminToken}` };
  const json = { ...auth, 'content-type': 'application/json' };

  // (a) Creating comments on one issue: these also make the issue with 10,000 comments and more.
  const talk = (await admin.post('/repos', { name: 'conversation-bench' })).body;
  const issue = (await admin.post(`/repos/${talk.id}/issues`, { title: 'a long conversation' })).body;
  let said = 0;
  const commenting: autocannon.Options = {
    url: `${server.url}/repos/${talk.id}/issues/${issue.number}/comments`,
    method: 'POST',
    headers: json,
    requests: [{ setupRequest: (request) => ({ ...request, body: JSON.stringify({ body: `comment ${++said}: looks good to me` }) }) }],
  };
  await run(commenting, 2); // warm-up
  const creations: autocannon.Result[] = [];
  for (let round = 0; round < ROUNDS; round++) creations.push(await run(commenting));
  const topUp = LISTED - (await admin.get(`/repos/${talk.id}/issues/${issue.number}`)).body.comments;
  if (topUp > 0) await autocannon({ ...commenting, connections: CONNECTIONS, amount: topUp });

  // The baseline's data: a repository with 10,000 issues.
  const many = (await admin.post('/repos', { name: 'issues-bench' })).body;
  const opened = await autocannon({
    url: `${server.url}/repos/${many.id}/issues`,
    method: 'POST',
    headers: json,
    body: JSON.stringify({ title: 'one of many' }),
    connections: CONNECTIONS,
    amount: LISTED,
  });
  if (failures(opened)) throw new Error(`opening ${LISTED} issues: ${failures(opened)} failed`);

  const db = await databaseOf(server);
  const [counted] = (
    await db.query<{ comments: number; events: number }>(
      `select (select count(*)::int from issue_comments where repository_id = $1) as comments,
              (select count(*)::int from domain_events where repository_id = $1 and type = 'issue_comment') as events`,
      [talk.id],
    )
  ).rows;
  // Both tables were just filled: their pages are not yet marked all-visible, so an index-only scan
  // of the page's ids would visit the table for every entry it skips, or not, depending on whether
  // autovacuum has come by yet. A service's tables are vacuumed in the end; measure them as such.
  await db.query('vacuum (analyze) issues, issue_comments');
  await db.end();

  // (b) The page at offset 9,900: comments beside issues.
  const reads = [
    {
      name: `REST GET …/issues?offset=${OFFSET}`,
      options: { url: `${server.url}/repos/${many.id}/issues?offset=${OFFSET}`, headers: auth },
    },
    {
      name: `REST GET …/issues/:n/comments?offset=${OFFSET}`,
      options: { url: `${server.url}/repos/${talk.id}/issues/${issue.number}/comments?offset=${OFFSET}`, headers: auth },
    },
  ];
  const samples = reads.map(() => [] as autocannon.Result[]);
  const stealBefore = await cpuTimes();
  for (const target of reads) await run(target.options, 2); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, target] of reads.entries()) samples[i]!.push(await run(target.options));
  }
  const steal = cpuShares(stealBefore, await cpuTimes()).steal;
  const pageRatio = pairedRatio(
    samples[1]!.map((r) => r.requests.average),
    samples[0]!.map((r) => r.requests.average),
  );

  // (c) Statements of a page of pull requests with their labels, assignees and last 5 reviews.
  const pulls = await pullsWithConversations(admin, server);
  // The fewest of two runs each: a request may also carry a statement of no page's making (its
  // token verified again once the cache let it go, the rate-limit budget written back).
  const fewest = async (limit: number) => Math.min(await pulls.statementsFor(limit), await pulls.statementsFor(limit));
  const statements = { few: await fewest(3), many: await fewest(30) };

  // (d) A list page of 30 pull requests: GraphQL beside REST.
  const lists = [
    { name: 'REST GET …/pulls?limit=30', options: { url: `${server.url}/repos/${pulls.repoId}/pulls?limit=30`, headers: pulls.auth } },
    {
      name: 'GraphQL page of 30 pull requests',
      options: {
        url: `${server.url}/graphql`,
        method: 'POST' as const,
        headers: { ...pulls.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ query: PULL_LIST_PAGE, variables: { id: pulls.repoId } }),
      },
    },
  ];
  const listSamples = lists.map(() => [] as autocannon.Result[]);
  for (const target of lists) await run(target.options, 2); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, target] of lists.entries()) listSamples[i]!.push(await run(target.options));
  }
  const listRatio = pairedRatio(
    listSamples[1]!.map((r) => r.requests.average),
    listSamples[0]!.map((r) => r.requests.average),
  );

  const creation = {
    rps: Math.round(median(creations.map((r) => r.requests.average))),
    p99: median(creations.map((r) => r.latency.p99)),
    failed: creations.reduce((sum, r) => sum + failures(r), 0),
  };
  const pages = [...samples, ...listSamples].map((results) => ({
    rps: Math.round(median(results.map((r) => r.requests.average))),
    p99: median(results.map((r) => r.latency.p99)),
    failed: results.reduce((sum, r) => sum + failures(r), 0),
  }));
  console.log(
    `\nbench:conversations — ${CONNECTIONS} connections, median of ${ROUNDS} × ${DURATION} s, ${os.cpus().length} CPUs, ` +
      `LOG_LEVEL=${process.env.LOG_LEVEL ?? 'info'}, CPU stolen by the hypervisor: ${(100 * steal).toFixed(0)}%\n`,
  );
  console.log('target                                               req/s    p99 ms   failed');
  for (const [name, r] of [
    ['REST POST …/issues/:n/comments', creation],
    ...[...reads, ...lists].map((target, i) => [target.name, pages[i]!] as const),
  ] as const) {
    console.log(`${name.padEnd(52)} ${String(r.rps).padStart(6)}   ${String(r.p99).padStart(6)}   ${r.failed}`);
  }
  console.log(
    `\ncomments ${counted!.comments}, issue_comment events ${counted!.events}; comments page vs issues page at offset ${OFFSET}: ` +
      `${pageRatio.toFixed(2)}×; GraphQL page of pull requests with labels, assignees, last 5 reviews: ` +
      `${statements.few} statements for 3, ${statements.many} for 30; GraphQL page of 30 pull requests vs REST list: ` +
      `${listRatio.toFixed(2)}×\n`,
  );
  if (counted!.events !== counted!.comments || creation.failed || pages.some((p) => p.failed) || statements.few !== statements.many) {
    failed = true;
    console.error('FAILED: every comment must succeed and record its event, every page answer, and the statements stay constant');
  }
  console.log(
    JSON.stringify({
      bench: 'conversations',
      commentCreateRps: creation.rps,
      commentCreateP99: creation.p99,
      comments: counted!.comments,
      events: counted!.events,
      issuesPageRps: pages[0]!.rps,
      commentsPageRps: pages[1]!.rps,
      restPullsListRps: pages[2]!.rps,
      graphqlPullsPageRps: pages[3]!.rps,
      graphqlPullsPageVsRest: listRatio,
      commentsVsIssuesPage: pageRatio,
      statementsFor3Pulls: statements.few,
      statementsFor30Pulls: statements.many,
      connections: CONNECTIONS,
      steal,
    }),
  );
} finally {
  await Promise.all([server.destroy(), git.cleanup()]);
}
if (failed) process.exit(1);

/**
 * 30 pull requests, each with two labels, an assignee and six reviews; `statementsFor(n)` counts the
 * statements of one GraphQL query for n of them with their labels, assignees and last 5 reviews.
 */
async function pullsWithConversations(admin: Client, on: CairnServer) {
  const owner = await createUser(admin, 'bench-owner');
  const reviewer = await createUser(admin, 'bench-reviewer');
  const repo = await PullRepo.create(on, git, owner, 'pulls-page', { 'a.txt': 'a\n' });
  for (const name of ['bug', 'ready']) await owner.post(`/repos/${repo.id}/labels`, { name, color: 'ff0000' });
  await owner.put(`/repos/${repo.id}/collaborators/${reviewer.login}`, { permission: 'write' });
  const branches = Array.from({ length: 30 }, (_, i) => `topic-${i + 1}`);
  for (const [i, branch] of branches.entries()) await repo.commit(branch, `topic ${i + 1}`, { [`t${i}.txt`]: `${i}\n` });
  await repo.push(branches);
  for (const branch of branches) {
    const { number } = (await repo.open({ title: branch, head: branch })).body;
    await owner.post(`/repos/${repo.id}/issues/${number}/labels`, { labels: ['bug', 'ready'] });
    await owner.post(`/repos/${repo.id}/issues/${number}/assignees`, { assignees: [reviewer.login] });
    for (let r = 0; r < 6; r++) await reviewer.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'COMMENT', body: `pass ${r}` });
  }
  const auth = { authorization: `Bearer ${owner.token}` };
  const query = `query($id: ID!, $limit: Int) { repository(id: $id) { pullRequests(limit: $limit) { nodes {
    number title labels { name color } assignees { login } reviews(limit: 5) { totalCount nodes { state body user { login } } } } } } }`;
  const statementsFor = async (limit: number) => {
    const res = await fetch(`${on.url}/graphql`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables: { id: repo.id, limit } }),
    });
    const body = (await res.json()) as { errors?: unknown; data?: { repository: { pullRequests: { nodes: unknown[] } } } };
    if (body.errors || body.data?.repository.pullRequests.nodes.length !== limit)
      throw new Error(`page of ${limit}: ${JSON.stringify(body)}`);
    return Number(/sql;count=(\d+)/.exec(res.headers.get('server-timing') ?? '')?.[1]);
  };
  return { repoId: repo.id as string, auth, statementsFor };
}
