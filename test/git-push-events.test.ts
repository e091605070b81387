import { adminClient, createUser, noreplyEmail } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId, remoteUrl, type RecordedEvent } from './support/git.js';
import { CairnServer } from './support/server.js';

const ZERO = '0'.repeat(40);
const ISO_8601 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/;

let server: CairnServer;
let git: GitSandbox;
let alice: Awaited<ReturnType<typeof createUser>>;
let bob: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  server = CairnServer.sharedServer();
  git = await GitSandbox.create();
  const admin = adminClient(server);
  alice = await createUser(admin, 'alice');
  bob = await createUser(admin, 'bob');
});
afterAll(() => git.cleanup());

interface Repo {
  id: string;
  name: string;
  url: string;
  work: string;
}

/** A repository of alice's and an empty work tree whose `origin` is it. */
async function setUp(name: string, options: Record<string, unknown> = {}): Promise<Repo> {
  const created = await alice.post('/repos', { name, ...options });
  expect(created.status).toBe(201);
  const url = remoteUrl(server, 'alice', name, alice.token);
  const work = await git.init(`${name}-work`);
  await git.git(['remote', 'add', 'origin', url], { cwd: work });
  return { id: created.body.id, name, url, work };
}

/** Runs `git push <args>` in the work tree and returns the events it recorded. */
async function push(repo: Repo, args: string[]): Promise<RecordedEvent[]> {
  const before = await lastEventId(server);
  await git.git(['push', '--quiet', ...args], { cwd: repo.work });
  return eventsOf(server, repo.id, before);
}

const sorted = (paths: string[]) => [...paths].sort();
const rev = (repo: Repo, name: string) => git.git(['rev-parse', name], { cwd: repo.work }).then((out) => out.trim());

describe('push payloads', () => {
  let repo: Repo;
  beforeAll(async () => {
    repo = await setUp('payloads');
  });

  test('the first push: branch_create, then push with every field; added, modified, removed and renames', async () => {
    const long = Array.from({ length: 40 }, (_, i) => `line ${i} of a file that is renamed later\n`).join('');
    const first = await git.commit(repo.work, 'first commit\n\nwith a body', { 'a.txt': 'a\n', 'dir/b.txt': 'b\n', 'old-name.txt': long });
    const second = await git.commit(repo.work, 'second', {
      'a.txt': 'a changed\n',
      'dir/b.txt': null,
      'old-name.txt': null,
      'new-name.txt': long,
      'c.txt': 'c\n',
    });
    const events = await push(repo, ['origin', 'main']);
    expect(events.map((e) => e.type)).toEqual(['branch_create', 'push']);

    const repository = {
      id: repo.id,
      name: 'payloads',
      full_name: 'alice/payloads',
      owner: { id: alice.userId, login: 'alice' },
      private: false,
      default_branch: 'main',
      clone_url: `${server.url}/alice/payloads.git`,
    };
    const sender = { id: alice.userId, login: 'alice' };
    expect(events[0]!.payload).toEqual({
      event: 'branch_create',
      ref: 'refs/heads/main',
      ref_name: 'main',
      ref_type: 'branch',
      sha: second,
      repository,
      sender,
    });

    const payload = events[1]!.payload;
    expect(payload).toMatchObject({
      event: 'push',
      ref: 'refs/heads/main',
      before: ZERO,
      after: second,
      created: true,
      deleted: false,
      forced: false,
      total_commits: 2,
      pusher: { name: 'alice', email: noreplyEmail(server, alice) },
      repository,
      sender,
    });
    expect(payload.commits.map((c: any) => c.id)).toEqual([first, second]);
    const [c1, c2] = payload.commits;
    expect(c1).toMatchObject({
      id: first,
      message: 'first commit\n\nwith a body',
      author: { name: 'Test User', email: 'test@example.test' },
      timestamp: expect.stringMatching(ISO_8601),
      modified: [],
      removed: [],
    });
    expect(sorted(c1.added)).toEqual(['a.txt', 'dir/b.txt', 'old-name.txt']);
    expect(sorted(c2.added)).toEqual(['c.txt', 'new-name.txt']); // the rename's new path...
    expect(sorted(c2.removed)).toEqual(['dir/b.txt', 'old-name.txt']); // ...and its old one
    expect(c2.modified).toEqual(['a.txt']);
    expect(payload.head_commit).toEqual(c2);

    const record = (await alice.get(`/repos/${repo.id}`)).body;
    expect(record).toMatchObject({ empty: false, pushed_at: expect.stringMatching(ISO_8601.source.replace('(Z|', '(\\.\\d{3}Z|')) });
  });

  test('a new branch off main lists only its new commits', async () => {
    await git.git(['checkout', '--quiet', '-b', 'feature'], { cwd: repo.work });
    const one = await git.commit(repo.work, 'feature one', { 'f1.txt': '1\n' });
    const two = await git.commit(repo.work, 'feature two', { 'f2.txt': '2\n' });
    const events = await push(repo, ['origin', 'feature']);
    expect(events.map((e) => e.type)).toEqual(['branch_create', 'push']);
    const payload = events[1]!.payload;
    expect(payload).toMatchObject({ ref: 'refs/heads/feature', before: ZERO, after: two, created: true, total_commits: 2 });
    expect(payload.commits.map((c: any) => c.id)).toEqual([one, two]);
  });

  test('a branch created at an existing commit lists no commits; head_commit is that commit', async () => {
    const events = await push(repo, ['origin', 'main:refs/heads/same-as-main']);
    expect(events.map((e) => e.type)).toEqual(['branch_create', 'push']);
    const payload = events[1]!.payload;
    expect(payload).toMatchObject({ created: true, total_commits: 0, commits: [] });
    expect(payload.head_commit.id).toBe(await rev(repo, 'main'));
  });

  test('a fast-forward lists the new commits; a force push is marked forced', async () => {
    await git.git(['checkout', '--quiet', 'main'], { cwd: repo.work });
    const oldTip = await rev(repo, 'main');
    const next = await git.commit(repo.work, 'third', { 'third.txt': '3\n' });
    let events = await push(repo, ['origin', 'main']);
    expect(events.map((e) => e.type)).toEqual(['push']);
    expect(events[0]!.payload).toMatchObject({ before: oldTip, after: next, created: false, forced: false, total_commits: 1 });

    await git.git(['reset', '--quiet', '--hard', 'HEAD~1'], { cwd: repo.work });
    const rewritten = await git.commit(repo.work, 'third, rewritten', { 'third.txt': 'three\n' });
    events = await push(repo, ['--force', 'origin', 'main']);
    expect(events[0]!.payload).toMatchObject({ before: next, after: rewritten, forced: true, total_commits: 1 });
    expect(events[0]!.payload.commits[0].modified).toEqual([]);
    expect(events[0]!.payload.commits[0].added).toEqual(['third.txt']);
  });

  test('deleting a branch: push with after = zeros and no commits, then branch_delete', async () => {
    const tip = await rev(repo, 'feature');
    const events = await push(repo, ['origin', ':feature']);
    expect(events.map((e) => e.type)).toEqual(['push', 'branch_delete']);
    expect(events[0]!.payload).toMatchObject({
      ref: 'refs/heads/feature',
      before: tip,
      after: ZERO,
      created: false,
      deleted: true,
      forced: false,
      commits: [],
      total_commits: 0,
      head_commit: null,
    });
    expect(events[1]!.payload).toMatchObject({ ref: 'refs/heads/feature', ref_name: 'feature', ref_type: 'branch', sha: tip });
  });

  test('lightweight and annotated tags: tag_create and push; deleting one: push and tag_delete', async () => {
    const commit = await rev(repo, 'main');
    await git.git(['tag', 'v1.0'], { cwd: repo.work });
    await git.git(['tag', '-a', 'v2.0', '-m', 'release two'], { cwd: repo.work });
    const tagObject = await rev(repo, 'v2.0');
    expect(tagObject).not.toBe(commit);

    const events = await push(repo, ['origin', 'v1.0', 'v2.0']);
    expect(events.map((e) => `${e.type} ${e.payload.ref}`)).toEqual([
      'tag_create refs/tags/v1.0',
      'push refs/tags/v1.0',
      'tag_create refs/tags/v2.0',
      'push refs/tags/v2.0',
    ]);
    expect(events[0]!.payload).toMatchObject({ ref_name: 'v1.0', ref_type: 'tag', sha: commit });
    expect(events[1]!.payload).toMatchObject({ created: true, after: commit, commits: [], total_commits: 0 });
    expect(events[1]!.payload.head_commit.id).toBe(commit);
    expect(events[2]!.payload).toMatchObject({ ref_name: 'v2.0', ref_type: 'tag', sha: tagObject });
    expect(events[3]!.payload).toMatchObject({ after: tagObject, commits: [], total_commits: 0 });
    expect(events[3]!.payload.head_commit.id).toBe(commit);

    const deleted = await push(repo, ['origin', ':refs/tags/v1.0']);
    expect(deleted.map((e) => e.type)).toEqual(['push', 'tag_delete']);
    expect(deleted[0]!.payload).toMatchObject({ deleted: true, after: ZERO, before: commit });
    expect(deleted[1]!.payload).toMatchObject({ ref: 'refs/tags/v1.0', ref_name: 'v1.0', ref_type: 'tag', sha: commit });
  });

  test('a merge commit is described against its first parent', async () => {
    await git.git(['checkout', '--quiet', '-b', 'side'], { cwd: repo.work });
    const side = await git.commit(repo.work, 'side work', { 'side.txt': 'side\n' });
    await git.git(['checkout', '--quiet', 'main'], { cwd: repo.work });
    await git.commit(repo.work, 'main work', { 'main-only.txt': 'main\n' });
    await git.git(['merge', '--quiet', '--no-ff', '-m', 'merge side', 'side'], { cwd: repo.work });
    const merge = await rev(repo, 'HEAD');

    const events = await push(repo, ['origin', 'main']);
    const payload = events[0]!.payload;
    expect(payload.total_commits).toBe(3);
    expect(payload.commits.at(-1).id).toBe(merge);
    expect(payload.commits.map((c: any) => c.id)).toContain(side); // new to the repository, though pushed through main
    expect(payload.commits.at(-1)).toMatchObject({ added: ['side.txt'], modified: [], removed: [] });
  });

  test('several refs in one push each get their events; the default branch cannot be deleted', async () => {
    await git.git(['branch', 'one'], { cwd: repo.work });
    await git.git(['branch', 'two'], { cwd: repo.work });
    const events = await push(repo, ['origin', 'one', 'two']);
    expect(events.map((e) => `${e.type} ${e.payload.ref}`)).toEqual([
      'branch_create refs/heads/one',
      'push refs/heads/one',
      'branch_create refs/heads/two',
      'push refs/heads/two',
    ]);

    const before = await lastEventId(server);
    const refused = await git.run(['push', 'origin', ':main'], { cwd: repo.work });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('remote: error: refusing to delete the current branch: refs/heads/main');
    expect(refused.stderr).not.toContain('receive.denyDeleteCurrent'); // no advice about server settings
    expect(await eventsOf(server, repo.id, before)).toEqual([]);
  });

  test("a collaborator's push is credited to them", async () => {
    await alice.put(`/repos/${repo.id}/collaborators/bob`, { permission: 'write' });
    const bobsWork = git.path('bobs-clone');
    await git.git(['clone', '--quiet', remoteUrl(server, 'alice', 'payloads', bob.token), bobsWork]);
    await git.commit(bobsWork, 'from bob', { 'bob.txt': 'bob\n' });
    const before = await lastEventId(server);
    await git.git(['push', '--quiet', 'origin', 'main'], { cwd: bobsWork });
    const [event] = await eventsOf(server, repo.id, before);
    expect(event!.payload.sender).toEqual({ id: bob.userId, login: 'bob' });
    expect(event!.payload.pusher).toEqual({ name: 'bob', email: noreplyEmail(server, bob) });
  });

  test('concurrent pushes to one repository are serialised and all recorded', async () => {
    const clones = await Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        const dir = git.path(`concurrent-${i}`);
        await git.git(['clone', '--quiet', repo.url, dir]);
        await git.git(['checkout', '--quiet', '-b', `parallel-${i}`], { cwd: dir });
        await git.commit(dir, `parallel ${i}`, { [`p${i}.txt`]: `${i}\n` });
        return dir;
      }),
    );
    const before = await lastEventId(server);
    await Promise.all(clones.map((dir, i) => git.git(['push', '--quiet', 'origin', `parallel-${i}`], { cwd: dir })));
    const pushes = (await eventsOf(server, repo.id, before)).filter((e) => e.type === 'push');
    expect(pushes.map((e) => e.payload.ref).sort()).toEqual([0, 1, 2, 3].map((i) => `refs/heads/parallel-${i}`));
    for (const event of pushes) expect(event.payload.total_commits).toBe(1);
  });
});

test('a 3,000-commit push lists the newest 2,048 commits, oldest first, and counts all 3,000', async () => {
  const repo = await setUp('long-history', { auto_init: true });
  await git.git(['fetch', '--quiet', 'origin'], { cwd: repo.work });
  const base = await rev(repo, 'origin/main');
  // git fast-import writes the 3,000 commits in one process.
  const chunks: string[] = [];
  for (let i = 1; i <= 3000; i++) {
    const message = `commit ${i}\n`;
    const content = `${i}\n`;
    chunks.push(
      `commit refs/heads/long\nmark :${i}\ncommitter Bulk <bulk@example.test> ${1_700_000_000 + i} +0000\n` +
        `data ${message.length}\n${message}${i === 1 ? `from ${base}\n` : `from :${i - 1}\n`}` +
        `M 100644 inline counter.txt\ndata ${content.length}\n${content}\n`,
    );
  }
  await git.git(['fast-import', '--quiet'], { cwd: repo.work, input: chunks.join('') });
  const commits = (await git.git(['rev-list', '--reverse', 'long', '--not', base], { cwd: repo.work })).trim().split('\n');
  expect(commits).toHaveLength(3000);

  const events = await push(repo, ['origin', 'long']);
  const payload = events.find((e) => e.type === 'push')!.payload;
  expect(payload.total_commits).toBe(3000);
  expect(payload.commits).toHaveLength(2048);
  expect(payload.commits.map((c: any) => c.id)).toEqual(commits.slice(3000 - 2048));
  expect(payload.commits[0].message).toBe('commit 953');
  expect(payload.commits[0]).toMatchObject({ added: [], modified: ['counter.txt'], removed: [] });
  expect(payload.head_commit.id).toBe(commits[2999]);
});

test('auto_init sends no push; a first push that skips the default branch makes its branch the default', async () => {
  const init = await setUp('initialised', { auto_init: true });
  expect((await eventsOf(server, init.id)).map((e) => `${e.type}:${e.action}`)).toEqual(['repository:created']);

  const repo = await setUp('trunk-only');
  await git.git(['checkout', '--quiet', '-b', 'trunk'], { cwd: repo.work });
  await git.commit(repo.work, 'on trunk', { 'x.txt': 'x\n' });
  const events = await push(repo, ['origin', 'trunk']);
  expect(events.map((e) => `${e.type}:${e.action}`)).toEqual(['branch_create:null', 'push:null', 'repository:updated']);
  expect(events[1]!.payload.repository.default_branch).toBe('trunk');
  expect(events[2]!.payload.changes).toEqual({ default_branch: { from: 'main' } });
  expect((await alice.get(`/repos/${repo.id}`)).body.default_branch).toBe('trunk');
  const clone = git.path('trunk-clone');
  await git.git(['clone', '--quiet', repo.url, clone]);
  expect((await git.git(['symbolic-ref', '--short', 'HEAD'], { cwd: clone })).trim()).toBe('trunk');
});
