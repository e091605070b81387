import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { adminClient, Client, createToken, createUser, type ApiResponse } from './support/client.js';
import { CairnServer, ROOT, sleep } from './support/server.js';

/**
 * Rate limits bind the user, not the token: all tokens of one user share the hourly and creation
 * budgets, a user holds at most 100 active tokens, a token never mints one that outlives it, and a
 * request refused before it runs still pays for what it cost.
 */
const run = promisify(execFile);

/** The issue's numbers: 30 requests (REST) or points (GraphQL) per hour. */
const LIMITS = { CAIRN_RATE_LIMIT: '30', CAIRN_RATE_LIMIT_CREATE: '1000' };

let limited: CairnServer;
/** Another process on the same database, with the test suite's generous limits: set-up and the token rules go through it. */
let setup: CairnServer;
let admin: Client;

beforeAll(async () => {
  limited = await CairnServer.start({ env: LIMITS });
  setup = await CairnServer.start({ shareDatabaseWith: limited });
  admin = adminClient(setup);
});
afterAll(async () => {
  await setup.destroy(true); // the database is the limited server's
  await limited.destroy();
});

const MINT = `mutation($input: CreateAccessTokenInput!) {
  createAccessToken(input: $input) { token accessToken { id expiresAt } }
}`;

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const remaining = (res: { headers: Headers }) => Number(res.headers.get('x-ratelimit-remaining'));
const used = (res: { headers: Headers }) => Number(res.headers.get('x-ratelimit-used'));

/** A user made through the set-up process, acting on `server` with a token that has spent nothing there. */
async function freshUser(login: string, server: CairnServer, options: { expiresAt?: string } = {}) {
  const user = await createUser(admin, login, ['repo'], options);
  return Object.assign(new Client(server, user.token), { login, userId: user.userId });
}

/** The user's tokens that still work (neither revoked nor expired), as the API lists them. */
async function activeTokens(login: string): Promise<number> {
  type Page = { userAccessTokens: { hasMore: boolean; nodes: Array<{ revokedAt: string | null; expiresAt: string | null }> } };
  const tokens: Page['userAccessTokens']['nodes'] = [];
  for (let offset = 0; ; offset += 100) {
    const { userAccessTokens } = await admin.gql<Page>(
      'query($login: String, $offset: Int) { userAccessTokens(login: $login, limit: 100, offset: $offset) { hasMore nodes { revokedAt expiresAt } } }',
      { login, offset },
    );
    tokens.push(...userAccessTokens.nodes);
    if (!userAccessTokens.hasMore) break;
  }
  const now = Date.now();
  return tokens.filter((t) => !t.revokedAt && (!t.expiresAt || Date.parse(t.expiresAt) > now)).length;
}

describe('one budget per user', () => {
  test('a token that mints 5 tokens, each minting 5 more, gets 30 answers with all of them together, REST and GraphQL', async () => {
    const root = await freshUser('chain', limited);
    let answered = 0;
    let refused = 0;
    const tally = (status: number) => (status === 429 ? refused++ : answered++);
    const mint = async (parent: Client): Promise<Client | null> => {
      const res = await parent.graphql(MINT, { input: { name: 'child', scopes: ['repo'] } });
      tally(res.status);
      const token = (res.data as { createAccessToken?: { token: string } } | undefined)?.createAccessToken?.token;
      return token ? new Client(limited, token) : null;
    };
    const present = (clients: Array<Client | null>) => clients.filter((c): c is Client => c !== null);

    const children = present(await Promise.all(range(5).map(() => mint(root))));
    const grandchildren = present(await Promise.all(children.flatMap((child) => range(5).map(() => mint(child)))));
    // Minting spent the user's budget; none of the tokens it made has one of its own.
    for (const token of [root, ...children, ...grandchildren]) {
      tally((await token.get('/repos')).status);
      tally((await token.graphql('{ viewer { login } }')).status);
    }
    // All 30 mints landed (the budget is the user's, so that is all it buys); every request after them was refused.
    expect({ answered, refused, tokens: 1 + children.length + grandchildren.length }).toEqual({
      answered: 30,
      refused: 2 * 31,
      tokens: 31,
    });
    const last = await grandchildren.at(-1)!.get('/repos');
    expect(last.status).toBe(429);
    expect(last.body.error.code).toBe('rate_limited');
    expect(last.headers.get('x-ratelimit-used')).toBe('30');
  });
});

describe('requests refused before they run are charged', () => {
  /** Each refused the way it was before, and charged 1; none of the mutations in them may have run. */
  const graphqlRefusals: Array<[string, (user: Client) => Promise<ApiResponse>, number]> = [
    [
      'a document that does not parse',
      (u) => u.post('/graphql', { query: 'mutation { createRepository(input: {name: "refused-parse"}) { id }' }),
      400,
    ],
    [
      'a document that does not validate',
      (u) => u.post('/graphql', { query: 'mutation { createRepository(input: {name: "refused-validate", nope: 1}) { id } }' }),
      400,
    ],
    [
      'more than 10 mutation fields',
      (u) =>
        u.post('/graphql', {
          query: `mutation { ${range(11)
            .map((i) => `r${i}: createRepository(input: {name: "refused-many-${i}"}) { id }`)
            .join(' ')} }`,
        }),
      400,
    ],
    [
      'depth past 12',
      (u) => u.post('/graphql', { query: `{ __type(name: "Query") { ${'ofType { '.repeat(14)}name${' }'.repeat(14)} } }` }),
      400,
    ],
    [
      '31 aliases',
      (u) =>
        u.post('/graphql', {
          query: `{ ${range(31)
            .map((i) => `a${i}: viewer { login }`)
            .join(' ')} }`,
        }),
      400,
    ],
    ['more than 1,000 tokens', (u) => u.post('/graphql', { query: `{ ${'__typename '.repeat(1200)} }` }), 400],
    [
      'a cost past 20,000',
      (u) =>
        u.post('/graphql', {
          query:
            'mutation { createRepository(input: {name: "refused-cost"}) { pullRequests(limit: 100) { nodes { reviews(limit: 100) { nodes { id } } } } } }',
        }),
      400,
    ],
    ['an operation the document lacks', (u) => u.post('/graphql', { query: 'query A { viewer { login } }', operationName: 'B' }), 400],
    [
      'a variable of the wrong type',
      (u) => u.post('/graphql', { query: 'mutation($n: String!) { createRepository(input: {name: $n}) { id } }', variables: { n: 5 } }),
      400,
    ],
    [
      'a mutation over GET',
      (u) => u.get(`/graphql?query=${encodeURIComponent('mutation { createRepository(input: {name: "refused-get"}) { id } }')}`),
      405,
    ],
    ['no query', (u) => u.post('/graphql', {}), 400],
    [
      'a body that is not JSON',
      (u) => u.request('POST', '/graphql', { raw: '{"query": ', headers: { 'content-type': 'application/json' } }),
      400,
    ],
    [
      'a body over 1 MiB',
      (u) =>
        u.request('POST', '/graphql', {
          raw: `{"query": "{ viewer { login } } #${'x'.repeat(1_100_000)}"}`,
          headers: { 'content-type': 'application/json' },
        }),
      413,
    ],
  ];

  test('GraphQL: each refusal keeps its answer and costs 1 point; once the budget is spent, the answer is 429 and costs nothing', async () => {
    const user = await freshUser('refused-gql', limited);
    let before = (await user.graphql('{ viewer { login } }').then(() => user.get('/repos'))).headers;
    for (const [name, send, status] of graphqlRefusals) {
      const res = await send(user);
      expect({ name, status: res.status }).toEqual({ name, status });
      expect({ name, remaining: remaining(res) }).toEqual({ name, remaining: remaining({ headers: before }) - 1 });
      expect(res.headers.get('x-ratelimit-resource')).toBe('core');
      before = res.headers;
    }
    // 2 points before, 13 refusals: 15 left. Spend them, then a refusal finds the budget spent.
    expect(remaining({ headers: before })).toBe(15);
    for (let i = 0; i < 15; i++) expect((await user.get('/repos')).status).toBe(200);
    for (const [name, send] of graphqlRefusals.slice(0, 3)) {
      const res = await send(user);
      expect({ name, status: res.status }).toEqual({ name, status: 429 });
      expect(used(res)).toBe(30);
    }
    // Nothing ran.
    const repos = await admin.get('/repos?owner=refused-gql');
    expect(repos.body.total).toBe(0);
  });

  test('REST: malformed requests (bad JSON, 415, 422, 413) are answered as before and cost 1 each', async () => {
    const user = await freshUser('refused-rest', limited);
    const json = { 'content-type': 'application/json' };
    const refusals: Array<[string, () => Promise<ApiResponse>, number, string]> = [
      ['bad JSON', () => user.request('POST', '/repos', { raw: '{"name": ', headers: json }), 400, 'invalid_json'],
      [
        'not JSON',
        () => user.request('POST', '/repos', { raw: 'name=x', headers: { 'content-type': 'text/plain' } }),
        415,
        'unsupported_media_type',
      ],
      ['a wrong type', () => user.post('/repos', { name: 5 }), 422, 'validation_failed'],
      ['an invalid name', () => user.post('/repos', { name: 'no spaces here' }), 422, 'validation_failed'],
      [
        'over 1 MiB',
        () => user.request('POST', '/repos', { raw: `{"name": "${'x'.repeat(1_100_000)}"}`, headers: json }),
        413,
        'payload_too_large',
      ],
    ];
    let expected = 30;
    for (const [name, send, status, code] of refusals) {
      const res = await send();
      expected -= 1;
      expect({ name, status: res.status, code: res.body?.error?.code, remaining: remaining(res) }).toEqual({
        name,
        status,
        code,
        remaining: expected,
      });
    }
    expect((await admin.get('/repos?owner=refused-rest')).body.total).toBe(0);
  });
});

describe('at most 100 active tokens per user', () => {
  const mintMany = (client: Client, count: number, prefix: string) =>
    client.graphql(
      `mutation { ${range(count)
        .map((i) => `t${i}: createAccessToken(input: {name: "${prefix}-${i}", scopes: ["repo"]}) { accessToken { id } }`)
        .join(' ')} }`,
    );

  test('the 101st is refused (422, too_many_tokens) for the user and a site admin alike; revoking or expiry frees a place', async () => {
    const user = await freshUser('capped', setup); // 1 token
    for (let batch = 0; batch < 10; batch++) {
      const res = await mintMany(user, batch < 9 ? 10 : 9, `batch${batch}`);
      expect(res.errors).toBeUndefined();
    }
    expect(await activeTokens('capped')).toBe(100);

    const own = await user.graphql(MINT, { input: { name: 'one too many', scopes: ['repo'] } });
    expect(own.status).toBe(200);
    expect(own.data).toBeNull();
    expect(own.errors?.[0]?.extensions).toEqual({
      code: 'VALIDATION_FAILED',
      details: [{ field: 'login', code: 'too_many_tokens', message: expect.stringMatching(/100 active tokens/) }],
    });
    const byAdmin = await admin.graphql(MINT, { input: { login: 'capped', name: 'from the admin', scopes: ['repo'] } });
    expect(byAdmin.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ code: 'too_many_tokens' }] });
    expect(await activeTokens('capped')).toBe(100);

    // Revoking one frees its place, once.
    const { accessTokens } = await user.gql<{ accessTokens: Array<{ id: string }> }>('{ accessTokens { id } }');
    await user.gql('mutation($id: ID!) { revokeAccessToken(id: $id) }', { id: accessTokens[0]!.id });
    expect((await user.graphql(MINT, { input: { name: 'in its place', scopes: ['repo'] } })).errors).toBeUndefined();
    expect((await user.graphql(MINT, { input: { name: 'and one more', scopes: ['repo'] } })).errors?.[0]?.extensions.code).toBe(
      'VALIDATION_FAILED',
    );

    // An expired token holds no place.
    await user.gql('mutation($id: ID!) { revokeAccessToken(id: $id) }', { id: accessTokens[1]!.id });
    const soon = new Date(Date.now() + 4000);
    expect(
      (await user.graphql(MINT, { input: { name: 'short-lived', scopes: ['repo'], expiresAt: soon.toISOString() } })).errors,
    ).toBeUndefined();
    expect((await user.graphql(MINT, { input: { name: 'refused', scopes: ['repo'] } })).errors?.[0]?.extensions.code).toBe(
      'VALIDATION_FAILED',
    );
    // Time has to pass here: the token must hold its place until its expiry and not after. 4 s
    // leave room for the two mints above on a busy machine; then the test waits only until the expiry instant has passed.
    await sleep(Math.max(0, soon.getTime() - Date.now()) + 20);
    expect((await user.graphql(MINT, { input: { name: 'after it expired', scopes: ['repo'] } })).errors).toBeUndefined();
    expect(await activeTokens('capped')).toBe(100);
  });

  test('creations racing for the last place: exactly one lands, through either process', async () => {
    const user = await freshUser('racing', setup);
    for (let batch = 0; batch < 10; batch++) {
      expect((await mintMany(user, batch < 9 ? 10 : 8, `batch${batch}`)).errors).toBeUndefined();
    }
    expect(await activeTokens('racing')).toBe(99);
    const onLimited = new Client(limited, user.token);
    // (Not the admin on the limited process: its budget there is what the set-up process has spent of it.)
    const racers = [user, onLimited, admin, user, onLimited, admin];
    const results = await Promise.all(
      racers.map((client, i) => client.graphql(MINT, { input: { login: 'racing', name: `racer-${i}`, scopes: ['repo'] } })),
    );
    const landed = results.filter((r) => r.data?.createAccessToken);
    const refused = results.filter((r) => r.errors?.[0]?.extensions.details?.[0]?.code === 'too_many_tokens');
    expect({ landed: landed.length, refused: refused.length }).toEqual({ landed: 1, refused: racers.length - 1 });
    expect(await activeTokens('racing')).toBe(100);
  });
});

describe('a token never mints one that outlives it', () => {
  test('a token expiring in 5 minutes: no expiresAt inherits its expiry; a later one is refused; an earlier one is fine', async () => {
    const expiry = new Date(Date.now() + 5 * 60_000);
    const user = await freshUser('short', setup, { expiresAt: expiry.toISOString() });
    const count = async () => (await user.gql<{ accessTokens: unknown[] }>('{ accessTokens { id } }')).accessTokens.length;
    const tokensBefore = await count();

    const inherited = await user.gql(MINT, { input: { name: 'no expiry asked', scopes: ['repo'] } });
    expect(Date.parse(inherited.createAccessToken.accessToken.expiresAt)).toBe(expiry.getTime());

    for (const expiresAt of [new Date(expiry.getTime() + 1000).toISOString(), new Date(Date.now() + 3_600_000).toISOString()]) {
      const later = await user.graphql(MINT, { input: { name: 'longer-lived', scopes: ['repo'], expiresAt } });
      expect(later.data).toBeNull();
      expect(later.errors?.[0]?.extensions).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ field: 'expiresAt', code: 'outlives_caller_token', message: expect.stringContaining(expiry.toISOString()) }],
      });
    }
    const earlier = new Date(Date.now() + 2 * 60_000).toISOString();
    const shorter = await user.gql(MINT, { input: { name: 'shorter', scopes: ['repo'], expiresAt: earlier } });
    expect(shorter.createAccessToken.accessToken.expiresAt).toBe(earlier);
    expect(await count()).toBe(tokensBefore + 2);

    // The inherited token is bound the same way: the chain never escapes the first expiry.
    const child = new Client(setup, inherited.createAccessToken.token);
    const grandchild = await child.graphql(MINT, { input: { name: 'never', scopes: ['repo'], expiresAt: '2099-01-01T00:00:00.000Z' } });
    expect(grandchild.errors?.[0]?.extensions.details?.[0]?.field).toBe('expiresAt');
    const bounded = await child.gql(MINT, { input: { name: 'bounded', scopes: ['repo'] } });
    expect(Date.parse(bounded.createAccessToken.accessToken.expiresAt)).toBe(expiry.getTime());
  });

  test('a token without expiry may mint anything; a site admin’s expiring token binds what it mints for others too', async () => {
    await freshUser('minted-for', setup);
    const forever = await admin.gql(MINT, { input: { login: 'minted-for', name: 'forever', scopes: ['repo'] } });
    expect(forever.createAccessToken.accessToken.expiresAt).toBeNull();

    const expiry = new Date(Date.now() + 5 * 60_000);
    const shortAdmin = new Client(setup, await createToken(admin, 'admin', ['admin'], expiry.toISOString()));
    const inherited = await shortAdmin.gql(MINT, { input: { login: 'minted-for', name: 'inherits', scopes: ['repo'] } });
    expect(Date.parse(inherited.createAccessToken.accessToken.expiresAt)).toBe(expiry.getTime());
    const later = await shortAdmin.graphql(MINT, {
      input: { login: 'minted-for', name: 'too long', scopes: ['repo'], expiresAt: new Date(expiry.getTime() + 60_000).toISOString() },
    });
    expect(later.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ field: 'expiresAt' }] });
  });

  test('the CLI goes through the same rule and prints the effective expiry', async () => {
    const expiry = new Date(Date.now() + 5 * 60_000);
    const user = await freshUser('cli-short', setup, { expiresAt: expiry.toISOString() });
    const cli = (args: string[]) =>
      run(process.execPath, [path.join(ROOT, 'dist/src/cli.js'), ...args, '--url', setup.url, '--token', user.token]);
    const created = await cli(['token', 'create', '--name', 'from-cli', '--scopes', 'repo']);
    const lines = created.stdout.trim().split('\n');
    expect(lines[0]).toContain(`expires ${expiry.toISOString()}`);
    expect((await new Client(setup, lines.at(-1)!).gql('{ viewer { login } }')).viewer.login).toBe('cli-short');
    const refused = await cli(['token', 'create', '--name', 'x', '--scopes', 'repo', '--expires-at', '2099-01-01T00:00:00Z']).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining('expiresAt') });
  });
});
