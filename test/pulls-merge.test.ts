import { gql } from '@urql/core';
import { adminClient, createUser, type ApiResponse, type Client, noreplyEmail } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId, type RecordedEvent } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { eventually } from './support/receiver.js';
import { CairnServer, sleep } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * Merging pull requests through the running server: merge, squash and
 * rebase, checked by fetching the result with the real git client and reading
 * its history; refusals, conflicts, concurrency and the push event a merge records.
 */

type User = Client & { login: string; userId: string };

const HEX40 = /^[0-9a-f]{40}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
const FIXED_DATE = '2020-01-02T03:04:05Z';

let server: CairnServer;
let git: GitSandbox;
let merger: User; // owns every repository and merges
let contrib: User; // opens the pull requests

beforeAll(async () => {
  [server, git] = [CairnServer.sharedServer(), await GitSandbox.create()];
  const admin = adminClient(server);
  merger = await createUser(admin, 'merger');
  contrib = await createUser(admin, 'contrib');
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup()]);
});

/** Cairn writes users by login and no-reply address (none of them sets a public commit email here), never the account email. */
const mergerSignature = () => `merger <${noreplyEmail(server, merger)}>`;

let repoCount = 0;
function newRepo(files: Record<string, string>): Promise<PullRepo> {
  return PullRepo.create(server, git, merger, `merge-${++repoCount}`, files);
}

/** The server's latest error log lines (what a 5xx was about; on the shared server, any file's). */
function serverErrors(): string {
  return server.output
    .split('\n')
    .filter((line) => line.includes('"level":50'))
    .slice(-3)
    .join('\n');
}

/** PUT …/merge, answering whatever the server answers. `body` undefined sends no body at all. */
async function tryMerge(repo: PullRepo, number: number, body?: Record<string, unknown>, as: Client = merger): Promise<ApiResponse> {
  return as.put(`/repos/${repo.id}/pulls/${number}/merge`, body);
}

/** PUT …/merge; any 5xx fails at once, with the server's error log. */
async function merge(repo: PullRepo, number: number, body?: Record<string, unknown>, as: Client = merger): Promise<ApiResponse> {
  const res = await tryMerge(repo, number, body, as);
  if (res.status >= 500) throw new Error(`merge of #${number} answered ${res.status}: ${res.text}\n${serverErrors()}`);
  return res;
}

/** Opens a pull request (as contrib unless told) and returns its record. */
async function open(repo: PullRepo, body: Record<string, unknown>, as: Client = contrib): Promise<any> {
  const res = await repo.open(body, as);
  if (res.status !== 201) throw new Error(`cannot open ${JSON.stringify(body)}: ${res.status} ${res.text}`);
  return res.body;
}

function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(typeof res.body.error.message).toBe('string');
  expect(typeof res.body.request_id).toBe('string');
}

/** The tree `git merge-tree --write-tree` gives for two commits, computed locally (the work tree has fetched both). */
async function localMergeTree(repo: PullRepo, ours: string, theirs: string): Promise<string> {
  const out = await repo.run(['merge-tree', '--write-tree', ours, theirs]);
  return out.split('\n')[0]!.trim();
}

const treeOf = async (repo: PullRepo, commit: string) => (await repo.run(['rev-parse', `${commit}^{tree}`])).trim();

async function isAncestor(repo: PullRepo, ancestor: string, of: string): Promise<boolean> {
  const result = await git.run(['merge-base', '--is-ancestor', ancestor, of], { cwd: repo.work });
  if (result.code !== 0 && result.code !== 1) throw new Error(`merge-base failed: ${result.stderr}`);
  return result.code === 0;
}

/** Waits until the pull request's mergeability is known for this head sha. */
function mergeableFor(repo: PullRepo, number: number, headSha: string): Promise<any> {
  return eventually(
    async () => {
      const res = await repo.get(number);
      return res.body?.head?.sha === headSha && res.body?.mergeable !== null ? res.body : null;
    },
    10_000,
    `mergeability of #${number} at ${headSha}`,
  );
}

const pushesTo = (events: RecordedEvent[], ref: string) => events.filter((e) => e.type === 'push' && e.payload.ref === ref);
const mergedEvents = (events: RecordedEvent[]) => events.filter((e) => e.type === 'pull_request' && e.action === 'merged');

describe('merge method', () => {
  test('a merge commit with two parents, by the merger; the record is merged; commits still listed', async () => {
    const repo = await newRepo({ 'README.md': '# merge\n', 'base.txt': 'base\n' });
    const base = (await repo.remoteSha('main'))!;
    const c1 = await repo.commit('feature', 'add feature', { 'feature.txt': 'feature\n' });
    const c2 = await repo.commit('feature', 'tune feature', { 'feature.txt': 'feature, tuned\n', 'more.txt': 'more\n' });
    await repo.push(['feature']);
    const pr = await open(repo, { title: 'Add the feature', body: 'why not', head: 'feature' });
    expect(pr.commits).toBe(2);
    expect((await repo.mergeable(pr.number)).mergeable).toBe(true);

    const res = await merge(repo, pr.number); // no body at all: the merge method
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ merged: true, sha: expect.stringMatching(HEX40), message: 'Pull request successfully merged' });

    const [tip] = await repo.history('origin/main', 1);
    expect(tip!.sha).toBe(res.body.sha);
    expect(tip!.parents).toEqual([base, c2]);
    expect(tip!.subject).toBe(`Merge pull request #${pr.number} from feature`);
    expect(tip!.body.trim()).toBe('Add the feature');
    expect(tip!.author).toBe(mergerSignature());
    expect(tip!.committer).toBe(mergerSignature());
    expect(await repo.remoteSha('main')).toBe(res.body.sha);
    expect(await repo.fileAt('origin/main', 'base.txt')).toBe('base\n');
    expect(await repo.fileAt('origin/main', 'feature.txt')).toBe('feature, tuned\n');
    expect(await repo.fileAt('origin/main', 'more.txt')).toBe('more\n');

    const after = (await repo.get(pr.number)).body;
    expect(after).toMatchObject({
      state: 'merged',
      merged: true,
      merged_by: { id: merger.userId, login: 'merger' },
      merge_commit_sha: res.body.sha,
      merged_at: expect.stringMatching(ISO),
      closed_at: expect.stringMatching(ISO),
      mergeable: null,
      commits: 2,
      head: { ref: 'feature', sha: c2 },
      user: { id: contrib.userId, login: 'contrib' },
    });

    const commits = await merger.get(`/repos/${repo.id}/pulls/${pr.number}/commits`);
    expect(commits.status).toBe(200);
    expect(commits.body.total).toBe(2);
    expect(commits.body.data.map((c: any) => c.sha)).toEqual([c1, c2]);
  });

  test('commit_title and commit_message replace subject and body; a base that moved meanwhile merges cleanly', async () => {
    const repo = await newRepo({ 'README.md': '# moved\n', 'a.txt': 'a\n' });
    const head = await repo.commit('topic', 'topic work', { 'topic.txt': 'topic\n' });
    await repo.push(['topic']);
    const pr = await open(repo, { title: 'Topic', head: 'topic' });
    const moved = await repo.commit('main', 'main moves on', { 'a.txt': 'a, changed on main\n', 'main-only.txt': 'm\n' });
    await repo.push(['main']);
    await eventually(async () => (await repo.get(pr.number)).body.base.sha === moved, 5_000, 'base.sha to follow main');
    expect((await mergeableFor(repo, pr.number, head)).mergeable).toBe(true);

    const res = await merge(repo, pr.number, {
      method: 'merge',
      commit_title: 'Custom title',
      commit_message: 'Custom body\n\nsecond paragraph',
    });
    expect(res.status).toBe(200);
    const [tip] = await repo.history('origin/main', 1);
    expect(tip!.sha).toBe(res.body.sha);
    expect(tip!.parents).toEqual([moved, head]);
    expect(tip!.subject).toBe('Custom title');
    expect(tip!.body.trim()).toBe('Custom body\n\nsecond paragraph');
    expect(tip!.author).toBe(mergerSignature());
    expect(await repo.fileAt('origin/main', 'a.txt')).toBe('a, changed on main\n');
    expect(await repo.fileAt('origin/main', 'main-only.txt')).toBe('m\n');
    expect(await repo.fileAt('origin/main', 'topic.txt')).toBe('topic\n');
    expect(await treeOf(repo, res.body.sha)).toBe(await localMergeTree(repo, moved, head));
    expect((await repo.get(pr.number)).body).toMatchObject({ state: 'merged', merge_commit_sha: res.body.sha });
  });
});

describe('squash', () => {
  test("one parent, the merged tree, the pull request's author, bullets and Co-authored-by trailers once each", async () => {
    const repo = await newRepo({ 'README.md': '# squash\n', 'shared.txt': 'one\ntwo\nthree\n' });
    const alice = { name: 'Alice Anders', email: 'alice@example.test' };
    const bob = { name: 'Bob Brown', email: 'bob@example.test' };
    const self = { name: 'Contrib Person', email: 'contrib@example.test' }; // the pull request's author
    await repo.commit('squashy', 'alice one', { 'alice.txt': 'a1\n' }, alice);
    await repo.commit('squashy', 'bob one', { 'bob.txt': 'b1\n' }, bob);
    await repo.commit('squashy', 'contrib one', { 'shared.txt': 'one\ntwo\nthree\nfour\n' }, self);
    // Trailers of a squashed commit go to the one block at the end (Bob's, a second time, once).
    const paired =
      'paired\n\nWritten together.\n\nCo-authored-by: Dana Dev <dana@example.test>\nco-authored-by: Bob Brown <BOB@example.test>';
    await repo.commit('squashy', paired, { 'pair.txt': 'p\n' }, self);
    const head = await repo.commit('squashy', 'alice two', { 'alice.txt': 'a2\n' }, alice);
    await repo.push(['squashy']);
    const moved = await repo.commit('main', 'main moves', { 'main.txt': 'main\n' });
    await repo.push(['main']);
    const pr = await open(repo, { title: 'Squash these', head: 'squashy' });
    expect((await mergeableFor(repo, pr.number, head)).mergeable).toBe(true);

    const res = await merge(repo, pr.number, { method: 'squash' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ merged: true, sha: expect.stringMatching(HEX40), message: 'Pull request successfully merged' });

    const [tip] = await repo.history('origin/main', 1);
    expect(tip!.sha).toBe(res.body.sha);
    expect(tip!.parents).toEqual([moved]);
    expect(await treeOf(repo, tip!.sha)).toBe(await localMergeTree(repo, moved, head));
    expect(tip!.author).toBe(`contrib <${noreplyEmail(server, contrib)}>`);
    expect(tip!.committer).toBe(mergerSignature());
    expect(tip!.subject).toBe(`Squash these (#${pr.number})`);

    const lines = tip!.body.split('\n');
    const bullets = lines.filter((line) => line.startsWith('* '));
    expect(bullets).toEqual(['* alice one', '* bob one', '* contrib one', '* paired', '* alice two']);
    expect(tip!.body).toContain('* paired\n\nWritten together.\n\n* alice two');
    const coAuthors = [
      'Co-authored-by: Alice Anders <alice@example.test>',
      'Co-authored-by: Bob Brown <bob@example.test>',
      'Co-authored-by: Dana Dev <dana@example.test>',
    ];
    expect(tip!.body.trim().split('\n\n').at(-1)!.split('\n').sort()).toEqual(coAuthors); // all of them, the last paragraph
    expect(lines.filter((line) => /co-authored-by/i.test(line)).sort()).toEqual(coAuthors); // and nowhere else
    expect(tip!.body).not.toContain('contrib@example.test');
    // git itself reads them as trailers (the last paragraph of the message).
    const trailers = await repo.run(['log', '-1', '--format=%(trailers:key=Co-authored-by,valueonly)', tip!.sha]);
    expect(trailers.split('\n').filter(Boolean).sort()).toEqual(coAuthors.map((line) => line.slice('Co-authored-by: '.length)));

    expect(await repo.fileAt('origin/main', 'alice.txt')).toBe('a2\n');
    expect(await repo.fileAt('origin/main', 'shared.txt')).toBe('one\ntwo\nthree\nfour\n');
    expect((await repo.get(pr.number)).body).toMatchObject({ state: 'merged', merged: true, merge_commit_sha: res.body.sha });
  });
});

describe('squash with commit_message', () => {
  test('the message replaces the whole rest: no commit list, no trailers', async () => {
    const repo = await newRepo({ 'README.md': '# squash message\n' });
    await repo.commit('told', 'by alice', { 'a.txt': 'a\n' }, { name: 'Alice Anders', email: 'alice@example.test' });
    const head = await repo.commit('told', 'by bob', { 'b.txt': 'b\n' }, { name: 'Bob Brown', email: 'bob@example.test' });
    await repo.push(['told']);
    const pr = await open(repo, { title: 'Told', head: 'told' });
    await mergeableFor(repo, pr.number, head);
    const res = await merge(repo, pr.number, { method: 'squash', commit_title: 'One change', commit_message: 'Exactly this.' });
    expect(res.status).toBe(200);
    const [tip] = await repo.history('origin/main', 1);
    expect(tip!.subject).toBe('One change');
    expect(tip!.body.trim()).toBe('Exactly this.');
  });
});

describe('merge_method, GitHub name for method', () => {
  test('merge_method alone chooses the method; two names that disagree, or a null, are 422 and change nothing', async () => {
    const repo = await newRepo({ 'README.md': '# merge_method\n' });
    await repo.commit('named', 'one', { 'a.txt': 'a\n' });
    const head = await repo.commit('named', 'two', { 'b.txt': 'b\n' });
    await repo.push(['named']);
    const pr = await open(repo, { title: 'Named', head: 'named' });
    await mergeableFor(repo, pr.number, head);
    const base = await repo.remoteSha('main');

    for (const [body, code] of [
      [{ method: 'merge', merge_method: 'squash' }, 'invalid'],
      [{ merge_method: null }, 'missing'],
    ] as const) {
      const refused = await merge(repo, pr.number, body);
      expectError(refused, 422, 'validation_failed');
      expect(refused.body.error.details).toEqual([expect.objectContaining({ field: 'merge_method', code })]);
    }
    expect(await repo.remoteSha('main')).toBe(base);

    const res = await merge(repo, pr.number, { merge_method: 'squash', sha: head });
    expect(res.status).toBe(200);
    const [tip] = await repo.history('origin/main', 1);
    expect(tip!.parents).toEqual([base]); // squashed: one parent, not a merge commit
    expect(tip!.subject).toBe(`Named (#${pr.number})`);
  });
});

describe('through urql, as a GraphQL frontend would', () => {
  test('mergeMethod: SQUASH merges by squash; openPullsCount goes down by one', async () => {
    const repo = await newRepo({ 'README.md': '# urql\n' });
    const head = await repo.commit('via-urql', 'one', { 'u.txt': 'u\n' });
    await repo.push(['via-urql']);
    const pr = await open(repo, { title: 'Via urql', head: 'via-urql' });
    await mergeableFor(repo, pr.number, head);
    const base = await repo.remoteSha('main');
    const urql = urqlClient(server, merger.token);
    const count = async () =>
      (
        await urql
          .query(
            gql`
              query ($id: ID!) {
                repository(id: $id) {
                  openPullsCount
                }
              }
            `,
            { id: repo.id },
            { requestPolicy: 'network-only' },
          )
          .toPromise()
      ).data?.repository.openPullsCount;
    expect(await count()).toBe(1);

    const merged = await urql
      .mutation(
        gql`
          mutation ($input: MergePullRequestInput!) {
            mergePullRequest(input: $input) {
              merged
              sha
            }
          }
        `,
        { input: { repositoryId: repo.id, number: pr.number, mergeMethod: 'SQUASH' } },
      )
      .toPromise();
    expect(merged.error).toBeUndefined();
    expect(merged.data.mergePullRequest).toMatchObject({ merged: true, sha: expect.stringMatching(HEX40) });
    const [tip] = await repo.history('origin/main', 1);
    expect(tip!.parents).toEqual([base]);
    expect(await count()).toBe(0);
  });
});

describe('rebase', () => {
  test('a commit already cherry-picked into base is dropped, as git rebase drops it; an empty commit is kept', async () => {
    const repo = await newRepo({ 'README.md': '# picked\n' });
    const picked = await repo.commit('picky', 'picked early', { 'p.txt': 'p\n' });
    await repo.run(['commit', '--quiet', '--allow-empty', '-m', 'empty on purpose']);
    const head = await repo.commit('picky', 'not picked', { 'q.txt': 'q\n' });
    await repo.push(['picky']);
    await repo.checkout('main');
    await repo.run(['cherry-pick', picked]); // the same change, another commit
    await repo.commit('main', 'main moves', { 'm.txt': 'm\n' });
    await repo.push(['main']);
    const base = (await repo.remoteSha('main'))!;
    const pr = await open(repo, { title: 'Picky', head: 'picky' });
    expect((await mergeableFor(repo, pr.number, head)).mergeable).toBe(true);

    const res = await merge(repo, pr.number, { method: 'rebase' });
    expect(res.status).toBe(200);
    const history = await repo.history('origin/main', 3);
    expect(history.map((commit) => commit.subject)).toEqual(['not picked', 'empty on purpose', 'main moves']);
    expect(history[2]!.sha).toBe(base);
    expect(await repo.fileAt('origin/main', 'p.txt')).toBe('p\n');
    expect(await repo.fileAt('origin/main', 'q.txt')).toBe('q\n');
  });

  test('each commit replayed in order onto the moved base, keeping author, author date and message', async () => {
    const repo = await newRepo({ 'README.md': '# rebase\n', 'lib.txt': 'lib 1\n', 'other.txt': 'other 1\n' });
    const rita = { name: 'Rita Rebase', email: 'rita@example.test', date: FIXED_DATE };
    const sam = { name: 'Sam Second', email: 'sam@example.test', date: '2021-06-07T08:09:10Z' };
    const originals = [
      await repo.commit('rebased', 'first replayed', { 'r1.txt': 'r1\n' }, rita),
      await repo.commit('rebased', 'second replayed\n\nwith a body\nof two lines', { 'lib.txt': 'lib 2\n' }, sam),
      await repo.commit('rebased', 'third replayed', { 'r1.txt': 'r1, again\n', 'r3.txt': 'r3\n' }, rita),
    ];
    const head = originals[2]!;
    await repo.push(['rebased']);
    const base = await repo.commit('main', 'main touches other files', { 'other.txt': 'other 2\n', 'main.txt': 'main\n' });
    await repo.push(['main']);
    const pr = await open(repo, { title: 'Rebase me', head: 'rebased' });
    expect((await mergeableFor(repo, pr.number, head)).mergeable).toBe(true);

    const res = await merge(repo, pr.number, { method: 'rebase' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ merged: true, sha: expect.stringMatching(HEX40), message: 'Pull request successfully merged' });

    const history = await repo.history('origin/main', 4);
    const replayed = history.slice(0, 3).reverse(); // oldest first
    expect(history[3]!.sha).toBe(base);
    expect(replayed.at(-1)!.sha).toBe(res.body.sha);
    expect(replayed[0]!.parents).toEqual([base]);
    expect(replayed[1]!.parents).toEqual([replayed[0]!.sha]);
    expect(replayed[2]!.parents).toEqual([replayed[1]!.sha]);
    const expected = [
      { author: 'Rita Rebase <rita@example.test>', date: FIXED_DATE, subject: 'first replayed', body: '' },
      {
        author: 'Sam Second <sam@example.test>',
        date: '2021-06-07T08:09:10Z',
        subject: 'second replayed',
        body: 'with a body\nof two lines',
      },
      { author: 'Rita Rebase <rita@example.test>', date: FIXED_DATE, subject: 'third replayed', body: '' },
    ];
    replayed.forEach((commit, i) => {
      expect(commit.sha).not.toBe(originals[i]);
      expect({
        author: commit.author,
        date: new Date(commit.authorDate).toISOString(),
        subject: commit.subject,
        body: commit.body.trim(),
        committer: commit.committer,
      }).toEqual({
        author: expected[i]!.author,
        date: new Date(expected[i]!.date).toISOString(),
        subject: expected[i]!.subject,
        body: expected[i]!.body,
        committer: mergerSignature(),
      });
    });

    // The contents: head's changes on top of the moved base, commit by commit.
    expect(await treeOf(repo, res.body.sha)).toBe(await localMergeTree(repo, base, head));
    expect(await repo.fileAt(replayed[0]!.sha, 'r1.txt')).toBe('r1\n');
    expect(await repo.fileAt(replayed[0]!.sha, 'other.txt')).toBe('other 2\n');
    expect(await repo.fileAt(replayed[0]!.sha, 'lib.txt')).toBe('lib 1\n');
    expect(await repo.fileAt(replayed[1]!.sha, 'lib.txt')).toBe('lib 2\n');
    expect(await repo.fileAt(replayed[1]!.sha, 'r3.txt')).toBeNull();
    expect(await repo.fileAt('origin/main', 'r1.txt')).toBe('r1, again\n');
    expect(await repo.fileAt('origin/main', 'r3.txt')).toBe('r3\n');
    expect(await repo.fileAt('origin/main', 'main.txt')).toBe('main\n');
    expect((await repo.get(pr.number)).body).toMatchObject({ state: 'merged', merged: true, merged_by: { login: 'merger' } });
  });

  test('one commit onto a base that did not move: replayed with its author and author date, committed by the merger', async () => {
    const repo = await newRepo({ 'README.md': '# rebase one\n' });
    const base = (await repo.remoteSha('main'))!;
    const author = { name: 'Rita Rebase', email: 'rita@example.test', date: FIXED_DATE };
    const original = await repo.commit('single', 'single replayed\n\nits body', { 'single.txt': 's\n' }, author);
    await repo.push(['single']);
    const pr = await open(repo, { title: 'Rebase one', head: 'single' });
    expect((await mergeableFor(repo, pr.number, original)).mergeable).toBe(true);

    const res = await merge(repo, pr.number, { method: 'rebase' });
    expect(res.status).toBe(200);
    const [tip] = await repo.history('origin/main', 1);
    expect(tip!.sha).toBe(res.body.sha);
    expect(tip!.sha).not.toBe(original); // a new committer: a new commit
    expect(tip!.parents).toEqual([base]);
    expect(tip!.author).toBe('Rita Rebase <rita@example.test>');
    expect(new Date(tip!.authorDate).toISOString()).toBe(new Date(FIXED_DATE).toISOString());
    expect(tip!.committer).toBe(mergerSignature());
    expect(tip!.subject).toBe('single replayed');
    expect(tip!.body.trim()).toBe('its body');
    expect(await treeOf(repo, tip!.sha)).toBe(await treeOf(repo, original));
  });

  test('a pull request containing a merge commit: rebase is refused with 405, nothing written; merge works', async () => {
    const repo = await newRepo({ 'README.md': '# with merge\n' });
    await repo.commit('with-merge', 'branch work', { 'branch.txt': 'b\n' });
    await repo.push(['with-merge']);
    await repo.commit('main', 'main work', { 'main.txt': 'm\n' });
    await repo.push(['main']);
    await repo.checkout('with-merge');
    await repo.run(['merge', '--no-ff', '--quiet', '-m', 'merge main into with-merge', 'main']);
    await repo.commit('with-merge', 'more branch work', { 'branch2.txt': 'b2\n' });
    const head = (await repo.run(['rev-parse', 'with-merge'])).trim();
    await repo.push(['with-merge']);
    const pr = await open(repo, { title: 'Has a merge commit', head: 'with-merge' });
    expect((await mergeableFor(repo, pr.number, head)).mergeable).toBe(true);

    const base = await repo.remoteSha('main');
    const before = await lastEventId(server);
    const refused = await merge(repo, pr.number, { method: 'rebase' });
    expectError(refused, 405, 'not_mergeable');
    expect(await repo.remoteSha('main')).toBe(base);
    expect(await eventsOf(server, repo.id, before)).toEqual([]);
    expect((await repo.get(pr.number)).body).toMatchObject({ state: 'open', merged: false, merge_commit_sha: null });

    const merged = await merge(repo, pr.number, { method: 'merge' });
    expect(merged.status).toBe(200);
    const [tip] = await repo.history('origin/main', 1);
    expect(tip!.parents).toEqual([base, head]);
  });
});

describe('conflicts', () => {
  let repo: PullRepo;
  let pr: any;
  beforeAll(async () => {
    repo = await newRepo({ 'README.md': '# clash\n', 'shared.txt': 'line 1\nline 2\nline 3\n' });
    await repo.commit('clash', 'head side', { 'shared.txt': 'line 1\nline 2 from head\nline 3\n', 'head-only.txt': 'h\n' });
    await repo.push(['clash']);
    await repo.commit('main', 'base side', { 'shared.txt': 'line 1\nline 2 from base\nline 3\n', 'base-only.txt': 'b\n' });
    await repo.push(['main']);
    pr = await open(repo, { title: 'Clashes', head: 'clash' });
  });

  test('same line changed on both sides: conflicting (only that path), every method refused with 405, nothing written', async () => {
    const checked = await repo.mergeable(pr.number);
    expect(checked).toMatchObject({ mergeable: false, mergeable_state: 'conflicting', conflicts: ['shared.txt'] });

    const base = await repo.remoteSha('main');
    const before = await lastEventId(server);
    const answers: Record<string, unknown> = {};
    for (const method of ['merge', 'squash', 'rebase', 'none']) {
      const res = await tryMerge(repo, pr.number, method === 'none' ? undefined : { method });
      answers[method] = { status: res.status, code: res.body?.error?.code };
    }
    expect(await repo.remoteSha('main')).toBe(base);
    expect(await eventsOf(server, repo.id, before)).toEqual([]);
    expect((await repo.get(pr.number)).body).toMatchObject({ state: 'open', merged: false, merged_at: null, merge_commit_sha: null });
    const refused = { status: 405, code: 'not_mergeable' };
    expect({ answers, log: Object.values(answers).some((a: any) => a.status >= 500) ? serverErrors() : '' }).toEqual({
      answers: { merge: refused, squash: refused, rebase: refused, none: refused },
      log: '',
    });
  });

  test('a file on one side where the other has a directory: the conflict names the path of the branches, not where git moved it', async () => {
    const clash = await newRepo({ 'README.md': '# file or directory\n' });
    await clash.commit('tree', 'x is a directory', { 'x/inside.txt': 'in\n' });
    await clash.push(['tree']);
    await clash.commit('main', 'x is a file', { x: 'a file\n' });
    await clash.push(['main']);
    const opened = await open(clash, { title: 'File or directory', head: 'tree' });
    // git's merge moves the file aside to x~<commit>, a path in neither branch.
    expect(await clash.mergeable(opened.number)).toMatchObject({ mergeable: false, mergeable_state: 'conflicting', conflicts: ['x'] });
  });

  test('a fix pushed to head makes it mergeable again (for the new head) and the merge works', async () => {
    const base = await repo.remoteSha('main');
    // The contributor resolves it: head takes base's version of the line.
    const fixed = await repo.commit('clash', 'resolve', { 'shared.txt': 'line 1\nline 2 from base\nline 3\n' });
    await repo.push(['clash']);
    const resolved = await mergeableFor(repo, pr.number, fixed);
    expect(resolved).toMatchObject({ mergeable: true, mergeable_state: 'clean', conflicts: [] });

    const res = await merge(repo, pr.number, { sha: fixed });
    expect(res.status).toBe(200);
    const [tip] = await repo.history('origin/main', 1);
    expect(tip!.parents).toEqual([base, fixed]);
    expect(await repo.fileAt('origin/main', 'shared.txt')).toBe('line 1\nline 2 from base\nline 3\n');
    expect(await repo.fileAt('origin/main', 'head-only.txt')).toBe('h\n');
    expect(await repo.fileAt('origin/main', 'base-only.txt')).toBe('b\n');
  });
});

describe('refusals', () => {
  let repo: PullRepo;
  beforeAll(async () => {
    repo = await newRepo({ 'README.md': '# refusals\n' });
    for (const branch of ['r-draft', 'r-closed', 'r-sha', 'r-bad-sha'])
      await repo.commit(branch, `${branch} work`, { [`${branch}.txt`]: `${branch}\n` });
    await repo.push(['r-draft', 'r-closed', 'r-sha', 'r-bad-sha']);
  });

  test('a draft is refused (405) until marked ready; merging twice is refused (405)', async () => {
    const pr = await open(repo, { title: 'Draft', head: 'r-draft', draft: true });
    const base = await repo.remoteSha('main');
    const before = await lastEventId(server);
    expectError(await merge(repo, pr.number), 405, 'not_mergeable');
    expect(await repo.remoteSha('main')).toBe(base);
    expect(await eventsOf(server, repo.id, before)).toEqual([]);

    const ready = await contrib.patch(`/repos/${repo.id}/pulls/${pr.number}`, { draft: false });
    expect(ready.status).toBe(200);
    expect(ready.body.draft).toBe(false);
    const first = await merge(repo, pr.number);
    expect(first.status).toBe(200);
    expect(await repo.remoteSha('main')).toBe(first.body.sha);

    const afterFirst = await lastEventId(server);
    const second = await merge(repo, pr.number);
    expectError(second, 405, 'not_mergeable');
    expect(await repo.remoteSha('main')).toBe(first.body.sha);
    expect(await eventsOf(server, repo.id, afterFirst)).toEqual([]);
    expect((await repo.get(pr.number)).body).toMatchObject({ state: 'merged', merge_commit_sha: first.body.sha });
  });

  test('a closed pull request is refused (405)', async () => {
    const pr = await open(repo, { title: 'Closed', head: 'r-closed' });
    expect((await contrib.patch(`/repos/${repo.id}/pulls/${pr.number}`, { state: 'closed' })).status).toBe(200);
    const base = await repo.remoteSha('main');
    const before = await lastEventId(server);
    expectError(await merge(repo, pr.number), 405, 'not_mergeable');
    expectError(await merge(repo, pr.number, { method: 'squash' }), 405, 'not_mergeable');
    expect(await repo.remoteSha('main')).toBe(base);
    expect(await eventsOf(server, repo.id, before)).toEqual([]);
    expect((await repo.get(pr.number)).body).toMatchObject({ state: 'closed', merged: false });
  });

  test('a sha that is not the head: 409 and nothing written; the head sha: 200', async () => {
    const pr = await open(repo, { title: 'Pinned', head: 'r-sha' });
    const base = (await repo.remoteSha('main'))!;
    const before = await lastEventId(server);
    const otherBranch = (await repo.remoteSha('r-bad-sha'))!;
    for (const sha of [base, otherBranch, 'f'.repeat(40)]) {
      const res = await merge(repo, pr.number, { sha });
      expectError(res, 409, 'conflict');
    }
    expect(await repo.remoteSha('main')).toBe(base);
    expect(await eventsOf(server, repo.id, before)).toEqual([]);
    expect((await repo.get(pr.number)).body).toMatchObject({ state: 'open', merged: false });

    const ok = await merge(repo, pr.number, { sha: pr.head.sha });
    expect(ok.status).toBe(200);
    const [tip] = await repo.history('origin/main', 1);
    expect(tip!.parents).toEqual([base, pr.head.sha]);
  });

  test('a malformed sha: 422 naming the field, nothing written', async () => {
    const pr = await open(repo, { title: 'Malformed', head: 'r-bad-sha' });
    const base = await repo.remoteSha('main');
    const before = await lastEventId(server);
    for (const sha of ['abc', 'z'.repeat(40), pr.head.sha.slice(0, 12), `${pr.head.sha}0`, '']) {
      const res = await merge(repo, pr.number, { sha });
      expectError(res, 422, 'validation_failed');
      expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'sha', code: expect.any(String) })]));
    }
    expect(await repo.remoteSha('main')).toBe(base);
    expect(await eventsOf(server, repo.id, before)).toEqual([]);
    expect((await repo.get(pr.number)).body.state).toBe('open');
  });
});

describe('concurrency', () => {
  test('two concurrent merges of one pull request: one 200, one refused; the base moves once; one push and one merged event', async () => {
    const repo = await newRepo({ 'README.md': '# race\n' });
    const head = await repo.commit('race', 'race work', { 'race.txt': 'race\n' });
    await repo.push(['race']);
    const pr = await open(repo, { title: 'Race', head: 'race' });
    expect((await mergeableFor(repo, pr.number, head)).mergeable).toBe(true);
    const base = (await repo.remoteSha('main'))!;
    const before = await lastEventId(server);

    const results = await Promise.all([merge(repo, pr.number), merge(repo, pr.number, { method: 'merge' })]);
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    expect(ok).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect([405, 409]).toContain(refused[0]!.status);
    expect(['not_mergeable', 'conflict']).toContain(refused[0]!.body.error.code);

    const history = await repo.history('origin/main', 2);
    expect(history[0]!.sha).toBe(ok[0]!.body.sha);
    expect(history[0]!.parents).toEqual([base, head]); // (git log orders the two parents by date: read them here)

    const events = await eventsOf(server, repo.id, before);
    expect(pushesTo(events, 'refs/heads/main')).toHaveLength(1);
    expect(mergedEvents(events)).toHaveLength(1);
    expect(events.filter((e) => e.type === 'push')).toHaveLength(1);
    expect((await repo.get(pr.number)).body).toMatchObject({ state: 'merged', merge_commit_sha: ok[0]!.body.sha });
  });

  test('merges of different pull requests into one base, issued together without sha: each lands (built again on the moved base), no 409', async () => {
    const repo = await newRepo({ 'README.md': '# together\n' });
    const heads: string[] = [];
    for (const i of [1, 2, 3]) {
      heads.push(await repo.commit(`together-${i}`, `together ${i}`, { [`t${i}.txt`]: `${i}\n` }));
      await repo.checkout('main');
    }
    await repo.push(['together-1', 'together-2', 'together-3']);
    const prs = [];
    for (const [i, head] of heads.entries()) {
      const pr = await open(repo, { title: `Together ${i + 1}`, head: `together-${i + 1}` });
      expect((await mergeableFor(repo, pr.number, head)).mergeable).toBe(true);
      prs.push(pr);
    }
    const before = await lastEventId(server);

    const results = await Promise.all(prs.map((pr, i) => merge(repo, pr.number, { method: ['merge', 'squash', 'rebase'][i] })));
    expect(results.map((res) => res.status)).toEqual([200, 200, 200]);
    await repo.run(['fetch', '--quiet', 'origin']);
    for (const res of results) expect(await isAncestor(repo, res.body.sha, 'origin/main')).toBe(true);
    for (const i of [1, 2, 3]) expect(await repo.fileAt('origin/main', `t${i}.txt`)).toBe(`${i}\n`);
    const events = await eventsOf(server, repo.id, before);
    expect(pushesTo(events, 'refs/heads/main')).toHaveLength(3);
    expect(mergedEvents(events)).toHaveLength(3);
  });

  test('a merge racing a git push to base: never both lost, everything reported successful is on main', async () => {
    const repo = await newRepo({ 'README.md': '# merge vs push\n' });
    // The merge starts at once, or later by a share of how long a push takes, so that both orders happen.
    const delays = [0, 0.5, 0.85];
    for (let round = 0; round < delays.length; round++) {
      const branch = `round-${round}`;
      // Local main follows the server's (a rejected push of the previous round left a commit on it).
      await repo.run(['fetch', '--quiet', 'origin']);
      await repo.checkout('main');
      await repo.run(['reset', '--quiet', '--hard', 'origin/main']);
      const head = await repo.commit(branch, `round ${round} branch`, { [`${branch}.txt`]: `${round}\n` });
      const started = Date.now();
      await repo.push([branch]);
      const pushMs = Date.now() - started;
      const pr = await open(repo, { title: `Round ${round}`, head: branch });
      expect((await mergeableFor(repo, pr.number, head)).mergeable).toBe(true);

      // A new commit on main, built on the old main tip.
      await repo.run(['fetch', '--quiet', 'origin']);
      const oldMain = (await repo.run(['rev-parse', 'origin/main'])).trim();
      await repo.checkout('main');
      await repo.run(['reset', '--quiet', '--hard', 'origin/main']);
      const pushed = await repo.commit('main', `round ${round} pushed`, { [`pushed-${round}.txt`]: `${round}\n` });
      const before = await lastEventId(server);

      const [merged, push] = await Promise.all([
        sleep(Math.round(pushMs * delays[round]!)).then(() => merge(repo, pr.number)),
        git.run(['push', 'origin', 'main'], { cwd: repo.work }),
      ]);
      const mergeOk = merged.status === 200;
      const pushOk = push.code === 0;
      expect(mergeOk || pushOk).toBe(true);
      if (!mergeOk) expectError(merged, 409, 'conflict');
      if (!pushOk) expect(push.stderr).toMatch(/rejected|failed|error/i);

      await repo.run(['fetch', '--quiet', 'origin']);
      const main = (await repo.run(['rev-parse', 'origin/main'])).trim();
      expect(await repo.remoteSha('main')).toBe(main);
      expect(await isAncestor(repo, oldMain, main)).toBe(true);
      if (mergeOk) {
        expect(await isAncestor(repo, merged.body.sha, main)).toBe(true);
        expect(await isAncestor(repo, head, main)).toBe(true);
      }
      if (pushOk) expect(await isAncestor(repo, pushed, main)).toBe(true);
      if (mergeOk && !pushOk) expect(main).toBe(merged.body.sha);
      if (pushOk && !mergeOk) expect(main).toBe(pushed);

      // What the outbox recorded for main is a chain from the old tip to the server's tip.
      const events = await eventsOf(server, repo.id, before);
      const pushes = pushesTo(events, 'refs/heads/main');
      expect(pushes).toHaveLength(Number(mergeOk) + Number(pushOk));
      expect(pushes[0]!.payload.before).toBe(oldMain);
      for (let i = 1; i < pushes.length; i++) expect(pushes[i]!.payload.before).toBe(pushes[i - 1]!.payload.after);
      expect(pushes.at(-1)!.payload.after).toBe(main);
      expect(mergedEvents(events)).toHaveLength(mergeOk ? 1 : 0);
      const record = (await repo.get(pr.number)).body;
      expect(record.state).toBe(mergeOk ? 'merged' : 'open');
      if (mergeOk) expect(record.merge_commit_sha).toBe(merged.body.sha);
      else {
        // The refused merge left the pull request open and mergeable against the new base.
        expect(record.base.sha).toBe(main);
        const retry = await merge(repo, pr.number);
        expect(retry.status).toBe(200);
      }
    }
  });
});

describe('the push event of a merge', () => {
  test('pusher and sender are the merger; before/after the base tips; commits are those new to base', async () => {
    const repo = await newRepo({ 'README.md': '# push event\n' });
    const c1 = await repo.commit('evented', 'evented one', { 'e1.txt': '1\n' });
    const c2 = await repo.commit('evented', 'evented two', { 'e2.txt': '2\n' });
    await repo.push(['evented']);
    const pr = await open(repo, { title: 'Evented', head: 'evented' });
    expect((await mergeableFor(repo, pr.number, c2)).mergeable).toBe(true);
    const base = (await repo.remoteSha('main'))!;
    const before = await lastEventId(server);

    const res = await merge(repo, pr.number);
    expect(res.status).toBe(200);
    const events = await eventsOf(server, repo.id, before);
    expect(events.map((e) => `${e.type}${e.action ? ` ${e.action}` : ''}`)).toEqual(['push', 'pull_request merged']);

    const push = events[0]!.payload;
    expect(push).toMatchObject({
      ref: 'refs/heads/main',
      before: base,
      after: res.body.sha,
      created: false,
      deleted: false,
      forced: false,
      pusher: { name: 'merger', email: noreplyEmail(server, merger) },
      sender: { id: merger.userId, login: 'merger' },
    });
    const mergedPayload = events[1]!.payload;
    expect(mergedPayload).toMatchObject({
      action: 'merged',
      number: pr.number,
      sender: { id: merger.userId, login: 'merger' },
      pull_request: {
        number: pr.number,
        state: 'merged',
        merged: true,
        merge_commit_sha: res.body.sha,
        merged_by: { id: merger.userId, login: 'merger' },
      },
    });

    // The commits new to base: the pull request's, then the merge commit.
    expect(push.head_commit).toMatchObject({
      id: res.body.sha,
      author: { name: 'merger', email: noreplyEmail(server, merger) },
      committer: { name: 'merger', email: noreplyEmail(server, merger) },
    });
    expect(push.commits.map((c: any) => c.id)).toEqual([c1, c2, res.body.sha]);
    expect(push.total_commits).toBe(3);
  });
});
