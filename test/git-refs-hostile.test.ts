import path from 'node:path';
import { adminClient, createUser } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId, remoteUrl } from './support/git.js';
import { CairnServer, query } from './support/server.js';

/**
 * Refs a push may not write, and repositories poisoned before that rule:
 * a writer must not be able to block a repository's pushes, break its
 * browsing or forge its history, and what was already poisoned heals.
 */

const ZERO = '0'.repeat(40);

let server: CairnServer;
let git: GitSandbox;
let alice: Awaited<ReturnType<typeof createUser>>;
let bob: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  [server, git] = await Promise.all([CairnServer.start(), GitSandbox.create()]);
  const admin = adminClient(server);
  alice = await createUser(admin, 'alice');
  bob = await createUser(admin, 'bob');
});
afterAll(async () => {
  await Promise.all([server.destroy(), git.cleanup()]);
});

interface Repo {
  id: string;
  name: string;
  /** bob's work tree, `origin` = the repository with bob's token. */
  work: string;
  /** The commit main points at. */
  base: string;
}

/** A repository of alice's with bob as a writer and one pushed commit on main. */
async function setUp(name: string): Promise<Repo> {
  const repo = (await alice.post('/repos', { name })).body as { id: string };
  expect((await alice.put(`/repos/${repo.id}/collaborators/bob`, { permission: 'write' })).status).toBeLessThan(300);
  const work = await git.init(`${name}-work`);
  const base = await git.commit(work, 'the real commit', { 'real.txt': 'real\n' });
  await git.git(['remote', 'add', 'origin', remoteUrl(server, 'alice', name, bob.token)], { cwd: work });
  await git.git(['push', '--quiet', 'origin', 'main'], { cwd: work });
  return { id: repo.id, name, work, base };
}

const bare = (repo: Repo) => path.join(server.dataDir, 'repositories', `${repo.id}.git`);
const diskRefs = async (repo: Repo) =>
  (await git.git(['for-each-ref', '--format=%(refname) %(objectname)'], { cwd: bare(repo) })).trim().split('\n').filter(Boolean);

/** alice pushes a new commit to main as the owner; returns the push's result and the new commit. */
async function ownerPushes(repo: Repo, message: string) {
  const work = git.path(`${repo.name}-owner-${message.replace(/\W/g, '')}`);
  await git.git(['clone', '--quiet', '--single-branch', '--branch', 'main', remoteUrl(server, 'alice', repo.name, alice.token), work]);
  const sha = await git.commit(work, message, { [`${message.replace(/\W/g, '')}.txt`]: `${message}\n` });
  return { result: await git.run(['push', 'origin', 'main'], { cwd: work }), sha };
}

/** What GraphQL browsing says of main: its branch and its newest commits. */
async function browse(repo: Repo) {
  return alice.graphql(
    `query($id: ID!) { repository(id: $id) {
      branches { nodes { name sha commit { sha messageHeadline } } }
      commits(ref: "main") { totalCount nodes { sha messageHeadline } } } }`,
    { id: repo.id },
  );
}

/** Plants what a writer's replace ref left before the fix: a self-pointing replace ref on disk and a journal row stuck on it. */
async function poison(repo: Repo): Promise<void> {
  await git.git(['update-ref', `refs/replace/${repo.base}`, repo.base], { cwd: bare(repo) });
  await query(
    server,
    `insert into git_push_journal (repository_id, user_id, commits_new_to, started_at) values ($1, $2, 'repository', now())`,
    [repo.id, bob.userId],
  );
}

describe('a push writes branches and tags only', () => {
  test('a self-referencing refs/replace/ ref is refused with the reason; the owner keeps pushing and browsing works', async () => {
    const repo = await setUp('replace-self');
    const before = await lastEventId(server);
    const refused = await git.run(['push', 'origin', `${repo.base}:refs/replace/${repo.base}`], { cwd: repo.work });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`! [remote rejected] ${repo.base} -> refs/replace/${repo.base}`);
    expect(refused.stderr).toMatch(
      /remote: Cairn: refusing refs\/replace\/[0-9a-f]{40}: a push may only write branches \(refs\/heads\/\) and tags \(refs\/tags\/\)/,
    );
    expect(await diskRefs(repo)).toEqual([`refs/heads/main ${repo.base}`]);
    expect(await eventsOf(server, repo.id, before)).toEqual([]);

    const { result, sha } = await ownerPushes(repo, 'after the attempt');
    expect(result.code).toBe(0);
    const events = await eventsOf(server, repo.id, before);
    expect(events.map((e) => [e.type, e.payload.ref, e.payload.after])).toEqual([['push', 'refs/heads/main', sha]]);
    const browsed = await browse(repo);
    expect(browsed.errors).toBeUndefined();
    expect(browsed.data.repository.commits.nodes.map((c: any) => c.sha)).toEqual([sha, repo.base]);
  });

  test.each([
    'refs/replace/0123456789abcdef0123456789abcdef01234567',
    'refs/notes/commits',
    'refs/pull/1/head',
    'refs/meta/config',
    'refs/for/main',
    'refs/custom/x',
  ])('a push creating %s is refused; the branch pushed beside it lands with its events', async (ref) => {
    const repo = await setUp(`ns-${ref.replace(/[^a-z0-9]/gi, '').slice(0, 30)}`);
    const before = await lastEventId(server);
    const push = await git.run(['push', 'origin', `main:${ref}`, 'main:refs/heads/beside'], { cwd: repo.work });
    expect(push.code).not.toBe(0);
    if (ref.startsWith('refs/pull/')) {
      // Pull refs are the service's: git refuses them itself, before any hook (they are hidden from pushes).
      expect(push.stderr).toContain(`! [remote rejected] main -> ${ref} (deny updating a hidden ref)`);
    } else {
      expect(push.stderr).toContain(`! [remote rejected] main -> ${ref} (hook declined)`);
      expect(push.stderr).toContain(`remote: Cairn: refusing ${ref}: a push may only write branches`);
    }
    expect(push.stderr).toMatch(/\* \[new branch\]\s+main -> beside/);
    expect(await diskRefs(repo)).toEqual([`refs/heads/beside ${repo.base}`, `refs/heads/main ${repo.base}`]);
    const events = await eventsOf(server, repo.id, before);
    expect(events.map((e) => `${e.type} ${e.payload.ref}`)).toEqual(['branch_create refs/heads/beside', 'push refs/heads/beside']);
  });
});

describe('one refused ref refuses only itself', () => {
  test('a non-atomic push lands its valid refs and records exactly their events', async () => {
    const repo = await setUp('per-ref');
    const next = await git.commit(repo.work, 'next', { 'next.txt': 'next\n' });
    const before = await lastEventId(server);
    const push = await git.run(['push', 'origin', 'main:refs/heads/ok', 'main:refs/heads/HEAD', 'main:refs/tags/-v1', 'main'], {
      cwd: repo.work,
    });
    expect(push.code).not.toBe(0);
    expect(push.stderr).toContain('! [remote rejected] main -> HEAD (hook declined)');
    expect(push.stderr).toContain('! [remote rejected] main -> -v1 (hook declined)');
    expect(push.stderr).toMatch(/may not start with '-' or be HEAD/);
    expect(await diskRefs(repo)).toEqual([`refs/heads/main ${next}`, `refs/heads/ok ${next}`]);
    const events = await eventsOf(server, repo.id, before);
    expect(events.map((e) => `${e.type} ${e.payload.ref}`).sort()).toEqual(
      ['branch_create refs/heads/ok', 'push refs/heads/ok', 'push refs/heads/main'].sort(),
    );
    expect(events.find((e) => e.type === 'push' && e.payload.ref === 'refs/heads/main')!.payload).toMatchObject({
      before: repo.base,
      after: next,
      total_commits: 1,
    });
  });

  test('git push --atomic stays all or nothing', async () => {
    const repo = await setUp('atomic');
    const next = await git.commit(repo.work, 'next', { 'next.txt': 'next\n' });
    const before = await lastEventId(server);
    const push = await git.run(['push', '--atomic', 'origin', 'main:refs/heads/ok', 'main:refs/heads/HEAD', 'main'], { cwd: repo.work });
    expect(push.code).not.toBe(0);
    expect(push.stderr).toContain('! [remote rejected] main -> HEAD (hook declined)');
    expect(push.stderr).toMatch(/! \[remote rejected\] main -> ok \(atomic push failure\)/);
    expect(await diskRefs(repo)).toEqual([`refs/heads/main ${repo.base}`]);
    expect(await eventsOf(server, repo.id, before)).toEqual([]);

    // The same push without the refused ref goes through whole.
    expect((await git.run(['push', '--atomic', 'origin', 'main:refs/heads/ok', 'main'], { cwd: repo.work })).code).toBe(0);
    expect(await diskRefs(repo)).toEqual([`refs/heads/main ${next}`, `refs/heads/ok ${next}`]);
  });
});

describe('repositories poisoned before the rule', () => {
  test('a forged replace ref planted on disk changes neither browsing, nor clones, nor push payloads', async () => {
    const repo = await setUp('forged');
    // A commit that claims to be the real one: same tree, another message and author.
    const tree = (await git.git(['rev-parse', `${repo.base}^{tree}`], { cwd: bare(repo) })).trim();
    const forged = (
      await git.git(['hash-object', '-t', 'commit', '-w', '--stdin'], {
        cwd: bare(repo),
        input: `tree ${tree}\nauthor Mallory <m@example.test> 1 +0000\ncommitter Mallory <m@example.test> 1 +0000\n\nforged history\n`,
      })
    ).trim();
    await git.git(['update-ref', `refs/replace/${repo.base}`, forged], { cwd: bare(repo) });
    expect((await git.git(['log', '-1', '--format=%s', 'main'], { cwd: bare(repo) })).trim()).toBe('forged history'); // what git would show

    const browsed = await browse(repo);
    expect(browsed.errors).toBeUndefined();
    expect(browsed.data.repository.commits.nodes).toEqual([{ sha: repo.base, messageHeadline: 'the real commit' }]);
    expect(browsed.data.repository.branches.nodes[0].commit).toEqual({ sha: repo.base, messageHeadline: 'the real commit' });

    const clone = git.path('forged-clone');
    await git.git(['clone', '--quiet', remoteUrl(server, 'alice', repo.name, alice.token), clone]);
    expect((await git.git(['log', '-1', '--format=%H %s'], { cwd: clone })).trim()).toBe(`${repo.base} the real commit`);

    const before = await lastEventId(server);
    const next = await git.commit(repo.work, 'on top', { 'top.txt': 'top\n' });
    expect((await git.run(['push', 'origin', 'main'], { cwd: repo.work })).code).toBe(0);
    const push = (await eventsOf(server, repo.id, before)).find((e) => e.type === 'push' && e.payload.ref === 'refs/heads/main')!;
    expect(push.payload.commits.map((c: any) => [c.id, c.message])).toEqual([[next, 'on top']]);
  });

  test('a self-referencing replace ref and a stuck journal row heal: the owner pushes, a restart finds nothing left', async () => {
    const repo = await setUp('poisoned');
    await poison(repo);
    const before = await lastEventId(server);

    const { result, sha } = await ownerPushes(repo, 'owner after poison');
    expect(result.stderr).not.toContain('replace depth too high');
    expect(result.code).toBe(0);
    const events = await eventsOf(server, repo.id, before);
    // The stuck entry is recorded as what it found (the planted ref, credited to its pusher), then the owner's push.
    expect(events.map((e) => [e.type, e.payload.ref, e.payload.sender.login])).toEqual([
      ['push', `refs/replace/${repo.base}`, 'bob'],
      ['push', 'refs/heads/main', 'alice'],
    ]);
    expect(events[1]!.payload).toMatchObject({ before: repo.base, after: sha, total_commits: 1 });
    expect(await query(server, 'select 1 from git_push_journal where repository_id = $1', [repo.id])).toEqual([]);
    const browsed = await browse(repo);
    expect(browsed.errors).toBeUndefined();
    expect(browsed.data.repository.commits.totalCount).toBe(2);

    // A writer may delete what was left from before the rule (a replace ref here), and nothing else outside branches and tags.
    const deleted = await git.run(['push', 'origin', `:refs/replace/${repo.base}`], { cwd: repo.work });
    expect(deleted.code).toBe(0);
    expect(await diskRefs(repo)).toEqual([`refs/heads/main ${sha}`]);

    await server.stop();
    server = await server.restart();
    expect(server.logs().find((line) => line.msg === 'repository refs reconciled')).toMatchObject({ changed: 0 });
    const last = await lastEventId(server);
    expect((await ownerPushes(repo, 'after restart')).result.code).toBe(0);
    expect((await eventsOf(server, repo.id, last)).map((e) => e.type)).toEqual(['push']);
  });

  test('a journal entry git cannot describe is recorded from the refs as they are, logged and dropped', async () => {
    const repo = await setUp('undescribable');
    // A branch at a commit whose tree is missing: git lists the ref, but describing its commit fails.
    const broken = (
      await git.git(['hash-object', '-t', 'commit', '-w', '--stdin'], {
        cwd: bare(repo),
        input: `tree ${'1'.repeat(40)}\nparent ${repo.base}\nauthor X <x@example.test> 1 +0000\ncommitter X <x@example.test> 1 +0000\n\nbroken\n`,
      })
    ).trim();
    await git.git(['update-ref', 'refs/heads/broken', broken], { cwd: bare(repo) });
    await query(
      server,
      `insert into git_push_journal (repository_id, user_id, commits_new_to, started_at) values ($1, $2, 'repository', now())`,
      [repo.id, bob.userId],
    );
    const before = await lastEventId(server);

    for (const attempt of ['first', 'second']) {
      const { result } = await ownerPushes(repo, `owner ${attempt}`);
      expect(result.code).toBe(0);
    }
    const events = await eventsOf(server, repo.id, before);
    expect(events.map((e) => [e.type, e.payload.ref])).toEqual([
      ['push', 'refs/heads/main'],
      ['push', 'refs/heads/main'],
    ]);
    expect(await query(server, 'select name, sha from git_refs where repository_id = $1 order by name', [repo.id])).toEqual([
      { name: 'refs/heads/broken', sha: broken },
      { name: 'refs/heads/main', sha: events[1]!.payload.after },
    ]);
    expect(await query(server, 'select 1 from git_push_journal where repository_id = $1', [repo.id])).toEqual([]);
    const dropped = server.logs().filter((line) => line.msg === 'ref changes git cannot describe recorded without events');
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toMatchObject({ repositoryId: repo.id, level: 50, refs: ['refs/heads/broken'] });

    await server.stop();
    server = await server.restart();
    expect(server.logs().find((line) => line.msg === 'repository refs reconciled')).toMatchObject({ changed: 0 });
  });

  test('start-up heals a stuck journal row of a poisoned repository without any push', async () => {
    const repo = await setUp('heal-at-start');
    await poison(repo);
    const before = await lastEventId(server);
    await server.stop();
    server = await server.restart();
    expect(await query(server, 'select 1 from git_push_journal where repository_id = $1', [repo.id])).toEqual([]);
    expect((await eventsOf(server, repo.id, before)).map((e) => [e.type, e.payload.ref, e.payload.before, e.payload.after])).toEqual([
      ['push', `refs/replace/${repo.base}`, ZERO, repo.base],
    ]);
    const browsed = await browse(repo);
    expect(browsed.errors).toBeUndefined();
  });
});
