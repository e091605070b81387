import { adminClient, createUser, type Client } from './support/client.js';
import { CairnServer } from './support/server.js';

/**
 * REST errors in the REST caller's words: fields by their snake_case body names, the values an
 * enum takes as REST sends them (lower case), one detail per wrong field (`missing` or `invalid`),
 * the authentication scheme the API expects, why a path number is no number, and query
 * parameters the endpoint does not read refused instead of ignored. None of it speaks GraphQL,
 * and none of these requests changes anything.
 */

let server: CairnServer;
let owner: Client & { login: string };
let repoId: string;

/** What a GraphQL error says and a REST caller never should see. */
const GRAPHQL_WORDS = /String!|Boolean!|\benum\b|Variable "|\$input|cannot represent|of required type|Int!/;

beforeAll(async () => {
  server = CairnServer.sharedServer();
  owner = await createUser(adminClient(server), 'rest-errors-owner', ['repo', 'admin:repo_hook']);
  const repo = await owner.post('/repos', { name: 'rest-errors', auto_init: true });
  expect(repo.status).toBe(201);
  repoId = repo.body.id;
  expect((await owner.post(`/repos/${repoId}/issues`, { title: 'first', body: 'as created' })).status).toBe(201);
});

/** Asserts a 422 whose details are exactly `expected` (field, code) and whose words are REST's. */
function expectValidation(response: { status: number; body: any }, expected: Array<{ field: string; code: string }>) {
  expect(response.status).toBe(422);
  expect(response.body.error.code).toBe('validation_failed');
  expect(response.body.error.details.map(({ field, code }: { field: string; code: string }) => ({ field, code }))).toEqual(expected);
  expect(JSON.stringify(response.body)).not.toMatch(GRAPHQL_WORDS);
}

describe('a wrong body is answered in REST terms', () => {
  test('a missing required field is `missing`, named as the body names it', async () => {
    const before = (await owner.get('/repos?owner=rest-errors-owner')).body.total;
    const response = await owner.post('/repos', {});
    expectValidation(response, [{ field: 'name', code: 'missing' }]);
    expect(response.body.error.message).toBe('Validation failed: name is required');
    expect((await owner.get('/repos?owner=rest-errors-owner')).body.total).toBe(before);
  });

  test('an unknown enum value lists the values REST takes, in lower case', async () => {
    const response = await owner.patch(`/repos/${repoId}/issues/1`, { state: 'bogus' });
    expectValidation(response, [{ field: 'state', code: 'invalid' }]);
    expect(response.body.error.details[0].message).toBe('state must be one of: open, closed');
    const numeric = await owner.patch(`/repos/${repoId}/issues/1`, { state: 5, state_reason: 'nope' });
    expectValidation(numeric, [
      { field: 'state', code: 'invalid' },
      { field: 'state_reason', code: 'invalid' },
    ]);
    expect(numeric.body.error.details[1].message).toMatch(/^state_reason must be one of: completed, not_planned/);
    expect((await owner.get(`/repos/${repoId}/issues/1`)).body.state).toBe('open');
  });

  test('a wrong type says what the field takes; every wrong field has its own detail', async () => {
    const repo = await owner.patch(`/repos/${repoId}`, { private: 'yes', default_branch: 7 });
    expectValidation(repo, [
      { field: 'private', code: 'invalid' },
      { field: 'default_branch', code: 'invalid' },
    ]);
    expect(repo.body.error.details.map((d: { message: string }) => d.message)).toEqual([
      'private must be true or false',
      'default_branch must be a string',
    ]);
    expect((await owner.get(`/repos/${repoId}`)).body.private).toBe(false);

    const pull = await owner.post(`/repos/${repoId}/pulls`, { title: 3 });
    expectValidation(pull, [
      { field: 'title', code: 'invalid' },
      { field: 'head', code: 'missing' },
    ]);
    expect(pull.body.error.message).toBe('Validation failed: title must be a string; head is required');
  });

  test('an item of a list is named by its index', async () => {
    const response = await owner.post(`/repos/${repoId}/issues/1/labels`, { labels: ['bug', 1] });
    expectValidation(response, [{ field: 'labels[1]', code: 'invalid' }]);
    expect(response.body.error.details[0].message).toBe('labels[1] must be a string');
    expect((await owner.get(`/repos/${repoId}/issues/1/labels`)).body).toEqual([]);
  });
});

describe('authentication says which scheme the API expects', () => {
  const token = () => owner.token;

  test.each([
    ['Token', () => `Token ${token()}`, /not the "Token" scheme/],
    [
      'Basic',
      () => `Basic ${Buffer.from(`x:${token()}`).toString('base64')}`,
      /not the "Basic" scheme \(Basic authentication is for git over HTTP\)/,
    ],
    ['none', () => undefined, /a bearer token is required: send "Authorization: Bearer <token>"/],
    ['a wrong bearer', () => 'Bearer cairn_nope', /the token is malformed, unknown, revoked or expired/],
  ])('%s', async (_name, header, message) => {
    const value = header();
    const response = await owner.get(`/repos/${repoId}`, { headers: { authorization: value }, anonymous: value === undefined });
    expect(response.status).toBe(401);
    expect(response.body.error.code).toBe('unauthorized');
    expect(response.body.error.message).toMatch(message);
    expect(response.text).not.toContain(token()); // the token is never echoed
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });
});

describe('a path number that is not one', () => {
  test.each(['abc', '0', '-1', '1.5', '99999999999'])('%s is 404 saying the number is not one', async (number) => {
    for (const path of [`/repos/${repoId}/issues/${number}`, `/repos/${repoId}/pulls/${number}`]) {
      const response = await owner.get(path);
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('not_found');
      expect(response.body.error.message).toBe(`"${number}" is not an issue or pull request number: they are whole numbers from 1`);
    }
  });

  test('a number that is one but names nothing is a plain 404', async () => {
    const response = await owner.get(`/repos/${repoId}/issues/4242`);
    expect(response.status).toBe(404);
    expect(response.body.error.message).not.toMatch(/is not an issue or pull request number/);
  });
});

describe('query parameters are refused, not ignored, when the endpoint does not read them', () => {
  test('paging a list that is not paged is 400 naming the parameter', async () => {
    for (const path of ['/user/webhooks?limit=abc', `/repos/${repoId}/webhooks?limit=5`, `/repos/${repoId}/collaborators?offset=1`]) {
      const response = await owner.get(path);
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('bad_request');
      expect(response.body.error.message).toMatch(/^unknown query parameter (limit|offset): it takes none$/);
      expect(response.body.error.details).toEqual([expect.objectContaining({ code: 'unknown' })]);
    }
  });

  test('a misspelt parameter on a paged list names it and what the endpoint takes', async () => {
    const response = await owner.get(`/repos/${repoId}/issues?per_page=5&stat=closed`);
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('bad_request');
    expect(response.body.error.message).toMatch(/^unknown query parameter per_page, stat: it takes state, .*limit, offset/);
    expect(response.body.error.details.map((d: { field: string }) => d.field)).toEqual(['per_page', 'stat']);
  });

  test('an invalid value of a parameter the endpoint reads is answered as before', async () => {
    expect((await owner.get('/repos?limit=abc')).body.error.code).toBe('invalid_pagination');
    const state = await owner.get(`/repos/${repoId}/issues?state=bogus`);
    expectValidation(state, [{ field: 'state', code: 'invalid' }]);
    expect(state.body.error.details[0].message).toBe('state must be one of: open, closed, all');
  });

  test('a write with an unknown parameter changes nothing', async () => {
    const response = await owner.post(`/repos/${repoId}/issues?draft=1`, { title: 'not created' });
    expect(response.status).toBe(400);
    const list = await owner.get(`/repos/${repoId}/issues?state=all`);
    expect(list.body.data.map((issue: { title: string }) => issue.title)).not.toContain('not created');
  });
});
