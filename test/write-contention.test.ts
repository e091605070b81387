import { gql } from '@urql/core';
import pg from 'pg';
import { adminClient, createUser } from './support/client.js';
import { CairnServer } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * Writes that wait on a lock another transaction holds (as a pull request's creation holds its
 * repository's number counter until it commits):
 * - hold up nobody else's: each write statement has a database connection to itself, none is
 *   queued behind a waiting one;
 * - answered 503 once they have waited past CAIRN_DATABASE_TIMEOUT, do not happen afterwards: the
 *   statement is cancelled, so a client retrying after the 503 cannot make the change twice.
 */

const TIMEOUT_MS = 2_000;
const LOCK_HELD_MS = 1_500; // less than the deadline: the waiting issue is opened once the lock goes

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

test('an issue waiting on a locked counter does not hold up comments on other repositories', async () => {
  const repos: string[] = [];
  for (let i = 0; i < 17; i++) repos.push((await user.post('/repos', { name: `contention-${i}` })).body.id);
  const [waiting, ...others] = repos;
  for (const repo of others) expect((await user.post(`/repos/${repo}/issues`, { title: 'talk here' })).status).toBe(201);

  const lock = await lockCounter(waiting!);
  try {
    const lockedAt = performance.now();
    const blocked = user.post(`/repos/${waiting}/issues`, { title: 'waits for the counter' });
    await new Promise((resolve) => setTimeout(resolve, 300)); // its statement is at the lock by now

    // Two rounds of comments on 16 conversations: more statements at once than there are connections.
    const started = performance.now();
    const answers = await Promise.all(
      [0, 1].flatMap((round) => others.map((repo) => user.post(`/repos/${repo}/issues/1/comments`, { body: `comment ${round}` }))),
    );
    const tookMs = performance.now() - started;
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 201));
    expect(performance.now() - lockedAt).toBeLessThan(LOCK_HELD_MS); // all answered while the lock was held
    console.log(`32 comments on 16 other repositories in ${Math.round(tookMs)} ms while one repository's counter was locked`);

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, LOCK_HELD_MS - (performance.now() - lockedAt))));
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
  try {
    const [late, lateGraphQL] = await Promise.all([
      user.post(`/repos/${repo}/issues`, { title: 'answered 503' }),
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
    ]);
    expect(late.status).toBe(503);
    expect(late.headers.get('retry-after')).toBeTruthy();
    expect(lateGraphQL.error?.graphQLErrors[0]?.extensions.code).toBe('SERVICE_UNAVAILABLE');
    expect((lateGraphQL.error?.response as Response | undefined)?.status).toBe(503);
  } finally {
    await lock.release();
  }
  await new Promise((resolve) => setTimeout(resolve, 500)); // time for a statement left running to land
  expect((await user.get(`/repos/${repo}/issues?state=all`)).body.data).toEqual([]);
  const retried = await user.post(`/repos/${repo}/issues`, { title: 'the retry' });
  expect(retried.status).toBe(201);
  expect(retried.body.number).toBe(1);
});
