import { adminClient, Client, createToken, createUser, type ApiResponse } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer } from './support/server.js';

/**
 * The pull request API as a REST client and a GraphQL client use it: every
 * route under both prefixes, list filters and paging, the opening rules,
 * permissions, editing, files and commits, reviews, open_pulls_count, and
 * the GraphQL fields and mutations. Merge semantics in detail live elsewhere.
 */

type User = Awaited<ReturnType<typeof createUser>>;

let server: CairnServer;
let admin: Client;
let git: GitSandbox;
let owner: User;
let reader: User;
let writer: User;
let stranger: User;
let readOnlyReader: Client; // reader's second token, repo:read only

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
/** Commit dates as git reports them: ISO 8601 with an offset or Z. */
const GIT_DATE = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
const SHA = expect.stringMatching(/^[0-9a-f]{40}$/);

beforeAll(async () => {
  server = CairnServer.sharedServer();
  admin = adminClient(server);
  git = await GitSandbox.create();
  [owner, reader, writer, stranger] = await Promise.all([
    createUser(admin, 'pulls-api-owner'),
    createUser(admin, 'pulls-api-reader'),
    createUser(admin, 'pulls-api-writer'),
    createUser(admin, 'pulls-api-stranger'),
  ]);
  readOnlyReader = new Client(server, await createToken(admin, 'pulls-api-reader', ['repo:read']));
});
afterAll(async () => {
  await server?.destroy();
  await git?.cleanup();
});

/** The REST error body's status, code and (field, code) details. */
function expectError(res: ApiResponse, status: number, code: string, details?: Array<[string, string]>) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(res.body).toEqual({
    error: { code, message: expect.any(String), details: expect.any(Array) },
    request_id: expect.any(String),
  });
  if (details) {
    const got = res.body.error.details.map((d: { field: string; code: string }) => [d.field, d.code]);
    expect(got.sort()).toEqual([...details].sort());
  }
}

const numbers = (res: ApiResponse) => res.body.data.map((p: { number: number }) => p.number);

/** The next number of the issue / pull request sequence, consumed by opening an issue. */
async function nextNumber(repo: PullRepo): Promise<number> {
  const res = await repo.owner.post(`/repos/${repo.id}/issues`, { title: 'probe' });
  expect(res.status).toBe(201);
  return res.body.number;
}

function lines(n: number, width = 40, tag = 'line'): string {
  let out = '';
  for (let i = 0; i < n; i++) out += `${tag} ${i}`.padEnd(width, '.') + '\n';
  return out;
}

describe.each([
  ['/', ''],
  ['/api', '/api'],
])('every REST row under %s', (_label, prefix) => {
  test('open, get, list, patch, reviews, commits, files, merge', async () => {
    const repo = await PullRepo.create(server, git, owner, `rows${prefix.replace('/', '-')}`, { 'README.md': 'hello\n' });
    const base = (await repo.remoteSha('main'))!;
    const first = await repo.commit('feature', 'first change', { 'a.txt': 'a\n' });
    const head = await repo.commit('feature', 'second change', { 'README.md': 'hello\nworld\n' });
    await repo.push(['feature']);
    const pulls = `${prefix}/repos/${repo.id}/pulls`;

    // A contributor (any user may read a public repository) opens it.
    const opened = await reader.post(pulls, { title: '  Add a  ', body: 'Please merge', head: 'feature' });
    expect(opened.status).toBe(201);
    expect(opened.body).toEqual({
      id: expect.stringMatching(/^pr_[0-9a-z]{26}$/),
      number: 1,
      title: 'Add a',
      body: 'Please merge',
      state: 'open',
      status: 'pending', // the combined state of the head's commit statuses: none yet
      draft: false,
      head: { ref: 'feature', sha: head },
      base: { ref: 'main', sha: base },
      user: { id: reader.userId, login: 'pulls-api-reader' },
      merged: false,
      merged_at: null,
      merged_by: null,
      merge_commit_sha: null,
      mergeable: null,
      mergeable_state: 'unknown',
      conflicts: [],
      commits: 2,
      created_at: ISO,
      updated_at: ISO,
      closed_at: null,
      auto_merge: null, // until someone enables it
      labels: [],
      assignees: [],
      requested_reviewers: [],
      repository_id: repo.id,
    });

    // Mergeability arrives in the background; the record is otherwise unchanged.
    await repo.mergeable(1);
    const got = await owner.get(`${pulls}/1`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ ...opened.body, mergeable: true, mergeable_state: 'clean' });

    const list = await owner.get(pulls);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [got.body], total: 1, limit: 30, offset: 0, hasMore: false });

    const patched = await reader.patch(`${pulls}/1`, { title: 'Add a and world', body: null });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ number: 1, title: 'Add a and world', body: null, state: 'open', head: { sha: head } });

    const review = await owner.post(`${pulls}/1/reviews`, { event: 'APPROVE', body: 'LGTM' });
    expect(review.status).toBe(201);
    expect(review.body).toEqual({
      id: expect.stringMatching(/^rev_[0-9a-z]{26}$/),
      state: 'approved',
      body: 'LGTM',
      user: { id: owner.userId, login: 'pulls-api-owner' },
      commit_id: head,
      submitted_at: ISO,
    });
    const reviews = await reader.get(`${pulls}/1/reviews`);
    expect(reviews.status).toBe(200);
    expect(reviews.body).toEqual({ data: [review.body], total: 1, limit: 30, offset: 0, hasMore: false });

    const commits = await reader.get(`${pulls}/1/commits`);
    expect(commits.status).toBe(200);
    expect(commits.body).toMatchObject({ total: 2, limit: 30, offset: 0, hasMore: false });
    expect(commits.body.data.map((c: any) => [c.sha, c.parents])).toEqual([
      [first, [base]],
      [head, [first]],
    ]);

    const files = await reader.get(`${pulls}/1/files`);
    expect(files.status).toBe(200);
    expect(files.body).toEqual({
      data: [
        {
          filename: 'README.md',
          previous_filename: null,
          status: 'modified',
          additions: 1,
          deletions: 0,
          changes: 1,
          patch: expect.stringMatching(/^@@ /),
        },
        { filename: 'a.txt', previous_filename: null, status: 'added', additions: 1, deletions: 0, changes: 1, patch: '@@ -0,0 +1 @@\n+a' },
      ],
      total: 2,
      limit: 30,
      offset: 0,
      hasMore: false,
    });

    const merged = await owner.put(`${pulls}/1/merge`);
    expect(merged.status).toBe(200);
    expect(merged.body).toEqual({ merged: true, sha: SHA, message: 'Pull request successfully merged' });
    expect(await repo.remoteSha('main')).toBe(merged.body.sha);
    const after = await reader.get(`${pulls}/1`);
    expect(after.body).toMatchObject({
      state: 'merged',
      merged: true,
      merged_at: ISO,
      merged_by: { id: owner.userId, login: 'pulls-api-owner' },
      merge_commit_sha: merged.body.sha,
      head: { ref: 'feature', sha: head },
    });
  });
});

describe('list: envelope, state filters, paging; open_pulls_count', () => {
  test('open/closed/merged/all, newest first, limit/offset, clamping, bad parameters', async () => {
    const repo = await PullRepo.create(server, git, owner, 'listing');
    const branches = ['b1', 'b2', 'b3', 'b4', 'b5', 'b6'];
    for (const b of branches) await repo.commit(b, `work on ${b}`, { [`${b}.txt`]: `${b}\n` });
    await repo.push(branches);

    const counts = async () => {
      const one = (await owner.get(`/repos/${repo.id}`)).body.open_pulls_count;
      const listed = (await owner.get('/repos?owner=pulls-api-owner&limit=100')).body.data.find((r: any) => r.id === repo.id);
      return [one, listed?.open_pulls_count];
    };
    expect(await counts()).toEqual([0, 0]);

    for (const [i, b] of branches.entries()) {
      const res = await repo.open({ title: `pull ${b}`, head: b });
      expect(res.status).toBe(201);
      expect(res.body.number).toBe(i + 1);
    }
    expect(await counts()).toEqual([6, 6]);

    expect((await owner.patch(`/repos/${repo.id}/pulls/2`, { state: 'closed' })).status).toBe(200);
    expect((await owner.patch(`/repos/${repo.id}/pulls/4`, { state: 'closed' })).status).toBe(200);
    expect(await counts()).toEqual([4, 4]);
    expect((await owner.put(`/repos/${repo.id}/pulls/5/merge`)).status).toBe(200);
    expect(await counts()).toEqual([3, 3]);
    expect((await owner.patch(`/repos/${repo.id}/pulls/4`, { state: 'open' })).status).toBe(200);
    expect(await counts()).toEqual([4, 4]);
    expect((await owner.patch(`/repos/${repo.id}/pulls/4`, { state: 'closed' })).status).toBe(200);
    expect(await counts()).toEqual([3, 3]);

    const path = `/repos/${repo.id}/pulls`;
    const byDefault = await owner.get(path);
    expect(byDefault.body).toMatchObject({ total: 3, limit: 30, offset: 0, hasMore: false });
    expect(numbers(byDefault)).toEqual([6, 3, 1]);
    expect(numbers(await owner.get(`${path}?state=open`))).toEqual([6, 3, 1]);
    expect(numbers(await owner.get(`${path}?state=closed`))).toEqual([4, 2]);
    expect(numbers(await owner.get(`${path}?state=merged`))).toEqual([5]);
    const all = await owner.get(`${path}?state=all`);
    expect(numbers(all)).toEqual([6, 5, 4, 3, 2, 1]);
    for (const pr of all.body.data) {
      expect(pr.state).toBe(pr.number === 5 ? 'merged' : [2, 4].includes(pr.number) ? 'closed' : 'open');
    }

    const page = await owner.get(`${path}?state=all&limit=2&offset=1`);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ total: 6, limit: 2, offset: 1, hasMore: true });
    expect(numbers(page)).toEqual([5, 4]);
    const last = await owner.get(`${path}?state=all&limit=2&offset=4`);
    expect(last.body).toMatchObject({ total: 6, limit: 2, offset: 4, hasMore: false });
    expect(numbers(last)).toEqual([2, 1]);
    const clamped = await owner.get(`${path}?state=all&limit=500`);
    expect(clamped.status).toBe(200);
    expect(clamped.body).toMatchObject({ total: 6, limit: 100, offset: 0, hasMore: false });
    expect(clamped.body.data).toHaveLength(6);

    expectError(await owner.get(`${path}?state=bogus`), 422, 'validation_failed');
    expectError(await owner.get(`${path}?limit=-1`), 400, 'invalid_pagination');
    expectError(await owner.get(`/api${path}?offset=-1`), 400, 'invalid_pagination');

    // git moves the count too: a deleted head branch closes #6, b3 merged into main by a push merges #3.
    await repo.push([':b6']);
    await repo.run(['fetch', '--quiet', 'origin', 'main']);
    await repo.checkout('main');
    await repo.run(['reset', '--quiet', '--hard', 'FETCH_HEAD']); // main as #5's merge left it
    await repo.mergeLocally('b3');
    await repo.push(['main']);
    expect(await counts()).toEqual([1, 1]);
    expect(numbers(await owner.get(`${path}?state=open`))).toEqual([1]);
  });
});

describe('opening rules', () => {
  let repo: PullRepo;
  beforeAll(async () => {
    repo = await PullRepo.create(server, git, owner, 'rules');
    const initial = (await repo.remoteSha('main'))!;
    await repo.commit('main', 'advance main', { 'main.txt': 'more\n' });
    await repo.commit('feature', 'feature work', { 'feature.txt': 'f\n' });
    await repo.commit('racy', 'racy work', { 'racy.txt': 'r\n' });
    await repo.push(['main', 'feature', 'racy', 'main:refs/heads/equal', `${initial}:refs/heads/behind`]);
  });

  test('each rule answers 422 with its code and field; nothing is created, no number is used', async () => {
    const path = `/repos/${repo.id}/pulls`;
    const before = await nextNumber(repo);
    const cases: Array<[Record<string, unknown>, Array<[string, string]>]> = [
      [{ title: 't', head: 'nope' }, [['head', 'unknown_branch']]],
      [{ title: 't', head: 'feature', base: 'nope' }, [['base', 'unknown_branch']]],
      [
        { title: 't', head: 'nope1', base: 'nope2' },
        [
          ['head', 'unknown_branch'],
          ['base', 'unknown_branch'],
        ],
      ],
      [{ title: 't', head: 'main' }, [['head', 'same_branch']]],
      [{ title: 't', head: 'feature', base: 'feature' }, [['head', 'same_branch']]],
      [{ title: 't', head: 'equal' }, [['head', 'no_commits']]],
      [{ title: 't', head: 'behind' }, [['head', 'no_commits']]],
      [{ title: '', head: 'feature' }, [['title', 'missing']]],
      [{ title: '   ', head: 'feature' }, [['title', 'missing']]],
      [{ title: 'x'.repeat(257), head: 'feature' }, [['title', 'too_long']]],
    ];
    for (const [body, details] of cases) {
      const res = await repo.open(body, reader);
      expectError(res, 422, 'validation_failed', details);
    }
    expect((await owner.get(`${path}?state=all`)).body.total).toBe(0);

    const ok = await repo.open({ title: 'x'.repeat(256), head: 'feature' }, reader);
    expect(ok.status).toBe(201);
    expect(ok.body.number).toBe(before + 1);
    const dup = await repo.open({ title: 'again', head: 'feature', base: 'main' }, writer);
    expectError(dup, 422, 'validation_failed', [['head', 'already_exists']]);
    expect(await nextNumber(repo)).toBe(before + 2);
    expect((await owner.get(`${path}?state=all`)).body.total).toBe(1);
  });

  test('8 concurrent opens for one pair: exactly one 201, the rest already_exists, no gap', async () => {
    const before = await nextNumber(repo);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => repo.open({ title: `race ${i}`, head: 'racy' }, [owner, reader, writer][i % 3])),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 422)).toHaveLength(7);
    for (const res of results.filter((r) => r.status === 422)) expectError(res, 422, 'validation_failed', [['head', 'already_exists']]);
    const winner = results.find((r) => r.status === 201)!;
    expect(winner.body.number).toBe(before + 1);
    expect(await nextNumber(repo)).toBe(before + 2);
    const open = await owner.get(`/repos/${repo.id}/pulls?state=all`);
    expect(open.body.data.filter((p: any) => p.head.ref === 'racy')).toHaveLength(1);
  });
});

describe('permissions', () => {
  let repo: PullRepo;
  let ownersPull: number;
  beforeAll(async () => {
    repo = await PullRepo.create(server, git, owner, 'secret', { 'README.md': 'secret\n' }, { private: true });
    expect((await owner.put(`/repos/${repo.id}/collaborators/pulls-api-reader`, { permission: 'read' })).status).toBeLessThan(300);
    expect((await owner.put(`/repos/${repo.id}/collaborators/pulls-api-writer`, { permission: 'write' })).status).toBeLessThan(300);
    for (const b of ['by-owner', 'by-reader', 'by-readonly', 'by-stranger']) await repo.commit(b, b, { [`${b}.txt`]: `${b}\n` });
    await repo.push(['by-owner', 'by-reader', 'by-readonly', 'by-stranger']);
    const opened = await repo.open({ title: 'owner work', head: 'by-owner' });
    expect(opened.status).toBe(201);
    ownersPull = opened.body.number;
  });

  test('a stranger gets 404 on every pull route of a private repository; anonymous gets 401', async () => {
    const p = `/repos/${repo.id}/pulls`;
    const n = ownersPull;
    const routes: Array<[string, string, unknown?]> = [
      ['GET', p],
      ['GET', `${p}/${n}`],
      ['POST', p, { title: 'mine', head: 'by-stranger' }],
      ['PATCH', `${p}/${n}`, { title: 'hijack' }],
      ['PUT', `${p}/${n}/merge`, {}],
      ['GET', `${p}/${n}/reviews`],
      ['POST', `${p}/${n}/reviews`, { event: 'COMMENT', body: 'hi' }],
      ['GET', `${p}/${n}/commits`],
      ['GET', `${p}/${n}/files`],
    ];
    for (const [method, path, body] of routes) {
      for (const prefix of ['', '/api']) {
        const res = await stranger.request(method, prefix + path, { body });
        expect([method, prefix + path, res.status]).toEqual([method, prefix + path, 404]);
        expectError(res, 404, 'not_found');
        const anon = await stranger.request(method, prefix + path, { body, anonymous: true });
        expect([method, prefix + path, anon.status]).toEqual([method, prefix + path, 401]);
        expect(anon.body.error.code).toBe('unauthorized');
      }
    }
    const after = await owner.get(`${p}/${n}`);
    expect(after.body).toMatchObject({ title: 'owner work', state: 'open' });
    expect((await owner.get(`${p}?state=all`)).body.total).toBe(1);
    expect((await owner.get(`${p}/${n}/reviews`)).body.total).toBe(0);
  });

  test('a repo:read token cannot open or review (403)', async () => {
    expectError(await repo.open({ title: 'read only', head: 'by-readonly' }, readOnlyReader), 403, 'forbidden');
    expectError(
      await readOnlyReader.post(`/repos/${repo.id}/pulls/${ownersPull}/reviews`, { event: 'COMMENT', body: 'x' }),
      403,
      'forbidden',
    );
    // It may still read.
    expect((await readOnlyReader.get(`/repos/${repo.id}/pulls/${ownersPull}`)).status).toBe(200);
    expect((await owner.get(`/repos/${repo.id}/pulls?state=all`)).body.data.some((p: any) => p.head.ref === 'by-readonly')).toBe(false);
  });

  test('read collaborator: opens, reviews, edits and closes own; cannot edit or merge others (403); writer edits and merges', async () => {
    const p = `/repos/${repo.id}/pulls`;
    const mine = await repo.open({ title: 'reader work', head: 'by-reader' }, reader);
    expect(mine.status).toBe(201);
    expect(mine.body.user).toEqual({ id: reader.userId, login: 'pulls-api-reader' });
    const n = mine.body.number;

    const review = await reader.post(`${p}/${ownersPull}/reviews`, { event: 'APPROVE' });
    expect(review.status).toBe(201);
    expect(review.body.user.login).toBe('pulls-api-reader');

    expectError(await reader.patch(`${p}/${ownersPull}`, { title: 'hijack' }), 403, 'forbidden');
    expectError(await reader.patch(`${p}/${ownersPull}`, { state: 'closed' }), 403, 'forbidden');
    expectError(await reader.put(`${p}/${ownersPull}/merge`), 403, 'forbidden');
    expectError(await reader.put(`${p}/${n}/merge`), 403, 'forbidden');
    expect((await owner.get(`${p}/${ownersPull}`)).body).toMatchObject({ title: 'owner work', state: 'open' });

    const edited = await reader.patch(`${p}/${n}`, { title: 'reader work, edited', body: 'details' });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ title: 'reader work, edited', body: 'details' });
    const closed = await reader.patch(`${p}/${n}`, { state: 'closed' });
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({ state: 'closed', closed_at: ISO, merged: false });
    const reopened = await reader.patch(`${p}/${n}`, { state: 'open' });
    expect(reopened.body).toMatchObject({ state: 'open', closed_at: null });

    const writerEdit = await writer.patch(`${p}/${n}`, { title: 'retitled by writer' });
    expect(writerEdit.status).toBe(200);
    expect(writerEdit.body.title).toBe('retitled by writer');
    const writerEdit2 = await writer.patch(`${p}/${ownersPull}`, { body: 'writer was here' });
    expect(writerEdit2.status).toBe(200);

    const merged = await writer.put(`${p}/${n}/merge`, { method: 'merge' });
    expect(merged.status).toBe(200);
    expect(merged.body).toEqual({ merged: true, sha: SHA, message: 'Pull request successfully merged' });
    expect((await reader.get(`${p}/${n}`)).body).toMatchObject({
      state: 'merged',
      merged_by: { id: writer.userId, login: 'pulls-api-writer' },
      merge_commit_sha: merged.body.sha,
    });
  });
});

describe('PATCH', () => {
  let repo: PullRepo;
  let mainSha: string;
  let c1: string;
  let c2: string;
  beforeAll(async () => {
    repo = await PullRepo.create(server, git, owner, 'edits');
    mainSha = (await repo.remoteSha('main'))!;
    c1 = await repo.commit('topic', 'topic one', { 'one.txt': '1\n' });
    c2 = await repo.commit('topic', 'topic two', { 'two.txt': '2\n' });
    await repo.commit('gone', 'doomed', { 'gone.txt': 'g\n' });
    await repo.commit('landing', 'to merge', { 'landing.txt': 'l\n' });
    await repo.push(['topic', 'gone', 'landing', `${c1}:refs/heads/other`]);
  });

  test('title, body and draft; close and reopen', async () => {
    const opened = await repo.open({ title: 'topic', head: 'topic', draft: true });
    expect(opened.status).toBe(201);
    expect(opened.body).toMatchObject({ draft: true, mergeable_state: 'draft', body: null });
    const path = `/repos/${repo.id}/pulls/${opened.body.number}`;

    const edited = await owner.patch(path, { title: '  Topic, edited ', body: 'Some body', draft: false });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ title: 'Topic, edited', body: 'Some body', draft: false, state: 'open' });
    expect(edited.body.mergeable_state).not.toBe('draft');
    expect(Date.parse(edited.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(opened.body.updated_at));
    expect((await owner.patch(path, { draft: true })).body).toMatchObject({ draft: true, mergeable_state: 'draft' });
    expect((await owner.patch(path, { draft: false, body: null })).body).toMatchObject({ draft: false, body: null });

    expectError(await owner.patch(path, { title: '' }), 422, 'validation_failed', [['title', 'missing']]);
    expectError(await owner.patch(path, { title: 'y'.repeat(257) }), 422, 'validation_failed', [['title', 'too_long']]);

    const closed = await owner.patch(path, { state: 'closed' });
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({ state: 'closed', closed_at: ISO, merged: false, merged_at: null });
    const reopened = await owner.patch(path, { state: 'open' });
    expect(reopened.status).toBe(200);
    expect(reopened.body).toMatchObject({ state: 'open', closed_at: null, head: { ref: 'topic', sha: c2 } });

    expectError(await owner.patch(path, { state: 'merged' }), 422, 'validation_failed', [['state', 'invalid']]);
    for (const field of ['state', 'draft', 'base']) {
      expectError(await owner.patch(path, { [field]: null }), 422, 'validation_failed');
    }
    expect((await owner.get(path)).body).toMatchObject({ state: 'open', draft: false, base: { ref: 'main' } });

    // Reopening beside another open pull request for the same pair: already_exists, and it stays closed.
    expect((await owner.patch(path, { state: 'closed' })).status).toBe(200);
    const twin = await repo.open({ title: 'twin', head: 'topic' });
    expect(twin.status).toBe(201);
    const twinPath = `/repos/${repo.id}/pulls/${twin.body.number}`;
    expectError(await owner.patch(path, { state: 'open' }), 422, 'validation_failed', [['head', 'already_exists']]);
    expect((await owner.get(path)).body.state).toBe('closed');
    expect((await owner.patch(twinPath, { state: 'closed' })).status).toBe(200);
    expect((await owner.patch(path, { state: 'open' })).body.state).toBe('open');
  });

  test('base change: to another branch (head stays, commits recount), to a missing branch or head (422)', async () => {
    const listed = await owner.get(`/repos/${repo.id}/pulls?state=open`);
    const pr = listed.body.data.find((p: any) => p.head.ref === 'topic');
    const path = `/repos/${repo.id}/pulls/${pr.number}`;
    expect(pr).toMatchObject({ base: { ref: 'main', sha: mainSha }, head: { sha: c2 }, commits: 2 });

    const moved = await owner.patch(path, { base: 'other' });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ base: { ref: 'other', sha: c1 }, head: { ref: 'topic', sha: c2 }, commits: 1 });
    const commits = await owner.get(`${path}/commits`);
    expect(commits.body.data.map((c: any) => c.sha)).toEqual([c2]);
    const files = await owner.get(`${path}/files`);
    expect(files.body.data.map((f: any) => f.filename)).toEqual(['two.txt']);

    expectError(await owner.patch(path, { base: 'missing' }), 422, 'validation_failed', [['base', 'unknown_branch']]);
    expectError(await owner.patch(path, { base: 'topic' }), 422, 'validation_failed', [['base', 'same_branch']]);
    expect((await owner.get(path)).body).toMatchObject({ base: { ref: 'other', sha: c1 }, commits: 1 });

    const back = await owner.patch(path, { base: 'main' });
    expect(back.body).toMatchObject({ base: { ref: 'main', sha: mainSha }, head: { sha: c2 }, commits: 2 });
  });

  test('reopening after the head branch was deleted: 422 unknown_branch on state', async () => {
    const opened = await repo.open({ title: 'doomed', head: 'gone' });
    expect(opened.status).toBe(201);
    const path = `/repos/${repo.id}/pulls/${opened.body.number}`;
    expect((await owner.patch(path, { state: 'closed' })).status).toBe(200);
    await repo.run(['push', '--quiet', 'origin', '--delete', 'gone']);
    expectError(await owner.patch(path, { state: 'open' }), 422, 'validation_failed', [['state', 'unknown_branch']]);
    expect((await owner.get(path)).body.state).toBe('closed');
  });

  test('a merged pull request: state or base change 422 merged, title edit still 200', async () => {
    const opened = await repo.open({ title: 'landing', head: 'landing' });
    const path = `/repos/${repo.id}/pulls/${opened.body.number}`;
    expect((await owner.put(`${path}/merge`)).status).toBe(200);
    expectError(await owner.patch(path, { state: 'closed' }), 422, 'validation_failed', [['state', 'merged']]);
    expectError(await owner.patch(path, { state: 'open' }), 422, 'validation_failed', [['state', 'merged']]);
    expectError(await owner.patch(path, { base: 'other' }), 422, 'validation_failed', [['base', 'merged']]);
    const retitled = await owner.patch(path, { title: 'landed' });
    expect(retitled.status).toBe(200);
    expect(retitled.body).toMatchObject({ title: 'landed', state: 'merged', merged: true, base: { ref: 'main' } });
  });
});

describe('reopening and retargeting together; histories that cannot be compared', () => {
  test('reopen and a new base in one request: the reopened head is the branch as it is now, counted against the new base', async () => {
    const repo = await PullRepo.create(server, git, owner, 'reopen-retarget');
    const first = await repo.commit('work', 'work one', { 'w1.txt': '1\n' });
    await repo.push(['work', `${first}:refs/heads/release`]);
    const opened = (await repo.open({ title: 'work', head: 'work' })).body;
    const path = `/repos/${repo.id}/pulls/${opened.number}`;
    expect((await owner.patch(path, { state: 'closed' })).status).toBe(200);
    // While it is closed the head moves on; `release` holds the first commit.
    const second = await repo.commit('work', 'work two', { 'w2.txt': '2\n' });
    await repo.push(['work']);

    const res = await owner.patch(path, { state: 'open', base: 'release' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'open', head: { ref: 'work', sha: second }, base: { ref: 'release', sha: first }, commits: 1 });
    expect((await owner.get(`${path}/commits`)).body.data.map((c: any) => c.sha)).toEqual([second]);
  });

  test('reopening when base already has every commit of head: 422 no_commits, it stays closed', async () => {
    const repo = await PullRepo.create(server, git, owner, 'reopen-empty');
    await repo.commit('landed', 'landed', { 'l.txt': 'l\n' });
    await repo.push(['landed']);
    const opened = (await repo.open({ title: 'landed', head: 'landed' })).body;
    const path = `/repos/${repo.id}/pulls/${opened.number}`;
    expect((await owner.patch(path, { state: 'closed' })).status).toBe(200);
    await repo.push(['landed:main']); // the commits reach base while it is closed (closed pull requests do not follow)
    expectError(await owner.patch(path, { state: 'open' }), 422, 'validation_failed', [['head', 'no_commits']]);
    expect((await owner.get(path)).body.state).toBe('closed');
  });

  test('a head with no history in common with base: 422 no_common_history (opening and retargeting)', async () => {
    const repo = await PullRepo.create(server, git, owner, 'unrelated');
    await repo.run(['checkout', '--quiet', '--orphan', 'stranger']);
    await repo.run(['rm', '-rf', '--quiet', '.']);
    await git.commit(repo.work, 'another history', { 'other.txt': 'other\n' });
    await repo.push(['stranger']);
    const before = (await owner.get(`/repos/${repo.id}/pulls?state=all`)).body.total;
    expectError(await repo.open({ title: 'unrelated', head: 'stranger' }), 422, 'validation_failed', [['head', 'no_common_history']]);
    expect((await owner.get(`/repos/${repo.id}/pulls?state=all`)).body.total).toBe(before);

    await repo.commit('side', 'side', { 'side.txt': 's\n' }); // from main: related
    await repo.push(['side']);
    const opened = (await repo.open({ title: 'side', head: 'side' })).body;
    const path = `/repos/${repo.id}/pulls/${opened.number}`;
    expectError(await owner.patch(path, { base: 'stranger' }), 422, 'validation_failed', [['head', 'no_common_history']]);
    expect((await owner.get(path)).body.base.ref).toBe('main');
  });
});

describe('files and commits', () => {
  test('statuses, counts, rename, patches (small, binary, >64 KiB), commits oldest first, paging', async () => {
    const renamed = lines(20, 30, 'renamed');
    const repo = await PullRepo.create(server, git, owner, 'files', {
      'modified.txt': 'line1\nline2\nline3\n',
      'removed.txt': 'gone 1\ngone 2\n',
      'renamed-old.txt': renamed,
    });
    const mainSha = (await repo.remoteSha('main'))!;
    const ada = { name: 'Ada Lovelace', email: 'ada@example.test', date: '2020-01-02T03:04:05Z' };
    const s1 = await repo.commit(
      'change',
      'add, modify, remove\n\nwith a body',
      { 'added.txt': 'new 1\nnew 2\nnew 3\n', 'modified.txt': 'line1\nline2 changed\nline3\nline4\n', 'removed.txt': null },
      ada,
    );
    await repo.run(['mv', 'renamed-old.txt', 'renamed-new.txt']);
    await repo.run(['commit', '--quiet', '-m', 'rename']);
    const s2 = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const big = lines(2500, 40, 'big'); // ~100 KB of additions
    const s3 = await git.commit(repo.work, 'binary and big', {
      'binary.bin': Buffer.from([0, 1, 2, 3, 0, 255, 254, 0, 10, 0]),
      'big.txt': big,
    });
    await repo.push(['change']);

    const opened = await repo.open({ title: 'many files', head: 'change' });
    expect(opened.status).toBe(201);
    expect(opened.body.commits).toBe(3);
    const path = `/repos/${repo.id}/pulls/${opened.body.number}`;

    const files = await owner.get(`${path}/files`);
    expect(files.status).toBe(200);
    expect(files.body).toMatchObject({ total: 6, limit: 30, offset: 0, hasMore: false });
    const byName = Object.fromEntries(files.body.data.map((f: any) => [f.filename, f]));
    expect(files.body.data.map((f: any) => f.filename)).toEqual([
      'added.txt',
      'big.txt',
      'binary.bin',
      'modified.txt',
      'removed.txt',
      'renamed-new.txt',
    ]);
    expect(byName['added.txt']).toEqual({
      filename: 'added.txt',
      previous_filename: null,
      status: 'added',
      additions: 3,
      deletions: 0,
      changes: 3,
      patch: '@@ -0,0 +1,3 @@\n+new 1\n+new 2\n+new 3',
    });
    expect(byName['modified.txt']).toEqual({
      filename: 'modified.txt',
      previous_filename: null,
      status: 'modified',
      additions: 2,
      deletions: 1,
      changes: 3,
      patch: expect.stringMatching(/^@@ -1,3 \+1,4 @@/),
    });
    expect(byName['modified.txt'].patch.split('\n')).toEqual(expect.arrayContaining(['-line2', '+line2 changed', '+line4', ' line1']));
    expect(byName['removed.txt']).toEqual({
      filename: 'removed.txt',
      previous_filename: null,
      status: 'removed',
      additions: 0,
      deletions: 2,
      changes: 2,
      patch: '@@ -1,2 +0,0 @@\n-gone 1\n-gone 2',
    });
    expect(byName['renamed-new.txt']).toMatchObject({
      filename: 'renamed-new.txt',
      previous_filename: 'renamed-old.txt',
      status: 'renamed',
      additions: 0,
      deletions: 0,
      changes: 0,
    });
    expect(byName['binary.bin']).toEqual({
      filename: 'binary.bin',
      previous_filename: null,
      status: 'added',
      additions: 0,
      deletions: 0,
      changes: 0,
      patch: null,
    });
    expect(byName['big.txt']).toEqual({
      filename: 'big.txt',
      previous_filename: null,
      status: 'added',
      additions: 2500,
      deletions: 0,
      changes: 2500,
      patch: null,
    });

    const filePage = await owner.get(`${path}/files?limit=1&offset=1`);
    expect(filePage.body).toMatchObject({ total: 6, limit: 1, offset: 1, hasMore: true });
    expect(filePage.body.data).toEqual([byName['big.txt']]);
    const lastFile = await owner.get(`/api${path}/files?limit=1&offset=5`);
    expect(lastFile.body).toMatchObject({ total: 6, limit: 1, offset: 5, hasMore: false });
    expect(lastFile.body.data.map((f: any) => f.filename)).toEqual(['renamed-new.txt']);

    const commits = await owner.get(`${path}/commits`);
    expect(commits.status).toBe(200);
    expect(commits.body).toMatchObject({ total: 3, limit: 30, offset: 0, hasMore: false });
    expect(commits.body.data.map((c: any) => c.sha)).toEqual([s1, s2, s3]);
    const history = await repo.history('origin/change', 3);
    const tree = async (sha: string) => (await repo.run(['rev-parse', `${sha}^{tree}`])).trim();
    expect(commits.body.data[0]).toEqual({
      sha: s1,
      message: expect.stringMatching(/^add, modify, remove\n\nwith a body\n?$/),
      author: { name: 'Ada Lovelace', email: 'ada@example.test', date: GIT_DATE },
      committer: { name: 'Test User', email: 'test@example.test', date: GIT_DATE },
      parents: [mainSha],
      tree_sha: await tree(s1),
    });
    expect(Date.parse(commits.body.data[0].author.date)).toBe(Date.parse(ada.date));
    expect(commits.body.data[1]).toMatchObject({ sha: s2, parents: [s1], message: expect.stringMatching(/^rename\n?$/) });
    expect(commits.body.data[2]).toMatchObject({ sha: s3, parents: [s2], tree_sha: await tree(s3) });
    expect(history.map((h) => h.sha)).toEqual([s3, s2, s1]);

    const commitPage = await owner.get(`${path}/commits?limit=1&offset=1`);
    expect(commitPage.body).toMatchObject({ total: 3, limit: 1, offset: 1, hasMore: true });
    expect(commitPage.body.data.map((c: any) => c.sha)).toEqual([s2]);
    expectError(await owner.get(`${path}/commits?limit=-1`), 400, 'invalid_pagination');
    expectError(await owner.get(`${path}/files?offset=-1`), 400, 'invalid_pagination');
  });
});

describe('reviews', () => {
  test('events, body rules, own pull request, newest first, closed pull requests take none', async () => {
    const repo = await PullRepo.create(server, git, owner, 'reviews');
    const head = await repo.commit('topic', 'topic', { 'topic.txt': 't\n' });
    await repo.push(['topic']);
    const opened = await repo.open({ title: 'review me', head: 'topic' });
    const path = `/repos/${repo.id}/pulls/${opened.body.number}/reviews`;

    const approved = await reader.post(path, { event: 'APPROVE' });
    expect(approved.status).toBe(201);
    expect(approved.body).toEqual({
      id: expect.stringMatching(/^rev_[0-9a-z]{26}$/),
      state: 'approved',
      body: null,
      user: { id: reader.userId, login: 'pulls-api-reader' },
      commit_id: head,
      submitted_at: ISO,
    });

    expectError(await reader.post(path, { event: 'REQUEST_CHANGES' }), 422, 'validation_failed', [['body', 'missing']]);
    expectError(await reader.post(path, { event: 'COMMENT', body: '' }), 422, 'validation_failed', [['body', 'missing']]);
    expectError(await reader.post(path, { event: 'COMMENT', body: '   ' }), 422, 'validation_failed', [['body', 'missing']]);
    expectError(await reader.post(path, { event: 'COMMENT' }), 422, 'validation_failed', [['body', 'missing']]);
    expectError(await reader.post(path, { event: 'SHRUG', body: 'x' }), 422, 'validation_failed');
    expectError(await owner.post(path, { event: 'APPROVE' }), 422, 'validation_failed', [['event', 'own_pull_request']]);
    expectError(await owner.post(path, { event: 'REQUEST_CHANGES', body: 'hmm' }), 422, 'validation_failed', [
      ['event', 'own_pull_request'],
    ]);

    const changes = await stranger.post(path, { event: 'REQUEST_CHANGES', body: 'please fix' });
    expect(changes.status).toBe(201);
    expect(changes.body).toMatchObject({ state: 'changes_requested', body: 'please fix', user: { login: 'pulls-api-stranger' } });
    const own = await owner.post(path, { event: 'COMMENT', body: 'a note from the author' });
    expect(own.status).toBe(201);
    expect(own.body).toMatchObject({ state: 'commented', user: { login: 'pulls-api-owner' }, commit_id: head });
    const lower = await writer.post(`/api${path}`, { event: 'approve' });
    expect(lower.status).toBe(201);
    expect(lower.body.state).toBe('approved');

    const list = await stranger.get(path);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 4, limit: 30, offset: 0, hasMore: false });
    expect(list.body.data.map((r: any) => r.id)).toEqual([lower.body.id, own.body.id, changes.body.id, approved.body.id]);
    expect(list.body.data[3]).toEqual(approved.body);
    const paged = await stranger.get(`${path}?limit=1&offset=1`);
    expect(paged.body).toMatchObject({ total: 4, limit: 1, offset: 1, hasMore: true });
    expect(paged.body.data.map((r: any) => r.id)).toEqual([own.body.id]);

    expect((await owner.patch(`/repos/${repo.id}/pulls/${opened.body.number}`, { state: 'closed' })).status).toBe(200);
    const late = await reader.post(path, { event: 'COMMENT', body: 'too late' });
    expectError(late, 422, 'validation_failed');
    expect(late.body.error.details.map((d: any) => d.code)).toEqual(['not_open']);
    expect((await stranger.get(path)).body.total).toBe(4);
  });
});

describe('GraphQL', () => {
  test('pullRequests, pullRequest and its connections; create, update, review, merge; refusal codes', async () => {
    const repo = await PullRepo.create(server, git, owner, 'graph');
    const head = await repo.commit('gfeature', 'one', { 'g1.txt': '1\n' });
    const head2 = await repo.commit('gfeature', 'two', { 'g2.txt': '2\n' });
    await repo.push(['gfeature', 'main:refs/heads/same']);
    expect(head).not.toBe(head2);

    const created = await reader.gql(
      `mutation($input: CreatePullRequestInput!) {
        createPullRequest(input: $input) { id number title state draft mergeableState commitsCount head { ref sha } base { ref } user { login } }
      }`,
      { input: { repositoryId: repo.id, title: 'From GraphQL', head: 'gfeature' } },
    );
    expect(created.createPullRequest).toEqual({
      id: expect.stringMatching(/^pr_/),
      number: 1,
      title: 'From GraphQL',
      state: 'OPEN',
      draft: false,
      mergeableState: 'UNKNOWN',
      commitsCount: 2,
      head: { ref: 'gfeature', sha: head2 },
      base: { ref: 'main' },
      user: { login: 'pulls-api-reader' },
    });
    await repo.mergeable(1);

    const query = `query($id: ID!, $number: Int!) {
      repository(id: $id) {
        openPullsCount
        pullRequests(state: ALL) { totalCount nodes { number mergeableState head { ref sha } } }
        pullRequest(number: $number) {
          title commitsCount
          commits { totalCount nodes { sha } }
          files { totalCount nodes { filename status } }
          reviews { totalCount nodes { state commitId } }
        }
      }
    }`;
    const read = await owner.gql(query, { id: repo.id, number: 1 });
    expect(read.repository).toEqual({
      openPullsCount: 1,
      pullRequests: { totalCount: 1, nodes: [{ number: 1, mergeableState: 'CLEAN', head: { ref: 'gfeature', sha: head2 } }] },
      pullRequest: {
        title: 'From GraphQL',
        commitsCount: 2,
        commits: { totalCount: 2, nodes: [{ sha: head }, { sha: head2 }] },
        files: {
          totalCount: 2,
          nodes: [
            { filename: 'g1.txt', status: 'ADDED' },
            { filename: 'g2.txt', status: 'ADDED' },
          ],
        },
        reviews: { totalCount: 0, nodes: [] },
      },
    });

    const updated = await reader.gql(
      `mutation($input: UpdatePullRequestInput!) { updatePullRequest(input: $input) { title body draft mergeableState } }`,
      { input: { repositoryId: repo.id, number: 1, title: 'Edited in GraphQL', body: 'b' } },
    );
    expect(updated.updatePullRequest).toMatchObject({ title: 'Edited in GraphQL', body: 'b', draft: false });

    const reviewed = await owner.gql(
      `mutation($input: SubmitReviewInput!) { submitReview(input: $input) { id state body commitId user { login } } }`,
      { input: { repositoryId: repo.id, number: 1, event: 'APPROVE' } },
    );
    expect(reviewed.submitReview).toEqual({
      id: expect.stringMatching(/^rev_/),
      state: 'APPROVED',
      body: null,
      commitId: head2,
      user: { login: 'pulls-api-owner' },
    });

    const ownApprove = await reader.graphql(`mutation($input: SubmitReviewInput!) { submitReview(input: $input) { id } }`, {
      input: { repositoryId: repo.id, number: 1, event: 'APPROVE' },
    });
    expect(ownApprove.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(ownApprove.errors?.[0]?.extensions?.details).toEqual([expect.objectContaining({ field: 'event', code: 'own_pull_request' })]);

    const refusedOpen = await reader.graphql(`mutation($input: CreatePullRequestInput!) { createPullRequest(input: $input) { id } }`, {
      input: { repositoryId: repo.id, title: 'nothing', head: 'same' },
    });
    expect(refusedOpen.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(refusedOpen.errors?.[0]?.extensions?.details).toEqual([expect.objectContaining({ field: 'head', code: 'no_commits' })]);

    const mergeMutation = `mutation($input: MergePullRequestInput!) { mergePullRequest(input: $input) { merged sha message } }`;
    const deniedMerge = await reader.graphql(mergeMutation, { input: { repositoryId: repo.id, number: 1 } });
    expect(deniedMerge.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const merged = await owner.gql(mergeMutation, { input: { repositoryId: repo.id, number: 1, method: 'MERGE' } });
    expect(merged.mergePullRequest).toEqual({ merged: true, sha: SHA, message: 'Pull request successfully merged' });
    expect(await repo.remoteSha('main')).toBe(merged.mergePullRequest.sha);

    const again = await owner.graphql(mergeMutation, { input: { repositoryId: repo.id, number: 1 } });
    expect(again.data ?? null).toBeNull();
    expect(again.errors?.[0]?.extensions?.code).toBe('NOT_MERGEABLE');

    const closeMerged = await owner.graphql(`mutation($input: UpdatePullRequestInput!) { updatePullRequest(input: $input) { state } }`, {
      input: { repositoryId: repo.id, number: 1, state: 'CLOSED' },
    });
    expect(closeMerged.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(closeMerged.errors?.[0]?.extensions?.details).toEqual([expect.objectContaining({ code: 'merged' })]);

    const after = await owner.gql(
      `query($id: ID!) { repository(id: $id) { openPullsCount pullRequests(state: MERGED) { totalCount nodes { number state merged mergedBy { login } mergeCommitSha } } } }`,
      { id: repo.id },
    );
    expect(after.repository).toEqual({
      openPullsCount: 0,
      pullRequests: {
        totalCount: 1,
        nodes: [
          { number: 1, state: 'MERGED', merged: true, mergedBy: { login: 'pulls-api-owner' }, mergeCommitSha: merged.mergePullRequest.sha },
        ],
      },
    });
  });
});
