import { adminClient, createToken, createUser, type Client } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { CairnServer } from './support/server.js';

/**
 * Who may fetch and push what over git smart HTTP. Each cell is the
 * status of the request git makes first (`info/refs?service=...`), which
 * decides whether git goes on, asks for credentials (401) or gives up; real
 * git runs check the important cells end to end.
 */
let server: CairnServer;
let git: GitSandbox;
let owner: Client & { login: string; userId: string };
const tokens: Record<string, string | null> = {};

beforeAll(async () => {
  [server, git] = await Promise.all([CairnServer.start(), GitSandbox.create()]);
  const admin = adminClient(server);
  owner = await createUser(admin, 'owner');
  const stranger = await createUser(admin, 'stranger');
  const reader = await createUser(admin, 'reader');
  const writer = await createUser(admin, 'writer');
  for (const name of ['public-repo', 'private-repo']) {
    const repo = (await owner.post('/repos', { name, private: name === 'private-repo', auto_init: true })).body;
    await owner.put(`/repos/${repo.id}/collaborators/reader`, { permission: 'read' });
    await owner.put(`/repos/${repo.id}/collaborators/writer`, { permission: 'write' });
  }
  tokens.anonymous = null;
  tokens.stranger = stranger.token;
  tokens.reader = reader.token;
  tokens['owner with a repo:read token'] = await createToken(admin, 'owner', ['repo:read']);
  tokens.writer = writer.token;
  tokens.owner = owner.token;
});
afterAll(async () => {
  await Promise.all([server.destroy(), git.cleanup()]);
});

async function infoRefs(repo: string, service: 'upload-pack' | 'receive-pack', headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}/owner/${repo}.git/info/refs?service=git-${service}`, { headers });
  return { status: res.status, body: await res.text(), challenge: res.headers.get('www-authenticate') };
}
const basic = (token: string, user = 'x') => ({ authorization: `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}` });

// who, public fetch, public push, private fetch, private push
const MATRIX: Array<[string, number, number, number, number]> = [
  ['anonymous', 200, 401, 401, 401],
  ['stranger', 200, 403, 404, 404],
  ['reader', 200, 403, 200, 403],
  ['owner with a repo:read token', 200, 403, 200, 403],
  ['writer', 200, 200, 200, 200],
  ['owner', 200, 200, 200, 200],
];

/** The protocol exchange itself (a client that skips info/refs): an empty request, a flush packet. */
async function rpc(repo: string, service: 'upload-pack' | 'receive-pack', headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}/owner/${repo}.git/git-${service}`, {
    method: 'POST',
    headers: { ...headers, 'content-type': `application/x-git-${service}-request` },
    body: '0000',
  });
  await res.arrayBuffer();
  return res.status;
}

describe.each(MATRIX)('%s', (who, publicFetch, publicPush, privateFetch, privatePush) => {
  const headers = () => (tokens[who] ? basic(tokens[who]!) : {});
  test(`public: fetch ${publicFetch}, push ${publicPush}; private: fetch ${privateFetch}, push ${privatePush}`, async () => {
    expect((await infoRefs('public-repo', 'upload-pack', headers())).status).toBe(publicFetch);
    expect((await infoRefs('public-repo', 'receive-pack', headers())).status).toBe(publicPush);
    expect((await infoRefs('private-repo', 'upload-pack', headers())).status).toBe(privateFetch);
    expect((await infoRefs('private-repo', 'receive-pack', headers())).status).toBe(privatePush);
  });
  test('the same answers on the POST endpoints, for a client that skips info/refs', async () => {
    expect(await rpc('public-repo', 'upload-pack', headers())).toBe(publicFetch);
    expect(await rpc('public-repo', 'receive-pack', headers())).toBe(publicPush);
    expect(await rpc('private-repo', 'upload-pack', headers())).toBe(privateFetch);
    expect(await rpc('private-repo', 'receive-pack', headers())).toBe(privatePush);
  });
});

describe('what strangers learn', () => {
  test('anonymous: a private repository and a missing one get the same 401 challenge', async () => {
    const secret = await infoRefs('private-repo', 'upload-pack');
    const missing = await infoRefs('no-such-repo', 'upload-pack');
    expect(secret).toEqual(missing);
    expect(secret.status).toBe(401);
    expect(secret.challenge).toBe('Basic realm="Cairn"');
  });

  test('a signed-in stranger: a private repository and a missing one are the same 404', async () => {
    for (const service of ['upload-pack', 'receive-pack'] as const) {
      const secret = await infoRefs('private-repo', service, basic(tokens.stranger!));
      const missing = await infoRefs('no-such-repo', service, basic(tokens.stranger!));
      expect(secret).toEqual(missing);
      expect(secret.status).toBe(404);
    }
  });

  test('bad, revoked or malformed credentials are a 401 challenge', async () => {
    const created = await owner.gql<{ createAccessToken: { token: string; accessToken: { id: string } } }>(
      'mutation { createAccessToken(input: {name: "soon revoked", scopes: ["repo"]}) { token accessToken { id } } }',
    );
    const revoked = created.createAccessToken.token;
    expect((await infoRefs('private-repo', 'upload-pack', basic(revoked))).status).toBe(200);
    await owner.gql('mutation($id: ID!) { revokeAccessToken(id: $id) }', { id: created.createAccessToken.accessToken.id });
    for (const headers of [
      basic(revoked),
      basic('cairn_pat_not_a_real_token_0000000000000000000'),
      { authorization: 'Bearer nonsense' },
      { authorization: 'Basic !!!' },
      { authorization: 'Digest username="x"' },
    ]) {
      const res = await infoRefs('public-repo', 'upload-pack', headers);
      expect(res.status).toBe(401);
      expect(res.challenge).toBe('Basic realm="Cairn"');
    }
  });

  test('the token works as Basic password (any user), as Basic user name alone, and as Bearer', async () => {
    for (const headers of [
      basic(owner.token, 'anything'),
      basic('', owner.token),
      basic('x-oauth-basic', owner.token),
      { authorization: `Bearer ${owner.token}` },
    ]) {
      // private: only a valid token gets in
      expect((await infoRefs('private-repo', 'receive-pack', headers)).status).toBe(200);
    }
  });
});

describe('with the real git client', () => {
  test('anonymous clone of a public repository works; of a private one git asks for credentials and fails without them', async () => {
    expect((await git.run(['clone', '--quiet', `${server.url}/owner/public-repo.git`, git.path('anon-public')])).code).toBe(0);
    const refused = await git.run(['clone', `${server.url}/owner/private-repo.git`, git.path('anon-private')]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/could not read Username|Authentication failed/);
  });

  test('anonymous and stranger pushes to a public repository are refused, with the reason', async () => {
    const dir = git.path('outsider-clone');
    await git.git(['clone', '--quiet', `${server.url}/owner/public-repo.git`, dir]);
    await git.commit(dir, 'outsider change', { 'outsider.txt': 'o\n' });
    const anonymous = await git.run(['push', `${server.url}/owner/public-repo.git`, 'main'], { cwd: dir });
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toMatch(/could not read Username|Authentication failed/);
    const stranger = await git.run(['push', remoteUrl(server, 'owner', 'public-repo', tokens.stranger!), 'main'], { cwd: dir });
    expect(stranger.code).not.toBe(0);
    expect(stranger.stderr).toContain('remote: Permission denied');
  });

  test('a stranger is told the private repository does not exist', async () => {
    const refused = await git.run(['clone', remoteUrl(server, 'owner', 'private-repo', tokens.stranger!), git.path('stranger-private')]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('remote: Repository not found.');
  });

  test('a reader can clone but not push, and git shows why', async () => {
    const dir = git.path('reader-clone');
    await git.git(['clone', '--quiet', remoteUrl(server, 'owner', 'private-repo', tokens.reader!), dir]);
    await git.commit(dir, 'reader change', { 'reader.txt': 'hi\n' });
    const pushed = await git.run(['push', 'origin', 'main'], { cwd: dir });
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain('remote: Permission denied: write permission on this repository is required.');
  });

  test('a repo:read token fetches only', async () => {
    const dir = git.path('readonly-token');
    await git.git(['clone', '--quiet', remoteUrl(server, 'owner', 'private-repo', tokens['owner with a repo:read token']!), dir]);
    await git.commit(dir, 'change', { 'x.txt': 'x\n' });
    const pushed = await git.run(['push', 'origin', 'main'], { cwd: dir });
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain('this token lacks the repo scope');
  });

  test('a writer pushes with Basic, the owner with a Bearer header', async () => {
    const dir = git.path('writer-clone');
    await git.git(['clone', '--quiet', remoteUrl(server, 'owner', 'private-repo', tokens.writer!), dir]);
    await git.commit(dir, 'writer change', { 'writer.txt': 'w\n' });
    expect((await git.run(['push', 'origin', 'main'], { cwd: dir })).code).toBe(0);

    await git.commit(dir, 'owner change', { 'owner.txt': 'o\n' });
    const bearer = await git.run(
      ['-c', `http.extraHeader=Authorization: Bearer ${owner.token}`, 'push', `${server.url}/owner/private-repo.git`, 'main'],
      { cwd: dir },
    );
    expect(bearer.code).toBe(0);
  });

  test('a user whose login is a path of the API, such as graphql, clones and pushes like anyone', async () => {
    const graphql = await createUser(adminClient(server), 'graphql');
    expect((await graphql.post('/repos', { name: 'api', private: true, auto_init: true })).status).toBe(201);
    const dir = git.path('graphql-clone');
    await git.git(['clone', '--quiet', remoteUrl(server, 'graphql', 'api', graphql.token), dir]);
    await git.commit(dir, 'a change', { 'change.txt': 'c\n' });
    expect((await git.run(['push', 'origin', 'main'], { cwd: dir })).code).toBe(0);
    // Without a token, git's own Basic challenge, not the API's Bearer one.
    const res = await fetch(`${server.url}/graphql/api.git/info/refs?service=git-upload-pack`);
    expect([res.status, res.headers.get('www-authenticate')]).toEqual([401, 'Basic realm="Cairn"']);
  });

  test('the request log never contains the token', () => {
    expect(server.output).not.toContain(owner.token);
    expect(server.output).not.toContain(tokens.writer!);
  });
});
