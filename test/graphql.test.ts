import { adminClient, createUser, type Client } from './support/client.js';
import { CairnServer } from './support/server.js';

let server: CairnServer;
let admin: Client;
let user: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  server = CairnServer.sharedServer();
  admin = adminClient(server);
  user = await createUser(admin, 'gq');
});
afterAll(() => server.destroy());

describe('GraphQL API', () => {
  test('the fixed GraphQL signatures exist with their argument and field types', async () => {
    const { __schema } =
      await user.gql(`{ __schema { mutationType { fields { name args { name type { kind name ofType { kind name } } } type { kind name ofType { name } } } }
      queryType { fields { name type { kind ofType { name } } } } } }`);
    const mutation = (name: string) => __schema.mutationType.fields.find((f: { name: string }) => f.name === name);
    expect(mutation('createUser').args).toEqual([
      { name: 'input', type: { kind: 'NON_NULL', name: null, ofType: { kind: 'INPUT_OBJECT', name: 'CreateUserInput' } } },
    ]);
    expect(mutation('createUser').type).toEqual({ kind: 'NON_NULL', name: null, ofType: { name: 'User' } });
    expect(mutation('createAccessToken').type.ofType.name).toBe('CreatedAccessToken');
    expect(mutation('revokeAccessToken').args[0]).toMatchObject({ name: 'id', type: { kind: 'NON_NULL', ofType: { name: 'ID' } } });
    expect(mutation('revokeAccessToken').type.ofType.name).toBe('Boolean');
    const viewer = __schema.queryType.fields.find((f: { name: string }) => f.name === 'viewer');
    expect(viewer.type).toEqual({ kind: 'NON_NULL', ofType: { name: 'User' } });
  });

  test("an answer is the viewer's own and is not stored by caches, over POST and GET alike", async () => {
    const auth = { authorization: `Bearer ${user.token}` };
    const posted = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ viewer { login } }' }),
    });
    expect(posted.status).toBe(200);
    expect(posted.headers.get('cache-control')).toBe('no-store');
    const got = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ viewer { login } }')}`, { headers: auth });
    expect(await got.json()).toEqual({ data: { viewer: { login: 'gq' } } });
    expect(got.headers.get('cache-control')).toBe('no-store');
  });

  test('repositories and issues through GraphQL, with the same data as REST', async () => {
    const { createRepository } = await user.gql(
      'mutation { createRepository(input: {name: "gql-repo", private: true, autoInit: true}) { id fullName empty private cloneUrl owner { login } } }',
    );
    expect(createRepository).toMatchObject({ fullName: 'gq/gql-repo', empty: false, private: true, owner: { login: 'gq' } });
    const { createIssue } = await user.gql(
      'mutation($id: ID!) { createIssue(input: {repositoryId: $id, title: "via graphql"}) { number state } }',
      { id: createRepository.id },
    );
    expect(createIssue).toEqual({ number: 1, state: 'OPEN' });
    const { repository } = await user.gql(
      'query($id: ID!) { repository(id: $id) { openIssuesCount issues(state: ALL, limit: 5) { totalCount limit nodes { title user { login } } } } }',
      { id: createRepository.id },
    );
    expect(repository).toEqual({
      openIssuesCount: 1,
      issues: { totalCount: 1, limit: 5, nodes: [{ title: 'via graphql', user: { login: 'gq' } }] },
    });
    const rest = await user.get(`/repos/${createRepository.id}`);
    expect(rest.body.clone_url).toBe(createRepository.cloneUrl);
  });

  test('errors carry codes and no stack traces; a private repository is NOT_FOUND to strangers', async () => {
    const { id } = (await user.post('/repos', { name: 'hidden', private: true })).body;
    const stranger = await createUser(admin, 'gq-stranger');
    const res = await stranger.graphql('query($id: ID!) { repository(id: $id) { name } }', { id });
    expect(res.data).toEqual({ repository: null });
    expect(res.errors![0]).toMatchObject({ message: 'repository not found', path: ['repository'], extensions: { code: 'NOT_FOUND' } });
    expect(JSON.stringify(res)).not.toMatch(/stacktrace|at .*\.js/);
    const invalid = await user.graphql('mutation { createRepository(input: {name: "bad name"}) { id } }');
    expect(invalid.errors![0].extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ field: 'name', code: 'invalid_format', message: expect.any(String) }],
    });
  });

  test('malformed queries are 400-class errors, not 500', async () => {
    for (const query of ['{ viewer { id ', '{ nope }', '{ viewer { id } } { viewer { id } }']) {
      const res = await user.graphql(query);
      expect(res.status).toBe(400);
      expect(res.errors![0].extensions.code).toMatch(/GRAPHQL_(PARSE|VALIDATION)_FAILED/);
    }
    const notJson = await user.request('POST', '/graphql', { raw: '{"query": ', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
  });

  test('depth limit', async () => {
    const deep = `{ viewer { id } repositories { nodes { owner { login } issues { nodes { user { login } } } } } ${'a: viewer { id }'.repeat(1)} }`;
    expect((await user.graphql(deep)).errors).toBeUndefined();
    let nested = '__typename';
    for (let i = 0; i < 15; i++) nested = `ofType { ${nested} }`;
    const tooDeep = await user.graphql(`{ __schema { types { fields { type { ${nested} } } } } }`);
    expect(tooDeep.errors![0].message).toMatch(/depth \d+ exceeds the limit/);
    expect(tooDeep.status).toBe(400);
  });

  test('cost limit: large fan-outs are refused before they run', async () => {
    const res = await user.graphql(
      '{ repositories(limit: 100) { nodes { issues(limit: 100) { nodes { user { login } title body commentCount } } collaborators { user { login } } } } }',
    );
    expect(res.errors![0].message).toMatch(/query cost \d+ exceeds the limit/);
    expect(res.errors![0].extensions.code).toBe('BAD_REQUEST');
    const ok = await user.graphql('{ repositories(limit: 10) { nodes { issues(limit: 10) { nodes { title } } } } }');
    expect(ok.errors).toBeUndefined();
  });
});
