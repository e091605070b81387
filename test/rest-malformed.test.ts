import { adminClient, createUser, type Client } from './support/client.js';
import { CairnServer } from './support/server.js';

/**
 * §5's request rules on every REST route that takes a body or pages, under
 * both prefixes: malformed JSON 400, a non-object 400, a non-JSON type 415,
 * over 1 MiB 413, a wrong type 422, bad pagination 400 — and nothing changes.
 */
let server: CairnServer;
let owner: Client;
let repo: string;
let hook: string;
let userHook: string;

beforeAll(async () => {
  server = await CairnServer.start({ env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' } });
  owner = await createUser(adminClient(server), 'malformed', ['repo', 'admin:repo_hook']);
  await createUser(adminClient(server), 'someone');
  repo = (await owner.post('/repos', { name: 'stable', description: 'as it was' })).body.id;
  await owner.post(`/repos/${repo}/issues`, { title: 'as it was' });
  hook = (await owner.post(`/repos/${repo}/webhooks`, { url: 'http://127.0.0.1:9/hook', events: ['issues'] })).body.id;
  userHook = (await owner.post('/user/webhooks', { url: 'http://127.0.0.1:9/user-hook', events: ['repository'] })).body.id;
});
afterAll(() => server.destroy());

/** Every route with a body, and a body whose one field has the wrong type. */
const bodyRoutes = (): Array<[string, string, Record<string, unknown>]> => [
  ['POST', '/repos', { name: 5 }],
  ['PATCH', `/repos/${repo}`, { private: 'yes' }],
  ['POST', `/repos/${repo}/issues`, { title: ['x'] }],
  ['PATCH', `/repos/${repo}/issues/1`, { title: 3 }],
  ['PUT', `/repos/${repo}/collaborators/someone`, { permission: 7 }],
  ['POST', `/repos/${repo}/webhooks`, { url: 5 }],
  ['PATCH', `/repos/${repo}/webhooks/${hook}`, { active: 'no' }],
  ['POST', '/user/webhooks', { events: 'push' }],
  ['PATCH', `/user/webhooks/${userHook}`, { events: [1] }],
];

const snapshot = async () => ({
  repos: (await owner.get('/repos')).body.total,
  repo: (({ name, description, private: p, updated_at }) => ({ name, description, p, updated_at }))(
    (await owner.get(`/repos/${repo}`)).body,
  ),
  issue: (await owner.get(`/repos/${repo}/issues/1`)).body.updated_at,
  issues: (await owner.get(`/repos/${repo}/issues?state=all`)).body.total,
  collaborators: (await owner.get(`/repos/${repo}/collaborators`)).body.length,
  hooks: (await owner.get(`/repos/${repo}/webhooks`)).body.map((h: { updated_at: string }) => h.updated_at),
  userHooks: (await owner.get('/user/webhooks')).body.map((h: { updated_at: string }) => h.updated_at),
});

test('every body route, under / and /api: 400, 400, 415, 413, 422 with the §5 codes, and nothing changes', async () => {
  const before = await snapshot();
  const json = { 'content-type': 'application/json' };
  for (const [method, path, wrongTyped] of bodyRoutes()) {
    for (const prefix of ['', '/api']) {
      const url = `${prefix}${path}`;
      const cases: Array<[string, Promise<{ status: number; body: any; headers: Headers }>, number, string]> = [
        ['malformed JSON', owner.request(method, url, { raw: '{"name": ', headers: json }), 400, 'invalid_json'],
        ['an array', owner.request(method, url, { raw: '[1, 2]', headers: json }), 400, 'bad_request'],
        [
          'text/plain',
          owner.request(method, url, { raw: 'name=x', headers: { 'content-type': 'text/plain' } }),
          415,
          'unsupported_media_type',
        ],
        [
          'over 1 MiB',
          owner.request(method, url, { raw: JSON.stringify({ body: 'x'.repeat(1_100_000) }), headers: json }),
          413,
          'payload_too_large',
        ],
        ['a wrong type', owner.request(method, url, { body: wrongTyped }), 422, 'validation_failed'],
      ];
      for (const [what, pending, status, code] of cases) {
        const res = await pending;
        expect({ route: `${method} ${url}`, what, status: res.status, code: res.body?.error?.code }).toEqual({
          route: `${method} ${url}`,
          what,
          status,
          code,
        });
        expect(res.body.request_id).toBe(res.headers.get('x-request-id'));
      }
    }
  }
  expect(await snapshot()).toEqual(before);
});

test('every paged route: bad limit or offset is 400 invalid_pagination; a large limit is clamped to 100', async () => {
  const paged = ['/repos', `/repos/${repo}/issues`, `/repos/${repo}/webhooks/${hook}/deliveries`, `/user/webhooks/${userHook}/deliveries`];
  for (const path of paged) {
    for (const prefix of ['', '/api']) {
      for (const query of ['limit=abc', 'limit=1.5', 'limit=-1', 'offset=-3', 'offset=x', 'limit=1e3']) {
        const res = await owner.get(`${prefix}${path}?${query}`);
        expect({ path, query, status: res.status, code: res.body?.error?.code }).toEqual({
          path,
          query,
          status: 400,
          code: 'invalid_pagination',
        });
      }
      const clamped = await owner.get(`${prefix}${path}?limit=1000&offset=0`);
      expect(clamped.status).toBe(200);
      expect(clamped.body).toMatchObject({ limit: 100, offset: 0, data: expect.any(Array), total: expect.any(Number), hasMore: false });
    }
  }
});

test('a known path with another method is 405 with Allow, on every resource', async () => {
  const cases: Array<[string, string, string]> = [
    ['PUT', '/repos', 'GET, POST'],
    ['POST', `/repos/${repo}`, 'GET, PATCH, DELETE'],
    ['DELETE', `/repos/${repo}/issues`, 'GET, POST'],
    ['DELETE', `/repos/${repo}/issues/1`, 'GET, PATCH'],
    ['POST', `/repos/${repo}/collaborators`, 'GET'],
    ['PUT', `/repos/${repo}/webhooks`, 'POST, GET'],
    ['GET', `/repos/${repo}/webhooks/${hook}/pings`, 'POST'],
    ['DELETE', `/user/webhooks/${userHook}/deliveries`, 'GET'],
  ];
  for (const [method, path, allow] of cases) {
    for (const prefix of ['', '/api']) {
      const res = await owner.request(method, `${prefix}${path}`);
      expect({ method, path, status: res.status, code: res.body?.error?.code }).toEqual({
        method,
        path,
        status: 405,
        code: 'method_not_allowed',
      });
      expect(res.headers.get('allow')).toBe(allow);
    }
  }
});
