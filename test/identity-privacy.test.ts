import { adminClient, createUser, noreplyEmail, type Client } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId, remoteUrl } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';

/**
 * What the service tells people who should not know: delivery records name
 * a refused destination without what it resolved to (no internal DNS answers
 * for repository admins), and the commits and push payloads Cairn writes
 * carry a user's public commit email or no-reply address, never the account
 * email. Driven over HTTP and with the real git client, under the default
 * destination policy (no CAIRN_WEBHOOK_ALLOWED_HOSTS).
 */

type User = Client & { login: string; userId: string };

const VIEWER = '{ viewer { login email commitEmail noreplyEmail } }';
const UPDATE = 'mutation($input: UpdateViewerInput!) { updateViewer(input: $input) { login email commitEmail noreplyEmail } }';
const REFUSED_LOCALHOST = 'destination refused by policy: localhost is not allowed by CAIRN_WEBHOOK_ALLOWED_HOSTS';
/** What `localhost` may resolve to: none of it may appear in a record. */
const LOOPBACK_ADDRESSES = /127\.0\.0\.1|::1/;

let server: CairnServer;
let git: GitSandbox;
let receiver: Receiver;
let keeper: User; // owns the repositories, merges, manages webhooks
let writer: User; // opens the pull requests

beforeAll(async () => {
  [server, git, receiver] = await Promise.all([CairnServer.start(), GitSandbox.create(), Receiver.start()]);
  const admin = adminClient(server);
  keeper = await createUser(admin, 'keeper', ['repo', 'admin:repo_hook']);
  writer = await createUser(admin, 'writer');
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup(), receiver?.close()]);
});

/** The no-reply address of a user on the test server (CAIRN_BASE_URL is http://127.0.0.1:<port>). */
const noreply = (user: User) => noreplyEmail(server, user);
const accountEmail = (user: User) => `${user.login}@example.test`;

/** `name <email> / name <email>`: author, then committer of a commit, as git in a clone reads them. */
async function signatures(repo: PullRepo, commit: string): Promise<string> {
  await repo.run(['fetch', '--quiet', 'origin']);
  return (await repo.run(['log', '-1', '--format=%an <%ae> / %cn <%ce>', commit])).trim();
}

/** Every name and email in the history of main on the server, as a clone sees it. */
async function everyIdentity(repo: PullRepo): Promise<string> {
  await repo.run(['fetch', '--quiet', 'origin']);
  return repo.run(['log', '--format=%an <%ae> / %cn <%ce>%n%B', 'origin/main']);
}

async function setCommitEmail(user: User, commitEmail: string | null): Promise<any> {
  return (await user.gql(UPDATE, { input: { commitEmail } })).updateViewer;
}

let repoCount = 0;
/** A repository of keeper's with a branch of one commit and an open pull request by writer from it, mergeable. */
async function openPullRequest(method: string): Promise<{ repo: PullRepo; number: number; head: string }> {
  const repo = await PullRepo.create(server, git, keeper, `identity-${method}-${++repoCount}`, { 'README.md': '# identity\n' });
  const head = await repo.commit(`topic-${method}`, `work for ${method}`, { [`${method}.txt`]: `${method}\n` });
  await repo.push([`topic-${method}`]);
  const opened = await repo.open({ title: `Change by ${method}`, head: `topic-${method}` }, writer);
  expect(opened.status).toBe(201);
  await eventually(
    async () => (await repo.get(opened.body.number)).body?.mergeable === true,
    10_000,
    `#${opened.body.number} to be mergeable`,
  );
  return { repo, number: opened.body.number, head };
}

async function merge(repo: PullRepo, number: number, method: string): Promise<string> {
  const res = await keeper.put(`/repos/${repo.id}/pulls/${number}/merge`, { method });
  expect(res.status).toBe(200);
  return res.body.sha;
}

/** The `pusher` of the push events recorded for main after `since`. */
async function pushersOfMain(repo: PullRepo, since: string): Promise<unknown[]> {
  const events = await eventsOf(server, repo.id, since);
  return events.filter((e) => e.type === 'push' && e.payload.ref === 'refs/heads/main').map((e) => e.payload.pusher);
}

describe('delivery records under the default policy', () => {
  let repoId: string;
  let hook: any;
  let deliveries: string;

  beforeAll(async () => {
    repoId = (await keeper.post('/repos', { name: 'refused-hook' })).body.id;
    // The receiver listens on loopback: were the policy to let the request through, it would arrive there.
    const created = await keeper.post(`/repos/${repoId}/webhooks`, {
      url: `http://localhost:${receiver.port}/internal`,
      secret: 'identity-secret-never-logged',
      events: ['issues'],
    });
    expect(created.status).toBe(201);
    hook = created.body;
    deliveries = `/repos/${repoId}/webhooks/${hook.id}/deliveries`;
    await keeper.post(`/repos/${repoId}/issues`, { title: 'fires the webhook' });
  });

  test('a name that resolves to loopback is refused, and the record says so without the address', async () => {
    const detail = await eventually(async () => {
      const list = await keeper.get(deliveries);
      const id = list.body.data[0]?.id;
      const one = id ? (await keeper.get(`${deliveries}/${id}`)).body : null;
      return one?.attempts?.length >= 1 && one;
    });
    expect(detail.attempts[0]).toMatchObject({ status_code: null, error: REFUSED_LOCALHOST });
    expect(JSON.stringify(detail.attempts)).not.toMatch(LOOPBACK_ADDRESSES);
    expect(receiver.at('/internal')).toHaveLength(0);

    const webhook = await eventually(async () => {
      const res = await keeper.get(`/repos/${repoId}/webhooks/${hook.id}`);
      return res.body.last_response && res.body;
    });
    expect(webhook.last_response).toMatchObject({ status_code: null, error: REFUSED_LOCALHOST });
    expect(JSON.stringify(webhook.last_response)).not.toMatch(LOOPBACK_ADDRESSES);

    // The same through GraphQL, which the REST answers are made from.
    const { repository } = await keeper.gql(
      'query($repo: ID!, $id: ID!) { repository(id: $repo) { webhook(id: $id) { lastResponse { error } deliveries { nodes { attempts { error } } } } } }',
      { repo: repoId, id: hook.id },
    );
    const viaGraphql = repository.webhook;
    expect(JSON.stringify(viaGraphql)).toContain(REFUSED_LOCALHOST);
    expect(JSON.stringify(viaGraphql)).not.toMatch(LOOPBACK_ADDRESSES);
  });

  test("the server's own log keeps the resolved addresses for operators, without the URL's path or the secret", async () => {
    const line = await eventually(async () => server.logs().find((entry) => entry.msg === 'webhook destination refused by policy'));
    expect(line).toMatchObject({ level: 40, host: 'localhost' });
    expect(JSON.stringify(line.addresses)).toMatch(LOOPBACK_ADDRESSES);
    expect(server.output).not.toContain('identity-secret-never-logged');
    expect(JSON.stringify(line)).not.toContain('/internal');
  });
});

describe('commits the service writes, with no public commit email set', () => {
  test('merge: the merger as author and committer, with their no-reply address; the push event says the same', async () => {
    const { repo, number } = await openPullRequest('merge');
    const since = await lastEventId(server);
    const sha = await merge(repo, number, 'merge');
    const mergerLine = `keeper <${noreply(keeper)}>`;
    expect(await signatures(repo, sha)).toBe(`${mergerLine} / ${mergerLine}`);
    expect(await pushersOfMain(repo, since)).toEqual([{ name: 'keeper', email: noreply(keeper) }]);
    expect(await everyIdentity(repo)).not.toContain(accountEmail(keeper));
  });

  test("squash: the pull request's author with their no-reply address, committed by the merger with theirs", async () => {
    const { repo, number } = await openPullRequest('squash');
    const sha = await merge(repo, number, 'squash');
    expect(await signatures(repo, sha)).toBe(`writer <${noreply(writer)}> / keeper <${noreply(keeper)}>`);
    const history = await everyIdentity(repo);
    expect(history).not.toContain(accountEmail(writer));
    expect(history).not.toContain(accountEmail(keeper));
  });

  test('rebase: each commit keeps the author git recorded; the merger commits with their no-reply address', async () => {
    const { repo, number, head } = await openPullRequest('rebase');
    const sha = await merge(repo, number, 'rebase');
    expect(sha).not.toBe(head);
    expect(await signatures(repo, sha)).toBe(`Test User <test@example.test> / keeper <${noreply(keeper)}>`);
    expect(await everyIdentity(repo)).not.toContain(accountEmail(keeper));
  });

  test("auto_init: the first commit is the owner's, with their no-reply address", async () => {
    const created = await keeper.post('/repos', { name: 'identity-auto-init', auto_init: true });
    expect(created.status).toBe(201);
    const clone = git.path(`auto-init-${Date.now()}`);
    await git.git(['clone', '--quiet', remoteUrl(server, 'keeper', 'identity-auto-init', keeper.token), clone]);
    const line = (await git.git(['log', '-1', '--format=%an <%ae> / %cn <%ce>'], { cwd: clone })).trim();
    expect(line).toBe(`keeper <${noreply(keeper)}> / keeper <${noreply(keeper)}>`);
  });

  test('a git push: the pusher of its push event has the no-reply address', async () => {
    const repo = await PullRepo.create(server, git, keeper, 'identity-push', { 'README.md': '# push\n' });
    const since = await lastEventId(server);
    await repo.commit('main', 'pushed by keeper', { 'more.txt': 'more\n' });
    await repo.push(['main']);
    expect(await pushersOfMain(repo, since)).toEqual([{ name: 'keeper', email: noreply(keeper) }]);
  });
});

describe('a public commit email', () => {
  afterAll(async () => {
    await setCommitEmail(keeper, null);
    await setCommitEmail(writer, null);
  });

  test('the viewer reads both addresses; setting one, then clearing it', async () => {
    expect((await keeper.gql(VIEWER)).viewer).toEqual({
      login: 'keeper',
      email: accountEmail(keeper),
      commitEmail: null,
      noreplyEmail: noreply(keeper),
    });
    expect(await setCommitEmail(keeper, 'keeper.public@example.org')).toEqual({
      login: 'keeper',
      email: accountEmail(keeper),
      commitEmail: 'keeper.public@example.org',
      noreplyEmail: noreply(keeper),
    });
    // A field left out leaves it; null clears it.
    expect((await keeper.gql('mutation { updateViewer(input: {}) { commitEmail } }')).updateViewer.commitEmail).toBe(
      'keeper.public@example.org',
    );
    expect((await setCommitEmail(keeper, null)).commitEmail).toBeNull();
  });

  test('merges, squashes, rebases and pushes use it once set', async () => {
    await setCommitEmail(keeper, 'keeper.public@example.org');
    await setCommitEmail(writer, 'writer.public@example.org');

    const merged = await openPullRequest('merge');
    const since = await lastEventId(server);
    const mergeSha = await merge(merged.repo, merged.number, 'merge');
    expect(await signatures(merged.repo, mergeSha)).toBe('keeper <keeper.public@example.org> / keeper <keeper.public@example.org>');
    expect(await pushersOfMain(merged.repo, since)).toEqual([{ name: 'keeper', email: 'keeper.public@example.org' }]);

    const squashed = await openPullRequest('squash');
    const squashSha = await merge(squashed.repo, squashed.number, 'squash');
    expect(await signatures(squashed.repo, squashSha)).toBe('writer <writer.public@example.org> / keeper <keeper.public@example.org>');

    const rebased = await openPullRequest('rebase');
    const rebaseSha = await merge(rebased.repo, rebased.number, 'rebase');
    expect(await signatures(rebased.repo, rebaseSha)).toBe('Test User <test@example.test> / keeper <keeper.public@example.org>');

    const pushed = await PullRepo.create(server, git, keeper, 'identity-push-public', { 'README.md': '# push\n' });
    const beforePush = await lastEventId(server);
    await pushed.commit('main', 'pushed by keeper', { 'more.txt': 'more\n' });
    await pushed.push(['main']);
    expect(await pushersOfMain(pushed, beforePush)).toEqual([{ name: 'keeper', email: 'keeper.public@example.org' }]);
  });

  test.each([
    ['not an address', 'nobody'],
    ['empty', ''],
    ['with spaces', 'a b@example.org'],
    ['with angle brackets', 'evil>@example.org'],
    ['with a newline', 'a@example.org\nb'],
    ['too long', `${'a'.repeat(64)}@${'b'.repeat(190)}`],
  ])('an invalid commit email (%s) is refused with VALIDATION_FAILED and changes nothing', async (_what, commitEmail) => {
    await setCommitEmail(writer, 'writer.kept@example.org');
    const result = await writer.graphql(UPDATE, { input: { commitEmail } });
    expect(result.data).toBeNull();
    expect(result.errors?.[0]?.extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ field: 'commitEmail', code: 'invalid_format', message: expect.any(String) }],
    });
    expect((await writer.gql(VIEWER)).viewer.commitEmail).toBe('writer.kept@example.org');
  });

  test('a token without the repo scope cannot change it', async () => {
    const admin = adminClient(server);
    const readOnly = await createUser(admin, 'reader', ['repo:read']);
    const result = await readOnly.graphql(UPDATE, { input: { commitEmail: 'reader@example.org' } });
    expect(result.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await readOnly.gql(VIEWER)).viewer.commitEmail).toBeNull();
  });

  test('both addresses are readable only where the account email is: the account itself and site admins', async () => {
    await setCommitEmail(writer, 'writer.public@example.org');
    const { users } = await adminClient(server).gql('{ users(limit: 100) { nodes { login email commitEmail noreplyEmail } } }');
    expect(users.nodes.find((u: any) => u.login === 'writer')).toEqual({
      login: 'writer',
      email: accountEmail(writer),
      commitEmail: 'writer.public@example.org',
      noreplyEmail: noreply(writer),
    });
    // Another user cannot list accounts, and users inside other records are {id, login} only.
    expect((await keeper.graphql('{ users { nodes { commitEmail } } }')).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const asActor = await keeper.graphql('{ repositories { nodes { owner { commitEmail } } } }');
    expect(asActor.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });
});

describe('records kept from before refusals stopped naming addresses', () => {
  test('are rewritten by the migration in the shape of today, without the address', async () => {
    const repoId = (await keeper.post('/repos', { name: 'old-refusal' })).body.id;
    const hook = (await keeper.post(`/repos/${repoId}/webhooks`, { url: `http://localhost:${receiver.port}/old`, events: ['issues'] }))
      .body;
    await keeper.post(`/repos/${repoId}/issues`, { title: 'fires' });
    const deliveries = `/repos/${repoId}/webhooks/${hook.id}/deliveries`;
    const deliveryId = await eventually(async () => {
      const id = (await keeper.get(deliveries)).body.data[0]?.id;
      return id && (await keeper.get(`${deliveries}/${id}`)).body.attempts.length >= 1 && id;
    });

    // What a record looked like before, and the migration not yet run.
    await server.stop();
    const old = 'destination refused by policy: localhost resolves to 127.0.0.1, ::1';
    await query(server, `update delivery_attempts set error = $1 where delivery_id = $2`, [old, deliveryId]);
    await query(server, `update webhooks set last_response = jsonb_set(last_response, '{error}', to_jsonb($1::text)) where id = $2`, [
      old,
      hook.id,
    ]);
    await query(server, `delete from mikro_orm_migrations where name like '%RefusalsWithoutAddresses%'`);
    server = await server.restart();

    const detail = (await keeper.get(`${deliveries}/${deliveryId}`)).body;
    expect(detail.attempts[0].error).toBe(REFUSED_LOCALHOST);
    const webhook = (await keeper.get(`/repos/${repoId}/webhooks/${hook.id}`)).body;
    expect(webhook.last_response.error).toBe(REFUSED_LOCALHOST);
  });
});
