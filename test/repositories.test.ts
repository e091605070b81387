import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { adminClient, createUser, noreplyEmail, type Client } from './support/client.js';
import { CairnServer } from './support/server.js';

let server: CairnServer;
let admin: Client;
let alice: Awaited<ReturnType<typeof createUser>>;
let bob: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  server = await CairnServer.start();
  admin = adminClient(server);
  alice = await createUser(admin, 'alice');
  bob = await createUser(admin, 'bob');
});
afterAll(() => server.destroy());

const repoDir = (id: string) => path.join(server.dataDir, 'repositories', `${id}.git`);

describe('POST /repos', () => {
  test('creates a repository with every documented field and a bare git repository on disk', async () => {
    const res = await alice.post('/repos', { name: 'create-me', description: 'd', private: true, default_branch: 'trunk' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^repo_[0-9a-z]{26}$/),
      name: 'create-me',
      full_name: 'alice/create-me',
      owner: { id: alice.userId, login: 'alice' },
      description: 'd',
      private: true,
      default_branch: 'trunk',
      empty: true,
      clone_url: `${server.url}/alice/create-me.git`,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updated_at: expect.any(String),
      pushed_at: null,
      open_issues_count: 0,
      open_pulls_count: 0,
    });
    const head = execFileSync('git', ['symbolic-ref', 'HEAD'], { cwd: repoDir(res.body.id) })
      .toString()
      .trim();
    expect(head).toBe('refs/heads/trunk');
  });

  test('defaults: public, main, empty; auto_init makes a README commit', async () => {
    const plain = await alice.post('/repos', { name: 'defaults' });
    expect(plain.body).toMatchObject({ private: false, default_branch: 'main', empty: true, description: null });

    const init = await alice.post('/repos', { name: 'with-readme', description: 'hello', auto_init: true });
    expect(init.status).toBe(201);
    expect(init.body).toMatchObject({ empty: false, pushed_at: expect.any(String) });
    const readme = execFileSync('git', ['show', 'main:README.md'], { cwd: repoDir(init.body.id) }).toString();
    expect(readme).toContain('# with-readme');
    expect(readme).toContain('hello');
    const author = execFileSync('git', ['log', '-1', '--format=%an <%ae>', 'main'], { cwd: repoDir(init.body.id) })
      .toString()
      .trim();
    expect(author).toBe(`alice <${noreplyEmail(server, alice)}>`); // the owner's no-reply address, never the account email
  });

  test('unknown fields are ignored', async () => {
    const res = await alice.post('/repos', { name: 'extra-fields', stars: 5, owner: 'bob' });
    expect(res.status).toBe(201);
    expect(res.body.owner.login).toBe('alice');
  });

  test('409 when the name is taken, case-insensitively; another owner may use it', async () => {
    await alice.post('/repos', { name: 'Taken' });
    const again = await alice.post('/repos', { name: 'taken' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
    expect((await bob.post('/repos', { name: 'taken' })).status).toBe(201);
  });

  test.each([
    [{ name: '' }, 'name'],
    [{ name: '.' }, 'name'],
    [{ name: '..' }, 'name'],
    [{ name: 'a'.repeat(101) }, 'name'], // too long
    [{ name: 'has space' }, 'name'],
    [{ name: 'slash/name' }, 'name'],
    [{ name: 'thing.git' }, 'name'],
    [{ name: 'THING.GIT' }, 'name'],
    [{ name: 'ok', default_branch: 'bad..branch' }, 'default_branch'],
    [{ name: 'ok', default_branch: '-x' }, 'default_branch'],
    [{ name: 'ok', description: 'd'.repeat(1001) }, 'description'],
  ])('422 for an invalid %#: %s', async (body, field) => {
    const before = (await alice.get('/repos?limit=100')).body.total;
    const res = await alice.post('/repos', body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details).toContainEqual(expect.objectContaining({ field }));
    expect((await alice.get('/repos?limit=100')).body.total).toBe(before);
  });

  test.each([
    [{ name: 123 }, 'name'],
    [{ name: 'x', private: 'yes' }, 'private'],
    [{ name: 'x', description: ['a'] }, 'description'],
    [{ name: 'x', auto_init: 1 }, 'auto_init'],
    [{ description: 'no name' }, 'name'],
  ])('422 for a wrong type or missing field %j', async (body, field) => {
    const res = await alice.post('/repos', body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details[0].field).toBe(field);
  });

  test('400 for malformed JSON and for a body that is not an object', async () => {
    const bad = await alice.request('POST', '/repos', { raw: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_json');
    for (const raw of ['[1,2]', '"name"', 'null', '42']) {
      const res = await alice.request('POST', '/repos', { raw, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('bad_request');
    }
  });

  test('415 for a body that is not JSON', async () => {
    const res = await alice.request('POST', '/repos', { raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
    const none = await alice.request('POST', '/repos', { raw: '{"name":"no-type"}', headers: { 'content-type': 'text/plain' } });
    expect(none.status).toBe(415);
  });

  test('413 for a body over 1 MiB, and nothing is created', async () => {
    const res = await alice.post('/repos', { name: 'huge', description: 'x'.repeat(1024 * 1024) });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
    expect((await alice.get('/repos/alice/huge/resolve')).status).toBe(404);
  });

  test('403 for a token without the repo scope', async () => {
    const reader = await createUser(admin, 'reader-only', ['repo:read']);
    const res = await reader.post('/repos', { name: 'nope' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
  });
});

describe('GET /repos', () => {
  let carol: Awaited<ReturnType<typeof createUser>>;
  beforeAll(async () => {
    carol = await createUser(admin, 'carol');
    for (let i = 0; i < 35; i++) await carol.post('/repos', { name: `r${String(i).padStart(2, '0')}`, private: i % 5 === 0 });
  });

  test('envelope with default limit 30, newest first, stable', async () => {
    const res = await carol.get('/repos?owner=carol');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 35, limit: 30, offset: 0, hasMore: true });
    expect(res.body.data).toHaveLength(30);
    expect(res.body.data[0].name).toBe('r34');
    expect(res.body.data[29].name).toBe('r05');
    const rest = await carol.get('/repos?owner=carol&offset=30');
    expect(rest.body).toMatchObject({ total: 35, limit: 30, offset: 30, hasMore: false });
    expect(rest.body.data.map((r: { name: string }) => r.name)).toEqual(['r04', 'r03', 'r02', 'r01', 'r00']);
  });

  test('limit above 100 is clamped and reported; limit 0 gives an empty page', async () => {
    const res = await carol.get('/repos?owner=carol&limit=1000');
    expect(res.body).toMatchObject({ limit: 100, total: 35, hasMore: false });
    expect(res.body.data).toHaveLength(35);
    const huge = await carol.get('/repos?owner=carol&limit=99999999999999');
    expect(huge.body.limit).toBe(100);
    const zero = await carol.get('/repos?owner=carol&limit=0');
    expect(zero.body).toMatchObject({ data: [], limit: 0, total: 35, hasMore: true });
  });

  test.each(['limit=-1', 'offset=-5', 'limit=abc', 'limit=1.5', 'offset=', 'limit=10&limit=20', 'offset=99999999999'])(
    '400 invalid_pagination for %s',
    async (query) => {
      const res = await carol.get(`/repos?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_pagination');
    },
  );

  test('only repositories the caller can read: a stranger sees carol’s public ones', async () => {
    const mine = await carol.get('/repos?owner=carol&limit=100');
    expect(mine.body.total).toBe(35);
    const theirs = await bob.get('/repos?owner=carol&limit=100');
    expect(theirs.body.total).toBe(28);
    expect(theirs.body.data.every((r: { private: boolean }) => !r.private)).toBe(true);
    const siteAdmin = await admin.get('/repos?owner=carol&limit=100');
    expect(siteAdmin.body.total).toBe(35);
  });

  test('unknown owner gives an empty list', async () => {
    const res = await carol.get('/repos?owner=nobody-here');
    expect(res.body).toMatchObject({ data: [], total: 0, hasMore: false });
  });
});

describe('single repository', () => {
  let repo: { id: string };
  beforeAll(async () => {
    repo = (await alice.post('/repos', { name: 'single', description: 'one' })).body;
  });

  test('GET /repos/:id and /api/repos/:id answer the same', async () => {
    const a = await alice.get(`/repos/${repo.id}`);
    const b = await alice.get(`/api/repos/${repo.id}`);
    expect(a.status).toBe(200);
    expect(b.body).toEqual(a.body);
    expect(a.body.full_name).toBe('alice/single');
  });

  test('resolve owner/name to the id, case-insensitively', async () => {
    const res = await bob.get('/repos/ALICE/Single/resolve');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: repo.id });
    expect((await bob.get('/repos/alice/missing/resolve')).status).toBe(404);
  });

  test('404 for unknown or malformed ids', async () => {
    for (const id of ['repo_00000000000000000000000000', 'nope', '12', 'usr_01m807zeqn6kbk3nxqc430jqvf']) {
      const res = await alice.get(`/repos/${id}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
      expect(res.body.request_id).toBe(res.headers.get('x-request-id'));
    }
  });

  test('PATCH renames (keeping the id), changes description and privacy', async () => {
    const res = await alice.patch(`/repos/${repo.id}`, { name: 'renamed', description: null, private: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: repo.id, name: 'renamed', full_name: 'alice/renamed', description: null, private: true });
    expect(res.body.clone_url).toBe(`${server.url}/alice/renamed.git`);
    expect((await alice.get('/repos/alice/renamed/resolve')).body.id).toBe(repo.id);
    expect(existsSync(repoDir(repo.id))).toBe(true);
    await alice.patch(`/repos/${repo.id}`, { private: false });
  });

  test('PATCH default_branch of an empty repository moves HEAD; of a non-empty one it must exist', async () => {
    const res = await alice.patch(`/repos/${repo.id}`, { default_branch: 'develop' });
    expect(res.status).toBe(200);
    expect(
      execFileSync('git', ['symbolic-ref', 'HEAD'], { cwd: repoDir(repo.id) })
        .toString()
        .trim(),
    ).toBe('refs/heads/develop');

    const full = (await alice.post('/repos', { name: 'full', auto_init: true })).body;
    const missing = await alice.patch(`/repos/${full.id}`, { default_branch: 'nope' });
    expect(missing.status).toBe(422);
    expect(missing.body.error.details[0]).toMatchObject({ field: 'default_branch', code: 'unknown_branch' });
  });

  test('PATCH: 409 on a taken name, 422 on null or invalid values, nothing changes', async () => {
    await alice.post('/repos', { name: 'other' });
    const taken = await alice.patch(`/repos/${repo.id}`, { name: 'OTHER' });
    expect(taken.status).toBe(409);
    expect((await alice.patch(`/repos/${repo.id}`, { name: null })).status).toBe(422);
    expect((await alice.patch(`/repos/${repo.id}`, { private: 'no' })).status).toBe(422);
    expect((await alice.patch(`/repos/${repo.id}`, { name: 'bad name' })).status).toBe(422);
    expect((await alice.get(`/repos/${repo.id}`)).body.name).toBe('renamed');
  });

  test('DELETE removes the record and the git data', async () => {
    const doomed = (await alice.post('/repos', { name: 'doomed', auto_init: true })).body;
    expect(existsSync(repoDir(doomed.id))).toBe(true);
    const res = await alice.delete(`/repos/${doomed.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: doomed.id, deleted: true });
    expect((await alice.get(`/repos/${doomed.id}`)).status).toBe(404);
    expect(existsSync(repoDir(doomed.id))).toBe(false);
    expect((await alice.delete(`/repos/${doomed.id}`)).status).toBe(404);
    expect((await alice.post('/repos', { name: 'doomed' })).status).toBe(201);
  });
});

describe('privacy and permissions', () => {
  let secret: { id: string };
  let open: { id: string };
  beforeAll(async () => {
    secret = (await alice.post('/repos', { name: 'secret', private: true })).body;
    open = (await alice.post('/repos', { name: 'open' })).body;
  });

  test('a stranger gets 404 for a private repository, whatever the operation', async () => {
    for (const res of [
      await bob.get(`/repos/${secret.id}`),
      await bob.get('/repos/alice/secret/resolve'),
      await bob.patch(`/repos/${secret.id}`, { description: 'x' }),
      await bob.delete(`/repos/${secret.id}`),
      await bob.get(`/repos/${secret.id}/issues`),
      await bob.post(`/repos/${secret.id}/issues`, { title: 't' }),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  test('a stranger may read a public repository but gets 403 when writing it', async () => {
    expect((await bob.get(`/repos/${open.id}`)).status).toBe(200);
    const patch = await bob.patch(`/repos/${open.id}`, { description: 'defaced' });
    expect(patch.status).toBe(403);
    expect(patch.body.error.code).toBe('forbidden');
    expect((await bob.delete(`/repos/${open.id}`)).status).toBe(403);
    expect((await bob.put(`/repos/${open.id}/collaborators/bob`, { permission: 'admin' })).status).toBe(403);
    expect((await alice.get(`/repos/${open.id}`)).body.description).toBeNull();
  });

  test('collaborators: read sees the private repository, write cannot change settings, admin can', async () => {
    const put = await alice.put(`/repos/${secret.id}/collaborators/bob`, { permission: 'read' });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ user: { id: bob.userId, login: 'bob' }, permission: 'read' });
    expect((await bob.get(`/repos/${secret.id}`)).status).toBe(200);
    expect((await bob.patch(`/repos/${secret.id}`, { description: 'x' })).status).toBe(403);

    await alice.put(`/repos/${secret.id}/collaborators/bob`, { permission: 'write' });
    expect((await bob.patch(`/repos/${secret.id}`, { description: 'x' })).status).toBe(403);

    await alice.put(`/repos/${secret.id}/collaborators/bob`, { permission: 'admin' });
    expect((await bob.patch(`/repos/${secret.id}`, { description: 'by bob' })).status).toBe(200);

    const list = await alice.get(`/repos/${secret.id}/collaborators`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual([{ user: { id: bob.userId, login: 'bob' }, permission: 'admin', created_at: expect.any(String) }]);

    expect((await alice.delete(`/repos/${secret.id}/collaborators/bob`)).status).toBe(204);
    expect((await bob.get(`/repos/${secret.id}`)).status).toBe(404);
    expect((await alice.delete(`/repos/${secret.id}/collaborators/bob`)).status).toBe(404);
  });

  test('collaborator input errors', async () => {
    expect((await alice.put(`/repos/${secret.id}/collaborators/nobody-at-all`, { permission: 'read' })).status).toBe(404);
    expect((await alice.put(`/repos/${secret.id}/collaborators/bob`, { permission: 'owner' })).status).toBe(422);
    expect((await alice.put(`/repos/${secret.id}/collaborators/bob`, {})).status).toBe(422);
    expect((await alice.put(`/repos/${secret.id}/collaborators/alice`, { permission: 'read' })).status).toBe(422);
    expect((await alice.get(`/repos/${secret.id}/collaborators`)).body).toEqual([]);
  });

  test('a token with only repo:read reads private repositories it may see but cannot write', async () => {
    const { createToken } = await import('./support/client.js');
    const readOnly = new (await import('./support/client.js')).Client(server, await createToken(admin, 'alice', ['repo:read']));
    expect((await readOnly.get(`/repos/${secret.id}`)).status).toBe(200);
    const res = await readOnly.patch(`/repos/${secret.id}`, { description: 'x' });
    expect(res.status).toBe(403);
    const hooksOnly = new (await import('./support/client.js')).Client(server, await createToken(admin, 'alice', ['admin:repo_hook']));
    expect((await hooksOnly.get(`/repos/${secret.id}`)).status).toBe(404);
    expect((await hooksOnly.get(`/repos/${open.id}`)).status).toBe(200);
  });

  test('site admins can read and change anything', async () => {
    expect((await admin.get(`/repos/${secret.id}`)).status).toBe(200);
    expect((await admin.patch(`/repos/${secret.id}`, { description: 'admin was here' })).status).toBe(200);
  });
});

describe('HTTP surface', () => {
  test('401 with WWW-Authenticate for missing, malformed and unknown tokens, on REST and GraphQL', async () => {
    for (const headers of [
      {},
      { authorization: 'Bearer' },
      { authorization: 'Basic abc' },
      { authorization: 'Bearer nope' },
      { authorization: `Bearer cairn_pat_${'x'.repeat(43)}` },
    ]) {
      for (const path of ['/repos', '/api/repos', '/repos/whatever', '/no/such/route']) {
        const res = await alice.request('GET', path, { headers, anonymous: true });
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
        expect(res.body.error.code).toBe('unauthorized');
      }
      const gql = await alice.request('POST', '/graphql', {
        headers: { ...headers, 'content-type': 'application/json' },
        raw: '{"query":"{viewer{id}}"}',
        anonymous: true,
      });
      expect(gql.status).toBe(401);
      expect(gql.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
  });

  test('405 for a known path with another method, 404 for an unknown path', async () => {
    const res = await alice.request('PUT', '/repos');
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe('method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
    expect((await alice.get('/nope')).status).toBe(404);
    expect((await alice.get('/api/nope')).body.error.code).toBe('not_found');
  });

  test('X-Request-Id on every response, echoing a sane incoming one', async () => {
    const own = await alice.get('/repos', { headers: { 'x-request-id': 'trace-abc.123' } });
    expect(own.headers.get('x-request-id')).toBe('trace-abc.123');
    const fresh = await alice.get('/repos', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(fresh.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect((await alice.get('/healthz', { anonymous: true })).headers.get('x-request-id')).toBeTruthy();
  });

  test('healthz and readyz need no token; metrics are Prometheus text', async () => {
    expect((await alice.get('/healthz', { anonymous: true })).body).toEqual({ status: 'ok' });
    expect((await alice.get('/readyz', { anonymous: true })).body).toEqual({ status: 'ready' });
    const metrics = await alice.get('/metrics', { anonymous: true });
    expect(metrics.text).toContain('cairn_http_requests_total');
  });

  test('logs are JSON and never contain tokens', async () => {
    await alice.get('/repos');
    const lines = server.output.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(server.output).not.toContain(alice.token);
    expect(server.output).not.toContain(server.adminToken);
  });
});
