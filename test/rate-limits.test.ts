import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { adminClient, Client, createToken, createUser } from './support/client.js';
import { eventually } from './support/receiver.js';
import { CairnServer, query, sleep } from './support/server.js';

const run = promisify(execFile);

/** Small budgets so a test can spend them: 10 requests per hour, 3 creations per minute. */
const LIMITS = { CAIRN_RATE_LIMIT: '10', CAIRN_RATE_LIMIT_CREATE: '3', CAIRN_RATE_LIMIT_GIT_ANONYMOUS: '4' };

let server: CairnServer;
/** Another process on the same database, with the test suite's generous limits: set-up goes through it. */
let setup: CairnServer;
let admin: Client;

beforeAll(async () => {
  server = await CairnServer.start({ env: LIMITS });
  setup = await CairnServer.start({ shareDatabaseWith: server });
  admin = adminClient(setup);
});
afterAll(async () => {
  await setup.destroy(true); // the database is the first server's
  await server.destroy();
});

/** A user of the limited server, created through the set-up process: their token has its whole budget there. */
async function freshUser(login: string): Promise<Client> {
  const user = await createUser(admin, login);
  return new Client(server, user.token);
}

function limits(headers: Headers) {
  return {
    limit: Number(headers.get('x-ratelimit-limit')),
    remaining: Number(headers.get('x-ratelimit-remaining')),
    used: Number(headers.get('x-ratelimit-used')),
    reset: Number(headers.get('x-ratelimit-reset')),
    resource: headers.get('x-ratelimit-resource'),
  };
}

describe('primary limit per user', () => {
  test('every REST answer carries the budget; the request past it is 429 with Retry-After and changes nothing', async () => {
    const alice = await freshUser('rl-alice');
    const seen = [];
    for (let i = 0; i < 10; i++) {
      const res = await alice.get('/repos');
      expect(res.status).toBe(200);
      seen.push(limits(res.headers));
    }
    expect(seen.map((s) => s.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(seen.map((s) => s.used)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const now = Date.now() / 1000;
    expect(seen[0]).toMatchObject({ limit: 10, resource: 'core' });
    expect(seen[0]!.reset).toBeGreaterThan(now);
    expect(seen[0]!.reset).toBeLessThanOrEqual(now + 3600 + 1);

    const refused = await alice.post('/repos', { name: 'too-many' });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(limits(refused.headers)).toMatchObject({ limit: 10, remaining: 0, used: 10 });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    // GraphQL shares the budget: a spent token is refused there too, before anything runs.
    const gql = await alice.graphql('mutation { createRepository(input: {name: "too-many"}) { id } }');
    expect(gql.status).toBe(429);
    expect(gql.errors?.[0]?.extensions.code).toBe('RATE_LIMITED');

    // The budget is the user's: another token of the same user finds it spent too.
    const other = new Client(server, await createToken(admin, 'rl-alice', ['repo']));
    const again = await other.get('/repos?owner=rl-alice');
    expect(again.status).toBe(429);
    expect(limits(again.headers)).toMatchObject({ limit: 10, remaining: 0, used: 10 });
    // Nothing was created (asked through the set-up process, whose budget is the suite's generous one).
    const repos = await new Client(setup, other.token).get('/repos?owner=rl-alice');
    expect(repos.status).toBe(200);
    expect(repos.body.total).toBe(0);
  });

  test('GraphQL counts by cost: an operation costs its estimated cost / 100, at least 1; one past the budget does not run', async () => {
    const erin = await freshUser('rl-erin');
    const first = await erin.post('/graphql', { query: '{ viewer { login } }' });
    expect(limits(first.headers)).toMatchObject({ limit: 10, used: 1, remaining: 9, resource: 'core' });
    // A page of 100 repositories of one field each: cost 201 (each node and its field count), 3 points.
    const page = await erin.post('/graphql', { query: '{ repositories(limit: 100) { nodes { name } } }' });
    expect(page.status).toBe(200);
    expect(limits(page.headers)).toMatchObject({ used: 4, remaining: 6 });
    // 100 repositories × 30 issues: over 6,000, more points than are left. Refused before it runs, charged nothing.
    const heavy = await erin.post('/graphql', {
      query: '{ repositories(limit: 100) { nodes { issues(limit: 30) { nodes { title } } } } }',
    });
    expect(heavy.status).toBe(429);
    expect(heavy.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(heavy.body.data).toBeUndefined();
    expect(Number(heavy.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limits(heavy.headers)).toMatchObject({ used: 4, remaining: 6 });
    // Over GET, the same.
    const viaGet = await erin.get(`/graphql?query=${encodeURIComponent('{ viewer { login } }')}`);
    expect(viaGet.status).toBe(200);
    expect(limits(viaGet.headers)).toMatchObject({ used: 5, remaining: 5 });
  });

  test('a query sent again and again pays its cost once each time: answered, in error, or refused for the budget', async () => {
    // From its third run a query is answered by the quicker path for repeated queries, which pays
    // as Apollo does and hands anything but a success to Apollo with what it paid.
    const fay = await freshUser('rl-fay');
    const missing = 'query($id: ID!) { repository(id: $id) { issues(limit: 50) { nodes { title } } } }';
    const errors = [];
    for (let run = 0; run < 3; run++) {
      const res = await fay.post('/graphql', { query: missing, variables: { id: 'repo_00000000000000000000000000' } });
      errors.push({ status: res.status, body: res.body, used: limits(res.headers).used });
    }
    expect(errors[0]!.body.errors[0].extensions.code).toBe('NOT_FOUND');
    const cost = errors[0]!.used;
    expect(cost).toBeGreaterThan(1);
    expect(errors.map((e) => e.used)).toEqual([cost, 2 * cost, 3 * cost]);
    for (const e of errors.slice(1))
      expect({ status: e.status, body: e.body }).toEqual({ status: errors[0]!.status, body: errors[0]!.body });

    const gus = await freshUser('rl-gus');
    const page = '{ repositories(limit: 100) { nodes { name } } }'; // 3 points
    const used = [];
    for (let run = 0; run < 3; run++) {
      const res = await gus.post('/graphql', { query: page });
      expect(res.status).toBe(200);
      used.push(limits(res.headers).used);
    }
    expect(used).toEqual([3, 6, 9]);
    const refused = await gus.post('/graphql', { query: page });
    expect(refused.status).toBe(429);
    expect(refused.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(refused.body.data).toBeUndefined();
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limits(refused.headers)).toMatchObject({ used: 9, remaining: 1 });
    // The refusal gave its arrival's point back once: one point is left, and then none.
    const last = await gus.post('/graphql', { query: '{ viewer { login } }' });
    expect(last.status).toBe(200);
    expect(limits(last.headers)).toMatchObject({ used: 10, remaining: 0 });
    expect((await gus.post('/graphql', { query: '{ viewer { login } }' })).status).toBe(429);
  });

  test('unauthenticated answers carry no budget', async () => {
    const res = await new Client(server, 'cairn_pat_nope').get('/repos');
    expect(res.status).toBe(401);
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
  });

  test('processes on one database share each budget', async () => {
    const second = await CairnServer.start({ env: LIMITS, shareDatabaseWith: server });
    try {
      const user = await createUser(admin, 'rl-carol');
      const carol = new Client(server, user.token);
      /** What the processes have written of carol's hourly budget to the database. */
      const stored = async () =>
        Number(
          (await query(server, 'select sum(used) as used from rate_limit_usage where bucket = $1', [`core:${user.userId}`]))[0]?.used ?? 0,
        );
      for (let i = 0; i < 6; i++) expect((await carol.get('/repos')).status).toBe(200);
      // Counts are written every 0.5 s: the second process reads them when it first sees carol.
      await eventually(async () => (await stored()) >= 6, 5_000, "the first process's counts in the database");
      const there = new Client(second, carol.token);
      const first = await there.get('/repos');
      expect(limits(first.headers)).toMatchObject({ used: 7, remaining: 3 });
      for (let i = 0; i < 3; i++) expect((await there.get('/repos')).status).toBe(200);
      expect((await there.get('/repos')).status).toBe(429);
      await eventually(async () => (await stored()) >= 10, 5_000, "the second process's counts in the database");
      // Time has to pass here: the first process reads the totals back on its next write, at most
      // 0.5 s later (the contract's bound); a quarter of a second more for that round trip.
      await sleep(750);
      expect((await carol.get('/repos')).status).toBe(429);
    } finally {
      await second.destroy(true);
    }
  });
});

describe('secondary limit on creating content', () => {
  test('the fourth issue in a minute is refused with 429 and not created, by REST and by GraphQL aliases alike', async () => {
    const owner = await createUser(admin, 'rl-owner');
    const repo = (await owner.post('/repos', { name: 'limited' })).body.id;
    const bob = await freshUser('rl-bob');
    for (let i = 0; i < 3; i++) expect((await bob.post(`/repos/${repo}/issues`, { title: `issue ${i}` })).status).toBe(201);
    const refused = await bob.post(`/repos/${repo}/issues`, { title: 'one too many' });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    // The creation budget is the user's too: a fresh token of bob's is refused the same way.
    const bobAgain = new Client(server, await createToken(admin, 'rl-bob', ['repo']));
    const alsoRefused = await bobAgain.post(`/repos/${repo}/issues`, { title: 'with another token' });
    expect(alsoRefused.status).toBe(429);
    expect(alsoRefused.body.error.code).toBe('rate_limited');

    const dave = await freshUser('rl-dave');
    const aliases = Array.from(
      { length: 5 },
      (_, i) => `i${i}: createIssue(input: {repositoryId: "${repo}", title: "alias ${i}"}) { number }`,
    );
    const res = await dave.graphql(`mutation { ${aliases.join(' ')} }`);
    // Mutations run in order: three are created, the fourth is refused (and, its field being non-null, ends the operation).
    expect(res.errors?.[0]).toMatchObject({ extensions: { code: 'RATE_LIMITED' }, path: ['i3'] });

    const listed = await owner.get(`/repos/${repo}/issues?state=all`);
    expect(listed.body.total).toBe(6);
    expect(listed.body.data.map((i: { title: string }) => i.title)).not.toContain('one too many');
    expect(listed.body.data.map((i: { title: string }) => i.title)).not.toContain('with another token');
  });
});

describe('anonymous git fetches', () => {
  test('are limited per client address; a client with a token is asked for it and not limited', async () => {
    const owner = await freshUser('rl-gitowner'); // on the limited server, whose data dir holds the repositories
    expect((await owner.post('/repos', { name: 'public-one', auto_init: true })).status).toBe(201);
    const url = `${server.url}/rl-gitowner/public-one.git`;
    const lsRemote = (target: string) =>
      run('git', ['-c', 'protocol.version=2', 'ls-remote', target], { env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } }).then(
        (done) => ({ ok: true, out: done.stdout + done.stderr }),
        (failed: { stdout: string; stderr: string }) => ({ ok: false, out: failed.stdout + failed.stderr }),
      );
    // Protocol v2: an ls-remote is two requests (the advertisement, then ls-refs): the budget of 4 is two of them.
    expect(await lsRemote(url)).toMatchObject({ ok: true });
    expect(await lsRemote(url)).toMatchObject({ ok: true });
    // Past the budget git is asked to authenticate (so a client with a token retries with it); without one it fails.
    const refused = await lsRemote(url);
    expect(refused.ok).toBe(false);
    const raw = await fetch(`${url}/info/refs?service=git-upload-pack`);
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect(await raw.text()).toContain('Too many anonymous fetches from this address');
    expect(Number(raw.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limits(raw.headers)).toMatchObject({ limit: 4, remaining: 0, resource: 'git' });

    const withToken = await lsRemote(url.replace('http://', `http://x:${owner.token}@`));
    expect(withToken).toMatchObject({ ok: true });
    expect(withToken.out).toContain('refs/heads/main');
  });
});

describe('configuration', () => {
  test('defaults: 5,000 requests per hour', async () => {
    const plain = await CairnServer.start({ env: { CAIRN_RATE_LIMIT: '', CAIRN_RATE_LIMIT_CREATE: '' } });
    try {
      const res = await adminClient(plain).get('/repos');
      expect(limits(res.headers)).toMatchObject({ limit: 5000, remaining: 4999, used: 1 });
    } finally {
      await plain.destroy();
    }
  });

  test('0 turns a limit off; a bad value stops start-up naming the variable', async () => {
    await expect(CairnServer.start({ env: { CAIRN_RATE_LIMIT: 'lots' } })).rejects.toThrow(/CAIRN_RATE_LIMIT/);
    const unlimited = await CairnServer.start({ env: { CAIRN_RATE_LIMIT: '0' } });
    try {
      const res = await adminClient(unlimited).get('/repos');
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    } finally {
      await unlimited.destroy();
    }
  });
});
