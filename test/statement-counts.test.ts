import { adminClient, createUser, type Client } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer } from './support/server.js';

/**
 * Every answer says how many SQL statements its request sent (`Server-Timing: sql;count=N`), and a
 * page of pull requests with their nested lists costs the same number of statements whatever its size.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let git: GitSandbox;
let owner: User;
let reviewer: User;

beforeAll(async () => {
  [server, git] = [CairnServer.sharedServer(), await GitSandbox.create()];
  const admin = adminClient(server);
  owner = await createUser(admin, 'counted');
  reviewer = await createUser(admin, 'counting-reviewer');
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup()]);
});

/** The statements a GraphQL request sent, from its answer's Server-Timing header. */
async function statementsOf(query: string, variables: Record<string, unknown>): Promise<number> {
  const res = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { errors?: unknown };
  expect(body.errors).toBeUndefined();
  const timing = res.headers.get('server-timing') ?? '';
  const count = /(?:^|,)\s*sql;count=(\d+)/.exec(timing);
  expect(count).not.toBeNull();
  return Number(count![1]);
}

test('a page of pull requests with their reviews costs the same statements for 2 and for 12 of them', async () => {
  const repo = await PullRepo.create(server, git, owner, 'counted-pulls', { 'a.txt': 'a\n' });
  for (let i = 1; i <= 12; i++) {
    await repo.commit(`topic-${i}`, `topic ${i}`, { [`t${i}.txt`]: `${i}\n` });
  }
  await repo.push(Array.from({ length: 12 }, (_, i) => `topic-${i + 1}`));
  for (let i = 1; i <= 12; i++) {
    const opened = await repo.open({ title: `topic ${i}`, head: `topic-${i}` });
    expect(opened.status).toBe(201);
    for (const event of ['COMMENT', 'APPROVE']) {
      const reviewed = await reviewer.post(`/repos/${repo.id}/pulls/${opened.body.number}/reviews`, { event, body: 'looked' });
      expect(reviewed.status).toBe(201);
    }
    await repo.mergeable(opened.body.number); // one state for all: a clean pull request's view also reads its rule
  }
  const query = `query($id: ID!, $limit: Int) { repository(id: $id) { pullRequests(limit: $limit) { nodes { number
    reviews(limit: 5) { totalCount nodes { id state user { login } } } } } } }`;
  // The fewest of three: a request may also check the token (trusted for 2 s) or note its use (once a minute).
  const settled = async (limit: number) => {
    const counts = [];
    for (let i = 0; i < 3; i++) counts.push(await statementsOf(query, { id: repo.id, limit }));
    return Math.min(...counts);
  };
  const few = await settled(2);
  const many = await settled(12);
  expect(many).toBe(few);
  expect(few).toBeLessThanOrEqual(10);
});
