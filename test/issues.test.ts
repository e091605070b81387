import { adminClient, createUser, type Client } from './support/client.js';
import { CairnServer, query } from './support/server.js';
import { urqlClient } from './support/urql.js';

let server: CairnServer;
let admin: Client;
let owner: Awaited<ReturnType<typeof createUser>>;
let reporter: Awaited<ReturnType<typeof createUser>>;
let writer: Awaited<ReturnType<typeof createUser>>;
let repoId: string;

beforeAll(async () => {
  server = CairnServer.sharedServer();
  admin = adminClient(server);
  owner = await createUser(admin, 'issues-owner');
  reporter = await createUser(admin, 'issues-reporter');
  writer = await createUser(admin, 'issues-writer');
  repoId = (await owner.post('/repos', { name: 'tracker' })).body.id;
  await owner.put(`/repos/${repoId}/collaborators/issues-writer`, { permission: 'write' });
});
afterAll(() => server.destroy());

describe('issues', () => {
  test('open an issue: 201 with every documented field', async () => {
    const res = await reporter.post(`/repos/${repoId}/issues`, { title: '  Crash on start  ', body: 'stack trace', labels: ['ignored'] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^iss_[0-9a-z]{26}$/),
      number: expect.any(Number),
      title: 'Crash on start',
      body: 'stack trace',
      state: 'open',
      state_reason: null,
      user: { id: reporter.userId, login: 'issues-reporter' },
      comments: 0,
      labels: [],
      assignees: [],
      created_at: expect.any(String),
      updated_at: expect.any(String),
      closed_at: null,
      repository_id: repoId,
    });
    const fetched = await owner.get(`/repos/${repoId}/issues/${res.body.number}`);
    expect(fetched.body).toEqual(res.body);
    expect((await owner.get(`/repos/${repoId}`)).body.open_issues_count).toBeGreaterThanOrEqual(1);
  });

  test('422 for missing, empty or oversized titles and wrong types; nothing is created', async () => {
    const before = (await owner.get(`/repos/${repoId}/issues?state=all`)).body.total;
    for (const body of [
      {},
      { title: '' },
      { title: '   ' },
      { title: 'x'.repeat(257) },
      { title: 5 },
      { title: 't', body: 'b'.repeat(65_537) },
    ]) {
      const res = await reporter.post(`/repos/${repoId}/issues`, body);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect((await owner.get(`/repos/${repoId}/issues?state=all`)).body.total).toBe(before);
  });

  test('close, reopen and edit: state, state_reason, closed_at, permissions', async () => {
    const issue = (await reporter.post(`/repos/${repoId}/issues`, { title: 'to close' })).body;
    const path = `/repos/${repoId}/issues/${issue.number}`;

    const closed = await reporter.patch(path, { state: 'closed' });
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({ state: 'closed', state_reason: 'completed', closed_at: expect.any(String) });

    const reopened = await writer.patch(path, { state: 'open' });
    expect(reopened.body).toMatchObject({ state: 'open', state_reason: 'reopened', closed_at: null });

    const notPlanned = await owner.patch(path, { state: 'closed', state_reason: 'not_planned', title: 'renamed' });
    expect(notPlanned.body).toMatchObject({ state: 'closed', state_reason: 'not_planned', title: 'renamed' });

    const stranger = await createUser(admin, 'issues-stranger');
    const denied = await stranger.patch(path, { title: 'hijack' });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('forbidden');
    expect((await owner.get(path)).body.title).toBe('renamed');
  });

  test('invalid updates: 422 and no change', async () => {
    const issue = (await reporter.post(`/repos/${repoId}/issues`, { title: 'stable' })).body;
    const path = `/repos/${repoId}/issues/${issue.number}`;
    for (const body of [
      { state: 'merged' },
      { state: null },
      { title: '' },
      { state_reason: 'reopened', state: 'closed' },
      { state_reason: 'completed' },
      { state_reason: 'bogus' },
    ]) {
      const res = await owner.patch(path, body);
      expect(res.status).toBe(422);
    }
    expect((await owner.get(path)).body).toMatchObject({ title: 'stable', state: 'open', state_reason: null });
  });

  test('404 for unknown, zero, negative and non-numeric issue numbers', async () => {
    for (const number of ['999999', '0', '-1', 'abc', '1.5', '99999999999999']) {
      const res = await owner.get(`/repos/${repoId}/issues/${number}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  test('list: state filter, envelope, newest first', async () => {
    const repo = (await owner.post('/repos', { name: 'listing' })).body.id;
    for (let i = 1; i <= 5; i++) await owner.post(`/repos/${repo}/issues`, { title: `issue ${i}` });
    await owner.patch(`/repos/${repo}/issues/2`, { state: 'closed' });
    await owner.patch(`/repos/${repo}/issues/4`, { state: 'closed' });

    const open = await owner.get(`/repos/${repo}/issues`);
    expect(open.body).toMatchObject({ total: 3, limit: 30, offset: 0, hasMore: false });
    expect(open.body.data.map((i: { number: number }) => i.number)).toEqual([5, 3, 1]);
    const closed = await owner.get(`/repos/${repo}/issues?state=closed`);
    expect(closed.body.data.map((i: { number: number }) => i.number)).toEqual([4, 2]);
    const all = await owner.get(`/repos/${repo}/issues?state=all&limit=2&offset=1`);
    expect(all.body).toMatchObject({ total: 5, limit: 2, offset: 1, hasMore: true });
    expect(all.body.data.map((i: { number: number }) => i.number)).toEqual([4, 3]);
    expect((await owner.get(`/repos/${repo}`)).body.open_issues_count).toBe(3);

    expect((await owner.get(`/repos/${repo}/issues?state=weird`)).status).toBe(422);
    expect((await owner.get(`/repos/${repo}/issues?limit=-2`)).status).toBe(400);
  });

  test('40 concurrent creates get exactly the numbers 1..40', async () => {
    const repo = (await owner.post('/repos', { name: 'race' })).body.id;
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => [owner, reporter, writer][i % 3]!.post(`/repos/${repo}/issues`, { title: `racer ${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(40).fill(201));
    const numbers = results.map((r) => r.body.number as number).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    const next = await owner.post(`/repos/${repo}/issues`, { title: 'after the race' });
    expect(next.body.number).toBe(41);
  });

  test('a failed create gives its number back (no gaps)', async () => {
    const repo = (await owner.post('/repos', { name: 'gapless' })).body.id;
    await owner.post(`/repos/${repo}/issues`, { title: 'one' });
    await owner.post(`/repos/${repo}/issues`, { title: '' });
    expect((await owner.post(`/repos/${repo}/issues`, { title: 'two' })).body.number).toBe(2);
  });

  test('private repository: strangers get 404, collaborators may read and open issues', async () => {
    const repo = (await owner.post('/repos', { name: 'hidden', private: true })).body.id;
    await owner.post(`/repos/${repo}/issues`, { title: 'secret issue' });
    expect((await reporter.get(`/repos/${repo}/issues`)).status).toBe(404);
    expect((await reporter.get(`/repos/${repo}/issues/1`)).status).toBe(404);
    expect((await reporter.patch(`/repos/${repo}/issues/1`, { state: 'closed' })).status).toBe(404);
    await owner.put(`/repos/${repo}/collaborators/issues-reporter`, { permission: 'read' });
    expect((await reporter.get(`/repos/${repo}/issues`)).body.total).toBe(1);
    expect((await reporter.post(`/repos/${repo}/issues`, { title: 'from a reader' })).status).toBe(201);
    expect((await reporter.patch(`/repos/${repo}/issues/1`, { state: 'closed' })).status).toBe(403);
  });

  // Opening an issue and adding a comment load the repository (and the issue answered) outside the
  // request's entity manager; the fields after them in the same mutation flush it (updateRepository)
  // and load the same rows again (updateIssue), so anything of theirs left half-tracked would be
  // inserted a second time or answered stale. Through urql, as a frontend sends it.
  test('one mutation opens issues, changes the repository, comments and edits: each field sees the ones before it', async () => {
    const repo = (await owner.post('/repos', { name: 'one-go' })).body.id;
    const fields = `a: createIssue(input: { repositoryId: $repo, title: "first" }) { number user { login } }
      b: updateRepository(id: $repo, input: { description: "changed in one go" }) { description }
      c: addComment(input: { repositoryId: $repo, number: 1, body: "noted" }) { user { login } }
      d: createIssue(input: { repositoryId: $repo, title: "second" }) { number user { login } }
      e: updateIssue(input: { repositoryId: $repo, number: 1, title: "first, edited" }) { number title comments { totalCount } user { login } }`;
    const byOwner = await urqlClient(server, owner.token).mutation(`mutation($repo: ID!) { ${fields} }`, { repo }).toPromise();
    expect(byOwner.error).toBeUndefined();
    expect(byOwner.data).toEqual({
      a: { number: 1, user: { login: 'issues-owner' } },
      b: { description: 'changed in one go' },
      c: { user: { login: 'issues-owner' } },
      d: { number: 2, user: { login: 'issues-owner' } },
      e: { number: 1, title: 'first, edited', comments: { totalCount: 1 }, user: { login: 'issues-owner' } },
    });
    // An author who is not the owner is loaded apart from the repository.
    const byWriter = await urqlClient(server, writer.token)
      .mutation(
        `mutation($repo: ID!) { a: createIssue(input: { repositoryId: $repo, title: "third" }) { number user { login } }
          b: updateIssue(input: { repositoryId: $repo, number: 3, body: "details" }) { body user { login } } }`,
        { repo },
      )
      .toPromise();
    expect(byWriter.error).toBeUndefined();
    expect(byWriter.data).toEqual({
      a: { number: 3, user: { login: 'issues-writer' } },
      b: { body: 'details', user: { login: 'issues-writer' } },
    });
    const listed = (await owner.get(`/repos/${repo}/issues?direction=asc&sort=created`)).body.data;
    expect(listed.map((issue: { title: string; user: { login: string } }) => `${issue.title} by ${issue.user.login}`)).toEqual([
      'first, edited by issues-owner',
      'second by issues-owner',
      'third by issues-writer',
    ]);
    const [users] = await query(server, "select count(*)::int as n from users where login in ('issues-owner', 'issues-writer')");
    expect(users!.n).toBe(2);
  });

  // A page of issues is read in one statement and mapped, in a mutation into the request's entity
  // manager: the issues a field lists are the ones a later field changes and flushes.
  test('one mutation lists issues between changes: the listed ones are those the next field edits', async () => {
    const repo = (await owner.post('/repos', { name: 'listed-in-one-go' })).body.id;
    expect((await reporter.post(`/repos/${repo}/issues`, { title: 'reported' })).status).toBe(201);
    const list = 'issues(state: ALL) { totalCount nodes { number title state user { login } repositoryId } }';
    const { data, error } = await urqlClient(server, owner.token)
      .mutation(
        `mutation($repo: ID!) { a: createIssue(input: { repositoryId: $repo, title: "mine" }) { number }
          b: updateRepository(id: $repo, input: { description: "listed" }) { ${list} }
          c: updateIssue(input: { repositoryId: $repo, number: 1, title: "reported, edited", state: CLOSED }) { number title user { login } }
          d: updateRepository(id: $repo, input: { description: "listed again" }) { ${list} } }`,
        { repo },
      )
      .toPromise();
    expect(error).toBeUndefined();
    const node = (number: number, title: string, state: string, login: string) => ({
      number,
      title,
      state,
      user: { login },
      repositoryId: repo,
    });
    expect(data.b.issues).toEqual({
      totalCount: 2,
      nodes: [node(2, 'mine', 'OPEN', 'issues-owner'), node(1, 'reported', 'OPEN', 'issues-reporter')],
    });
    expect(data.c).toEqual({ number: 1, title: 'reported, edited', user: { login: 'issues-reporter' } });
    expect(data.d.issues.nodes).toEqual([
      node(2, 'mine', 'OPEN', 'issues-owner'),
      node(1, 'reported, edited', 'CLOSED', 'issues-reporter'),
    ]);
    const listed = (await owner.get(`/repos/${repo}/issues?state=all`)).body.data;
    expect(listed.map((issue: { number: number; title: string; state: string }) => [issue.number, issue.title, issue.state])).toEqual([
      [2, 'mine', 'open'],
      [1, 'reported, edited', 'closed'],
    ]);
  });

  test('deleting the repository deletes its issues', async () => {
    const repo = (await owner.post('/repos', { name: 'short-lived' })).body.id;
    await owner.post(`/repos/${repo}/issues`, { title: 'gone soon' });
    await owner.delete(`/repos/${repo}`);
    const rows = await query(server, 'select count(*)::int as n from issues where repository_id = $1', [repo]);
    expect(rows[0]!.n).toBe(0);
  });
});

describe('domain events outbox', () => {
  const events = (repo: string) =>
    query<{ type: string; action: string; payload: any }>(
      server,
      'select type, action, payload from domain_events where repository_id = $1 order by id',
      [repo],
    );

  test('repository and issues changes are recorded with their payloads', async () => {
    const repo = (await owner.post('/repos', { name: 'evented', description: 'v1' })).body;
    const issue = (await reporter.post(`/repos/${repo.id}/issues`, { title: 'first' })).body;
    await reporter.patch(`/repos/${repo.id}/issues/${issue.number}`, { title: 'second' });
    await owner.patch(`/repos/${repo.id}/issues/${issue.number}`, { state: 'closed' });
    await owner.patch(`/repos/${repo.id}/issues/${issue.number}`, { state: 'open' });
    await owner.patch(`/repos/${repo.id}`, { description: 'v2', name: 'evented2' });
    await owner.put(`/repos/${repo.id}/collaborators/issues-writer`, { permission: 'write' });
    await owner.delete(`/repos/${repo.id}/collaborators/issues-writer`);
    await owner.delete(`/repos/${repo.id}`);

    const recorded = await events(repo.id);
    expect(recorded.map((e) => `${e.type}.${e.action}`)).toEqual([
      'repository.created',
      'issues.opened',
      'issues.updated',
      'issues.closed',
      'issues.reopened',
      'repository.updated',
      'member.added',
      'member.removed',
      'repository.deleted',
    ]);
    const repositoryRef = {
      id: repo.id,
      name: 'evented',
      full_name: 'issues-owner/evented',
      owner: { id: owner.userId, login: 'issues-owner' },
      private: false,
      default_branch: 'main',
      clone_url: `${server.url}/issues-owner/evented.git`,
    };
    expect(recorded[0]!.payload).toEqual({
      event: 'repository',
      action: 'created',
      repository: repositoryRef,
      sender: { id: owner.userId, login: 'issues-owner' },
    });
    expect(recorded[1]!.payload).toEqual({
      event: 'issues',
      action: 'opened',
      issue,
      repository: repositoryRef,
      sender: { id: reporter.userId, login: 'issues-reporter' },
    });
    expect(recorded[2]!.payload.changes).toEqual({ title: { from: 'first' } });
    expect(recorded[2]!.payload.issue.title).toBe('second');
    expect(recorded[3]!.payload.issue).toMatchObject({ state: 'closed', state_reason: 'completed' });
    expect(recorded[5]!.payload.changes).toEqual({ description: { from: 'v1' }, name: { from: 'evented' } });
    expect(recorded[5]!.payload.repository).toMatchObject({ name: 'evented2', full_name: 'issues-owner/evented2' });
    expect(recorded[6]!.payload).toMatchObject({ member: { id: writer.userId, login: 'issues-writer' }, permission: 'write' });
    expect(recorded[8]!.payload.repository.id).toBe(repo.id);
  });

  test('a rejected change records nothing', async () => {
    const repo = (await owner.post('/repos', { name: 'quiet' })).body;
    await owner.patch(`/repos/${repo.id}`, { name: 'bad name!' });
    await reporter.patch(`/repos/${repo.id}`, { description: 'nope' });
    await owner.patch(`/repos/${repo.id}`, { description: null }); // no actual change
    expect((await events(repo.id)).map((e) => e.action)).toEqual(['created']);
  });
});
