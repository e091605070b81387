import { gql } from '@urql/core';
import pg from 'pg';
import { adminClient, createUser } from './support/client.js';
import { eventually } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * Writes that wait on a lock another transaction holds (as a pull request's creation holds its
 * repository's number counter until it commits):
 * - hold up nobody else's: each write statement has a database connection to itself, none is
 *   queued behind a waiting one;
 * - answered 503 once they have waited past CAIRN_DATABASE_TIMEOUT, do not happen afterwards:
 *   PostgreSQL stops the statement at the deadline (its statement_timeout) and the 503 is sent on
 *   hearing so, and a statement that waited that long for a connection is never sent, so a client
 *   retrying after the 503 cannot make the change twice.
 */

const TIMEOUT_MS = 2_000;

let server: CairnServer;
let user: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  server = await CairnServer.start({ env: { CAIRN_DATABASE_TIMEOUT: `${TIMEOUT_MS}ms` } });
  user = await createUser(adminClient(server), 'contender');
});
afterAll(() => server?.destroy());

/** Holds `repository`'s number counter locked, in a transaction of its own, until `release`. */
async function lockCounter(repository: string): Promise<{ release: () => Promise<void> }> {
  const holder = new pg.Client({ connectionString: server.databaseUrl });
  await holder.connect();
  await holder.query('begin');
  await holder.query('select 1 from repository_counters where repository_id = $1 for update', [repository]);
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      await holder.query('commit');
      await holder.end();
    },
  };
}

/**
 * Waits until as many of the service's connections to its database are in `condition` (SQL on
 * pg_stat_activity) as `wanted` accepts: the database's own view of where the statements are.
 */
async function backendsUntil(condition: string, wanted: (count: number) => boolean, what: string): Promise<void> {
  await eventually(
    async () => {
      const [row] = await query<{ count: number }>(
        server,
        `select count(*)::int as count from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend' and ${condition}`,
      );
      return wanted(row!.count);
    },
    10_000,
    what,
  );
}

/** Until no statement runs or holds a transaction open: one that was left running once the lock went has landed (or not) by then. */
const statementsDone = () => backendsUntil(`state <> 'idle'`, (busy) => busy === 0, 'every statement to have finished');

test('an issue waiting on a locked counter does not hold up comments on other repositories', async () => {
  const repos: string[] = [];
  for (let i = 0; i < 17; i++) repos.push((await user.post('/repos', { name: `contention-${i}` })).body.id);
  const [waiting, ...others] = repos;
  for (const repo of others) expect((await user.post(`/repos/${repo}/issues`, { title: 'talk here' })).status).toBe(201);

  const lock = await lockCounter(waiting!);
  try {
    let settled = false;
    const blocked = user.post(`/repos/${waiting}/issues`, { title: 'waits for the counter' }).finally(() => (settled = true));
    await backendsUntil(`wait_event_type = 'Lock'`, (waiting) => waiting > 0, 'the creation to wait at the lock');

    // Two rounds of comments on 16 conversations: more statements at once than there are connections.
    const started = performance.now();
    const answers = await Promise.all(
      [0, 1].flatMap((round) => others.map((repo) => user.post(`/repos/${repo}/issues/1/comments`, { body: `comment ${round}` }))),
    );
    const tookMs = performance.now() - started;
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 201));
    // All answered while the creation still waited at the lock (a queue behind it would have held
    // them until its deadline, and it would have been answered 503 first).
    expect(settled).toBe(false);
    console.log(`32 comments on 16 other repositories in ${Math.round(tookMs)} ms while one repository's counter was locked`);

    await lock.release();
    const opened = await blocked;
    expect(opened.status).toBe(201);
    expect(opened.body.number).toBe(1);
  } finally {
    await lock.release();
  }
});

test('issues answered 503 after waiting past the deadline (REST, and urql over GraphQL) are not opened once the lock goes', async () => {
  const repo = (await user.post('/repos', { name: 'contention-late' })).body.id;
  const lock = await lockCounter(repo);
  const started = performance.now();
  const answeredWithin = <T>(request: Promise<T>) => request.then((answer) => ({ answer, ms: performance.now() - started }));
  try {
    // The first waits at the lock alone; the other two queue behind it and go together, and wait in turn.
    const [late, lateGraphQL, lateToo] = await Promise.all([
      answeredWithin(user.post(`/repos/${repo}/issues`, { title: 'answered 503' })),
      answeredWithin(
        urqlClient(server, user.token)
          .mutation(
            gql`
              mutation ($input: CreateIssueInput!) {
                createIssue(input: $input) {
                  number
                }
              }
            `,
            { input: { repositoryId: repo, title: 'answered 503 too' } },
          )
          .toPromise(),
      ),
      answeredWithin(user.post(`/repos/${repo}/issues`, { title: 'queued with it' })),
    ]);
    expect(late.answer.status).toBe(503);
    expect(late.answer.headers.get('retry-after')).toBeTruthy();
    expect(lateGraphQL.answer.error?.graphQLErrors[0]?.extensions.code).toBe('SERVICE_UNAVAILABLE');
    expect((lateGraphQL.answer.error?.response as Response | undefined)?.status).toBe(503);
    expect(lateToo.answer.status).toBe(503);
    // The batch the deadline failed is answered at once, not item after item, each with a deadline of its own.
    for (const { ms } of [late, lateGraphQL, lateToo]) expect(ms).toBeLessThan(2 * TIMEOUT_MS + 1_500);
    console.log(
      `three creations at a locked counter answered 503 after ${[late, lateGraphQL, lateToo].map(({ ms }) => Math.round(ms)).join(', ')} ms`,
    );
  } finally {
    await lock.release();
  }
  await statementsDone();
  expect((await user.get(`/repos/${repo}/issues?state=all`)).body.data).toEqual([]);
  const retried = await user.post(`/repos/${repo}/issues`, { title: 'the retry' });
  expect(retried.status).toBe(201);
  expect(retried.body.number).toBe(1);
});

test('a lock released about when the deadline passes: an issue is opened exactly when its creation was answered 201', async () => {
  // Releases just past the deadline as the test counts it (from the request; PostgreSQL counts from its statement):
  // the lock comes just before PostgreSQL stops the statement, just after, or with it.
  const offsets = [0, 30, 50, 70, 90, 120, 200, 400]; // eight: one write connection each
  const repos: string[] = [];
  for (const [i] of offsets.entries()) repos.push((await user.post('/repos', { name: `contention-edge-${i}` })).body.id);
  const locks = await Promise.all(repos.map((repo) => lockCounter(repo)));
  const answers = await Promise.all(
    repos.map(async (repo, i) => {
      const creation = user.post(`/repos/${repo}/issues`, { title: 'at the edge' });
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + offsets[i]!));
      await locks[i]!.release();
      return creation;
    }),
  );
  await statementsDone();
  const statuses = answers.map((answer) => answer.status);
  for (const [i, repo] of repos.entries()) {
    const opened = (await user.get(`/repos/${repo}/issues?state=all`)).body.data as unknown[];
    expect({ answered: statuses[i], opened: opened.length }).toEqual({ answered: statuses[i], opened: statuses[i] === 201 ? 1 : 0 });
    expect([201, 503]).toContain(statuses[i]);
  }
  console.log(
    `creations whose lock went ${offsets.join(', ')} ms past the deadline (counted from the request) answered ${statuses.join(', ')}`,
  );
});

test('more creations waiting at locks than there are write connections: those that never got one are answered 503 and never made', async () => {
  // Twelve repositories locked at once: eight creations wait at their locks, four for a connection.
  const repos: string[] = [];
  for (let i = 0; i < 12; i++) repos.push((await user.post('/repos', { name: `contention-queued-${i}` })).body.id);
  const locks = await Promise.all(repos.map((repo) => lockCounter(repo)));
  let answers: { status: number }[];
  try {
    answers = await Promise.all(repos.map((repo) => user.post(`/repos/${repo}/issues`, { title: 'waits for a connection' })));
  } finally {
    await Promise.all(locks.map((lock) => lock.release()));
  }
  expect(answers.map((answer) => answer.status)).toEqual(repos.map(() => 503));
  await new Promise((resolve) => setTimeout(resolve, 500)); // time for a statement left waiting to be sent and land
  for (const repo of repos) expect((await user.get(`/repos/${repo}/issues?state=all`)).body.data).toEqual([]);
});
