import { adminClient, createUser, type ApiResponse, type Client } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId, remoteUrl } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { eventually } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/**
 * Protected branches through the running server: rules managed over REST, enforced on git pushes
 * (refused per ref, with the reason git prints) and on merges through the API (405 naming every
 * unmet requirement), and the pull request's `mergeable_state` telling why it waits.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let git: GitSandbox;
let owner: User; // owns every repository: an admin of them, so rules bind them only with enforce_admins
let dev: User; // a collaborator with write: what most rules are about
let reviewer: User; // a second writer, who approves
let reader: User; // a collaborator with read

beforeAll(async () => {
  [server, git] = [CairnServer.sharedServer(), await GitSandbox.create()];
  const admin = adminClient(server);
  [owner, dev, reviewer, reader] = await Promise.all(
    ['bp-owner', 'bp-dev', 'bp-reviewer', 'bp-reader'].map((login) => createUser(admin, login)),
  );
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup()]);
});

let repoCount = 0;
/** A repository of the owner's with dev and reviewer as writers and reader as a reader; dev's work tree pushes as dev. */
async function newRepo(files: Record<string, string> = { 'README.md': 'hello\n' }): Promise<PullRepo> {
  const repo = await PullRepo.create(server, git, owner, `protected-${++repoCount}`, files);
  for (const [user, permission] of [
    [dev, 'write'],
    [reviewer, 'write'],
    [reader, 'read'],
  ] as const) {
    const res = await owner.put(`/repos/${repo.id}/collaborators/${user.login}`, { permission });
    expect(res.status).toBeLessThan(300);
  }
  await repo.run(['remote', 'set-url', 'origin', remoteUrl(server, owner.login, repo.name, dev.token)]);
  return repo;
}

const protect = (repo: PullRepo, branch: string, rule: Record<string, unknown>, as: Client = owner) =>
  as.put(`/repos/${repo.id}/branches/${encodeURIComponent(branch)}/protection`, rule);

/** `git push` from the work tree (as dev unless the remote is changed); never throws: the code and what git printed. */
async function tryPush(repo: PullRepo, refspecs: string[], extra: string[] = [], url = 'origin') {
  const result = await git.run(['push', '--porcelain', ...extra, url, ...refspecs], { cwd: repo.work });
  return { ok: result.code === 0, output: result.stdout + result.stderr };
}

function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

describe('managing rules', () => {
  test('PUT sets a whole rule, GET reads it, DELETE removes it; a branch without a rule is 404', async () => {
    const repo = await newRepo();
    expectError(await owner.get(`/repos/${repo.id}/branches/main/protection`), 404, 'not_found');
    const set = await protect(repo, 'main', {
      required_pull_request: true,
      required_approving_review_count: 2,
      required_status_checks: { strict: true, contexts: ['ci', 'lint', 'ci'] },
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      pattern: 'main',
      required_pull_request: true,
      required_approving_review_count: 2,
      dismiss_stale_reviews: false,
      required_status_checks: { strict: true, contexts: ['ci', 'lint'] },
      enforce_admins: false,
      allow_force_pushes: false,
      allow_deletions: false,
      required_linear_history: false,
    });
    expect((await owner.get(`/repos/${repo.id}/branches/main/protection`)).body).toEqual(set.body);
    // A second PUT replaces the whole rule: what it leaves out takes its default.
    const replaced = await protect(repo, 'main', { allow_deletions: true });
    expect(replaced.body).toMatchObject({ required_pull_request: false, required_status_checks: null, allow_deletions: true });
    expect((await owner.delete(`/repos/${repo.id}/branches/main/protection`)).status).toBe(204);
    expectError(await owner.get(`/repos/${repo.id}/branches/main/protection`), 404, 'not_found');
    expectError(await owner.delete(`/repos/${repo.id}/branches/main/protection`), 404, 'not_found');
  });

  test('a pattern is named URL-encoded, and is listed in GraphQL', async () => {
    const repo = await newRepo();
    expect((await protect(repo, 'release/*', { allow_force_pushes: true })).body.pattern).toBe('release/*');
    expect((await owner.get(`/repos/${repo.id}/branches/release%2F*/protection`)).body.allow_force_pushes).toBe(true);
    const data = await owner.gql<{ repository: { branchProtections: Array<{ pattern: string }> } }>(
      'query($id: ID!) { repository(id: $id) { branchProtections { pattern } } }',
      { id: repo.id },
    );
    expect(data.repository.branchProtections).toEqual([{ pattern: 'release/*' }]);
  });

  test('only admins manage rules: a writer is 403, a stranger to a private repository 404; bad input is 422 and changes nothing', async () => {
    const repo = await newRepo();
    expectError(await protect(repo, 'main', {}, dev), 403, 'forbidden');
    expectError(await protect(repo, 'main', {}, reader), 403, 'forbidden');
    expectError(await dev.get(`/repos/${repo.id}/branches/main/protection`), 403, 'forbidden');
    const secret = await PullRepo.create(server, git, owner, `protected-private-${++repoCount}`, { a: '1' }, { private: true });
    expectError(await protect(secret, 'main', {}, dev), 404, 'not_found');

    for (const [branch, rule, field] of [
      ['main', { required_approving_review_count: 7 }, 'required_approving_review_count'],
      ['main', { required_approving_review_count: -1 }, 'required_approving_review_count'],
      ['a..b', {}, 'branch'],
      ['main', { required_status_checks: { contexts: [''] } }, 'required_status_checks.contexts'],
      ['main', { required_status_checks: { contexts: Array.from({ length: 101 }, (_, i) => `c${i}`) } }, 'required_status_checks.contexts'],
    ] as const) {
      const res = await protect(repo, branch, rule);
      expectError(res, 422, 'validation_failed');
      expect(res.body.error.details.map((detail: { field: string }) => detail.field)).toContain(field);
    }
    expectError(await protect(repo, 'main', { enforce_admins: 'yes' }), 422, 'validation_failed');
    expectError(await protect(repo, 'main', { required_status_checks: { contexts: 'ci' } }), 422, 'validation_failed');
    const notJson = await owner.request('PUT', `/repos/${repo.id}/branches/main/protection`, {
      raw: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(notJson.status).toBe(415);
    expectError(await owner.get(`/repos/${repo.id}/branches/main/protection`), 404, 'not_found');
  });
});

describe('pushes', () => {
  test('a force-push to a protected branch is refused with the reason git prints; the branch stays', async () => {
    const repo = await newRepo();
    await repo.commit('main', 'two', { b: '2' });
    await repo.push(['main'], dev);
    const before = await repo.remoteSha('main');
    expect((await protect(repo, 'main', {})).status).toBe(200);
    await repo.run(['reset', '--hard', 'HEAD~1']);
    await repo.commit('main', 'rewritten', { c: '3' });
    const pushed = await tryPush(repo, ['+main']);
    expect(pushed.ok).toBe(false);
    expect(pushed.output).toContain('protected branch: force-push is not allowed');
    expect(pushed.output).toMatch(/!\s+refs\/heads\/main:refs\/heads\/main\s+\[remote rejected\]/);
    expect(await repo.remoteSha('main')).toBe(before);
    // A fast-forward still lands.
    await repo.run(['reset', '--hard', before!]);
    const next = await repo.commit('main', 'three', { d: '4' });
    expect((await tryPush(repo, ['main'])).ok).toBe(true);
    expect(await repo.remoteSha('main')).toBe(next);
    // allow_force_pushes lets it through.
    await protect(repo, 'main', { allow_force_pushes: true });
    await repo.run(['reset', '--hard', 'HEAD~1']);
    const forced = await repo.commit('main', 'forced', { e: '5' });
    expect((await tryPush(repo, ['+main'])).ok).toBe(true);
    expect(await repo.remoteSha('main')).toBe(forced);
  });

  test('deleting a protected branch is refused unless allowed; refusals are per ref, so the rest of a push lands', async () => {
    const repo = await newRepo();
    await repo.commit('keep', 'keep', { k: '1' });
    await repo.commit('feature', 'feature', { f: '1' });
    await repo.push(['keep'], dev);
    await protect(repo, 'keep', {});
    const sha = await repo.remoteSha('keep');
    const pushed = await tryPush(repo, [':keep', 'feature']);
    expect(pushed.ok).toBe(false);
    expect(pushed.output).toContain('protected branch: deletion is not allowed');
    expect(await repo.remoteSha('keep')).toBe(sha);
    expect(await repo.remoteSha('feature')).not.toBeNull();
    await protect(repo, 'keep', { allow_deletions: true });
    expect((await tryPush(repo, [':keep'])).ok).toBe(true);
    expect(await repo.remoteSha('keep')).toBeNull();
  });

  test('required_pull_request refuses direct pushes; creating a branch the pattern names is allowed', async () => {
    const repo = await newRepo();
    await protect(repo, 'release/*', { required_pull_request: true });
    await repo.commit('release/1.0', 'first', { r: '1' });
    expect((await tryPush(repo, ['release/1.0'])).ok).toBe(true);
    await repo.commit('release/1.0', 'second', { r: '2' });
    const pushed = await tryPush(repo, ['release/1.0']);
    expect(pushed.output).toContain('protected branch: changes must be made through a pull request');
    // `*` stays within one path segment: release/next/hotfix is not protected by release/*.
    await repo.commit('release/next/hotfix', 'hotfix', { h: '1' });
    expect((await tryPush(repo, ['release/next/hotfix'])).ok).toBe(true);
    await repo.commit('release/next/hotfix', 'hotfix 2', { h: '2' });
    expect((await tryPush(repo, ['release/next/hotfix'])).ok).toBe(true);
    // An exact name beats the pattern.
    await protect(repo, 'release/1.0', {});
    expect((await tryPush(repo, ['release/1.0'])).ok).toBe(true);
  });

  test('required_linear_history refuses a push that brings a merge commit', async () => {
    const repo = await newRepo();
    await repo.commit('side', 'side', { s: '1' });
    await repo.commit('main', 'main moves', { m: '1' });
    await repo.push(['main', 'side'], dev);
    await protect(repo, 'main', { required_linear_history: true });
    await repo.mergeLocally('side');
    const pushed = await tryPush(repo, ['main']);
    expect(pushed.output).toContain('protected branch: merge commits are not allowed');
    await repo.run(['reset', '--hard', 'HEAD~1']);
    await repo.commit('main', 'linear', { l: '1' });
    expect((await tryPush(repo, ['main'])).ok).toBe(true);
  });

  test('admins bypass a rule unless it enforces admins', async () => {
    const repo = await newRepo();
    await protect(repo, 'main', { required_pull_request: true });
    const asOwner = remoteUrl(server, owner.login, repo.name, owner.token);
    await repo.commit('main', 'by the owner', { o: '1' });
    expect((await tryPush(repo, ['main'], [], asOwner)).ok).toBe(true);
    await protect(repo, 'main', { required_pull_request: true, enforce_admins: true });
    await repo.commit('main', 'by the owner again', { o: '2' });
    const pushed = await tryPush(repo, ['main'], [], asOwner);
    expect(pushed.output).toContain('protected branch: changes must be made through a pull request');
  });

  test('required status checks: a push of a commit without a successful "ci" is refused; once CI passed it, it lands', async () => {
    const repo = await newRepo();
    await protect(repo, 'main', { required_status_checks: { strict: false, contexts: ['ci'] } });
    const sha = await repo.commit('main', 'needs ci', { c: '1' });
    const refused = await tryPush(repo, ['main']);
    expect(refused.output).toContain('protected branch: status check "ci" is required');
    // CI sees the commit on another branch and reports on it.
    expect((await tryPush(repo, ['main:refs/heads/candidate'])).ok).toBe(true);
    await dev.post(`/repos/${repo.id}/statuses/${sha}`, { state: 'failure', context: 'ci' });
    expect((await tryPush(repo, ['main'])).output).toContain('status check "ci" is required (its latest status is failure)');
    await dev.post(`/repos/${repo.id}/statuses/${sha}`, { state: 'success', context: 'ci' });
    expect((await tryPush(repo, ['main'])).ok).toBe(true);
    expect(await repo.remoteSha('main')).toBe(sha);
  });

  test('an atomic push with one refused ref lands nothing', async () => {
    const repo = await newRepo();
    await protect(repo, 'main', { required_pull_request: true });
    await repo.commit('main', 'direct', { x: '1' });
    await repo.commit('other', 'other', { y: '1' });
    const pushed = await tryPush(repo, ['main', 'other'], ['--atomic']);
    expect(pushed.ok).toBe(false);
    expect(await repo.remoteSha('other')).toBeNull();
  });
});

describe('merges through the API', () => {
  async function openPull(repo: PullRepo, branch: string, files: Record<string, string>): Promise<number> {
    await repo.commit(branch, `work on ${branch}`, files);
    await repo.push([branch], dev);
    const res = await repo.open({ title: `pull ${branch}`, head: branch }, dev);
    expect(res.status).toBe(201);
    await repo.mergeable(res.body.number);
    return res.body.number;
  }

  test('required approvals: 405 naming the requirement, mergeable_state blocked, then merged once a writer approves', async () => {
    const repo = await newRepo();
    await protect(repo, 'main', { required_pull_request: true, required_approving_review_count: 1 });
    const number = await openPull(repo, 'feature', { f: '1' });
    expect((await repo.get(number)).body.mergeable_state).toBe('blocked');
    const refused = await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {});
    expectError(refused, 405, 'not_mergeable');
    expect(refused.body.error.details).toEqual([
      expect.objectContaining({ field: 'required_approving_review_count', code: 'approvals_required' }),
    ]);
    // A reader's approval does not count.
    expect((await reader.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'APPROVE' })).status).toBe(201);
    expectError(await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {}), 405, 'not_mergeable');
    expect((await reviewer.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'APPROVE' })).status).toBe(201);
    expect((await repo.get(number)).body.mergeable_state).toBe('clean');
    const merged = await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {});
    expect(merged.status).toBe(200);
    expect(await repo.remoteSha('main')).toBe(merged.body.sha);
  });

  test('changes requested by a writer block the merge until they approve', async () => {
    const repo = await newRepo();
    await protect(repo, 'main', { required_approving_review_count: 1 });
    const number = await openPull(repo, 'feature', { f: '1' });
    await reviewer.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'REQUEST_CHANGES', body: 'no' });
    await owner.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'APPROVE' });
    const refused = await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {});
    expect(refused.body.error.details).toEqual([
      expect.objectContaining({ code: 'changes_requested', message: 'bp-reviewer requested changes' }),
    ]);
    await reviewer.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'APPROVE' });
    expect((await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {})).status).toBe(200);
  });

  test('required status checks: blocked and 405 until the head has a successful "ci"; a failing optional status is unstable', async () => {
    const repo = await newRepo();
    await protect(repo, 'main', { required_status_checks: { strict: false, contexts: ['ci'] } });
    const number = await openPull(repo, 'feature', { f: '1' });
    const head = (await repo.get(number)).body.head.sha;
    expect((await repo.get(number)).body.mergeable_state).toBe('blocked');
    let refused = await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {});
    expect(refused.body.error.details).toEqual([
      { field: 'required_status_checks', code: 'status_check_missing', message: 'status check "ci" is required' },
    ]);
    await dev.post(`/repos/${repo.id}/statuses/${head}`, { state: 'pending', context: 'ci' });
    refused = await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {});
    expect(refused.body.error.details).toEqual([expect.objectContaining({ code: 'status_check_pending' })]);
    await dev.post(`/repos/${repo.id}/statuses/${head}`, { state: 'success', context: 'ci' });
    await dev.post(`/repos/${repo.id}/statuses/${head}`, { state: 'failure', context: 'coverage' });
    const record = (await repo.get(number)).body;
    expect({ state: record.mergeable_state, status: record.status }).toEqual({ state: 'unstable', status: 'failure' });
    expect((await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {})).status).toBe(200);
  });

  test('strict status checks: a head without the base tip is behind (405 naming it) until it is brought up to date', async () => {
    const repo = await newRepo();
    await protect(repo, 'main', { required_status_checks: { strict: true, contexts: ['ci'] } });
    const number = await openPull(repo, 'feature', { f: '1' });
    // main moves on (the owner, an admin, bypasses the rule).
    await repo.commit('main', 'main moves', { m: '1' });
    await repo.push(['main'], owner);
    const head = (await repo.get(number)).body.head.sha;
    await dev.post(`/repos/${repo.id}/statuses/${head}`, { state: 'success', context: 'ci' });
    const behind = await eventually(async () => {
      const record = (await repo.get(number)).body;
      return record.mergeable_state === 'behind' ? record : null;
    });
    expect(behind.mergeable).toBe(true);
    const refused = await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {});
    expect(refused.body.error.details).toEqual([expect.objectContaining({ field: 'required_status_checks', code: 'behind' })]);
    // Brought up to date (main merged into it) and built again: clean, and it merges.
    await repo.checkout('feature');
    await repo.run(['merge', '--quiet', '--no-edit', 'main']);
    await repo.push(['feature'], dev);
    const updated = await eventually(async () => {
      const record = (await repo.get(number)).body;
      return record.head.sha !== head && record.mergeable !== null ? record : null;
    });
    expect(updated.mergeable_state).toBe('blocked'); // the new head has no status yet
    await dev.post(`/repos/${repo.id}/statuses/${updated.head.sha}`, { state: 'success', context: 'ci' });
    expect((await repo.get(number)).body.mergeable_state).toBe('clean');
    expect((await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {})).status).toBe(200);
  });

  test('required_linear_history: a merge commit is 405, squash merges', async () => {
    const repo = await newRepo();
    await protect(repo, 'main', { required_linear_history: true });
    const number = await openPull(repo, 'feature', { f: '1' });
    const refused = await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, { merge_method: 'merge' });
    expectError(refused, 405, 'not_mergeable');
    expect(refused.body.error.details).toEqual([
      expect.objectContaining({ field: 'required_linear_history', code: 'merge_commit_not_allowed' }),
    ]);
    const before = await repo.remoteSha('main');
    expect(await repo.remoteSha('main')).toBe(before);
    expect((await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, { merge_method: 'squash' })).status).toBe(200);
  });

  test('an admin merges past the requirements unless the rule enforces admins', async () => {
    const repo = await newRepo();
    await protect(repo, 'main', { required_approving_review_count: 2 });
    const first = await openPull(repo, 'one', { a: '1' });
    expect((await owner.put(`/repos/${repo.id}/pulls/${first}/merge`, {})).status).toBe(200);
    await protect(repo, 'main', { required_approving_review_count: 2, enforce_admins: true });
    const second = await openPull(repo, 'two', { b: '1' });
    expectError(await owner.put(`/repos/${repo.id}/pulls/${second}/merge`, {}), 405, 'not_mergeable');
  });

  test('dismiss_stale_reviews: a push to the head dismisses approvals (pull_request_review dismissed) and the merge waits again', async () => {
    const repo = await newRepo();
    await protect(repo, 'main', { required_approving_review_count: 1, dismiss_stale_reviews: true });
    const number = await openPull(repo, 'feature', { f: '1' });
    const review = await reviewer.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'APPROVE' });
    const after = await lastEventId(server);
    await repo.commit('feature', 'more', { f: '2' });
    await repo.push(['feature'], dev);
    const events = await eventually(async () => {
      const found = await eventsOf(server, repo.id, after);
      return found.some((event) => event.type === 'pull_request_review') ? found : null;
    });
    const dismissed = events.find((event) => event.type === 'pull_request_review')!;
    expect(dismissed.payload).toMatchObject({ action: 'dismissed', review: { id: review.body.id, state: 'dismissed' } });
    const reviews = await dev.get(`/repos/${repo.id}/pulls/${number}/reviews`);
    expect(reviews.body.data[0].state).toBe('dismissed');
    await repo.mergeable(number);
    expectError(await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {}), 405, 'not_mergeable');
  });

  test('dismiss_stale_reviews: an approval given on an earlier head does not count, however the head moved', async () => {
    const repo = await newRepo();
    const number = await openPull(repo, 'feature', { f: '1' });
    // Approved before the rule existed, then the head moves while the pull request is closed.
    await reviewer.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'APPROVE' });
    await protect(repo, 'main', { required_approving_review_count: 1, dismiss_stale_reviews: true });
    expect((await dev.patch(`/repos/${repo.id}/pulls/${number}`, { state: 'closed' })).status).toBe(200);
    await repo.commit('feature', 'unreviewed', { f: 'unreviewed' });
    await repo.push(['feature'], dev);
    expect((await dev.patch(`/repos/${repo.id}/pulls/${number}`, { state: 'open' })).status).toBe(200);
    const reopened = await eventually(async () => {
      const record = (await repo.get(number)).body;
      return record.mergeable !== null ? record : null;
    });
    expect(reopened.mergeable_state).toBe('blocked');
    const refused = await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {});
    expect(refused.body.error.details).toEqual([expect.objectContaining({ code: 'approvals_required' })]);
    await reviewer.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'APPROVE' });
    expect((await dev.put(`/repos/${repo.id}/pulls/${number}/merge`, {})).status).toBe(200);
  });
});
