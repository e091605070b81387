import { gql } from '@urql/core';
import { adminClient, createUser, type Client } from './support/client.js';
import { eventsOf, GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer, query } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * Closing keywords through the running server: a pull request merged into the default branch closes
 * the open issues its body or its commits' messages name (`Fixes #1`, `resolves: #2`, any case), as
 * completed and by the merger; one merged into another branch closes none.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let git: GitSandbox;
let owner: User;
let contributor: User;

beforeAll(async () => {
  [server, git] = [CairnServer.sharedServer(), await GitSandbox.create()];
  const admin = adminClient(server);
  owner = await createUser(admin, 'closer');
  contributor = await createUser(admin, 'fixer');
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup()]);
});

async function openIssue(repo: PullRepo, title: string): Promise<number> {
  const res = await contributor.post(`/repos/${repo.id}/issues`, { title });
  expect(res.status).toBe(201);
  return res.body.number;
}

const issueOf = async (repo: PullRepo, number: number) => (await owner.get(`/repos/${repo.id}/issues/${number}`)).body;

test('a merge into the default branch closes the issues named by its body and commits, by the merger', async () => {
  const repo = await PullRepo.create(server, git, owner, 'closing-keywords', { 'a.txt': 'a\n' });
  const [one, two, three, four, five] = [
    await openIssue(repo, 'named in the body'),
    await openIssue(repo, 'named in a commit'),
    await openIssue(repo, 'closed already'),
    await openIssue(repo, 'merely mentioned'),
    await openIssue(repo, 'named in upper case'),
  ];
  expect((await owner.patch(`/repos/${repo.id}/issues/${three}`, { state: 'closed', state_reason: 'not_planned' })).status).toBe(200);
  await repo.commit('fix', `Work\n\nresolved: #${two}\nFIXES #${five}`, { 'b.txt': 'b\n' });
  await repo.push(['fix']);
  const opened = await repo.open({
    title: 'Fixes everything',
    head: 'fix',
    body: `Fixes #${one}, closes #${three}; see #${four}. Closes #999 (no such issue).`,
  });
  expect(opened.status).toBe(201);
  const number = opened.body.number;
  await repo.mergeable(number);
  const before = (await eventsOf(server, repo.id)).at(-1)!.id;

  expect((await owner.put(`/repos/${repo.id}/pulls/${number}/merge`, {})).status).toBe(200);

  for (const closed of [one, two, five]) {
    expect(await issueOf(repo, closed)).toMatchObject({ state: 'closed', state_reason: 'completed', closed_at: expect.any(String) });
  }
  expect(await issueOf(repo, three)).toMatchObject({ state: 'closed', state_reason: 'not_planned' });
  expect(await issueOf(repo, four)).toMatchObject({ state: 'open' });
  const closedEvents = (await eventsOf(server, repo.id, before)).filter((e) => e.type === 'issues');
  expect(closedEvents.map((e) => [e.action, e.payload.issue.number, e.payload.issue.state_reason, e.payload.sender.login])).toEqual(
    [one, two, five].sort((a, b) => a - b).map((n) => ['closed', n, 'completed', owner.login]),
  );
  expect((await owner.get(`/repos/${repo.id}`)).body.open_issues_count).toBe(1);

  // Both pages show it: the issue's timeline ends with its close, the pull request's with its merge.
  const timelines = await urqlClient(server, owner.token)
    .query(
      gql`
        query ($id: ID!, $issue: Int!, $pull: Int!) {
          repository(id: $id) {
            issue(number: $issue) {
              timeline {
                nodes {
                  kind
                  actor {
                    login
                  }
                  stateReason
                }
              }
            }
            pullRequest(number: $pull) {
              timeline {
                nodes {
                  kind
                  actor {
                    login
                  }
                  mergeCommitSha
                }
              }
            }
          }
        }
      `,
      { id: repo.id, issue: one, pull: number },
    )
    .toPromise();
  expect(timelines.error).toBeUndefined();
  expect(timelines.data.repository.issue.timeline.nodes).toEqual([
    { kind: 'CLOSED', actor: { login: owner.login }, stateReason: 'completed' },
  ]);
  expect(timelines.data.repository.pullRequest.timeline.nodes).toEqual([
    { kind: 'MERGED', actor: { login: owner.login }, mergeCommitSha: expect.stringMatching(/^[0-9a-f]{40}$/) },
  ]);
});

test('a merge into another branch closes nothing', async () => {
  const repo = await PullRepo.create(server, git, owner, 'closing-elsewhere', { 'a.txt': 'a\n' });
  const issue = await openIssue(repo, 'stays open');
  await repo.commit('release', 'release branch', { 'r.txt': 'r\n' });
  await repo.commit('topic', `Fixes #${issue}`, { 't.txt': 't\n' });
  await repo.push(['release', 'topic']);
  const opened = await repo.open({ title: 'into release', head: 'topic', base: 'release', body: `Closes #${issue}` });
  await repo.mergeable(opened.body.number);
  expect((await owner.put(`/repos/${repo.id}/pulls/${opened.body.number}/merge`, {})).status).toBe(200);
  expect(await issueOf(repo, issue)).toMatchObject({ state: 'open' });
});

test("deleting a repository takes its issues' and pull requests' timelines with it", async () => {
  const repo = await PullRepo.create(server, git, owner, 'closing-deleted', { 'a.txt': 'a\n' });
  const issue = await openIssue(repo, 'closed, then the repository goes');
  expect((await owner.patch(`/repos/${repo.id}/issues/${issue}`, { state: 'closed' })).status).toBe(200);
  const items = () => query<{ n: number }>(server, 'select count(*)::int as n from timeline_items where repository_id = $1', [repo.id]);
  expect((await items())[0]!.n).toBe(1);
  expect((await owner.delete(`/repos/${repo.id}`)).status).toBe(200);
  expect((await items())[0]!.n).toBe(0);
});
