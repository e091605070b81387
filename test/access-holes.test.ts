import fs from 'node:fs/promises';
import { adminClient, Client, createToken, createUser } from './support/client.js';
import { eventually } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/** Small access holes a hostile user found: each answers as GitHub would and changes nothing. */
let server: CairnServer;
let admin: Client;

beforeAll(async () => {
  server = await CairnServer.start();
  admin = adminClient(server);
});
afterAll(() => server.destroy());

describe('collaborators are listed to those who may push', () => {
  test('read → 403, write and admin → 200, a stranger to a private repository → 404', async () => {
    const owner = await createUser(admin, 'coowner');
    const reader = await createUser(admin, 'coreader');
    const writer = await createUser(admin, 'cowriter');
    const stranger = await createUser(admin, 'costranger');
    const open = (await owner.post('/repos', { name: 'open' })).body.id;
    const closed = (await owner.post('/repos', { name: 'closed', private: true })).body.id;
    for (const repo of [open, closed]) {
      expect((await owner.put(`/repos/${repo}/collaborators/coreader`, { permission: 'read' })).status).toBe(200);
      expect((await owner.put(`/repos/${repo}/collaborators/cowriter`, { permission: 'write' })).status).toBe(200);
    }

    for (const prefix of ['', '/api']) {
      const denied = await reader.get(`${prefix}/repos/${open}/collaborators`);
      expect(denied.status).toBe(403);
      expect(denied.body.error.code).toBe('forbidden');
      expect(denied.text).not.toContain('cowriter');
      expect((await stranger.get(`${prefix}/repos/${open}/collaborators`)).status).toBe(403);
      expect((await reader.get(`${prefix}/repos/${closed}/collaborators`)).status).toBe(403);
      expect((await stranger.get(`${prefix}/repos/${closed}/collaborators`)).status).toBe(404);

      const listed = await writer.get(`${prefix}/repos/${closed}/collaborators`);
      expect(listed.status).toBe(200);
      expect(listed.body.map((c: { user: { login: string } }) => c.user.login).sort()).toEqual(['coreader', 'cowriter']);
      expect((await owner.get(`${prefix}/repos/${open}/collaborators`)).status).toBe(200);
    }

    // GraphQL: the field is refused for a reader, the rest of the repository still reads.
    const res = await reader.graphql('query($id: ID!) { repository(id: $id) { name collaborators { user { login } } } }', { id: open });
    expect(res.errors?.[0]?.extensions.code).toBe('FORBIDDEN');
    expect(JSON.stringify(res)).not.toContain('cowriter');
  });
});

describe('webhook destinations', () => {
  test.each([
    'http://[::ffff:0:7f00:1]/x',
    'http://[::ffff:0:127.0.0.1]:8080/x',
    'http://[::ffff:7f00:1]/x',
    'http://[0:0:0:0:ffff:0:a00:1]/x',
  ])('%s (an IPv4 address wrapped in IPv6) is refused by the default policy', async (url) => {
    const repo = (await admin.post('/repos', { name: `ssrf-${Math.random().toString(36).slice(2, 8)}` })).body.id;
    const res = await admin.post(`/api/repos/${repo}/webhooks`, { url });
    expect(res.status).toBe(422);
    expect(res.body.error.details[0]).toMatchObject({ field: 'url' });
    expect((await admin.get(`/repos/${repo}/webhooks`)).body).toEqual([]);
  });
});

describe('revoking tokens', () => {
  const REVOKE = 'mutation($id: ID!) { revokeAccessToken(id: $id) }';
  const TOKENS = '{ accessTokens { id name scopes } }';

  test('a repo:read token cannot revoke its owner’s other tokens, but may revoke itself', async () => {
    const writer = await createUser(admin, 'revoker', ['repo']);
    const readOnly = new Client(server, await createToken(admin, 'revoker', ['repo:read']));
    const { accessTokens } = await writer.gql(TOKENS);
    const strong = accessTokens.find((t: { scopes: string[] }) => t.scopes.includes('repo'));
    const weak = accessTokens.find((t: { scopes: string[] }) => !t.scopes.includes('repo'));

    const denied = await readOnly.graphql(REVOKE, { id: strong.id });
    expect(denied.errors?.[0]?.extensions.code).toBe('FORBIDDEN');
    expect((await writer.get('/repos')).status).toBe(200); // still valid

    expect((await readOnly.gql(REVOKE, { id: weak.id })).revokeAccessToken).toBe(true);
    expect((await readOnly.get('/repos')).status).toBe(401);
    // A repo token may revoke the same user's other tokens.
    const another = new Client(server, await createToken(admin, 'revoker', ['repo:read']));
    const anotherId = (await another.gql(TOKENS)).accessTokens.find((t: { id: string }) => t.id !== strong.id && t.id !== weak.id).id;
    expect((await writer.gql(REVOKE, { id: anotherId })).revokeAccessToken).toBe(true);
    expect((await another.get('/repos')).status).toBe(401);
  });

  test('a mutation that revokes its own token acts no more: the fields after it are refused, and change nothing', async () => {
    const user = await createUser(admin, 'selfrevoker', ['repo']);
    const own = (await user.gql(TOKENS)).accessTokens[0].id;
    const res = await user.graphql(
      `mutation($id: ID!) {
        before: createRepository(input: { name: "made-before" }) { name }
        revoked: revokeAccessToken(id: $id)
        after: createRepository(input: { name: "made-after" }) { name }
        minted: createAccessToken(input: { name: "heir", scopes: ["repo"] }) { token }
      }`,
      { id: own },
    );
    expect(res.data).toBeNull(); // the refused fields are non-null: the whole answer is
    expect(res.errors?.map((error: { path: string[]; extensions: { code: string } }) => [error.path[0], error.extensions.code])).toEqual([
      ['after', 'UNAUTHENTICATED'],
    ]);
    const tokens = await admin.gql('query { userAccessTokens(login: "selfrevoker") { nodes { revokedAt } } }');
    expect(tokens.userAccessTokens.nodes).toEqual([{ revokedAt: expect.any(String) }]); // and no heir
    const names = (await admin.get('/repos?limit=100')).body.data.map((repo: { name: string }) => repo.name);
    expect(names).toContain('made-before');
    expect(names).not.toContain('made-after');
  });
});

describe('secrets stay in the service', () => {
  test('no process the service starts for git (the launcher, its gits) sees the admin token or the database URL', async () => {
    const owner = await createUser(admin, 'envowner');
    const repo = (await owner.post('/repos', { name: 'env', auto_init: true })).body.id;
    // Browsing runs git through the launcher, which is started on first use.
    await owner.gql('query($id: ID!) { repository(id: $id) { branches { totalCount } } }', { id: repo });
    const pid = server.process!.pid!;
    const children = (await fs.readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).trim().split(/\s+/).filter(Boolean);
    const environments = await Promise.all(children.map((child) => fs.readFile(`/proc/${child}/environ`, 'utf8').catch(() => '')));
    const launcher = environments.filter((env) => env.includes('GIT') || env.includes('PATH='));
    expect(launcher.length).toBeGreaterThan(0);
    for (const env of environments) {
      expect(env).not.toContain(server.adminToken);
      expect(env).not.toMatch(/(^|\0)DATABASE_URL=/);
      expect(env).not.toMatch(/(^|\0)CAIRN_/);
    }
  });

  // Last in the file: it kills the file's server.
  test('killed with kill -9, the service leaves no git helper behind: the launcher exits at once, closing the output it shared', async () => {
    const pid = server.process!.pid!;
    const children = (await fs.readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).trim().split(/\s+/).filter(Boolean);
    const commands = await Promise.all(children.map((child) => fs.readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '')));
    const launcher = children.find((_, i) => commands[i]!.includes('git-launcher'));
    expect(launcher).toBeDefined(); // started by the test above
    const outputClosed = new Promise<void>((resolve) => server.process!.once('close', () => resolve()));
    await server.kill();
    const killed = performance.now();
    await outputClosed; // every holder of the service's stdout and stderr, the launcher among them, is gone
    const tookMs = performance.now() - killed;
    expect(tookMs).toBeLessThan(1_000); // no command was running: nothing to wait for (it waited 2 s)
    // Exited (a zombie until init reaps it): a process that has closed its files may still be on its
    // way out for a moment, longer on a loaded machine.
    await eventually(
      async () => {
        const state = await fs.readFile(`/proc/${launcher}/stat`, 'utf8').catch(() => 'gone');
        return state === 'gone' || / Z /.test(state);
      },
      2_000,
      'the launcher to exit',
    );
  });
});
