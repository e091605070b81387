import { adminClient, createUser, type Client } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer, query } from './support/server.js';

/**
 * The REST request rules on every REST route that takes a body or pages, under
 * both prefixes: malformed JSON 400, a non-object 400, a non-JSON type 415,
 * over 1 MiB 413, a wrong type 422, bad pagination 400 — and nothing changes.
 * The pull request routes are among them, on a repository with an open pull
 * request #1 and a review of it.
 */
let server: CairnServer;
let git: GitSandbox;
let owner: Client & { login: string };
let repo: string;
let hook: string;
let userHook: string;
let pulls: PullRepo;
let mainSha: string;
let initial: Awaited<ReturnType<typeof snapshot>>;

beforeAll(async () => {
  server = CairnServer.sharedServer();
  owner = await createUser(adminClient(server), 'malformed', ['repo', 'admin:repo_hook']);
  await createUser(adminClient(server), 'someone');
  repo = (await owner.post('/repos', { name: 'stable', description: 'as it was' })).body.id;
  await owner.post(`/repos/${repo}/issues`, { title: 'as it was' });
  hook = (await owner.post(`/repos/${repo}/webhooks`, { url: 'http://127.0.0.1:9/hook', events: ['issues'] })).body.id;
  userHook = (await owner.post('/user/webhooks', { url: 'http://127.0.0.1:9/user-hook', events: ['repository'] })).body.id;
  git = await GitSandbox.create();
  pulls = await PullRepo.create(server, git, owner, 'pulled');
  await pulls.commit('feature', 'a feature', { 'feature.txt': 'feature\n' });
  await pulls.commit('topic', 'a topic with no pull request', { 'topic.txt': 'topic\n' });
  await pulls.push(['feature', 'topic']);
  const opened = await pulls.open({ title: 'as it was', body: 'unchanged', head: 'feature' });
  if (opened.status !== 201 || opened.body.number !== 1) throw new Error(`cannot open #1: ${opened.text}`);
  const review = await owner.post(`/repos/${pulls.id}/pulls/1/reviews`, { event: 'COMMENT', body: 'as it was' });
  if (review.status !== 201) throw new Error(`cannot review #1: ${review.text}`);
  await pulls.mergeable(1); // the background check has written what it will write
  mainSha = (await pulls.remoteSha('main'))!;
  initial = await snapshot();
});
afterAll(async () => {
  await server?.destroy();
  await git?.cleanup();
});

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
  ['POST', `/repos/${pulls.id}/pulls`, { title: 5, head: 'topic' }],
  ['PATCH', `/repos/${pulls.id}/pulls/1`, { draft: 'yes' }],
  ['PUT', `/repos/${pulls.id}/pulls/1/merge`, { method: 5 }],
  ['POST', `/repos/${pulls.id}/pulls/1/reviews`, { event: 3, body: 'x' }],
  ['PUT', `/repos/${pulls.id}/pulls/1/auto_merge`, { method: 5 }],
  ['POST', `/repos/${pulls.id}/statuses/${mainSha}`, { state: 7 }],
  ['PUT', `/repos/${pulls.id}/branches/main/protection`, { enforce_admins: 'yes' }],
];

/** The last event the owner made or that concerns the owner's repositories: other files record theirs on the shared server. */
const lastEventOfOwner = async () =>
  (
    await query<{ id: string | null }>(
      server,
      `select max(e.id)::text as id from domain_events e join users u on u.id in (e.actor_id, e.owner_id) where u.login = 'malformed'`,
    )
  )[0]?.id ?? '0';

const snapshot = async () => ({
  repos: (await owner.get('/repos?owner=malformed')).body.total,
  repo: (({ name, description, private: p, updated_at }) => ({ name, description, p, updated_at }))(
    (await owner.get(`/repos/${repo}`)).body,
  ),
  issue: (await owner.get(`/repos/${repo}/issues/1`)).body.updated_at,
  issues: (await owner.get(`/repos/${repo}/issues?state=all`)).body.total,
  collaborators: (await owner.get(`/repos/${repo}/collaborators`)).body.length,
  hooks: (await owner.get(`/repos/${repo}/webhooks`)).body.map((h: { updated_at: string }) => h.updated_at),
  userHooks: (await owner.get('/user/webhooks')).body.map((h: { updated_at: string }) => h.updated_at),
  pullsRepo: (({ updated_at, open_pulls_count }) => ({ updated_at, open_pulls_count }))((await owner.get(`/repos/${pulls.id}`)).body),
  pulls: (await owner.get(`/repos/${pulls.id}/pulls?state=all`)).body.data.map((p: any) => ({
    number: p.number,
    title: p.title,
    body: p.body,
    state: p.state,
    draft: p.draft,
    head: p.head,
    base: p.base,
    merged: p.merged,
    updated_at: p.updated_at,
  })),
  reviews: (await owner.get(`/repos/${pulls.id}/pulls/1/reviews`)).body.data.map((r: any) => ({ id: r.id, state: r.state, body: r.body })),
  mainTip: await pulls.remoteSha('main'),
  autoMerge: (await owner.get(`/repos/${pulls.id}/pulls/1`)).body.auto_merge,
  statuses: (await owner.get(`/repos/${pulls.id}/commits/${mainSha}/statuses`)).body.total,
  protection: (await owner.get(`/repos/${pulls.id}/branches/main/protection`)).status,
  lastEvent: await lastEventOfOwner(),
});

test('every body route, under / and /api: 400, 400, 415, 413, 422 with the documented codes, and nothing changes', async () => {
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
  const paged = [
    '/repos',
    `/repos/${repo}/issues`,
    `/repos/${repo}/webhooks/${hook}/deliveries`,
    `/user/webhooks/${userHook}/deliveries`,
    `/repos/${pulls.id}/pulls`,
    `/repos/${pulls.id}/pulls/1/reviews`,
    `/repos/${pulls.id}/pulls/1/commits`,
    `/repos/${pulls.id}/pulls/1/files`,
  ];
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
      // '/repos' lists every public repository of the server this file shares with others: more than 100 at times.
      const { data, total } = clamped.body as { data: unknown[]; total: number };
      expect(clamped.body).toMatchObject({
        limit: 100,
        offset: 0,
        data: expect.any(Array),
        total: expect.any(Number),
        hasMore: data.length < total,
      });
      expect(data.length).toBeLessThanOrEqual(100);
    }
  }
});

test('a known path with another method is 405 with Allow, on every resource', async () => {
  const cases: Array<[string, string, string]> = [
    ['PUT', '/repos', 'GET, HEAD, POST'],
    ['POST', `/repos/${repo}`, 'GET, HEAD, PATCH, DELETE'],
    ['DELETE', `/repos/${repo}/issues`, 'GET, HEAD, POST'],
    ['DELETE', `/repos/${repo}/issues/1`, 'GET, HEAD, PATCH'],
    ['POST', `/repos/${repo}/collaborators`, 'GET, HEAD'],
    ['PUT', `/repos/${repo}/webhooks`, 'POST, GET, HEAD'],
    ['GET', `/repos/${repo}/webhooks/${hook}/pings`, 'POST'],
    ['POST', `/repos/${repo}/webhooks/${hook}`, 'GET, HEAD, PATCH, DELETE'],
    ['PUT', `/user/webhooks`, 'POST, GET, HEAD'],
    ['POST', `/user/webhooks/${userHook}`, 'GET, HEAD, PATCH, DELETE'],
    ['GET', `/user/webhooks/${userHook}/deliveries/x/redeliver`, 'POST'],
    ['DELETE', `/user/webhooks/${userHook}/deliveries`, 'GET, HEAD'],
    ['DELETE', `/repos/${pulls.id}/pulls`, 'GET, HEAD, POST'],
    ['DELETE', `/repos/${pulls.id}/pulls/1`, 'GET, HEAD, PATCH'],
    ['POST', `/repos/${pulls.id}/pulls/1/merge`, 'PUT'],
    ['PUT', `/repos/${pulls.id}/pulls/1/reviews`, 'GET, HEAD, POST'],
    ['POST', `/repos/${pulls.id}/pulls/1/commits`, 'GET, HEAD'],
    ['PATCH', `/repos/${pulls.id}/pulls/1/files`, 'GET, HEAD'],
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

test('after every request above: repositories, issues, hooks, pull requests, reviews, the base branch and the outbox are as they were', async () => {
  expect(initial.pulls).toHaveLength(1);
  expect(initial.reviews).toHaveLength(1);
  expect(await snapshot()).toEqual(initial);
});
