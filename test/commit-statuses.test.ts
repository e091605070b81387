import { verify } from '@octokit/webhooks-methods';
import { adminClient, createUser, type Client } from './support/client.js';
import { settledDeliveries } from './support/deliveries.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { Receiver } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';

/**
 * Commit statuses end to end, as a CI system posts and a client reads them: over REST and GraphQL,
 * against a repository pushed with the real git client, with the `status` webhook delivered to a
 * loopback receiver.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let receiver: Receiver;
let sandbox: GitSandbox;
let admin: Client;
let owner: User;
let ci: User;
let reader: User;
let readOnlyToken: User;
let repo: PullRepo;
let main: string;
let feature: string;
let hookId: string;

const SECRET = 'statuses-secret';

beforeAll(async () => {
  [server, receiver, sandbox] = await Promise.all([CairnServer.sharedServer(), Receiver.start(), GitSandbox.create()]);
  admin = adminClient(server);
  owner = await createUser(admin, 'statuses-owner', ['repo', 'admin:repo_hook']);
  ci = await createUser(admin, 'statuses-ci', ['repo:status']);
  reader = await createUser(admin, 'statuses-reader', ['repo']);
  readOnlyToken = await createUser(admin, 'statuses-readtoken', ['repo:read']);
  repo = await PullRepo.create(server, sandbox, owner, 'statuses-app');
  for (const [login, permission] of [
    ['statuses-ci', 'write'],
    ['statuses-reader', 'read'],
    ['statuses-readtoken', 'write'],
  ]) {
    expect((await owner.put(`/repos/${repo.id}/collaborators/${login}`, { permission })).status).toBe(200);
  }
  main = (await repo.run(['rev-parse', 'main'])).trim();
  await repo.run(['tag', '-a', 'v1.0', '-m', 'release', 'main']);
  feature = await repo.commit('feature', 'a feature', { 'feature.txt': 'new\n' });
  await repo.push(['main', 'feature', 'v1.0']);
  const hook = await owner.post(`/repos/${repo.id}/webhooks`, { url: receiver.url('/status'), events: ['status'], secret: SECRET });
  expect(hook.status).toBe(201);
  hookId = hook.body.id;
});
afterAll(async () => {
  await Promise.all([sandbox.cleanup(), receiver.close(), server.destroy()]);
});

const statusesPath = (ref: string) => `/repos/${repo.id}/commits/${ref}/statuses`;
const combinedPath = (ref: string) => `/repos/${repo.id}/commits/${ref}/status`;
const post = (as: Client, sha: string, body: unknown) => as.post(`/repos/${repo.id}/statuses/${sha}`, body);
const count = async (sha: string) =>
  Number(
    (
      await query<{ n: string }>(server, 'select count(*) as n from commit_statuses where repository_id = $1 and sha = $2', [repo.id, sha])
    )[0]!.n,
  );

test('post a status: 201 with the record; listed and combined through its sha, its branch and its tag', async () => {
  const res = await post(ci, main, {
    state: 'success',
    context: 'ci/build',
    description: 'Build passed',
    target_url: 'https://ci.example.com/builds/1',
  });
  expect(res.status).toBe(201);
  expect(res.body).toEqual({
    id: expect.stringMatching(/^sts_[0-9a-z]{26}$/),
    state: 'success',
    context: 'ci/build',
    description: 'Build passed',
    target_url: 'https://ci.example.com/builds/1',
    creator: { id: ci.userId, login: 'statuses-ci' },
    created_at: expect.any(String),
    updated_at: expect.any(String),
  });
  const defaulted = await post(owner, main, { state: 'pending' });
  expect(defaulted.status).toBe(201);
  expect(defaulted.body).toMatchObject({ context: 'default', description: null, target_url: null });

  for (const ref of [main, 'main', 'v1.0']) {
    const list = await reader.get(statusesPath(ref));
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 2, limit: 30, offset: 0 });
    expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([defaulted.body.id, res.body.id]); // newest first
    const combined = await reader.get(combinedPath(ref));
    expect(combined.status).toBe(200);
    expect(combined.body).toMatchObject({ state: 'pending', sha: main, total_count: 2, repository: { id: repo.id } });
    expect(combined.body.statuses).toEqual([defaulted.body, res.body]);
  }
  const paged = await reader.get(`${statusesPath(main)}?limit=1&offset=1`);
  expect(paged.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
  expect(paged.body.data.map((s: { id: string }) => s.id)).toEqual([res.body.id]);
});

test('the combined state: failure if any failed or errored, else pending if any pending or none, else success', async () => {
  const states: string[] = [];
  const combined = async () => {
    const res = await reader.get(combinedPath('feature'));
    expect(res.status).toBe(200);
    states.push(res.body.state);
    return res.body;
  };
  expect(await combined()).toMatchObject({ state: 'pending', total_count: 0, statuses: [], sha: feature });
  await post(ci, feature, { state: 'success', context: 'ci/a' });
  await combined();
  await post(ci, feature, { state: 'pending', context: 'ci/b' });
  await combined();
  await post(ci, feature, { state: 'error', context: 'ci/b' });
  await combined();
  await post(ci, feature, { state: 'success', context: 'ci/b' });
  const last = await combined();
  await post(ci, feature, { state: 'failure', context: 'ci/a' });
  await combined();
  expect(states).toEqual(['pending', 'success', 'pending', 'failure', 'success', 'failure']);
  expect(last.total_count).toBe(2); // the latest of each context only
  expect((await reader.get(statusesPath(feature))).body.total).toBe(5);
});

test('unknown refs and shas: 404 to read; a sha that is no commit of the repository is 422 naming sha', async () => {
  const missing = 'f'.repeat(40);
  for (const ref of ['no-such-branch', missing, 'v9']) {
    expect((await reader.get(combinedPath(ref))).status).toBe(404);
    expect((await reader.get(statusesPath(ref))).status).toBe(404);
  }
  const res = await post(ci, missing, { state: 'success' });
  expect(res.status).toBe(422);
  expect(res.body.error.code).toBe('validation_failed');
  expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'sha' })]);
  expect(await count(missing)).toBe(0);
});

test('malformed input is refused with the documented 4xx and records nothing', async () => {
  const before = await count(main);
  const cases: Array<[unknown, number, string]> = [
    [{ state: 'passed' }, 422, 'validation_failed'],
    [{}, 422, 'validation_failed'],
    [{ state: 'success', description: 'x'.repeat(141) }, 422, 'validation_failed'],
    [{ state: 'success', target_url: 'ftp://ci.example.com/1' }, 422, 'validation_failed'],
    [{ state: 'success', target_url: 'not a url' }, 422, 'validation_failed'],
    [{ state: 'success', context: '' }, 422, 'validation_failed'],
    [{ state: 'success', context: 5 }, 422, 'validation_failed'],
  ];
  for (const [body, status, code] of cases) {
    const res = await post(ci, main, body);
    expect({ body, status: res.status, code: res.body?.error?.code }).toEqual({ body, status, code });
  }
  const json = { 'content-type': 'application/json' };
  const path = `/repos/${repo.id}/statuses/${main}`;
  expect((await ci.request('POST', path, { raw: '{"state": ', headers: json })).status).toBe(400);
  expect((await ci.request('POST', path, { raw: 'state=success', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
  const short = await post(ci, main.slice(0, 7) + 'zz', { state: 'success' });
  expect(short.status).toBe(422);
  expect(short.body.error.details).toEqual([expect.objectContaining({ field: 'sha' })]);
  expect(await count(main)).toBe(before);
});

test('who may post and read: repo:status only for statuses; repo:read and read-only collaborators cannot post', async () => {
  // A repo:status token posts and reads statuses, and does nothing else.
  expect((await post(ci, main, { state: 'success', context: 'scopes' })).status).toBe(201);
  expect((await ci.get(combinedPath('main'))).status).toBe(200);
  const issue = await ci.post(`/repos/${repo.id}/issues`, { title: 'from CI' });
  expect(issue.status).toBe(403);
  const pushed = await sandbox.run(['push', '--quiet', remoteUrl(server, owner.login, repo.name, ci.token), 'main:refs/heads/from-ci'], {
    cwd: repo.work,
  });
  expect(pushed.code).not.toBe(0);
  expect(await repo.remoteSha('from-ci')).toBeNull();

  // A private repository: visible to a repo:status token of a writer, invisible to one without access.
  const secret = await PullRepo.create(server, sandbox, owner, 'statuses-private', { 'README.md': '# secret\n' }, { private: true });
  const secretMain = (await secret.run(['rev-parse', 'main'])).trim();
  const outsider = await createUser(admin, 'statuses-outsider', ['repo:status']);
  expect((await outsider.get(`/repos/${secret.id}/commits/main/status`)).status).toBe(404);
  expect((await outsider.post(`/repos/${secret.id}/statuses/${secretMain}`, { state: 'success' })).status).toBe(404);
  expect((await ci.get(`/repos/${secret.id}/commits/main/status`)).status).toBe(404);
  await owner.put(`/repos/${secret.id}/collaborators/statuses-ci`, { permission: 'write' });
  expect((await ci.post(`/repos/${secret.id}/statuses/${secretMain}`, { state: 'failure' })).status).toBe(201);
  expect((await ci.get(`/repos/${secret.id}/commits/main/status`)).body.state).toBe('failure');
  expect((await ci.get(`/repos/${secret.id}`)).status).toBe(404); // the repository itself stays out of its reach
  // Nor through GraphQL: the combined status names its repository, and nothing can be read through it.
  const named = await ci.gql<{ combinedStatus: { repository: { fullName: string; private: boolean } } }>(
    'query($id: ID!) { combinedStatus(repositoryId: $id, ref: "main") { repository { fullName private } } }',
    { id: secret.id },
  );
  expect(named.combinedStatus.repository).toEqual({ fullName: 'statuses-owner/statuses-private', private: true });
  const through = await ci.graphql(
    'query($id: ID!) { combinedStatus(repositoryId: $id, ref: "main") { repository { issues { totalCount } } } }',
    {
      id: secret.id,
    },
  );
  expect(through.data).toBeUndefined();
  expect(JSON.stringify(through.errors)).toContain('Cannot query field');

  const before = await count(main);
  const readToken = await post(readOnlyToken, main, { state: 'success' });
  expect(readToken.status).toBe(403);
  expect(readToken.body.error.code).toBe('forbidden');
  expect((await post(reader, main, { state: 'success' })).status).toBe(403);
  expect((await readOnlyToken.get(combinedPath('main'))).status).toBe(200);
  expect(await count(main)).toBe(before);
});

test('a context holds at most 1,000 statuses of a commit: the next is 422 and changes nothing', async () => {
  const context = 'ci/many';
  // 999 statuses written directly (posting them one by one would only test patience), then the last two through the API.
  await query(
    server,
    `with made as (
       insert into commit_statuses (id, repository_id, sha, state, context, creator_id, created_at, updated_at)
       select 'sts_capfill' || lpad(i::text, 15, '0'), $1, $2, 'pending', $3, $4, now() - interval '1 hour', now() - interval '1 hour'
         from generate_series(1, 999) as i
       returning id)
     insert into commit_status_contexts (repository_id, sha, context, latest_id, state, count)
     select $1, $2, $3, max(id), 'pending', count(*) from made`,
    [repo.id, feature, context, ci.userId],
  );
  const thousandth = await post(ci, feature, { state: 'success', context });
  expect(thousandth.status).toBe(201);
  const refused = await post(ci, feature, { state: 'failure', context });
  expect(refused.status).toBe(422);
  expect(refused.body.error.code).toBe('validation_failed');
  expect(refused.body.error.details).toEqual([expect.objectContaining({ field: 'context', code: 'too_many_statuses' })]);
  const combined = (await reader.get(combinedPath(feature))).body;
  expect(combined.statuses.find((s: { context: string }) => s.context === context)).toMatchObject({
    id: thousandth.body.id,
    state: 'success',
  });
  // Another context of the same commit is not held back.
  expect((await post(ci, feature, { state: 'success', context: 'ci/other' })).status).toBe(201);
});

test('posts racing on two contexts of a commit: each is made, counted, and the latest is the last one posted', async () => {
  // Posts that queue while a statement runs go together in the next, a context at most once each:
  // the second post to a context waits for a later statement, so counts and latest pointers hold.
  const contexts = ['race/a', 'race/b'];
  const posted = await Promise.all(
    Array.from({ length: 24 }, (_, i) => post(ci, feature, { state: i % 3 === 0 ? 'failure' : 'success', context: contexts[i % 2] })),
  );
  expect(posted.map((answer) => answer.status)).toEqual(posted.map(() => 201));
  const rows = await query<{ context: string; count: number; latest_created: Date; newest: Date }>(
    server,
    `select c.context, c.count, l.created_at as latest_created,
            (select max(s.created_at) from commit_statuses s where s.repository_id = c.repository_id and s.sha = c.sha and s.context = c.context) as newest
       from commit_status_contexts c join commit_statuses l on l.id = c.latest_id
      where c.repository_id = $1 and c.sha = $2 and c.context = any($3) order by c.context`,
    [repo.id, feature, contexts],
  );
  expect(rows.map(({ context, count }) => ({ context, count }))).toEqual(contexts.map((context) => ({ context, count: 12 })));
  for (const row of rows) expect(row.latest_created).toEqual(row.newest);
  const combined = (await reader.get(combinedPath(feature))).body;
  for (const row of rows) {
    const latest = combined.statuses.find((status: { context: string }) => status.context === row.context);
    expect(new Date(latest.created_at)).toEqual(row.newest);
  }
});

test('the status webhook: signed, with the branches whose tip is the commit', async () => {
  const res = await post(ci, feature, {
    state: 'success',
    context: 'ci/hook',
    description: 'hooked',
    target_url: 'http://ci.example.com/2',
  });
  expect(res.status).toBe(201);
  await settledDeliveries(server, [hookId]);
  const got = receiver.received.filter((r) => r.path === '/status' && r.body?.context === 'ci/hook');
  expect(got).toHaveLength(1);
  const delivery = got[0]!;
  expect(delivery.headers['x-cairn-event']).toBe('status');
  expect(await verify(SECRET, delivery.raw.toString('utf8'), delivery.headers['x-cairn-signature-256'] as string)).toBe(true);
  expect(delivery.body).toMatchObject({
    event: 'status',
    id: res.body.id,
    sha: feature,
    state: 'success',
    context: 'ci/hook',
    description: 'hooked',
    target_url: 'http://ci.example.com/2',
    branches: [{ name: 'feature' }],
    repository: { id: repo.id, full_name: 'statuses-owner/statuses-app' },
    sender: { id: ci.userId, login: 'statuses-ci' },
  });
  // Refused posts record no event.
  const events = await query<{ n: string }>(
    server,
    `select count(*) as n from domain_events where repository_id = $1 and type = 'status'`,
    [repo.id],
  );
  const posted = await query<{ n: string }>(
    server,
    `select count(*) as n from commit_statuses where repository_id = $1 and id not like 'sts_capfill%'`,
    [repo.id],
  );
  expect(Number(events[0]!.n)).toBe(Number(posted[0]!.n));
});

test("a pull request's status is its head's combined state, in REST and GraphQL lists", async () => {
  const head = await repo.commit('pr-head', 'pr work', { 'pr.txt': 'x\n' });
  await repo.push(['pr-head']);
  const opened = await repo.open({ title: 'statuses', head: 'pr-head' });
  expect(opened.status).toBe(201);
  expect(opened.body.status).toBe('pending');
  await post(ci, head, { state: 'success', context: 'ci/pr' });
  expect((await repo.get(opened.body.number)).body.status).toBe('success');
  await post(ci, head, { state: 'failure', context: 'ci/lint' });
  const list = await owner.get(`/repos/${repo.id}/pulls`);
  expect(list.body.data.find((p: { number: number }) => p.number === opened.body.number).status).toBe('failure');

  const data = await owner.gql(
    `query($id: ID!) { repository(id: $id) {
       pullRequests { nodes { number status } }
       branches { nodes { name commit { sha status { state totalCount } } } }
     } }`,
    { id: repo.id },
  );
  expect(data.repository.pullRequests.nodes.find((p: { number: number }) => p.number === opened.body.number).status).toBe('FAILURE');
  const branch = data.repository.branches.nodes.find((b: { name: string }) => b.name === 'pr-head');
  expect(branch.commit.status).toEqual({ state: 'FAILURE', totalCount: 2 });
});

test('GraphQL: createCommitStatus and the statuses of a commit', async () => {
  const data = await ci.gql(
    `mutation($input: CreateCommitStatusInput!) { createCommitStatus(input: $input) { id state context targetUrl creator { login } } }`,
    { input: { repositoryId: repo.id, sha: main, state: 'ERROR', context: 'gql', targetUrl: 'https://ci.example.com/3' } },
  );
  expect(data.createCommitStatus).toMatchObject({
    state: 'ERROR',
    context: 'gql',
    targetUrl: 'https://ci.example.com/3',
    creator: { login: 'statuses-ci' },
  });
  const read = await reader.gql(
    `query($id: ID!) { repository(id: $id) { commits(ref: "main", limit: 1) { nodes { sha statuses(limit: 1) { totalCount nodes { id } } status { state } } } } }`,
    { id: repo.id },
  );
  const commit = read.repository.commits.nodes[0];
  expect(commit.sha).toBe(main);
  expect(commit.statuses.nodes).toEqual([{ id: data.createCommitStatus.id }]);
  expect(commit.status.state).toBe('FAILURE');
});

test('a combined status is answered again while nothing it shows has changed, and anew once anything has: a status, the branch, the repository', async () => {
  const kept = await PullRepo.create(server, sandbox, owner, 'statuses-kept', { 'README.md': 'kept\n' }, { private: true });
  const path = `/repos/${kept.id}/commits/main/status`;
  const first = (await kept.run(['rev-parse', 'main'])).trim();
  expect((await owner.post(`/repos/${kept.id}/statuses/${first}`, { state: 'success', context: 'ci/a' })).status).toBe(201);
  const answered = await owner.get(path);
  expect(answered.status).toBe(200);
  const again = await owner.get(path);
  expect(again.body).toEqual(answered.body);
  expect(again.headers.get('etag')).toBe(answered.headers.get('etag'));
  // Sent again, not made again: the version's read, not the statuses' (Server-Timing: sql;count=N).
  const statements = (res: { headers: Headers }) => Number(/sql;count=(\d+)/.exec(res.headers.get('server-timing') ?? '')?.[1]);
  expect(statements(again)).toBeLessThan(statements(answered));
  // The answer is kept by what it shows, not by how the commit was named: its sha, in capitals, gets it too.
  const bySha = await owner.get(`/repos/${kept.id}/commits/${first.toUpperCase()}/status`);
  expect(bySha.body).toEqual(answered.body);
  expect(statements(bySha)).toBeLessThan(statements(answered));
  expect((await owner.get(path, { headers: { 'if-none-match': answered.headers.get('etag')! } })).status).toBe(304);

  // The answer is kept, but only those who may read the repository get it.
  for (const stranger of [reader, ci]) expect((await stranger.get(path)).status).toBe(404);

  const shown: Array<{ state: string; contexts: string[]; sha: string; name: string; private: boolean }> = [];
  const tags = new Set<string | null>([answered.headers.get('etag')]);
  const show = async () => {
    const res = await owner.get(path);
    expect(res.status).toBe(200);
    tags.add(res.headers.get('etag'));
    const { state, statuses, sha, repository } = res.body;
    shown.push({
      state,
      contexts: statuses.map((s: { context: string }) => s.context),
      sha,
      name: repository.name,
      private: repository.private,
    });
  };
  expect((await owner.post(`/repos/${kept.id}/statuses/${first}`, { state: 'failure', context: 'ci/b' })).status).toBe(201);
  await show();
  const second = await kept.commit('main', 'moves main', { 'more.txt': 'more\n' });
  await kept.push(['main']);
  await show();
  expect((await owner.patch(`/repos/${kept.id}`, { name: 'statuses-kept-renamed' })).status).toBe(200);
  await show();
  expect((await owner.patch(`/repos/${kept.id}`, { private: false })).status).toBe(200);
  await show();
  expect((await owner.patch(`/repos/${kept.id}`, { private: true })).status).toBe(200); // back as it was: still a change
  await show();
  expect(shown).toEqual([
    { state: 'failure', contexts: ['ci/b', 'ci/a'], sha: first, name: 'statuses-kept', private: true },
    { state: 'pending', contexts: [], sha: second, name: 'statuses-kept', private: true },
    { state: 'pending', contexts: [], sha: second, name: 'statuses-kept-renamed', private: true },
    { state: 'pending', contexts: [], sha: second, name: 'statuses-kept-renamed', private: false },
    { state: 'pending', contexts: [], sha: second, name: 'statuses-kept-renamed', private: true },
  ]);
  expect(tags.size).toBe(5); // the last answer is the third's again, with its tag
});

test('GraphQL: combinedStatusVersion holds while the combined status does, and changes with it', async () => {
  const version = async (as: Client = reader) =>
    (
      await as.gql<{ combinedStatusVersion: string }>(
        'query($id: ID!, $ref: String!) { combinedStatusVersion(repositoryId: $id, ref: $ref) }',
        {
          id: repo.id,
          ref: 'v1.0',
        },
      )
    ).combinedStatusVersion;
  const before = await version();
  expect(before).toMatch(/^[\w-]{10,}$/);
  expect(await version(ci)).toBe(before);
  expect((await post(ci, main, { state: 'success', context: 'ci/version' })).status).toBe(201);
  const after = await version();
  expect(after).not.toBe(before);
  expect(await version()).toBe(after);
  const stranger = await createUser(admin, 'statuses-stranger');
  const hidden = await PullRepo.create(server, sandbox, owner, 'statuses-hidden', undefined, { private: true });
  const refused = await stranger.graphql('query($id: ID!) { combinedStatusVersion(repositoryId: $id, ref: "main") }', { id: hidden.id });
  expect(refused.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  // A full sha's version is read beside the permission check: refused all the same, and unchanged by
  // statuses the stranger cannot see; nor does an unknown repository answer otherwise.
  const hiddenMain = (await hidden.run(['rev-parse', 'main'])).trim();
  expect((await owner.post(`/repos/${hidden.id}/statuses/${hiddenMain}`, { state: 'success' })).status).toBe(201);
  const bySha = (id: string, as: Client = stranger) =>
    as.graphql('query($id: ID!, $ref: String!) { combinedStatusVersion(repositoryId: $id, ref: $ref) }', { id, ref: hiddenMain });
  for (const answer of [await bySha(hidden.id), await bySha('repo_00000000000000000000000000')]) {
    expect(answer.data ?? null).toBeNull();
    expect(answer.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  }
  const own = await bySha(hidden.id, owner);
  expect((own.data as { combinedStatusVersion: string }).combinedStatusVersion).toMatch(/^[\w-]{10,}$/);
  const unknown = await reader.graphql('query($id: ID!) { combinedStatusVersion(repositoryId: $id, ref: "no-such-branch") }', {
    id: repo.id,
  });
  expect(unknown.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
});
