import { adminClient, createUser, type Client } from './support/client.js';
import { CairnServer } from './support/server.js';

/**
 * Text counts in the GraphQL cost limit: a query of 30 aliases of a page of 100 comments of 64 KiB
 * each would gather ~190 MB of text into a process whose heap is 192 MB (as `npm start` runs it).
 * It is refused before it runs (400 BAD_REQUEST, the cost limit), and the service goes on answering.
 */

let server: CairnServer;
let owner: Client & { login: string };

beforeAll(async () => {
  server = await CairnServer.sharedServer();
  owner = await createUser(adminClient(server), 'talker', ['repo']);
}, 60_000);
afterAll(async () => {
  await server?.destroy();
});

test('a query gathering more text than the cost limit allows is refused before it runs, and the service stays up', async () => {
  const repo = (await owner.post('/repos', { name: 'long-talk' })).body;
  const issue = (await owner.post(`/repos/${repo.id}/issues`, { title: 'long' })).body;
  const body = 'x'.repeat(65_536);
  for (let batch = 0; batch < 10; batch++) {
    const posted = await Promise.all(
      Array.from({ length: 10 }, () => owner.post(`/repos/${repo.id}/issues/${issue.number}/comments`, { body })),
    );
    expect(posted.map((res) => res.status)).toEqual(Array(10).fill(201));
  }
  const page = (alias: string) => `${alias}: issueComments(number: ${issue.number}, limit: 100) { nodes { body } }`;
  const one = await owner.gql(`query($id: ID!) { repository(id: $id) { ${page('a0')} } }`, { id: repo.id });
  expect(one.repository.a0.nodes).toHaveLength(100); // 6.5 MB: within the bound

  const aliases = Array.from({ length: 30 }, (_, i) => page(`a${i}`)).join(' ');
  const res = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query: `query($id: ID!) { repository(id: $id) { ${aliases} } }`, variables: { id: repo.id } }),
  });
  expect(res.status).toBe(400);
  const refused = (await res.json()) as { data?: unknown; errors: Array<{ message: string; extensions: { code: string } }> };
  expect(refused.data).toBeUndefined();
  expect(refused.errors[0]!.extensions.code).toBe('BAD_REQUEST');
  expect(refused.errors[0]!.message).toMatch(/cost/i);
  expect((await owner.get(`/repos/${repo.id}`)).status).toBe(200);
  expect(server.process?.exitCode ?? null).toBeNull();
});
