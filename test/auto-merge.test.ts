import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verify } from '@octokit/webhooks-methods';
import { gql } from '@urql/core';
import { adminClient, createToken, createUser, type ApiResponse, type Client } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId, remoteUrl } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { eventually } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * Auto-merge through the running server: enabled and disabled over REST and GraphQL, merged in the
 * background as soon as the base branch's rule holds, and — the loop this closes — a CI bot that
 * hears `pull_request`, fetches `pull/N/head`, reports `pending` then `success` with a `repo:status`
 * token, and sees the pull request merge itself. The last test stops the service while a pull
 * request waits, and finds it merged by the next start.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let git: GitSandbox;
let owner: User;
let dev: User;
let reader: User;

beforeAll(async () => {
  [server, git] = [CairnServer.sharedServer(), await GitSandbox.create()];
  const admin = adminClient(server);
  [owner, dev, reader] = await Promise.all(['am-owner', 'am-dev', 'am-reader'].map((login) => createUser(admin, login)));
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup()]);
});

let repoCount = 0;
async function newRepo(on: CairnServer = server, as: User = owner): Promise<PullRepo> {
  const repo = await PullRepo.create(on, git, as, `auto-${++repoCount}`, { 'README.md': 'hi\n' });
  if (as === owner) {
    await owner.put(`/repos/${repo.id}/collaborators/${dev.login}`, { permission: 'write' });
    await owner.put(`/repos/${repo.id}/collaborators/${reader.login}`, { permission: 'read' });
  }
  return repo;
}

async function openPull(repo: PullRepo, branch: string, as: Client = repo.owner): Promise<{ number: number; head: string }> {
  const head = await repo.commit(branch, `work on ${branch}`, { [`${branch}.txt`]: `${branch}\n` });
  await repo.push([branch]);
  const res = await repo.open({ title: `pull ${branch}`, head: branch }, as);
  expect(res.status).toBe(201);
  return { number: res.body.number, head };
}

function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

const merged = (repo: PullRepo, number: number, as: Client = repo.owner) =>
  eventually(
    async () => ((await repo.get(number, as)).body.merged ? (await repo.get(number, as)).body : null),
    15_000,
    `#${number} merged`,
  );

test('enabling and disabling: 200 with auto_merge, events auto_merge_enabled/disabled; refusals change nothing', async () => {
  const repo = await newRepo();
  await owner.put(`/repos/${repo.id}/branches/main/protection`, { required_status_checks: { strict: false, contexts: ['ci'] } });
  const { number } = await openPull(repo, 'feature');
  const after = await lastEventId(server);

  expectError(await reader.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, {}), 403, 'forbidden');
  expectError(await dev.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, { method: 'octopus' }), 422, 'validation_failed');
  expectError(await dev.put(`/repos/${repo.id}/pulls/999/auto_merge`, {}), 404, 'not_found');
  expect((await repo.get(number)).body.auto_merge).toBeNull();

  const enabled = await dev.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, { merge_method: 'squash' });
  expect(enabled.status).toBe(200);
  expect(enabled.body.auto_merge).toEqual({ enabled_by: { id: dev.userId, login: dev.login }, method: 'squash' });
  expect(enabled.body.mergeable_state === 'blocked' || enabled.body.mergeable_state === 'unknown').toBe(true);

  const disabled = await dev.delete(`/repos/${repo.id}/pulls/${number}/auto_merge`);
  expect(disabled.status).toBe(200);
  expect(disabled.body.auto_merge).toBeNull();
  expect((await dev.delete(`/repos/${repo.id}/pulls/${number}/auto_merge`)).status).toBe(200); // nothing to disable: no event

  const events = (await eventsOf(server, repo.id, after)).filter((event) => event.type === 'pull_request');
  expect(events.map((event) => event.payload.action)).toEqual(['auto_merge_enabled', 'auto_merge_disabled']);
  expect(events[0]!.payload.pull_request.auto_merge).toEqual({ enabled_by: { id: dev.userId, login: dev.login }, method: 'squash' });
  expect(events[1]!.payload).toMatchObject({ reason: 'disabled', sender: { login: dev.login } });

  // A method the rule would never take is refused, as are the merge endpoint's own refusals.
  await owner.put(`/repos/${repo.id}/branches/main/protection`, { required_linear_history: true });
  const linear = await dev.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, { method: 'merge' });
  expectError(linear, 422, 'validation_failed');
  expect(linear.body.error.details).toEqual([expect.objectContaining({ field: 'method', code: 'not_allowed' })]);
  expectError(
    await dev.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, { method: 'squash', merge_method: 'rebase' }),
    422,
    'validation_failed',
  );
  expectError(await dev.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, { method: null }), 422, 'validation_failed');
  expect((await repo.get(number)).body.auto_merge).toBeNull();

  // A closed pull request does not merge itself.
  await dev.patch(`/repos/${repo.id}/pulls/${number}`, { state: 'closed' });
  expectError(await dev.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, {}), 422, 'validation_failed');
});

test('closing stops auto-merge, by the API or by deleting the head branch: auto_merge_disabled before closed; reopened, it stays off', async () => {
  const repo = await newRepo();
  await owner.put(`/repos/${repo.id}/branches/main/protection`, { required_status_checks: { strict: false, contexts: ['ci'] } });
  const byApi = await openPull(repo, 'closed-by-api');
  const byPush = await openPull(repo, 'closed-by-push');
  for (const { number } of [byApi, byPush]) {
    await eventually(async () => ((await repo.get(number)).body.mergeable_state === 'blocked' ? true : null), 15_000, `#${number} blocked`);
  }
  const enabledAfter = await lastEventId(server);
  for (const { number } of [byApi, byPush]) expect((await dev.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, {})).status).toBe(200);
  // The record in an event is the API's: mergeable_state as the base branch's rule refines it.
  const enabled = (await eventsOf(server, repo.id, enabledAfter)).filter((event) => event.type === 'pull_request');
  expect(enabled.map((event) => [event.payload.action, event.payload.pull_request.mergeable_state])).toEqual([
    ['auto_merge_enabled', 'blocked'],
    ['auto_merge_enabled', 'blocked'],
  ]);
  const after = await lastEventId(server);

  const closed = await owner.patch(`/repos/${repo.id}/pulls/${byApi.number}`, { state: 'closed' });
  expect(closed.body).toMatchObject({ state: 'closed', auto_merge: null });
  await repo.push([':closed-by-push']);

  const events = (await eventsOf(server, repo.id, after)).filter((event) => event.type === 'pull_request');
  expect(events.map((event) => [event.payload.number, event.payload.action, event.payload.sender.login])).toEqual([
    [byApi.number, 'auto_merge_disabled', owner.login],
    [byApi.number, 'closed', owner.login],
    [byPush.number, 'auto_merge_disabled', owner.login],
    [byPush.number, 'closed', owner.login],
  ]);
  expect(events[0]!.payload.reason).toBe('the pull request was closed');
  for (const event of events) expect(event.payload.pull_request.auto_merge).toBeNull();

  // Reopened and its requirement met, it waits for someone to enable auto-merge again.
  expect((await owner.patch(`/repos/${repo.id}/pulls/${byApi.number}`, { state: 'open' })).body).toMatchObject({
    state: 'open',
    auto_merge: null,
  });
  expect((await owner.post(`/repos/${repo.id}/statuses/${byApi.head}`, { state: 'success', context: 'ci' })).status).toBe(201);
  await eventually(async () => ((await repo.get(byApi.number)).body.mergeable_state === 'clean' ? true : null), 15_000, 'clean');
  expect((await repo.get(byApi.number)).body).toMatchObject({ state: 'open', merged: false, auto_merge: null });
});

test("GraphQL (urql, a frontend's client): a rule set with setBranchProtection; enablePullRequestAutoMerge merges once it holds", async () => {
  const repo = await newRepo();
  const rule = await urqlClient(server, owner.token)
    .mutation(
      gql`
        mutation ($input: SetBranchProtectionInput!) {
          setBranchProtection(input: $input) {
            pattern
            requiredApprovingReviewCount
          }
        }
      `,
      { input: { repositoryId: repo.id, branch: 'main', requiredApprovingReviewCount: 1 } },
    )
    .toPromise();
  expect(rule.error).toBeUndefined();
  expect(rule.data.setBranchProtection).toEqual({ pattern: 'main', requiredApprovingReviewCount: 1 });
  const { number } = await openPull(repo, 'feature');
  await repo.mergeable(number);
  const enabled = await urqlClient(server, dev.token)
    .mutation(
      gql`
        mutation ($input: AutoMergeInput!) {
          enablePullRequestAutoMerge(input: $input) {
            mergeableState
            autoMerge {
              method
              enabledBy {
                login
              }
            }
          }
        }
      `,
      { input: { repositoryId: repo.id, number, method: 'REBASE' } },
    )
    .toPromise();
  expect(enabled.error).toBeUndefined();
  expect(enabled.data.enablePullRequestAutoMerge).toEqual({
    mergeableState: 'BLOCKED',
    autoMerge: { method: 'REBASE', enabledBy: { login: dev.login } },
  });
  await dev.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'APPROVE' });
  const record = await merged(repo, number);
  expect(record.merged_by.login).toBe(dev.login);
});

test('waits for approvals: merges itself once a writer approves', async () => {
  const repo = await newRepo();
  await owner.put(`/repos/${repo.id}/branches/main/protection`, { required_approving_review_count: 1 });
  const { number } = await openPull(repo, 'feature', dev);
  expect((await owner.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, {})).status).toBe(200);
  await repo.mergeable(number);
  expect((await repo.get(number)).body).toMatchObject({ merged: false, mergeable_state: 'blocked' });
  await owner.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'APPROVE' });
  const record = await merged(repo, number);
  expect(record.merged_by.login).toBe(owner.login); // the one who enabled it
});

test('a CI bot closes the loop: pull_request → fetch pull/N/head → pending → success (repo:status token) → merged', async () => {
  const repo = await newRepo();
  await owner.put(`/repos/${repo.id}/branches/main/protection`, {
    required_pull_request: true,
    required_status_checks: { strict: true, contexts: ['ci/build'] },
  });
  const ciLogin = 'am-ci';
  const ci = await createUser(adminClient(server), ciLogin, ['repo:status']);
  await owner.put(`/repos/${repo.id}/collaborators/${ciLogin}`, { permission: 'write' });
  const fetchToken = await createToken(adminClient(server), ciLogin, ['repo:read']);
  const work = await git.init(`ci-work-${Date.now()}`);
  await git.git(['remote', 'add', 'origin', remoteUrl(server, owner.login, repo.name, fetchToken)], { cwd: work });

  const heard: string[] = [];
  const built: string[] = [];
  const bot = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => void handle().catch((error: unknown) => heard.push(`error: ${String(error)}`)));
    const handle = async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (!(await verify('ci-secret', body, String(req.headers['x-cairn-signature-256'])))) {
        res.writeHead(401).end();
        return;
      }
      res.writeHead(202).end();
      const event = JSON.parse(body);
      heard.push(`${req.headers['x-cairn-event']}:${event.action}`);
      if (event.event !== 'pull_request' || !['opened', 'updated'].includes(event.action)) return;
      const { number, pull_request: pr } = event;
      // What CI does: fetch the pull request's head by its pull ref, build it, report.
      await git.git(['fetch', '--quiet', 'origin', `pull/${number}/head`], { cwd: work });
      const sha = (await git.git(['rev-parse', 'FETCH_HEAD'], { cwd: work })).trim();
      await ci.post(`/repos/${repo.id}/statuses/${sha}`, { state: 'pending', context: 'ci/build', description: 'building' });
      built.push(sha);
      await ci.post(`/repos/${repo.id}/statuses/${sha}`, { state: 'success', context: 'ci/build', target_url: 'https://ci.example/1' });
      if (sha !== pr.head.sha) heard.push(`error: fetched ${sha}, the event names ${pr.head.sha}`);
    };
  });
  await new Promise<void>((resolve) => bot.listen(0, '127.0.0.1', resolve));
  try {
    const port = (bot.address() as AddressInfo).port;
    const hooks = await createUser(adminClient(server), 'am-hooks', ['repo', 'admin:repo_hook']);
    await owner.put(`/repos/${repo.id}/collaborators/${hooks.login}`, { permission: 'admin' });
    const hook = await hooks.post(`/repos/${repo.id}/webhooks`, {
      url: `http://127.0.0.1:${port}/`,
      events: ['pull_request'],
      secret: 'ci-secret',
    });
    expect(hook.status).toBe(201);

    // The token CI holds posts statuses and nothing else.
    expectError(await ci.post(`/repos/${repo.id}/issues`, { title: 'no' }), 403, 'forbidden');

    const { number, head } = await openPull(repo, 'feature', dev);
    expect((await dev.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, { method: 'squash' })).status).toBe(200);
    const record = await merged(repo, number, dev).catch(async (error: unknown) => {
      const now = (await repo.get(number, dev)).body;
      throw new Error(`${String(error)}; the bot heard ${JSON.stringify(heard)}; the pull request: ${JSON.stringify(now)}`);
    });
    expect(heard.filter((line) => line.startsWith('error'))).toEqual([]);
    expect(built).toContain(head);
    expect(record.merged_by.login).toBe(dev.login);
    const combined = await dev.get(`/repos/${repo.id}/commits/${head}/status`);
    expect(combined.body).toMatchObject({ state: 'success', total_count: 1 });
    await eventually(async () => heard.includes('pull_request:merged'), 10_000, 'the bot hearing the merge');
    expect(heard.slice(0, 2)).toEqual(['pull_request:opened', 'pull_request:auto_merge_enabled']);
  } finally {
    bot.close();
    bot.closeAllConnections();
  }
});

describe('durably', () => {
  let own: CairnServer;
  afterAll(async () => {
    await own?.destroy();
  });

  // Two starts of a server of its own (a restart has taken 6.6 s on a busy machine), a push, up to
  // 10 s for mergeability and 15 s for the merge: more than the default 60 s can pass. Each wait
  // has its own bound; this one only keeps them from adding up past the test's.
  test('a pull request whose requirement is met while the service is down merges itself at the next start', async () => {
    own = await CairnServer.start();
    const boss = await createUser(adminClient(own), 'am-boss');
    const repo = await newRepo(own, boss);
    await boss.put(`/repos/${repo.id}/branches/main/protection`, { required_status_checks: { strict: false, contexts: ['ci'] } });
    const { number, head } = await openPull(repo, 'feature');
    await repo.mergeable(number);
    expect((await boss.put(`/repos/${repo.id}/pulls/${number}/auto_merge`, {})).status).toBe(200);
    expect((await repo.get(number)).body.mergeable_state).toBe('blocked');
    await own.stop();
    // While nothing runs, the status lands in the database (as a process that died right after posting it would leave it).
    await query(
      own,
      `insert into commit_statuses (id, repository_id, sha, state, context, description, target_url, creator_id, created_at, updated_at)
       values ('sts_durable', $1, $2, 'success', 'ci', null, null, $3, now(), now())`,
      [repo.id, head, boss.userId],
    );
    await query(
      own,
      `insert into commit_status_contexts (repository_id, sha, context, latest_id, state, count) values ($1, $2, 'ci', 'sts_durable', 'success', 1)`,
      [repo.id, head],
    );
    own = await own.restart(); // the process afterAll stops
    const record = await merged(repo, number);
    expect(record.merged_by.login).toBe(boss.login);
  }, 120_000);
});
