import { verify } from '@octokit/webhooks-methods';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { adminClient, createUser, type Client, noreplyEmail } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId, type RecordedEvent } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { eventually, Receiver, type Received } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';

/**
 * Pull requests following pushes, and every pull request event delivered to
 * a real webhook receiver: the payloads are checked exactly against the REST
 * records, pushes with the real git client move heads and bases, and a merge
 * a crash interrupted is completed at start-up from the journal's note.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let receiver: Receiver;
let sandbox: GitSandbox;
let alice: User; // owns every repository
let bob: User; // write collaborator: pushes branches, opens pull requests
let carol: User; // a stranger: reviews public pull requests

const ALL_SECRET = 'owner-level-secret';

beforeAll(async () => {
  [server, receiver, sandbox] = await Promise.all([
    CairnServer.start({ env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' } }),
    Receiver.start(),
    GitSandbox.create(),
  ]);
  const admin = adminClient(server);
  alice = await createUser(admin, 'alice', ['repo', 'admin:repo_hook']);
  bob = await createUser(admin, 'bob', ['repo']);
  carol = await createUser(admin, 'carol', ['repo']);
  // Every pull_request event of alice's repositories also reaches /all (owner-level webhook).
  const all = await alice.post('/user/webhooks', { url: receiver.url('/all'), events: ['pull_request'], secret: ALL_SECRET });
  expect(all.status).toBe(201);
});
afterAll(async () => {
  await Promise.all([sandbox.cleanup(), receiver.close(), server.destroy()]);
});

const ref = (user: User) => ({ id: user.userId, login: user.login });

/** A repository of alice's with bob as a write collaborator. */
async function makeRepo(name: string, files: Record<string, string>): Promise<PullRepo> {
  const repo = await PullRepo.create(server, sandbox, alice, name, files);
  const added = await alice.put(`/repos/${repo.id}/collaborators/bob`, { permission: 'write' });
  expect(added.status).toBeLessThan(300);
  return repo;
}

/** The payload's `repository`: the same-named fields of GET /repos/:id. */
async function repositoryRef(repoId: string) {
  const res = await alice.get(`/repos/${repoId}`);
  expect(res.status).toBe(200);
  const { id, name, full_name, owner, private: isPrivate, default_branch, clone_url } = res.body;
  return { id, name, full_name, owner, private: isPrivate, default_branch, clone_url };
}

/** The record without what the background mergeability check may fill in after the change. */
function stable(pr: any) {
  const { mergeable: _m, mergeable_state: _s, conflicts: _c, ...rest } = pr;
  return rest;
}

/** A `pull_request` record as it may appear right after a change: mergeability consistent with itself. */
function expectConsistentMergeability(pr: any) {
  expect([null, true, false]).toContain(pr.mergeable);
  if (pr.mergeable === null) {
    expect(['unknown', 'draft']).toContain(pr.mergeable_state);
    expect(pr.conflicts).toEqual([]);
  }
}

/**
 * A `pull_request` payload exactly: event, action, number, the record as it is after the change (GET
 * right after, mergeability aside), `changes`/`forced` when given and only then, repository, sender.
 */
function expectPullPayload(
  payload: any,
  expected: { action: string; after: any; repository: any; sender: any; changes?: any; forced?: boolean },
) {
  const { pull_request, ...rest } = payload;
  expect(Object.keys(pull_request).sort()).toEqual(Object.keys(expected.after).sort());
  expect(stable(pull_request)).toEqual(stable(expected.after));
  expectConsistentMergeability(pull_request);
  expect(rest).toEqual({
    event: 'pull_request',
    action: expected.action,
    number: expected.after.number,
    ...(expected.changes !== undefined ? { changes: expected.changes } : {}),
    ...(expected.forced !== undefined ? { forced: expected.forced } : {}),
    repository: expected.repository,
    sender: expected.sender,
  });
}

/** Each outbox event reached the owner-level receiver with exactly its payload, signed. */
async function expectDelivered(events: RecordedEvent[]) {
  for (const event of events.filter((e) => e.type === 'pull_request')) {
    const got = await eventually(
      async () => receiver.at('/all').find((r) => isDeepStrictEqual(r.body, event.payload)),
      10_000,
      `delivery of ${event.type}.${event.action} #${event.payload.number}`,
    );
    expect(got.headers['x-cairn-event']).toBe('pull_request');
    expect(await verify(ALL_SECRET, got.raw.toString('utf8'), got.headers['x-cairn-signature-256'] as string)).toBe(true);
  }
}

/** What the outbox recorded for a repository after `after`, as `type.action` strings. */
const kinds = (events: RecordedEvent[]) => events.map((e) => (e.action ? `${e.type}.${e.action}` : e.type));

/**
 * Polls a pull request after a push until its mergeability is known: every record seen shows the new
 * pair, and the first known value is for it (never a value computed for the pair before the push).
 */
async function firstKnownMergeability(repo: PullRepo, number: number, pair: { head?: string; base?: string }) {
  return eventually(
    async () => {
      const pr = (await repo.get(number)).body;
      if (pair.head) expect(pr.head.sha).toBe(pair.head);
      if (pair.base) expect(pr.base.sha).toBe(pair.base);
      if (pr.mergeable === null) {
        expect(pr.mergeable_state).toBe('unknown');
        expect(pr.conflicts).toEqual([]);
        return null;
      }
      return pr;
    },
    5_000,
    `mergeability of #${number}`,
  );
}

test('every pull request event is delivered, signed, with the record as it is after the change', async () => {
  const repo = await makeRepo('lifecycle', { 'README.md': '# life\n', 'a.txt': 'a\n' });
  const mainSha = (await repo.remoteSha('main'))!;
  const releaseSha = await repo.commit('release', 'release prep', { 'r.txt': 'r\n' });
  await repo.push(['release']);
  const featureSha = await repo.commit('feature', 'feature work', { 'f.txt': 'f\n' });
  await repo.push(['feature'], bob);

  const secret = 'lifecycle-secret';
  const hook = await alice.post(`/repos/${repo.id}/webhooks`, {
    url: receiver.url('/life'),
    events: ['pull_request', 'pull_request_review', 'push'],
    secret,
  });
  expect(hook.status).toBe(201);
  const repository = await repositoryRef(repo.id);
  let seen = 0;
  /** The next `count` deliveries at /life, each signed and with the right headers. */
  const next = async (count = 1): Promise<Received[]> => {
    const got = (await receiver.waitFor('/life', seen + count)).slice(seen, seen + count);
    seen += count;
    for (const r of got) {
      expect(await verify(secret, r.raw.toString('utf8'), r.headers['x-cairn-signature-256'] as string)).toBe(true);
      expect(r.headers['x-cairn-event']).toBe(r.body.event);
      expect(r.headers['x-cairn-hook-id']).toBe(hook.body.id);
      expect(r.headers['x-cairn-delivery']).toEqual(expect.any(String));
    }
    return got;
  };
  const current = async (n: number) => {
    const res = await repo.get(n);
    expect(res.status).toBe(200);
    return res.body;
  };

  // Opened.
  const opened = await repo.open({ title: 'Add f', body: 'first body', head: 'feature' }, bob);
  expect(opened.status).toBe(201);
  const n: number = opened.body.number;
  let [got] = await next();
  let after = await current(n);
  expect(after).toMatchObject({ state: 'open', head: { ref: 'feature', sha: featureSha }, base: { ref: 'main', sha: mainSha } });
  expectPullPayload(got!.body, { action: 'opened', after, repository, sender: ref(bob) });

  // Title.
  expect((await bob.patch(`/repos/${repo.id}/pulls/${n}`, { title: 'Add f.txt' })).status).toBe(200);
  [got] = await next();
  after = await current(n);
  expect(after.title).toBe('Add f.txt');
  expectPullPayload(got!.body, { action: 'updated', after, repository, sender: ref(bob), changes: { title: { from: 'Add f' } } });

  // Body and draft in one edit: one event with both changes.
  expect((await bob.patch(`/repos/${repo.id}/pulls/${n}`, { body: 'second body', draft: true })).status).toBe(200);
  [got] = await next();
  after = await current(n);
  expect(after).toMatchObject({ body: 'second body', draft: true, mergeable_state: 'draft' });
  expectPullPayload(got!.body, {
    action: 'updated',
    after,
    repository,
    sender: ref(bob),
    changes: { body: { from: 'first body' }, draft: { from: false } },
  });

  // Ready for review again.
  expect((await bob.patch(`/repos/${repo.id}/pulls/${n}`, { draft: false })).status).toBe(200);
  [got] = await next();
  after = await current(n);
  expectPullPayload(got!.body, { action: 'updated', after, repository, sender: ref(bob), changes: { draft: { from: true } } });

  // Retargeted by the owner.
  expect((await alice.patch(`/repos/${repo.id}/pulls/${n}`, { base: 'release' })).status).toBe(200);
  [got] = await next();
  after = await current(n);
  expect(after.base).toEqual({ ref: 'release', sha: releaseSha });
  expectPullPayload(got!.body, {
    action: 'updated',
    after,
    repository,
    sender: ref(alice),
    changes: { base: { ref: { from: 'main' }, sha: { from: mainSha } } },
  });

  // Reviewed by a stranger (public repository).
  const review = await carol.post(`/repos/${repo.id}/pulls/${n}/reviews`, { event: 'approve', body: 'lgtm' });
  expect(review.status).toBe(201);
  [got] = await next();
  after = await current(n);
  const { pull_request: reviewed, ...reviewRest } = got!.body;
  expect(reviewRest).toEqual({
    event: 'pull_request_review',
    action: 'submitted',
    review: review.body,
    repository,
    sender: ref(carol),
  });
  expect(review.body).toMatchObject({ state: 'approved', body: 'lgtm', user: ref(carol), commit_id: featureSha });
  expect(stable(reviewed)).toEqual(stable(after));
  expect(Object.keys(reviewed).sort()).toEqual(Object.keys(after).sort());

  // Closed by the owner, reopened by the author.
  expect((await alice.patch(`/repos/${repo.id}/pulls/${n}`, { state: 'closed' })).status).toBe(200);
  [got] = await next();
  after = await current(n);
  expect(after).toMatchObject({ state: 'closed', closed_at: expect.any(String), merged: false });
  expectPullPayload(got!.body, { action: 'closed', after, repository, sender: ref(alice) });

  expect((await bob.patch(`/repos/${repo.id}/pulls/${n}`, { state: 'open' })).status).toBe(200);
  [got] = await next();
  after = await current(n);
  expect(after).toMatchObject({ state: 'open', closed_at: null });
  expectPullPayload(got!.body, { action: 'reopened', after, repository, sender: ref(bob) });

  // Merged by the owner: `push` for the base, then `pull_request` `merged`, in that order in the outbox.
  const before = await lastEventId(server);
  const merged = await alice.put(`/repos/${repo.id}/pulls/${n}/merge`);
  expect(merged.status).toBe(200);
  expect(merged.body).toEqual({ merged: true, sha: expect.stringMatching(/^[0-9a-f]{40}$/), message: 'Pull request successfully merged' });
  const outbox = await eventsOf(server, repo.id, before);
  expect(kinds(outbox)).toEqual(['push', 'pull_request.merged']);
  const deliveries = await next(2);
  const push = deliveries.find((r) => r.body.event === 'push')!;
  const mergedEvent = deliveries.find((r) => r.body.event === 'pull_request')!;
  expect(push.body).toEqual(outbox[0]!.payload);
  expect(mergedEvent.body).toEqual(outbox[1]!.payload);
  expect(push.body).toMatchObject({
    ref: 'refs/heads/release',
    before: releaseSha,
    after: merged.body.sha,
    created: false,
    deleted: false,
    forced: false,
    pusher: { name: 'alice', email: noreplyEmail(server, alice) },
    head_commit: expect.objectContaining({ id: merged.body.sha }),
    repository,
    sender: ref(alice),
  });
  after = await current(n);
  expect(after).toMatchObject({
    state: 'merged',
    merged: true,
    merged_by: ref(alice),
    merge_commit_sha: merged.body.sha,
    merged_at: expect.any(String),
    closed_at: expect.any(String),
  });
  expect(mergedEvent.body).toEqual({
    event: 'pull_request',
    action: 'merged',
    number: n,
    pull_request: after,
    repository,
    sender: ref(alice),
  });

  await expectDelivered(await eventsOf(server, repo.id));
  // Last (the rest of the sequence is checked either way): the `push` of a merge lists the commits new
  // to the base branch, the pull request's commit then the merge commit, not only those new to the repository.
  expect(push.body.commits.map((c: { id: string }) => c.id)).toEqual([featureSha, merged.body.sha]);
  expect(push.body.total_commits).toBe(2);
});

describe('the REST record and the record inside the webhook payload agree exactly', () => {
  let repo: PullRepo;
  let hookId: string;
  const at = (event: string, action: string | null, number?: number) =>
    eventually(
      async () =>
        receiver
          .at('/agree')
          .find((r) => r.body.event === event && (r.body.action ?? null) === action && (number === undefined || r.body.number === number)),
      10_000,
      `${event}.${action} at /agree`,
    );

  beforeAll(async () => {
    repo = await makeRepo('agree', { 'README.md': '# agree\n' });
    const hook = await alice.post(`/repos/${repo.id}/webhooks`, { url: receiver.url('/agree'), events: ['*'] });
    expect(hook.status).toBe(201);
    hookId = hook.body.id;
  });

  test('pull request: opened payload = POST response, merged payload = GET after the merge', async () => {
    await repo.commit('agree-pr', 'agree work', { 'p.txt': 'p\n' });
    await repo.push(['agree-pr'], bob);
    const opened = await repo.open({ title: 'Agree', body: 'b', head: 'agree-pr' }, bob);
    expect(opened.status).toBe(201);
    const n = opened.body.number;
    expect((await at('pull_request', 'opened', n)).body.pull_request).toEqual(opened.body);

    const merged = await alice.put(`/repos/${repo.id}/pulls/${n}/merge`, { method: 'squash' });
    expect(merged.status).toBe(200);
    const payload = (await at('pull_request', 'merged', n)).body.pull_request;
    const fetched = await repo.get(n);
    expect(payload).toEqual(fetched.body);
    expect(payload).toMatchObject({ state: 'merged', merge_commit_sha: merged.body.sha, merged_by: ref(alice) });
  });

  test('review: submitted payload = POST …/reviews response = GET …/reviews item', async () => {
    await repo.commit('agree-review', 'review work', { 'q.txt': 'q\n' });
    await repo.push(['agree-review'], bob);
    const n = (await repo.open({ title: 'Review me', head: 'agree-review' }, bob)).body.number;
    const posted = await carol.post(`/repos/${repo.id}/pulls/${n}/reviews`, { event: 'REQUEST_CHANGES', body: 'please rename' });
    expect(posted.status).toBe(201);
    const delivered = await at('pull_request_review', 'submitted');
    const listed = await carol.get(`/repos/${repo.id}/pulls/${n}/reviews`);
    expect(listed.status).toBe(200);
    expect(delivered.body.review).toEqual(posted.body);
    expect(listed.body.data[0]).toEqual(posted.body);
    expect(posted.body).toEqual({
      id: expect.stringMatching(/^rev_/),
      state: 'changes_requested',
      body: 'please rename',
      user: ref(carol),
      commit_id: (await repo.remoteSha('agree-review'))!,
      submitted_at: expect.any(String),
    });
  });

  test('issue: opened payload = POST /repos/:id/issues response', async () => {
    const posted = await carol.post(`/repos/${repo.id}/issues`, { title: 'An issue beside pull requests', body: 'text' });
    expect(posted.status).toBe(201);
    expect((await at('issues', 'opened')).body.issue).toEqual(posted.body);
  });

  test('webhook: ping payload `hook` = GET of the webhook', async () => {
    const fetched = await alice.get(`/repos/${repo.id}/webhooks/${hookId}`);
    expect(fetched.status).toBe(200);
    const pinged = await alice.post(`/repos/${repo.id}/webhooks/${hookId}/pings`);
    expect(pinged.status).toBe(202);
    const ping = await at('ping', null);
    expect(ping.body.hook_id).toBe(hookId);
    // The hook as it was when pinged; its last_response may have changed since through earlier deliveries,
    // so the GET made just before the ping and the one just after bracket it.
    const later = await alice.get(`/repos/${repo.id}/webhooks/${hookId}`);
    expect([fetched.body, later.body]).toContainEqual(ping.body.hook);
    expect(ping.body.hook).not.toHaveProperty('secret');
  });

  test('repository: every payload`s repository = the same-named fields of GET /repos/:id', async () => {
    const expected = await repositoryRef(repo.id);
    expect(expected.owner).toEqual(ref(alice));
    expect(expected.clone_url).toBe(`${server.url}/alice/agree.git`);
    const got = receiver.at('/agree');
    expect(got.length).toBeGreaterThanOrEqual(5);
    for (const r of got) expect(r.body.repository).toEqual(expected);
  });
});

test('a push to the head: updated with changes.head and forced, head.sha follows, mergeability recomputed for the new pair', async () => {
  const repo = await makeRepo('heads', { 'README.md': '# heads\n', 'c.txt': 'base\n' });
  const t1 = await repo.commit('topic', 'topic one', { 't.txt': 't\n' });
  await repo.push(['topic'], bob);
  await repo.commit('main', 'main changes c', { 'c.txt': 'main side\n' });
  await repo.push(['main']);
  const mainSha = (await repo.remoteSha('main'))!;
  const repository = await repositoryRef(repo.id);
  const n = (await repo.open({ title: 'Topic', head: 'topic' }, bob)).body.number;
  expect((await repo.mergeable(n)).mergeable).toBe(true);

  // A fast-forward push that makes it conflict: the old `true` must never show for the new pair.
  const t2 = await repo.commit('topic', 'topic changes c', { 'c.txt': 'topic side\n' });
  let before = await lastEventId(server);
  await repo.push(['topic'], bob);
  const pushedAt = Date.now();
  const conflicting = await firstKnownMergeability(repo, n, { head: t2, base: mainSha });
  const knownMs = Date.now() - pushedAt;
  expect(conflicting).toMatchObject({ mergeable: false, mergeable_state: 'conflicting', conflicts: ['c.txt'], commits: 2 });
  expect(knownMs).toBeLessThan(5_000);
  let events = await eventsOf(server, repo.id, before);
  expect(kinds(events)).toEqual(['push', 'pull_request.updated']);
  let after = (await repo.get(n)).body;
  expectPullPayload(events[1]!.payload, {
    action: 'updated',
    after,
    repository,
    sender: ref(bob),
    changes: { head: { from_sha: t1, to_sha: t2 } },
    forced: false,
  });
  await expectDelivered(events);

  // A force push of a rewritten head that merges cleanly again: forced, and the old `false` never shows.
  await repo.run(['reset', '--quiet', '--hard', t1]);
  const t2b = await repo.commit('topic', 'topic two, rewritten', { 'u.txt': 'u\n' });
  before = await lastEventId(server);
  await repo.push(['topic'], bob, ['--force']);
  const forcedAt = Date.now();
  const clean = await firstKnownMergeability(repo, n, { head: t2b, base: mainSha });
  const forcedKnownMs = Date.now() - forcedAt;
  expect(clean).toMatchObject({ mergeable: true, mergeable_state: 'clean', conflicts: [], commits: 2 });
  expect(forcedKnownMs).toBeLessThan(5_000);
  events = await eventsOf(server, repo.id, before);
  expect(kinds(events)).toEqual(['push', 'pull_request.updated']);
  expect(events[0]!.payload.forced).toBe(true);
  after = (await repo.get(n)).body;
  expectPullPayload(events[1]!.payload, {
    action: 'updated',
    after,
    repository,
    sender: ref(bob),
    changes: { head: { from_sha: t2, to_sha: t2b } },
    forced: true,
  });
  await expectDelivered(events);
});

test('a merge made locally and pushed marks the pull request merged by the pusher; so does a fast-forward of base', async () => {
  const repo = await makeRepo('manual', { 'README.md': '# manual\n' });
  const repository = await repositoryRef(repo.id);
  const m1 = await repo.commit('m1', 'm1 work', { 'm1.txt': '1\n' });
  await repo.push(['m1'], bob);
  const first = (await repo.open({ title: 'M1', head: 'm1' }, bob)).body.number;

  // git merge --no-ff, pushed by bob.
  const mergeTip = await repo.mergeLocally('m1');
  let before = await lastEventId(server);
  await repo.push(['main'], bob);
  let events = await eventsOf(server, repo.id, before);
  expect(kinds(events)).toEqual(['push', 'pull_request.merged']);
  let after = (await repo.get(first)).body;
  expect(after).toMatchObject({
    state: 'merged',
    merged: true,
    merged_by: ref(bob),
    merge_commit_sha: mergeTip,
    merged_at: expect.any(String),
    closed_at: expect.any(String),
    head: { ref: 'm1', sha: m1 },
  });
  expectPullPayload(events[1]!.payload, { action: 'merged', after, repository, sender: ref(bob) });
  await expectDelivered(events);

  // A fast-forward push of main to the head's tip.
  const m2 = await repo.commit('m2', 'm2 work', { 'm2.txt': '2\n' });
  await repo.push(['m2'], bob);
  const second = (await repo.open({ title: 'M2', head: 'm2' }, alice)).body.number;
  before = await lastEventId(server);
  await repo.push(['m2:main'], bob);
  events = await eventsOf(server, repo.id, before);
  expect(kinds(events)).toEqual(['push', 'pull_request.merged']);
  after = (await repo.get(second)).body;
  expect(after).toMatchObject({ state: 'merged', merged_by: ref(bob), merge_commit_sha: m2, user: ref(alice) });
  expectPullPayload(events[1]!.payload, { action: 'merged', after, repository, sender: ref(bob) });
  await expectDelivered(events);
});

test('one push that merges the head into main and moves the head too: merged, its commits still its own', async () => {
  const repo = await makeRepo('merge-and-move', { 'README.md': '# both\n' });
  const oldMain = (await repo.remoteSha('main'))!;
  const h1 = await repo.commit('both', 'h1', { 'h1.txt': '1\n' });
  await repo.push(['both'], bob);
  const opened = (await repo.open({ title: 'Both', head: 'both' }, bob)).body;
  expect(opened.commits).toBe(1);

  const h2 = await repo.commit('both', 'h2', { 'h2.txt': '2\n' });
  const mergeTip = await repo.mergeLocally('both');
  const before = await lastEventId(server);
  await repo.push(['main', 'both'], bob);

  const events = await eventsOf(server, repo.id, before);
  expect(kinds(events).filter((k) => k.startsWith('pull_request'))).toEqual(['pull_request.updated', 'pull_request.merged']);
  const after = (await repo.get(opened.number)).body;
  expect(after).toMatchObject({
    state: 'merged',
    merged_by: ref(bob),
    merge_commit_sha: mergeTip,
    head: { sha: h2 },
    base: { ref: 'main', sha: oldMain },
    commits: 2,
  });
  const pull = `/repos/${repo.id}/pulls/${opened.number}`;
  expect((await alice.get(`${pull}/commits`)).body.data.map((c: any) => c.sha)).toEqual([h1, h2]);
  expect((await alice.get(`${pull}/files`)).body.data.map((f: any) => f.filename)).toEqual(['h1.txt', 'h2.txt']);
});

test("a head force-pushed onto base's tip has no commits left: closed by the pusher, never merged", async () => {
  const repo = await makeRepo('emptied', { 'README.md': '# emptied\n' });
  await repo.commit('emptied', 'e1', { 'e1.txt': '1\n' });
  await repo.push(['emptied'], bob);
  const opened = (await repo.open({ title: 'Emptied', head: 'emptied' }, bob)).body;
  const main = (await repo.remoteSha('main'))!;

  const before = await lastEventId(server);
  await repo.push(['main:emptied'], bob, ['--force']); // nothing of the pull request landed in main
  const events = await eventsOf(server, repo.id, before);
  expect(kinds(events).filter((k) => k.startsWith('pull_request'))).toEqual(['pull_request.updated', 'pull_request.closed']);
  const after = (await repo.get(opened.number)).body;
  expect(after).toMatchObject({
    state: 'closed',
    merged: false,
    merged_at: null,
    merged_by: null,
    merge_commit_sha: null,
    closed_at: expect.any(String),
    head: { sha: main },
    commits: 0,
  });
  const closed = events.find((e) => e.type === 'pull_request' && e.action === 'closed')!;
  expectPullPayload(closed.payload, { action: 'closed', after, repository: await repositoryRef(repo.id), sender: ref(bob) });
  expect((await bob.get(`/repos/${repo.id}`)).body.open_pulls_count).toBe(0);
  const reopen = await bob.patch(`/repos/${repo.id}/pulls/${opened.number}`, { state: 'open' });
  expect(reopen.status).toBe(422);
  expect(reopen.body.error.details).toEqual([expect.objectContaining({ field: 'head', code: 'no_commits' })]);
});

describe('deleted branches', () => {
  test('deleting the head closes the pull request, which cannot be reopened', async () => {
    const repo = await makeRepo('gone-head', { 'README.md': '# gone\n' });
    const repository = await repositoryRef(repo.id);
    await repo.commit('d1', 'd1 work', { 'd1.txt': 'd\n' });
    await repo.push(['d1'], bob);
    const n = (await repo.open({ title: 'D1', head: 'd1' }, bob)).body.number;
    const before = await lastEventId(server);
    await repo.push(['d1'], bob, ['--delete']);
    const events = await eventsOf(server, repo.id, before);
    expect(kinds(events)).toEqual(['push', 'branch_delete', 'pull_request.closed']);
    const after = (await repo.get(n)).body;
    expect(after).toMatchObject({ state: 'closed', merged: false, merged_by: null, closed_at: expect.any(String) });
    expectPullPayload(events[2]!.payload, { action: 'closed', after, repository, sender: ref(bob) });
    await expectDelivered(events);

    const reopen = await bob.patch(`/repos/${repo.id}/pulls/${n}`, { state: 'open' });
    expect(reopen.status).toBe(422);
    expect(reopen.body.error).toMatchObject({
      code: 'validation_failed',
      details: [expect.objectContaining({ field: 'state', code: 'unknown_branch' })],
    });
    expect((await repo.get(n)).body).toEqual(after);
  });

  test('deleting a head whose last commit is in base (same push) marks it merged, not closed', async () => {
    const repo = await makeRepo('gone-merged', { 'README.md': '# gone\n' });
    const repository = await repositoryRef(repo.id);
    const d2 = await repo.commit('d2', 'd2 work', { 'd2.txt': 'd\n' });
    await repo.push(['d2'], bob);
    const n = (await repo.open({ title: 'D2', head: 'd2' }, bob)).body.number;
    const tip = await repo.mergeLocally('d2');
    const before = await lastEventId(server);
    await repo.push(['main', ':d2'], bob);
    const events = await eventsOf(server, repo.id, before);
    expect(kinds(events).filter((k) => k.startsWith('pull_request'))).toEqual(['pull_request.merged']);
    const after = (await repo.get(n)).body;
    expect(after).toMatchObject({ state: 'merged', merged_by: ref(bob), merge_commit_sha: tip, head: { ref: 'd2', sha: d2 } });
    expectPullPayload(events.find((e) => e.type === 'pull_request')!.payload, { action: 'merged', after, repository, sender: ref(bob) });
    await expectDelivered(events);
  });

  test("a stack: once A is merged and its branch deleted, B (based on A's branch) moves onto the default branch, still open", async () => {
    const repo = await makeRepo('stacked', { 'README.md': '# stacked\n' });
    const repository = await repositoryRef(repo.id);
    await repo.commit('stack-a', 'a', { 'a.txt': 'a\n' });
    await repo.checkout('stack-b', 'stack-a');
    const b1 = await repo.commit('stack-b', 'b', { 'b.txt': 'b\n' });
    await repo.push(['stack-a', 'stack-b'], bob);
    const a = (await repo.open({ title: 'A', head: 'stack-a' }, bob)).body.number;
    const b = (await repo.open({ title: 'B', head: 'stack-b', base: 'stack-a' }, bob)).body;
    expect((await repo.owner.put(`/repos/${repo.id}/pulls/${a}/merge`, {})).status).toBe(200);
    const main = (await repo.remoteSha('main'))!;

    const before = await lastEventId(server);
    await repo.push(['stack-a'], bob, ['--delete']);
    const events = await eventsOf(server, repo.id, before);
    expect(kinds(events)).toEqual(['push', 'branch_delete', 'pull_request.updated']);
    const after = (await repo.get(b.number)).body;
    expect(after).toMatchObject({ state: 'open', base: { ref: 'main', sha: main }, head: { sha: b1 }, commits: 1 });
    expectPullPayload(events[2]!.payload, {
      action: 'updated',
      after,
      repository,
      sender: ref(bob),
      changes: { base: { ref: { from: 'stack-a' }, sha: { from: b.base.sha } } },
    });
    expect((await repo.mergeable(b.number)).mergeable).toBe(true);
    expect((await repo.owner.put(`/repos/${repo.id}/pulls/${b.number}/merge`, {})).status).toBe(200);
  });

  test('deleting a non-default base closes the pull requests into it', async () => {
    const repo = await makeRepo('gone-base', { 'README.md': '# gone\n' });
    const repository = await repositoryRef(repo.id);
    await repo.commit('rel', 'release', { 'rel.txt': 'r\n' });
    await repo.push(['rel']);
    await repo.commit('into-rel-1', 'one', { 'one.txt': '1\n' });
    await repo.commit('into-rel-2', 'two', { 'two.txt': '2\n' });
    await repo.push(['into-rel-1', 'into-rel-2'], bob);
    const a = (await repo.open({ title: 'One', head: 'into-rel-1', base: 'rel' }, bob)).body.number;
    const b = (await repo.open({ title: 'Two', head: 'into-rel-2', base: 'rel' }, bob)).body.number;
    const c = (await repo.open({ title: 'Into main', head: 'into-rel-1' }, bob)).body.number;
    const before = await lastEventId(server);
    await repo.push(['rel'], bob, ['--delete']);
    const events = await eventsOf(server, repo.id, before);
    expect(kinds(events)).toEqual(['push', 'branch_delete', 'pull_request.closed', 'pull_request.closed']);
    for (const [i, number] of [a, b].entries()) {
      const after = (await repo.get(number)).body;
      expect(after).toMatchObject({ state: 'closed', merged: false, closed_at: expect.any(String), base: { ref: 'rel' } });
      expectPullPayload(events[2 + i]!.payload, { action: 'closed', after, repository, sender: ref(bob) });
    }
    expect((await repo.get(c)).body.state).toBe('open');
    await expectDelivered(events);
  });
});

test('a push to the base: no updated event, base.sha follows, a new conflict turns mergeable false', async () => {
  const repo = await makeRepo('base-push', { 'README.md': '# base\n', 'c.txt': 'base\n' });
  const head = await repo.commit('b1', 'b1 changes c', { 'c.txt': 'b1 side\n' });
  await repo.push(['b1'], bob);
  const n = (await repo.open({ title: 'B1', head: 'b1' }, bob)).body.number;
  const known = await repo.mergeable(n);
  expect(known).toMatchObject({ mergeable: true, mergeable_state: 'clean' });

  const mainSha = await repo.commit('main', 'main changes c', { 'c.txt': 'main side\n' });
  const before = await lastEventId(server);
  await repo.push(['main'], alice);
  const pushedAt = Date.now();
  const conflicting = await firstKnownMergeability(repo, n, { head, base: mainSha });
  expect(Date.now() - pushedAt).toBeLessThan(5_000);
  expect(conflicting).toMatchObject({
    state: 'open',
    mergeable: false,
    mergeable_state: 'conflicting',
    conflicts: ['c.txt'],
    head: { ref: 'b1', sha: head },
    base: { ref: 'main', sha: mainSha },
  });
  expect(kinds(await eventsOf(server, repo.id, before))).toEqual(['push']);
});

test('a merge a crash interrupted between the branch swap and the commit is completed at start-up, once', async () => {
  const repo = await makeRepo('crash', { 'README.md': '# crash\n' });
  const repository = await repositoryRef(repo.id);
  const headSha = await repo.commit('x1', 'x1 work', { 'x1.txt': 'x\n' });
  await repo.push(['x1'], bob);
  const opened = (await repo.open({ title: 'Crash me', head: 'x1' }, bob)).body;
  await repo.mergeable(opened.number);
  const before = await lastEventId(server);

  // What a kill -9 after the swap leaves: main moved on disk, the journal row with the merge's note.
  await server.stop();
  const bare = path.join(server.dataDir, 'repositories', `${repo.id}.git`);
  const git = (args: string[]) => sandbox.git(args, { cwd: bare }).then((out) => out.trim());
  const oldTip = await git(['rev-parse', 'refs/heads/main']);
  const tree = (await git(['merge-tree', '--write-tree', oldTip, headSha])).split('\n')[0]!;
  // Squash-like, one parent: the head is not reachable from main, so only the note can mark it merged.
  const mergeSha = await git(['commit-tree', tree, '-p', oldTip, '-m', `Crash me (#${opened.number})`]);
  await git(['update-ref', 'refs/heads/main', mergeSha, oldTip]);
  await query(server, 'insert into git_push_journal (repository_id, user_id, note, started_at) values ($1, $2, $3::jsonb, now())', [
    repo.id,
    bob.userId,
    JSON.stringify({ merge: { pullRequestId: opened.id, sha: mergeSha } }),
  ]);

  server = await server.restart();
  const events = await eventsOf(server, repo.id, before);
  expect(kinds(events)).toEqual(['push', 'pull_request.merged']);
  expect(events[0]!.payload).toMatchObject({
    ref: 'refs/heads/main',
    before: oldTip,
    after: mergeSha,
    forced: false,
    pusher: { name: 'bob', email: noreplyEmail(server, bob) },
    sender: ref(bob),
  });
  const after = (await repo.get(opened.number)).body;
  expect(after).toMatchObject({ state: 'merged', merged: true, merged_by: ref(bob), merge_commit_sha: mergeSha, head: { sha: headSha } });
  expectPullPayload(events[1]!.payload, { action: 'merged', after, repository, sender: ref(bob) });
  expect(await query(server, 'select 1 from git_push_journal where repository_id = $1', [repo.id])).toEqual([]);
  await expectDelivered(events);

  // Nothing is recorded twice.
  const last = await lastEventId(server);
  await server.stop();
  server = await server.restart();
  expect(await eventsOf(server, repo.id, last)).toEqual([]);
  expect((await repo.get(opened.number)).body).toEqual(after);
});

test('a crash-interrupted merge of a pull request closed in between is still completed; its push lists the commits new to main', async () => {
  const repo = await makeRepo('crash-closed', { 'README.md': '# crash closed\n' });
  const headSha = await repo.commit('y1', 'y1 work', { 'y1.txt': 'y\n' });
  await repo.push(['y1'], bob);
  const opened = (await repo.open({ title: 'Closed meanwhile', head: 'y1' }, bob)).body;
  await repo.mergeable(opened.number);
  // The close lands between the merge's branch swap and its (never committed) recording.
  expect((await alice.patch(`/repos/${repo.id}/pulls/${opened.number}`, { state: 'closed' })).status).toBe(200);
  const before = await lastEventId(server);

  await server.stop();
  const bare = path.join(server.dataDir, 'repositories', `${repo.id}.git`);
  const git = (args: string[]) => sandbox.git(args, { cwd: bare }).then((out) => out.trim());
  const oldTip = await git(['rev-parse', 'refs/heads/main']);
  const tree = (await git(['merge-tree', '--write-tree', oldTip, headSha])).split('\n')[0]!;
  const mergeSha = await git(['commit-tree', tree, '-p', oldTip, '-p', headSha, '-m', `Merge pull request #${opened.number} from y1`]);
  await git(['update-ref', 'refs/heads/main', mergeSha, oldTip]);
  await query(
    server,
    "insert into git_push_journal (repository_id, user_id, note, commits_new_to, started_at) values ($1, $2, $3::jsonb, 'branch', now())",
    [repo.id, alice.userId, JSON.stringify({ merge: { pullRequestId: opened.id, sha: mergeSha } })],
  );

  server = await server.restart();
  const events = await eventsOf(server, repo.id, before);
  expect(kinds(events)).toEqual(['push', 'pull_request.merged']);
  expect(events[0]!.payload.commits.map((c: any) => c.id)).toEqual([headSha, mergeSha]);
  expect(events[0]!.payload.total_commits).toBe(2);
  expect((await repo.get(opened.number)).body).toMatchObject({ state: 'merged', merged_by: ref(alice), merge_commit_sha: mergeSha });
});
