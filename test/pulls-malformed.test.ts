import { adminClient, createUser, type ApiResponse, type Client } from './support/client.js';
import { GitSandbox, lastEventId } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer } from './support/server.js';

/**
 * Garbage on the pull request routes: each field of a wrong JSON
 * type, unknown enum values, nulls, text no column can hold, huge strings,
 * branch names that are not branch names, malformed shas and commit titles,
 * path and query garbage, wrong methods. Each gets its documented 4xx in the
 * REST error shape (never a 5xx), and afterwards the pull requests, reviews,
 * branches and the outbox are exactly as they were. Unknown body fields are
 * ignored (checked last, on a repository of its own).
 */
let server: CairnServer;
let git: GitSandbox;
let owner: Client & { login: string };
let critic: Client & { login: string };
let target: PullRepo;
let initial: Awaited<ReturnType<typeof snapshot>>;

const PREFIXES = ['', '/api'];

beforeAll(async () => {
  server = await CairnServer.start();
  const admin = adminClient(server);
  owner = await createUser(admin, 'garbage', ['repo']);
  critic = await createUser(admin, 'critic', ['repo']);
  git = await GitSandbox.create();
  target = await PullRepo.create(server, git, owner, 'target', { 'README.md': '# target\n' });
  await target.commit('feature', 'the feature', { 'feature.txt': 'feature\n' });
  await target.commit('topic', 'a topic with no pull request yet', { 'topic.txt': 'topic\n' });
  await target.push(['feature', 'topic']);
  const opened = await target.open({ title: 'as it was', body: 'unchanged', head: 'feature' });
  if (opened.status !== 201 || opened.body.number !== 1) throw new Error(`cannot open #1: ${opened.text}`);
  const review = await critic.post(`/repos/${target.id}/pulls/1/reviews`, { event: 'COMMENT', body: 'as it was' });
  if (review.status !== 201) throw new Error(`cannot review #1: ${review.text}`);
  await target.mergeable(1); // the background check has written what it will write
  initial = await snapshot();
});
afterAll(async () => {
  await server?.destroy();
  await git?.cleanup();
});

/** Everything garbage must not change: the pull requests (whole records), reviews, branch tips, the outbox. */
async function snapshot() {
  const pulls = await owner.get(`/repos/${target.id}/pulls?state=all`);
  const reviews = await owner.get(`/repos/${target.id}/pulls/1/reviews`);
  const repo = await owner.get(`/repos/${target.id}`);
  return {
    pulls: pulls.body.data,
    total: pulls.body.total,
    reviews: reviews.body.data,
    repository: { updated_at: repo.body.updated_at, open_pulls_count: repo.body.open_pulls_count },
    tips: {
      main: await target.remoteSha('main'),
      feature: await target.remoteSha('feature'),
      topic: await target.remoteSha('topic'),
    },
    lastEvent: await lastEventId(server),
  };
}

interface Want {
  status: number;
  code: string;
  /** A detail must name this field (snake_case)... */
  field?: string;
  /** ...with this detail code. */
  detail?: string;
}

const invalid = (field: string, detail?: string): Want => ({ status: 422, code: 'validation_failed', field, detail });
const NOT_FOUND: Want = { status: 404, code: 'not_found' };

/**
 * Null when the response is one of `wants` in the REST error shape (code,
 * message, details, request_id matching X-Request-Id); otherwise what came
 * back, so one run lists every case the service gets wrong.
 */
function judge(label: string, res: ApiResponse, wants: Want | Want[]): object | null {
  const list = Array.isArray(wants) ? wants : [wants];
  const error = res.body?.error;
  const shaped =
    typeof error?.message === 'string' &&
    Array.isArray(error?.details) &&
    typeof res.body?.request_id === 'string' &&
    res.body.request_id === res.headers.get('x-request-id');
  const ok =
    shaped &&
    list.some(
      (want) =>
        res.status === want.status &&
        error.code === want.code &&
        (!want.field || error.details.some((d: any) => d.field === want.field && (!want.detail || d.code === want.detail))),
    );
  return ok ? null : { case: label, want: list, got: { status: res.status, body: res.body ?? res.text.slice(0, 300) } };
}

type Case = [label: string, method: string, path: string, body: unknown, want: Want | Want[]];

/** Sends every case under both prefixes (a string body is sent as raw JSON text) and returns the mismatches. */
async function run(cases: Case[]): Promise<object[]> {
  const failures: object[] = [];
  for (const [label, method, path, body, want] of cases) {
    for (const prefix of PREFIXES) {
      const res =
        typeof body === 'string'
          ? await owner.request(method, `${prefix}${path}`, { raw: body, headers: { 'content-type': 'application/json' } })
          : await (path.endsWith('/reviews') && method === 'POST' ? critic : owner).request(method, `${prefix}${path}`, {
              body,
            });
      const failure = judge(`${method} ${prefix}${path} ${label}`, res, want);
      if (failure) failures.push(failure);
    }
  }
  return failures;
}

/** Branch names git would refuse, or that name no branch here. */
const NOT_BRANCHES = [
  '../x',
  '-x',
  'a b',
  'HEAD',
  '@',
  'x'.repeat(300),
  'b'.repeat(230),
  'é'.repeat(150),
  'refs/heads/main',
  '',
  'a..b',
  'a~1',
  'a^',
  'a:b',
  'a?',
  'a*',
  'a[b',
  'a\\b',
  'x/',
  '/x',
  'a//b',
  'x.',
  '.x',
  'x.lock',
  'a@{1}',
  'tab\there',
  'main\n',
  'no-such-branch',
  `${'a'.repeat(200)}/${'b'.repeat(54)}`, // a well-formed name of 255 characters that names no branch
  'ünïcödé',
];

const WRONG_TYPES: Array<[field: string, value: unknown]> = [
  ['number', 5],
  ['float', 1.5],
  ['boolean', true],
  ['array', ['x']],
  ['object', { value: 'x' }],
];

describe('bodies', () => {
  test('POST /repos/:id/pulls: wrong types, nulls, missing fields, bad text, huge strings, non-branches → 422 naming the field', async () => {
    const path = `/repos/${target.id}/pulls`;
    const valid = { title: 'garbage', head: 'topic' };
    const cases: Case[] = [];
    for (const field of ['title', 'head', 'base', 'body']) {
      for (const [kind, value] of WRONG_TYPES)
        cases.push([`${field}: ${kind}`, 'POST', path, { ...valid, [field]: value }, invalid(field)]);
    }
    for (const value of ['yes', 'true', 1, 0, [], {}]) {
      cases.push([`draft: ${JSON.stringify(value)}`, 'POST', path, { ...valid, draft: value }, invalid('draft')]);
    }
    for (const field of ['title', 'head', 'draft'])
      cases.push([`${field}: null`, 'POST', path, { ...valid, [field]: null }, invalid(field)]);
    cases.push(['no title', 'POST', path, { head: 'topic' }, invalid('title')]);
    cases.push(['no head', 'POST', path, { title: 'garbage' }, invalid('head')]);
    cases.push(['empty object', 'POST', path, {}, invalid('title')]);
    for (const field of ['title', 'body', 'head', 'base']) {
      cases.push([`${field} with NUL`, 'POST', path, { ...valid, [field]: 'a\u0000b' }, invalid(field, 'invalid_characters')]);
    }
    cases.push(['title a lone surrogate', 'POST', path, '{"title": "\\ud800", "head": "topic"}', invalid('title', 'invalid_characters')]);
    cases.push([
      'body a lone surrogate',
      'POST',
      path,
      '{"title": "t", "head": "topic", "body": "x\\udc00y"}',
      invalid('body', 'invalid_characters'),
    ]);
    cases.push(['head a lone surrogate', 'POST', path, '{"title": "t", "head": "\\ud83d"}', invalid('head', 'invalid_characters')]);
    cases.push(['title of 10,000', 'POST', path, { ...valid, title: 'x'.repeat(10_000) }, invalid('title')]);
    cases.push(['title of 257', 'POST', path, { ...valid, title: 'x'.repeat(257) }, invalid('title')]);
    cases.push(['body of 70,000', 'POST', path, { ...valid, body: 'x'.repeat(70_000) }, invalid('body')]);
    for (const title of ['', '   ', '\n\t'])
      cases.push([`title ${JSON.stringify(title)}`, 'POST', path, { ...valid, title }, invalid('title')]);
    for (const name of NOT_BRANCHES) {
      cases.push([`head ${JSON.stringify(name.slice(0, 40))}`, 'POST', path, { ...valid, head: name }, invalid('head', 'unknown_branch')]);
      cases.push([`base ${JSON.stringify(name.slice(0, 40))}`, 'POST', path, { ...valid, base: name }, invalid('base', 'unknown_branch')]);
    }
    cases.push(['a duplicate key, the last a number', 'POST', path, '{"title": "ok", "head": "topic", "title": 5}', invalid('title')]);
    cases.push([
      'a title nested 5,000 deep',
      'POST',
      path,
      `{"head": "topic", "title": ${'['.repeat(5000)}${']'.repeat(5000)}}`,
      invalid('title'),
    ]);
    expect(await run(cases)).toEqual([]);
  });

  test('PATCH /repos/:id/pulls/:number: wrong types, unknown states, nulls, bad text, huge strings, non-branches → 422', async () => {
    const path = `/repos/${target.id}/pulls/1`;
    const cases: Case[] = [];
    for (const field of ['title', 'body', 'base']) {
      for (const [kind, value] of WRONG_TYPES) cases.push([`${field}: ${kind}`, 'PATCH', path, { [field]: value }, invalid(field)]);
    }
    for (const value of [5, true, ['open'], { value: 'open' }]) {
      cases.push([`state: ${JSON.stringify(value)}`, 'PATCH', path, { state: value }, invalid('state')]);
    }
    for (const value of ['yes', 'false', 1, [], {}]) {
      cases.push([`draft: ${JSON.stringify(value)}`, 'PATCH', path, { draft: value }, invalid('draft')]);
    }
    for (const state of ['merged', 'weird', '', 'open ', 'opened', 'all', 'closed\u0000']) {
      cases.push([`state: ${JSON.stringify(state)}`, 'PATCH', path, { state }, invalid('state')]);
    }
    for (const field of ['title', 'draft', 'state', 'base'])
      cases.push([`${field}: null`, 'PATCH', path, { [field]: null }, invalid(field)]);
    for (const field of ['title', 'body', 'base']) {
      cases.push([`${field} with NUL`, 'PATCH', path, { [field]: 'a\u0000b' }, invalid(field, 'invalid_characters')]);
    }
    cases.push(['title a lone surrogate', 'PATCH', path, '{"title": "\\ud800"}', invalid('title', 'invalid_characters')]);
    cases.push(['body a lone surrogate', 'PATCH', path, '{"body": "\\udfff"}', invalid('body', 'invalid_characters')]);
    cases.push(['title of 10,000', 'PATCH', path, { title: 'x'.repeat(10_000) }, invalid('title')]);
    cases.push(['body of 70,000', 'PATCH', path, { body: 'x'.repeat(70_000) }, invalid('body')]);
    for (const title of ['', '   ']) cases.push([`title ${JSON.stringify(title)}`, 'PATCH', path, { title }, invalid('title')]);
    for (const name of NOT_BRANCHES) {
      cases.push([`base ${JSON.stringify(name.slice(0, 40))}`, 'PATCH', path, { base: name }, invalid('base', 'unknown_branch')]);
    }
    expect(await run(cases)).toEqual([]);
  });

  test('PUT /repos/:id/pulls/:number/merge: wrong types, unknown methods, null method, bad shas and commit titles → 422 (nothing merged)', async () => {
    const path = `/repos/${target.id}/pulls/1/merge`;
    const cases: Case[] = [];
    for (const field of ['sha', 'commit_title', 'commit_message']) {
      for (const [kind, value] of WRONG_TYPES) cases.push([`${field}: ${kind}`, 'PUT', path, { [field]: value }, invalid(field)]);
    }
    for (const value of [5, true, { value: 'merge' }, ['merge']]) {
      cases.push([`method: ${JSON.stringify(value)}`, 'PUT', path, { method: value }, invalid('method')]);
    }
    for (const method of ['octopus', '', 'fast-forward', 'merge ', 'squash\u0000']) {
      cases.push([`method: ${JSON.stringify(method)}`, 'PUT', path, { method }, invalid('method')]);
    }
    cases.push(['method: null', 'PUT', path, { method: null }, invalid('method')]);
    const head = initial.pulls[0].head.sha as string;
    for (const sha of [head.slice(0, 39), `${head}0`, 'g'.repeat(40), head.slice(0, 7), 'HEAD', 'main', '', ` ${head.slice(1)}`]) {
      cases.push([`sha ${JSON.stringify(sha)}`, 'PUT', path, { sha }, invalid('sha')]);
    }
    for (const title of ['a\nb', 'title\n', '\n', '', '   ', 'x'.repeat(10_000)]) {
      cases.push([`commit_title ${JSON.stringify(title.slice(0, 20))}`, 'PUT', path, { commit_title: title }, invalid('commit_title')]);
    }
    cases.push(['commit_message of 70,000', 'PUT', path, { commit_message: 'x'.repeat(70_000) }, invalid('commit_message')]);
    cases.push(['commit_title with NUL', 'PUT', path, { commit_title: 'a\u0000b' }, invalid('commit_title', 'invalid_characters')]);
    cases.push(['commit_message with NUL', 'PUT', path, { commit_message: 'a\u0000b' }, invalid('commit_message', 'invalid_characters')]);
    cases.push([
      'commit_message a lone surrogate',
      'PUT',
      path,
      '{"commit_message": "\\udfff"}',
      invalid('commit_message', 'invalid_characters'),
    ]);
    cases.push(['sha with NUL', 'PUT', path, { sha: `${head.slice(0, 39)}\u0000` }, invalid('sha')]);
    expect(await run(cases)).toEqual([]);
  });

  test('POST /repos/:id/pulls/:number/reviews: wrong types, unknown events, null event, bad text, a huge body → 422', async () => {
    const path = `/repos/${target.id}/pulls/1/reviews`;
    const valid = { event: 'COMMENT', body: 'garbage' };
    const cases: Case[] = [];
    for (const [kind, value] of WRONG_TYPES) cases.push([`body: ${kind}`, 'POST', path, { ...valid, body: value }, invalid('body')]);
    for (const value of [5, true, { value: 'APPROVE' }, ['APPROVE']]) {
      cases.push([`event: ${JSON.stringify(value)}`, 'POST', path, { ...valid, event: value }, invalid('event')]);
    }
    for (const event of ['LGTM', '', 'approved', 'REQUEST-CHANGES', 'request changes', 'COMMENT ', 'COMMENT\u0000']) {
      cases.push([`event: ${JSON.stringify(event)}`, 'POST', path, { ...valid, event }, invalid('event')]);
    }
    cases.push(['event: null', 'POST', path, { ...valid, event: null }, invalid('event')]);
    cases.push(['no event', 'POST', path, { body: 'garbage' }, invalid('event')]);
    cases.push(['empty object', 'POST', path, {}, invalid('event')]);
    cases.push(['body with NUL', 'POST', path, { ...valid, body: 'a\u0000b' }, invalid('body', 'invalid_characters')]);
    cases.push(['body a lone surrogate', 'POST', path, '{"event": "COMMENT", "body": "\\ud83d"}', invalid('body', 'invalid_characters')]);
    cases.push(['body of 70,000', 'POST', path, { ...valid, body: 'x'.repeat(70_000) }, invalid('body')]);
    cases.push(['body of spaces to comment', 'POST', path, { event: 'COMMENT', body: '   ' }, invalid('body')]);
    cases.push(['no body to request changes', 'POST', path, { event: 'REQUEST_CHANGES', body: null }, invalid('body')]);
    expect(await run(cases)).toEqual([]);
  });
});

describe('paths', () => {
  /** Every route under one pull request, with a body that would be valid. */
  const pullRoutes = (repo: string, number: string): Array<[string, string, unknown]> => [
    ['GET', `/repos/${repo}/pulls/${number}`, undefined],
    ['PATCH', `/repos/${repo}/pulls/${number}`, { title: 'garbage' }],
    ['PUT', `/repos/${repo}/pulls/${number}/merge`, {}],
    ['GET', `/repos/${repo}/pulls/${number}/reviews`, undefined],
    ['POST', `/repos/${repo}/pulls/${number}/reviews`, { event: 'COMMENT', body: 'garbage' }],
    ['GET', `/repos/${repo}/pulls/${number}/commits`, undefined],
    ['GET', `/repos/${repo}/pulls/${number}/files`, undefined],
  ];

  test('a pull request number that is not one (or names none) is 404 not_found on every pull request route', async () => {
    const numbers = [
      '0',
      '-1',
      'abc',
      '1.5',
      '99999999999999',
      '%00',
      '2',
      '999999999',
      '2147483648',
      '1e0',
      '0x1',
      '+1',
      '%201',
      '1%00',
      '%2F',
      '9'.repeat(5000),
    ];
    const cases: Case[] = [];
    for (const number of numbers) {
      for (const [method, path, body] of pullRoutes(target.id, number)) cases.push([`(number ${number})`, method, path, body, NOT_FOUND]);
    }
    expect(await run(cases)).toEqual([]);
  });

  test('a repository id that is not an id (or names none) is 404 on every pull request route; NUL is 404 or 422', async () => {
    const ids = [
      'nope',
      '12345',
      `repo_${'0'.repeat(26)}`,
      'repo_',
      initial.pulls[0].id as string,
      initial.reviews[0].id as string,
      target.id.toUpperCase(),
      'garbage',
      encodeURIComponent('garbage/target'),
      '%20',
      'x'.repeat(5000),
    ];
    const cases: Case[] = [];
    const routesOf = (repo: string): Array<[string, string, unknown]> => [
      ['GET', `/repos/${repo}/pulls`, undefined],
      ['POST', `/repos/${repo}/pulls`, { title: 'garbage', head: 'topic' }],
      ...pullRoutes(repo, '1'),
    ];
    for (const id of ids)
      for (const [method, path, body] of routesOf(id)) cases.push([`(repository ${id})`, method, path, body, NOT_FOUND]);
    for (const [method, path, body] of routesOf('%00')) {
      cases.push(['(repository NUL)', method, path, body, [NOT_FOUND, { status: 422, code: 'validation_failed' }]]);
    }
    expect(await run(cases)).toEqual([]);
  });
});

describe('queries', () => {
  const lists = () => [
    `/repos/${target.id}/pulls`,
    `/repos/${target.id}/pulls/1/reviews`,
    `/repos/${target.id}/pulls/1/commits`,
    `/repos/${target.id}/pulls/1/files`,
  ];

  test('bad limit or offset on every list route is 400 invalid_pagination (or 422), never 5xx', async () => {
    const queries = [
      'limit=abc',
      'limit=-1',
      'offset=-1',
      'offset=1e3',
      'limit=1e3',
      'limit=1.5',
      'limit=10&limit=20',
      'offset=0&offset=1',
      'limit=',
      'offset=',
      'limit=%00',
      'offset=0x10',
      'offset=99999999999',
    ];
    const wants = [
      { status: 400, code: 'invalid_pagination' },
      { status: 422, code: 'validation_failed' },
    ];
    const cases: Case[] = [];
    for (const path of lists()) for (const query of queries) cases.push([`(${query})`, 'GET', `${path}?${query}`, undefined, wants]);
    expect(await run(cases)).toEqual([]);
  });

  test('the largest offset the API takes is an empty page, and a 30-digit limit is clamped to 100: not failures', async () => {
    for (const path of lists()) {
      for (const prefix of PREFIXES) {
        const clamped = await owner.get(`${prefix}${path}?limit=${'9'.repeat(30)}`);
        expect({ path, status: clamped.status, limit: clamped.body?.limit }).toEqual({ path, status: 200, limit: 100 });
        const res = await owner.get(`${prefix}${path}?offset=2147483647&limit=100`);
        expect({ path, status: res.status, data: res.body?.data, offset: res.body?.offset }).toEqual({
          path,
          status: 200,
          data: [],
          offset: 2147483647,
        });
      }
    }
  });

  test('an unknown state filter is 422 naming state; state[]=open is never a 5xx (an unknown parameter, or a 4xx)', async () => {
    const path = `/repos/${target.id}/pulls`;
    const cases: Case[] = [];
    for (const query of ['state=weird', 'state=', 'state=open&state=closed', 'state=%00', 'state=opened', `state=${'x'.repeat(5000)}`]) {
      cases.push([`(${query})`, 'GET', `${path}?${query}`, undefined, invalid('state')]);
    }
    expect(await run(cases)).toEqual([]);

    const defaultListing = (await owner.get(path)).body;
    for (const prefix of PREFIXES) {
      const res = await owner.get(`${prefix}${path}?state[]=open`);
      // With the simple query parser `state[]` is another parameter's name: ignored like any unknown one, or refused.
      if (res.status >= 400) {
        expect(res.status).toBeLessThan(500);
        expect(res.body.error.code).toEqual(expect.any(String));
      } else {
        expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: defaultListing });
      }
    }
  });
});

test('wrong methods on the pull request routes are 405 method_not_allowed with Allow', async () => {
  const pulls = `/repos/${target.id}/pulls`;
  const cases: Array<[string, string, string]> = [
    ['PUT', pulls, 'GET, HEAD, POST'],
    ['DELETE', pulls, 'GET, HEAD, POST'],
    ['DELETE', `${pulls}/1`, 'GET, HEAD, PATCH'],
    ['POST', `${pulls}/1`, 'GET, HEAD, PATCH'],
    ['PUT', `${pulls}/1`, 'GET, HEAD, PATCH'],
    ['DELETE', `${pulls}/abc`, 'GET, HEAD, PATCH'],
    ['POST', `${pulls}/1/merge`, 'PUT'],
    ['GET', `${pulls}/1/merge`, 'PUT'],
    ['DELETE', `${pulls}/1/merge`, 'PUT'],
    ['PUT', `${pulls}/1/reviews`, 'GET, HEAD, POST'],
    ['DELETE', `${pulls}/1/reviews`, 'GET, HEAD, POST'],
    ['POST', `${pulls}/1/commits`, 'GET, HEAD'],
    ['PATCH', `${pulls}/1/files`, 'GET, HEAD'],
  ];
  const failures: object[] = [];
  for (const [method, path, allow] of cases) {
    for (const prefix of PREFIXES) {
      const res = await owner.request(method, `${prefix}${path}`, method === 'GET' || method === 'DELETE' ? {} : { body: { title: 'x' } });
      const failure = judge(`${method} ${prefix}${path}`, res, { status: 405, code: 'method_not_allowed' });
      if (failure || res.headers.get('allow') !== allow)
        failures.push({ ...failure, case: `${method} ${prefix}${path}`, allow: res.headers.get('allow'), want: allow });
    }
  }
  expect(failures).toEqual([]);
});

test('after all of it: pull requests, reviews, branch tips and the outbox are exactly as before, and nothing failed inside', async () => {
  expect(initial.pulls).toHaveLength(1);
  expect(initial.reviews).toHaveLength(1);
  expect(await snapshot()).toEqual(initial);
  const errors = server.logs().filter((line) => typeof line.level === 'number' && line.level >= 50);
  expect(errors.map((line) => line.msg)).toEqual([]);
});

test('unknown body fields are ignored on every body route (a repository of its own)', async () => {
  const extras = await PullRepo.create(server, git, owner, 'extras');
  await extras.commit('one', 'one', { 'one.txt': 'one\n' });
  await extras.push(['one']);
  const pulls = `/repos/${extras.id}/pulls`;

  const opened = await owner.post(pulls, {
    title: 'extras',
    head: 'one',
    bogus: 1,
    repository_id: 'nope',
    number: 77,
    state: 'closed',
    merged: true,
    user: { login: 'critic' },
    nested: { deep: ['a\u0000b'] },
  });
  expect({ status: opened.status, body: opened.body }).toMatchObject({
    status: 201,
    body: { number: 1, state: 'open', merged: false, draft: false, repository_id: extras.id, user: { login: owner.login } },
  });

  const renamed = await owner.patch(`${pulls}/1`, { title: 'renamed', head: 'other', number: 99, merged: true, nested: { a: [1] } });
  expect({ status: renamed.status, body: renamed.body }).toMatchObject({
    status: 200,
    body: { number: 1, title: 'renamed', head: { ref: 'one' }, merged: false },
  });

  // Names every JavaScript object has, and text no column can hold, in fields the API does not have.
  const prototypeNames = await owner.request('PATCH', `${pulls}/1`, {
    raw: '{"body": "b", "constructor": 1, "toString": "x", "valueOf": [], "hasOwnProperty": {}, "__proto__": {"title": "p"}, "junk": "\\ud800"}',
    headers: { 'content-type': 'application/json' },
  });
  expect({ status: prototypeNames.status, body: prototypeNames.body }).toMatchObject({
    status: 200,
    body: { title: 'renamed', body: 'b' },
  });

  const review = await critic.post(`${pulls}/1/reviews`, { event: 'approve', body: 'ok', state: 'dismissed', commit_id: 'x', extra: [1] });
  expect({ status: review.status, body: review.body }).toMatchObject({
    status: 201,
    body: { state: 'approved', user: { login: critic.login }, commit_id: opened.body.head.sha },
  });

  const merged = await owner.put(`${pulls}/1/merge`, { method: 'merge', bogus: true, number: 5, repository_id: 'nope', merged: false });
  expect({ status: merged.status, body: merged.body }).toEqual({
    status: 200,
    body: { merged: true, sha: expect.stringMatching(/^[0-9a-f]{40}$/), message: 'Pull request successfully merged' },
  });
  expect(await extras.remoteSha('main')).toBe(merged.body.sha);
});
