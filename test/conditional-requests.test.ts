import { Agent, interceptors, request } from 'undici';
import { adminClient, Client, createUser } from './support/client.js';
import { CairnServer } from './support/server.js';

/** Conditional GETs, as GitHub has them: an ETag on every record and list, 304 when If-None-Match names it. */
let server: CairnServer;
let admin: Client;

beforeAll(async () => {
  server = await CairnServer.start();
  admin = adminClient(server);
});
afterAll(() => server.destroy());

const etagOf = (response: { headers: Headers }) => response.headers.get('etag');

describe('ETag and If-None-Match', () => {
  test('a record: same answer → same tag and 304 without a body; a change → 200 with a new tag', async () => {
    const repo = (await admin.post('/repos', { name: 'tagged' })).body.id;
    for (const prefix of ['', '/api']) {
      const first = await admin.get(`${prefix}/repos/${repo}`);
      expect(first.status).toBe(200);
      const tag = etagOf(first)!;
      expect(tag).toMatch(/^W\/"[\w-]+"$/);
      expect(first.headers.get('cache-control')).toBe('private, no-cache, must-revalidate');
      expect(first.headers.get('vary')).toMatch(/Authorization/);
      expect(etagOf(await admin.get(`${prefix}/repos/${repo}`))).toBe(tag);

      const unchanged = await admin.get(`${prefix}/repos/${repo}`, { headers: { 'if-none-match': tag } });
      expect(unchanged.status).toBe(304);
      expect(unchanged.text).toBe('');
      expect(etagOf(unchanged)).toBe(tag);
      // A list of tags, the strong form of ours, and `*` all match (weak comparison, RFC 9110).
      expect((await admin.get(`${prefix}/repos/${repo}`, { headers: { 'if-none-match': `W/"other", ${tag}` } })).status).toBe(304);
      expect((await admin.get(`${prefix}/repos/${repo}`, { headers: { 'if-none-match': tag.slice(2) } })).status).toBe(304);
      expect((await admin.get(`${prefix}/repos/${repo}`, { headers: { 'if-none-match': '*' } })).status).toBe(304);
      expect((await admin.get(`${prefix}/repos/${repo}`, { headers: { 'if-none-match': 'W/"stale"' } })).status).toBe(200);
    }

    const before = etagOf(await admin.get(`/repos/${repo}`))!;
    expect((await admin.patch(`/repos/${repo}`, { description: 'changed' })).status).toBe(200);
    const after = await admin.get(`/repos/${repo}`, { headers: { 'if-none-match': before } });
    expect(after.status).toBe(200);
    expect(after.body.description).toBe('changed');
    expect(etagOf(after)).not.toBe(before);
  });

  test('HEAD answers like GET without the body: same status, tag, type and length; a matching tag is 304', async () => {
    const repo = (await admin.post('/repos', { name: 'headed' })).body.id;
    const get = await admin.get(`/repos/${repo}`);
    const head = await fetch(`${server.url}/repos/${repo}`, { method: 'HEAD', headers: { authorization: `Bearer ${server.adminToken}` } });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    expect(head.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(get.text)));
    expect(etagOf(head)).toBe(etagOf(get));
    const unchanged = await fetch(`${server.url}/repos/${repo}`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${server.adminToken}`, 'if-none-match': etagOf(get)! },
    });
    expect(unchanged.status).toBe(304);
    // A list too.
    const list = await admin.get(`/repos/${repo}/issues`);
    const listHead = await fetch(`${server.url}/repos/${repo}/issues`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${server.adminToken}` },
    });
    expect(listHead.status).toBe(200);
    expect(await listHead.text()).toBe('');
    expect(etagOf(listHead)).toBe(etagOf(list));
  });

  test('a list changes its tag when an item is added; a count change changes the record', async () => {
    const repo = (await admin.post('/repos', { name: 'listed' })).body.id;
    const list = await admin.get(`/repos/${repo}/issues`);
    const record = await admin.get(`/repos/${repo}`);
    expect(etagOf(list)).toMatch(/^W\//);
    expect((await admin.get(`/repos/${repo}/issues`, { headers: { 'if-none-match': etagOf(list)! } })).status).toBe(304);
    await admin.post(`/repos/${repo}/issues`, { title: 'new' });
    const relisted = await admin.get(`/repos/${repo}/issues`, { headers: { 'if-none-match': etagOf(list)! } });
    expect(relisted.status).toBe(200);
    expect(relisted.body.data).toHaveLength(1);
    const recount = await admin.get(`/repos/${repo}`, { headers: { 'if-none-match': etagOf(record)! } });
    expect(recount.status).toBe(200);
    expect(recount.body.open_issues_count).toBe(1);
  });

  test('a held tag never outlives a permission change or a revoked token', async () => {
    const owner = await createUser(admin, 'tagowner');
    const reader = await createUser(admin, 'tagreader');
    const repo = (await owner.post('/repos', { name: 'secret', private: true })).body.id;
    expect((await owner.put(`/repos/${repo}/collaborators/tagreader`, { permission: 'read' })).status).toBe(200);
    const seen = await reader.get(`/repos/${repo}`);
    expect(seen.status).toBe(200);
    const tag = etagOf(seen)!;
    expect((await reader.get(`/repos/${repo}`, { headers: { 'if-none-match': tag } })).status).toBe(304);

    expect((await owner.delete(`/repos/${repo}/collaborators/tagreader`)).status).toBe(204);
    expect((await reader.get(`/repos/${repo}`, { headers: { 'if-none-match': tag } })).status).toBe(404);

    const own = await owner.get(`/repos/${repo}`);
    const ownTag = etagOf(own)!;
    const { userAccessTokens } = await admin.gql<{ userAccessTokens: { nodes: { id: string }[] } }>(
      'query($login: String) { userAccessTokens(login: $login) { nodes { id } } }',
      { login: 'tagowner' },
    );
    for (const { id } of userAccessTokens.nodes) await admin.gql('mutation($id: ID!) { revokeAccessToken(id: $id) }', { id });
    expect((await owner.get(`/repos/${repo}`, { headers: { 'if-none-match': ownTag } })).status).toBe(401);
  });

  test('writes, errors and GraphQL carry no ETag; a bad If-None-Match is only a miss', async () => {
    const created = await admin.post('/repos', { name: 'untagged' });
    expect(created.status).toBe(201);
    expect(etagOf(created)).toBeNull();
    expect(etagOf(await admin.get('/repos/repo_00000000000000000000000000'))).toBeNull();
    const graphql = await admin.post('/graphql', { query: '{ viewer { login } }' });
    expect(etagOf(graphql)).toBeNull();
    for (const junk of ['', ',,,', '"unterminated', 'W/', 'x'.repeat(4000)]) {
      const answer = await admin.get(`/repos/${created.body.id}`, { headers: { 'if-none-match': junk } });
      expect(answer.status).toBe(200);
    }
  });
});

/** The REST answers the service gave with `status` so far, from its own metrics. */
async function restAnswers(status: number): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('cairn_http_requests_total{') &&
        l.includes('surface="rest"') &&
        l.includes('method="GET"') &&
        l.includes(`status="${status}"`),
    );
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('an HTTP client with an RFC 9111 cache (undici)', () => {
  test('revalidates each time, gets 304 while nothing changed, and sees a change at once', async () => {
    const owner = await createUser(admin, 'cacheowner');
    const other = await createUser(admin, 'cacheother');
    const repo = (await owner.post('/repos', { name: 'cached', description: 'first' })).body.id;
    const cached = new Agent().compose(interceptors.cache({ type: 'private' }));
    const read = async (token: string) => {
      const answer = await request(`${server.url}/repos/${repo}`, { dispatcher: cached, headers: { authorization: `Bearer ${token}` } });
      return { status: answer.statusCode, body: (await answer.body.json()) as { description: string | null } };
    };

    const before = await restAnswers(304);
    expect(await read(owner.token)).toEqual({ status: 200, body: expect.objectContaining({ description: 'first' }) });
    // From its cache, after asking the service: the service answered 304, the client shows the stored answer.
    expect(await read(owner.token)).toEqual({ status: 200, body: expect.objectContaining({ description: 'first' }) });
    expect(await restAnswers(304)).toBe(before + 1);

    expect((await owner.patch(`/repos/${repo}`, { description: 'second' })).status).toBe(200);
    expect((await read(owner.token)).body.description).toBe('second');
    expect(await restAnswers(304)).toBe(before + 1);

    // Vary: Authorization — another caller's request is never answered from the owner's entry.
    expect((await read(other.token)).body.description).toBe('second');
    expect(await restAnswers(304)).toBe(before + 1);
    await cached.close();
  });

  test('a combined status the service answers again from what it kept: 304 while no status comes, the new one at once', async () => {
    const ci = await createUser(admin, 'cacheci');
    const repo = (await ci.post('/repos', { name: 'cached-statuses', auto_init: true })).body.id;
    const cached = new Agent().compose(interceptors.cache({ type: 'private' }));
    const read = async () => {
      const answer = await request(`${server.url}/repos/${repo}/commits/main/status`, {
        dispatcher: cached,
        headers: { authorization: `Bearer ${ci.token}` },
      });
      const body = (await answer.body.json()) as { sha: string; state: string; statuses: Array<{ context: string }> };
      return { status: answer.statusCode, state: body.state, contexts: body.statuses.map((s) => s.context), sha: body.sha };
    };

    const { sha } = await read(); // none yet: kept by the service, stored by the client
    expect((await ci.post(`/repos/${repo}/statuses/${sha}`, { state: 'success', context: 'ci/a' })).status).toBe(201);
    const before = await restAnswers(304);
    expect(await read()).toEqual({ status: 200, state: 'success', contexts: ['ci/a'], sha });
    expect(await read()).toEqual({ status: 200, state: 'success', contexts: ['ci/a'], sha }); // revalidated: 304
    expect(await restAnswers(304)).toBe(before + 1);

    expect((await ci.post(`/repos/${repo}/statuses/${sha}`, { state: 'failure', context: 'ci/b' })).status).toBe(201);
    expect(await read()).toEqual({ status: 200, state: 'failure', contexts: ['ci/b', 'ci/a'], sha });
    expect(await restAnswers(304)).toBe(before + 1);
    await cached.close();
  });
});
