import { gql } from '@urql/core';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { treeOf } from './support/process-tree.js';
import { eventually } from './support/receiver.js';
import { CairnServer, sleep } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * The database stalls (SIGSTOP of every PostgreSQL process: a frozen VM, a storage hiccup, a
 * failover in progress) for 15 s under a running service. Requests are not held for as long: past
 * CAIRN_DATABASE_TIMEOUT they answer 503 with `Retry-After`, `/readyz` answers 503 within its own
 * deadline, the stall is logged, and once the database resumes writes succeed again at once.
 */
const TIMEOUT_S = 3; // longer than the 2 s of /readyz, so that its own deadline is what answers it
const STALL_MS = 15_000;

let server: CairnServer;
let alice: Awaited<ReturnType<typeof createUser>>;
let repo: string;
let git: GitSandbox;

beforeAll(async () => {
  [server, git] = await Promise.all([
    CairnServer.start({ embedded: true, detached: true, env: { CAIRN_DATABASE_TIMEOUT: `${TIMEOUT_S}s` } }),
    GitSandbox.create(),
  ]);
  alice = await createUser(adminClient(server), 'alice');
  repo = (await alice.post('/repos', { name: 'stall' })).body.id;
});
afterAll(() => Promise.all([server.destroy(), git.cleanup()]));

async function timed(request: Promise<Response>): Promise<{ status: number | 'dropped'; ms: number; retryAfter: string | null }> {
  const started = performance.now();
  try {
    const response = await request;
    await response.arrayBuffer();
    return { status: response.status, ms: performance.now() - started, retryAfter: response.headers.get('retry-after') };
  } catch {
    return { status: 'dropped', ms: performance.now() - started, retryAfter: null };
  }
}

test('a database stalled for 15 s: requests answer 503 within the deadline, /readyz within its own, writes resume at once', async () => {
  const postmaster = server.postmasterPid()!;
  const headers = { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' };
  const write = (title: string) =>
    timed(fetch(`${server.url}/repos/${repo}/issues`, { method: 'POST', headers, body: JSON.stringify({ title }) }));
  expect((await write('before')).status).toBe(201);

  const frozen = await treeOf(postmaster);
  for (const pid of frozen) process.kill(pid, 'SIGSTOP');
  const stalledAt = Date.now();
  let resumed = false;
  const resume = () => {
    if (resumed) return;
    resumed = true;
    for (const pid of frozen) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        /* gone */
      }
    }
  };
  try {
    // Beside REST and GraphQL over fetch: a GraphQL client (urql), which reads the error's code and
    // the HTTP status to retry on, and git's own client over smart HTTP — all told, none left hanging.
    const urql = urqlClient(server, alice.token);
    const gitStarted = performance.now();
    const [during, seen, [listed, gitMs]] = await Promise.all([
      Promise.all([
        write('during'),
        timed(fetch(`${server.url}/repos/${repo}`, { headers })),
        timed(
          fetch(`${server.url}/graphql`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ query: 'query($id: ID!) { repository(id: $id) { name } }', variables: { id: repo } }),
          }),
        ),
      ]),
      urql
        .query(
          gql`
            query ($id: ID!) {
              repository(id: $id) {
                name
              }
            }
          `,
          { id: repo },
        )
        .toPromise(),
      git
        .run(['ls-remote', remoteUrl(server, 'alice', 'stall', alice.token)])
        .then((result) => [result, performance.now() - gitStarted] as const),
    ]);
    expect(seen.error?.graphQLErrors[0]?.extensions.code).toBe('SERVICE_UNAVAILABLE');
    expect((seen.error?.response as Response | undefined)?.status).toBe(503);
    expect(listed.code).not.toBe(0);
    expect(listed.stderr).toContain('503');
    expect(gitMs).toBeLessThan(2 * TIMEOUT_S * 1000 + 2000);
    console.log(`git ls-remote: exit ${listed.code} in ${Math.round(gitMs)} ms: ${listed.stderr.trim()}`);
    const ready = await timed(fetch(`${server.url}/readyz`));
    console.log(
      `stalled: ${during.map((d) => `${d.status} in ${Math.round(d.ms)} ms`).join(', ')}; /readyz ${ready.status} in ${Math.round(ready.ms)} ms`,
    );
    for (const answer of during) {
      expect(answer.status).toBe(503);
      expect(Number(answer.retryAfter)).toBeGreaterThan(0);
      expect(answer.ms).toBeLessThan(2 * TIMEOUT_S * 1000 + 2000);
    }
    expect(ready.status).toBe(503);
    expect(ready.ms).toBeLessThan(3000);
    expect(Date.now() - stalledAt).toBeLessThan(STALL_MS);
    expect(server.logCount('database unavailable or stalled: answering 503')).toBeGreaterThan(0);
    await eventually(async () => server.logCount('database stalled: readiness check unanswered') === 1, 2000, 'the stall logged');
    await sleep(STALL_MS - (Date.now() - stalledAt));
  } finally {
    resume();
  }

  const resumedAt = Date.now();
  let first: number | null = null;
  while (first === null && Date.now() - resumedAt < 10_000) {
    if ((await write('after')).status === 201) first = Date.now() - resumedAt;
    else await sleep(100);
  }
  console.log(`after the stall: first write ${first} ms after resuming`);
  expect(first).not.toBeNull();
  expect(first!).toBeLessThan(10_000);
  expect(server.process!.exitCode).toBeNull();
  const titles = (await alice.get(`/repos/${repo}/issues?limit=100&state=all`)).body.data.map((issue: any) => issue.title);
  expect(titles).toEqual(expect.arrayContaining(['before', 'after']));
  expect((await timed(fetch(`${server.url}/readyz`))).status).toBe(200);
}, 90_000);
