import { adminClient, createUser, type Client } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { eventually } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';

/**
 * Pull refs through the running server, read and fetched with the real git client:
 * `refs/pull/<n>/head` and `refs/pull/<n>/merge` while a pull request is open, what merging,
 * closing and reopening do to them, and that they are never branches nor ref changes.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let git: GitSandbox;
let owner: User;

beforeAll(async () => {
  [server, git] = [CairnServer.sharedServer(), await GitSandbox.create()];
  owner = await createUser(adminClient(server), 'pullrefs-owner');
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup()]);
});

let repoCount = 0;
async function repoWithTopic(topic: Record<string, string> = { 'topic.txt': 'topic\n' }): Promise<{ repo: PullRepo; number: number }> {
  const repo = await PullRepo.create(server, git, owner, `pullrefs-${++repoCount}`, { 'README.md': '# readme\n', 'shared.txt': 'one\n' });
  await repo.commit('topic', 'topic work', topic);
  await repo.push(['topic']);
  const opened = await repo.open({ title: 'Topic', head: 'topic' });
  expect(opened.status).toBe(201);
  return { repo, number: opened.body.number };
}

/** The pull refs the server advertises (`git ls-remote`), ref → sha. */
async function pullRefs(repo: PullRepo): Promise<Map<string, string>> {
  const out = await repo.run(['ls-remote', 'origin', 'refs/pull/*']);
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('\t').reverse() as [string, string]),
  );
}

const sha = async (repo: PullRepo, rev: string) => (await repo.run(['rev-parse', rev])).trim();

/** Fetches `pull/<n>/<kind>` the way CI does and returns FETCH_HEAD's commit: parents and tree. */
async function fetchPull(repo: PullRepo, number: number, kind: 'head' | 'merge') {
  await repo.run(['fetch', '--quiet', 'origin', `pull/${number}/${kind}`]);
  const [commit, parents, tree] = (await repo.run(['log', '-1', '--format=%H%n%P%n%T', 'FETCH_HEAD'])).trim().split('\n');
  return { sha: commit!, parents: parents!.split(' '), tree: tree! };
}

/** Waits until the merge ref is the test merge of `head` into `base` (the mergeability check writes it after the change). */
async function mergeRefFor(repo: PullRepo, number: number, base: string, head: string) {
  return eventually(
    async () => {
      if (!(await pullRefs(repo)).has(`refs/pull/${number}/merge`)) return null;
      const merge = await fetchPull(repo, number, 'merge');
      return merge.parents.join(' ') === `${base} ${head}` ? merge : null;
    },
    15_000,
    `refs/pull/${number}/merge for ${base}+${head}`,
  );
}

/** The tree `git merge-tree --write-tree base head` makes, computed by the client. */
async function mergedTree(repo: PullRepo, base: string, head: string): Promise<string> {
  return (await repo.run(['merge-tree', '--write-tree', base, head])).split('\n')[0]!.trim();
}

test('an open pull request has a head ref and a test merge ref, advertised and fetchable', async () => {
  const { repo, number } = await repoWithTopic();
  const [base, head] = [await sha(repo, 'main'), await sha(repo, 'topic')];
  // The head ref is there as soon as the pull request is (made in the opening's transaction).
  expect((await pullRefs(repo)).get(`refs/pull/${number}/head`)).toBe(head);
  expect((await fetchPull(repo, number, 'head')).sha).toBe(head);

  const merge = await mergeRefFor(repo, number, base, head);
  expect(merge.tree).toBe(await mergedTree(repo, base, head));
  expect((await pullRefs(repo)).get(`refs/pull/${number}/merge`)).toBe(merge.sha);
  // Protocol v2's ls-refs shows the head ref too (a symbolic ref to the branch while open).
  const v2 = await repo.run(['-c', 'protocol.version=2', 'ls-remote', 'origin', `refs/pull/${number}/*`]);
  expect(v2).toContain(`${head}\trefs/pull/${number}/head`);
});

test('a push to the head moves the head ref at once and the merge ref after the check', async () => {
  const { repo, number } = await repoWithTopic();
  const base = await sha(repo, 'main');
  await mergeRefFor(repo, number, base, await sha(repo, 'topic'));
  const pushed = await repo.commit('topic', 'more work', { 'more.txt': 'more\n' });
  await repo.push(['topic']);
  // Right when the push returns (its `updated` event committed): what a CI bot fetches on the event.
  expect((await fetchPull(repo, number, 'head')).sha).toBe(pushed);
  const merge = await mergeRefFor(repo, number, base, pushed);
  expect(merge.tree).toBe(await mergedTree(repo, base, pushed));

  // The base moving is followed too.
  const newBase = await repo.commit('main', 'base work', { 'base.txt': 'base\n' });
  await repo.push(['main']);
  await mergeRefFor(repo, number, newBase, pushed);
});

test('a conflicting pull request has a head ref and no merge ref', async () => {
  const { repo, number } = await repoWithTopic({ 'shared.txt': 'topic side\n' });
  await repo.commit('main', 'main side', { 'shared.txt': 'main side\n' });
  await repo.push(['main']);
  expect((await repo.mergeable(number)).mergeable).toBe(false);
  const refs = await pullRefs(repo);
  expect(refs.get(`refs/pull/${number}/head`)).toBe(await sha(repo, 'topic'));
  expect(refs.has(`refs/pull/${number}/merge`)).toBe(false);
});

test('a push to refs/pull is refused with its reason and changes nothing', async () => {
  const { repo, number } = await repoWithTopic();
  await mergeRefFor(repo, number, await sha(repo, 'main'), await sha(repo, 'topic'));
  const before = await pullRefs(repo);
  const pushed = await git.run(['push', 'origin', `+main:refs/pull/${number}/head`, `+main:refs/pull/${number}/merge`], { cwd: repo.work });
  expect(pushed.code).not.toBe(0);
  // git itself refuses them (hidden from pushes): the reason it prints, per ref.
  expect(pushed.stderr).toMatch(/refs\/pull\/\d+\/head \(deny updating a hidden ref\)/);
  expect(await pullRefs(repo)).toEqual(before);
});

test('deleting a pull ref is refused and never reaches the branch its head ref names', async () => {
  const { repo, number } = await repoWithTopic();
  await mergeRefFor(repo, number, await sha(repo, 'main'), await sha(repo, 'topic'));
  const before = await pullRefs(repo);
  const topic = await repo.remoteSha('topic');
  const pushed = await git.run(['push', 'origin', `:refs/pull/${number}/head`, `:refs/pull/${number}/merge`], { cwd: repo.work });
  expect(pushed.code).not.toBe(0);
  expect(pushed.stderr).toMatch(/refs\/pull\/\d+\/head \(deny deleting a hidden ref\)/);
  expect(await repo.remoteSha('topic')).toBe(topic);
  expect(await pullRefs(repo)).toEqual(before);
  expect((await repo.get(number)).body.state).toBe('open');
  // A push is not even shown them.
  const advertised = await git.run(['push', '--dry-run', '--porcelain', '--mirror', 'origin'], { cwd: repo.work });
  expect(advertised.stdout).not.toContain('refs/pull/');
});

test('closing removes the pull refs, reopening brings them back', async () => {
  const { repo, number } = await repoWithTopic();
  const [base, head] = [await sha(repo, 'main'), await sha(repo, 'topic')];
  await mergeRefFor(repo, number, base, head);
  expect((await owner.patch(`/repos/${repo.id}/pulls/${number}`, { state: 'closed' })).status).toBe(200);
  expect(await pullRefs(repo)).toEqual(new Map());

  expect((await owner.patch(`/repos/${repo.id}/pulls/${number}`, { state: 'open' })).status).toBe(200);
  expect((await pullRefs(repo)).get(`refs/pull/${number}/head`)).toBe(head);
  await mergeRefFor(repo, number, base, head);
});

test('merging keeps the head ref at the merged head, also after the head branch is deleted, and removes the merge ref', async () => {
  const { repo, number } = await repoWithTopic();
  const head = await sha(repo, 'topic');
  await mergeRefFor(repo, number, await sha(repo, 'main'), head);
  expect((await owner.put(`/repos/${repo.id}/pulls/${number}/merge`, { merge_method: 'squash' })).status).toBe(200);
  expect(Object.fromEntries(await pullRefs(repo))).toEqual({ [`refs/pull/${number}/head`]: head });

  // A push to the branch after the merge does not move the merged pull request's head ref.
  await repo.commit('topic', 'after the merge', { 'late.txt': 'late\n' });
  await repo.push(['topic']);
  await repo.push([':topic']);
  expect(await repo.remoteSha('topic')).toBeNull();
  expect(Object.fromEntries(await pullRefs(repo))).toEqual({ [`refs/pull/${number}/head`]: head });
  expect((await fetchPull(repo, number, 'head')).sha).toBe(head);
});

test('deleting the head branch of an open pull request closes it and takes its refs', async () => {
  const { repo, number } = await repoWithTopic();
  await mergeRefFor(repo, number, await sha(repo, 'main'), await sha(repo, 'topic'));
  await repo.push([':topic']);
  expect((await repo.get(number)).body.state).toBe('closed');
  expect(await pullRefs(repo)).toEqual(new Map());
});

test('pull refs are no ref changes and no branches: no push or branch events, no git_refs rows, not listed', async () => {
  const since = await lastEventId(server);
  const { repo, number } = await repoWithTopic();
  await mergeRefFor(repo, number, await sha(repo, 'main'), await sha(repo, 'topic'));
  const pushed = await repo.commit('topic', 'more work', { 'more.txt': 'more\n' });
  await repo.push(['topic']);
  await mergeRefFor(repo, number, await sha(repo, 'main'), pushed);

  const refEvents = (await eventsOf(server, repo.id, since)).filter(
    (event) => event.type !== 'pull_request' && event.type !== 'repository',
  );
  expect(refEvents.length).toBeGreaterThan(0);
  expect(refEvents.map((event) => String((event.payload as { ref?: string }).ref)).filter((ref) => ref.includes('pull/'))).toEqual([]);
  const rows = await query<{ name: string }>(server, 'select name from git_refs where repository_id = $1 order by name', [repo.id]);
  expect(rows.map((row) => row.name)).toEqual(['refs/heads/main', 'refs/heads/topic']);
  const { repository } = await owner.gql(`query($id: ID!) { repository(id: $id) { branches { nodes { name ref } } } }`, { id: repo.id });
  expect(repository.branches.nodes.map((branch: { ref: string }) => branch.ref)).toEqual(['refs/heads/main', 'refs/heads/topic']);
});
