import { gzipSync } from 'node:zlib';
import { adminClient, createUser, type Client } from './support/client.js';
import { CairnServer, query } from './support/server.js';

/**
 * Input no well-behaved client sends, on every surface: each gets its
 * documented 4xx in the surface's JSON shape (never a 5xx, never an HTML
 * page) and changes nothing. And concurrent changes of one record: each
 * event is recorded once.
 */
let server: CairnServer;
let owner: Client & { login: string };
let repoId: string;

beforeAll(async () => {
  server = CairnServer.sharedServer();
  owner = await createUser(adminClient(server), 'hostile', ['repo', 'admin:repo_hook']);
  repoId = (await owner.post('/repos', { name: 'target', auto_init: true })).body.id;
});
afterAll(() => server.destroy());

const outbox = (repositoryId: string, type: string) =>
  query<{ action: string; payload: any }>(
    server,
    'select action, payload from domain_events where repository_id = $1 and type = $2 order by id',
    [repositoryId, type],
  );

describe('transport errors are JSON in the surface’s shape, with a request id', () => {
  test('GraphQL: malformed JSON, oversized body, unsupported charset', async () => {
    const cases: Array<[RequestInit, number, string]> = [
      [{ body: '{"query": ', headers: { 'content-type': 'application/json' } }, 400, 'BAD_REQUEST'],
      [
        { body: JSON.stringify({ query: `{ viewer { id } } #${'x'.repeat(1_100_000)}` }), headers: { 'content-type': 'application/json' } },
        413,
        'PAYLOAD_TOO_LARGE',
      ],
      [
        { body: '{"query":"{ viewer { id } }"}', headers: { 'content-type': 'application/json; charset=latin1' } },
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      ],
    ];
    for (const [init, status, code] of cases) {
      const res = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        ...init,
        headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${owner.token}` },
      });
      const text = await res.text();
      expect({ status: res.status, type: res.headers.get('content-type') }).toEqual({
        status,
        type: expect.stringMatching(/^application\/json/),
      });
      expect(JSON.parse(text).errors[0].extensions.code).toBe(code);
      expect(text).not.toMatch(/at .*\.js|node_modules/);
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });

  test('REST: a path that is not validly percent-encoded is 400 bad_request', async () => {
    for (const path of ['/repos/%E0%A4%A', '/api/repos/%zz/issues']) {
      const res = await owner.get(path);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: { code: 'bad_request', message: expect.any(String), details: [] },
        request_id: expect.any(String),
      });
    }
  });

  test('REST: a compressed body is 415; a byte order mark is tolerated', async () => {
    const gz = await owner.request('POST', '/repos', {
      raw: gzipSync(JSON.stringify({ name: 'zipped' })),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    expect(gz.status).toBe(415);
    expect(gz.body.error.code).toBe('unsupported_media_type');
    const bom = await owner.request('POST', '/repos', {
      raw: `\uFEFF${JSON.stringify({ name: 'with-bom' })}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(bom.status).toBe(201);
  });

  test('the operations endpoints answer 405 to other methods', async () => {
    const res = await owner.request('POST', '/healthz');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(res.body.error.code).toBe('method_not_allowed');
  });

  test('error responses carry X-Request-Id too', async () => {
    for (const res of [
      await owner.get('/repos/nope'),
      await owner.get('/repos?limit=x'),
      await owner.request('GET', '/repos', { anonymous: true }),
    ]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get('x-request-id')).toBe(res.body.request_id);
    }
  });
});

describe('GraphQL variables of the wrong type are 400, not 500', () => {
  test.each([
    ['a boolean for an ID', 'query($id: ID!) { repository(id: $id) { name } }', { id: true }],
    ['a string for an Int', 'query($l: Int) { repositories(limit: $l) { totalCount } }', { l: 'abc' }],
    ['a missing required variable', 'query($id: ID!) { repository(id: $id) { name } }', {}],
    [
      'an invalid DateTime',
      'mutation($at: DateTime) { createAccessToken(input: {name: "x", scopes: ["repo"], expiresAt: $at}) { token } }',
      { at: 'soon' },
    ],
  ])('%s', async (_name, queryText, variables) => {
    const res = await owner.graphql(queryText, variables);
    expect(res.status).toBe(400);
    expect(res.errors![0].extensions.code).toBe('BAD_USER_INPUT');
  });

  test('a query that omits limit is costed at the default page, not at one item', async () => {
    const fanOut = Array.from(
      { length: 30 },
      (_, i) => `a${i}: repositories { nodes { issues(state: ALL) { nodes { title user { login } } } } }`,
    ).join(' ');
    const res = await owner.graphql(`{ ${fanOut} }`);
    expect(res.status).toBe(400);
    expect(res.errors![0].message).toMatch(/query cost \d+ exceeds the limit/);
  });
});

describe('text no database column can hold', () => {
  test('NUL characters and unpaired surrogates are 422 on REST and GraphQL, and nothing is stored', async () => {
    const before = (await owner.get(`/repos/${repoId}/issues?state=all`)).body.total;
    const rest = [
      await owner.post('/repos', { name: 'nul', description: 'a\u0000b' }),
      await owner.post(`/repos/${repoId}/issues`, { title: 'a\u0000b' }),
      await owner.post(`/repos/${repoId}/issues`, { title: 'lone \ud800 surrogate' }),
      await owner.patch(`/repos/${repoId}`, { description: 'x\u0000' }),
      await owner.get('/repos?owner=%00'),
      await owner.get('/repos/hostile/%00/resolve'),
      await owner.put(`/repos/${repoId}/collaborators/%00`, { permission: 'read' }),
    ];
    for (const res of rest) {
      expect(res.status).toBe(422);
      expect(res.body.error).toMatchObject({ code: 'validation_failed', details: [{ code: 'invalid_characters' }] });
    }
    const gql = await owner.graphql('{ repositoryByName(owner: "\\u0000", name: "x") { id } }');
    expect(gql.errors![0].extensions.code).toBe('VALIDATION_FAILED');
    expect((await owner.get(`/repos/${repoId}/issues?state=all`)).body.total).toBe(before);
    expect((await owner.get('/repos/hostile/nul/resolve')).status).toBe(404);
  });

  test('a null permission is 422; a branch name git cannot store is 422', async () => {
    const permission = await owner.put(`/repos/${repoId}/collaborators/someone`, { permission: null });
    expect(permission.status).toBe(422);
    for (const defaultBranch of ['b'.repeat(230), 'HEAD']) {
      const res = await owner.post('/repos', { name: `branchy-${defaultBranch.length}`, default_branch: defaultBranch, auto_init: true });
      expect(res.status).toBe(422);
      expect(res.body.error.details[0]).toMatchObject({ field: 'default_branch', code: 'invalid_format' });
    }
    const nulls = await owner.post('/repos', { name: 'nulls', private: null });
    expect(nulls.status).toBe(422);
    expect(nulls.body.error.details[0]).toMatchObject({ field: 'private', code: 'missing' });
  });
});

describe('concurrent changes of one record record each event once', () => {
  test('five concurrent deletes: one succeeds, the others are 404, one deleted event', async () => {
    const { id } = (await owner.post('/repos', { name: 'doomed' })).body;
    const statuses = (await Promise.all(Array.from({ length: 5 }, () => owner.delete(`/repos/${id}`)))).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 404, 404, 404, 404]);
    expect((await outbox(id, 'repository')).map((e) => e.action)).toEqual(['created', 'deleted']);
  });

  test('25 concurrent webhook creates on one repository: exactly 20 succeed, the rest are 409', async () => {
    const { id } = (await owner.post('/repos', { name: 'hook-limit' })).body;
    const statuses = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        owner.post(`/repos/${id}/webhooks`, { url: `https://hooks.example.test/${i}` }).then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(20);
    expect(statuses.filter((s) => s === 409)).toHaveLength(5);
    expect((await owner.get(`/repos/${id}/webhooks`)).body).toHaveLength(20);
  });

  test('twelve concurrent closes: one closed event; concurrent edits each record the value they replaced', async () => {
    const { number } = (await owner.post(`/repos/${repoId}/issues`, { title: 'race me' })).body;
    const path = `/repos/${repoId}/issues/${number}`;
    const closes = await Promise.all(Array.from({ length: 12 }, () => owner.patch(path, { state: 'closed' })));
    expect(closes.every((r) => r.status === 200 && r.body.state === 'closed')).toBe(true);
    const issueEvents = (await outbox(repoId, 'issues')).filter((e) => e.payload.issue.number === number);
    expect(issueEvents.map((e) => e.action)).toEqual(['opened', 'closed']);

    const { id } = (await owner.post('/repos', { name: 'edited', description: 'd0' })).body;
    await Promise.all(['d1', 'd2', 'd3', 'd4'].map((description) => owner.patch(`/repos/${id}`, { description })));
    const froms = (await outbox(id, 'repository')).filter((e) => e.action === 'updated').map((e) => e.payload.changes.description.from);
    expect(froms).toHaveLength(4);
    expect(new Set(froms).size).toBe(4); // a chain: each update saw the one before it
    expect(froms).toContain('d0');
  });
});
