import { verify } from '@octokit/webhooks-methods';
import { gql } from '@urql/core';
import { adminClient, createUser, type Client } from './support/client.js';
import { settledDeliveries } from './support/deliveries.js';
import { GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { Receiver } from './support/receiver.js';
import { CairnServer } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * Assignees of issues and pull requests, review requests of pull requests, and the filters of the
 * pull request list, over REST and GraphQL, with their webhooks delivered to a loopback receiver.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let receiver: Receiver;
let sandbox: GitSandbox;
let owner: User;
let writer: User;
let reader: User;
let outsider: User;
let helpers: User[];
let repo: PullRepo;
let privateRepo: PullRepo;
let hookId: string;
let issueNumber: number;
let pulls: number[];

const SECRET = 'assignees-secret';
const ref = (user: User) => ({ id: user.userId, login: user.login });

beforeAll(async () => {
  [server, receiver, sandbox] = await Promise.all([CairnServer.sharedServer(), Receiver.start(), GitSandbox.create()]);
  const admin = adminClient(server);
  owner = await createUser(admin, 'asg-owner', ['repo', 'admin:repo_hook']);
  writer = await createUser(admin, 'asg-writer', ['repo']);
  reader = await createUser(admin, 'asg-reader', ['repo']);
  outsider = await createUser(admin, 'asg-outsider', ['repo']);
  helpers = await Promise.all(Array.from({ length: 10 }, (_, i) => createUser(admin, `asg-helper${i}`, ['repo'])));
  repo = await PullRepo.create(server, sandbox, owner, 'asg-app');
  privateRepo = await PullRepo.create(server, sandbox, owner, 'asg-private', undefined, { private: true });
  for (const [login, permission] of [['asg-writer', 'write'], ['asg-reader', 'read'], ...helpers.map((h) => [h.login, 'write'])]) {
    expect((await owner.put(`/repos/${repo.id}/collaborators/${login}`, { permission })).status).toBe(200);
  }
  expect((await owner.put(`/repos/${privateRepo.id}/collaborators/asg-writer`, { permission: 'write' })).status).toBe(200);
  const hook = await owner.post(`/repos/${repo.id}/webhooks`, {
    url: receiver.url('/asg'),
    events: ['issues', 'pull_request', 'pull_request_review'],
    secret: SECRET,
  });
  expect(hook.status).toBe(201);
  hookId = hook.body.id;

  issueNumber = (await reader.post(`/repos/${repo.id}/issues`, { title: 'assign me' })).body.number;
  pulls = [];
  for (const branch of ['one', 'two', 'three']) {
    await repo.commit(branch, `${branch} work`, { [`${branch}.txt`]: `${branch}\n` });
    await repo.push([branch]);
    const opened = await writer.post(`/repos/${repo.id}/pulls`, { title: `pull ${branch}`, head: branch, base: 'main' });
    expect(opened.status).toBe(201);
    pulls.push(opened.body.number);
  }
  await privateRepo.commit('p', 'private work', { 'p.txt': 'p\n' });
  await privateRepo.push(['p']);
  expect((await writer.post(`/repos/${privateRepo.id}/pulls`, { title: 'private pull', head: 'p', base: 'main' })).status).toBe(201);
});
afterAll(async () => {
  await Promise.all([sandbox.cleanup(), receiver.close(), server.destroy()]);
});

const assignees = (number: number) => `/repos/${repo.id}/issues/${number}/assignees`;
const reviewers = (number: number) => `/repos/${repo.id}/pulls/${number}/requested_reviewers`;

test('assignees of an issue: add 201 with the record, remove 200 with it; at most 10; writers only', async () => {
  const added = await writer.post(assignees(issueNumber), { assignees: ['ASG-writer', 'asg-owner'] });
  expect(added.status).toBe(201);
  expect(added.body).toMatchObject({
    number: issueNumber,
    kind: 'issue',
    title: 'assign me',
    state: 'open',
    user: ref(reader),
    assignees: [ref(owner), ref(writer)],
    labels: [],
    repository_id: repo.id,
    state_reason: null,
    comments: 0,
    pull_request: null,
  });
  // The issue record: what the issue endpoints answer, plus which kind it is.
  expect(Object.keys(added.body).sort()).toEqual(
    [
      ...['id', 'number', 'title', 'body', 'state', 'state_reason', 'user', 'comments', 'created_at', 'updated_at', 'closed_at'],
      ...['repository_id', 'labels', 'assignees', 'kind', 'pull_request'],
    ].sort(),
  );
  expect((await reader.get(`/repos/${repo.id}/issues/${issueNumber}`)).body.assignees).toEqual([ref(owner), ref(writer)]);

  const noWrite = await writer.post(assignees(issueNumber), { assignees: ['asg-reader'] });
  expect(noWrite.status).toBe(422);
  expect(noWrite.body.error.details).toEqual([expect.objectContaining({ field: 'assignees', code: 'invalid' })]);
  expect((await writer.post(assignees(issueNumber), { assignees: ['no-such-user'] })).status).toBe(422);
  expect((await reader.post(assignees(issueNumber), { assignees: ['asg-writer'] })).status).toBe(403);
  expect((await writer.post(assignees(issueNumber), { assignees: ['asg-writer'] }, { anonymous: true })).status).toBe(401);
  expect((await outsider.post(`/repos/${privateRepo.id}/issues/1/assignees`, { assignees: [] })).status).toBe(404);
  expect((await writer.post(assignees(99999), { assignees: ['asg-writer'] })).status).toBe(404);

  // Eleven at once, or a tenth and eleventh beside the two there: 422, and nothing changes.
  const eleven = await writer.post(assignees(issueNumber), { assignees: [...helpers.map((h) => h.login), 'asg-writer'] });
  expect(eleven.status).toBe(422);
  expect(eleven.body.error.details).toEqual([expect.objectContaining({ code: 'too_many' })]);
  const over = await writer.post(assignees(issueNumber), { assignees: helpers.slice(0, 9).map((h) => h.login) });
  expect(over.status).toBe(422);
  expect((await reader.get(`/repos/${repo.id}/issues/${issueNumber}`)).body.assignees).toHaveLength(2);

  const removed = await writer.delete(assignees(issueNumber), { body: { assignees: ['asg-owner', 'asg-helper0'] } });
  expect(removed.status).toBe(204);
  expect((await reader.get(`/repos/${repo.id}/issues/${issueNumber}`)).body.assignees).toEqual([ref(writer)]);
});

test('assignees of a pull request go through the issue endpoint and show on its record', async () => {
  const added = await writer.post(assignees(pulls[0]!), { assignees: ['asg-helper1'] });
  expect(added.status).toBe(201);
  expect(added.body).toMatchObject({
    number: pulls[0],
    kind: 'pull_request',
    state: 'open',
    state_reason: null,
    comments: 0,
    pull_request: { number: pulls[0] },
    assignees: [ref(helpers[1]!)],
  });
  const pr = await reader.get(`/repos/${repo.id}/pulls/${pulls[0]}`);
  expect(pr.body).toMatchObject({ assignees: [ref(helpers[1]!)], labels: [], requested_reviewers: [] });
});

test('review requests: 201 with the pull request; readers only, never the author; a review fulfils the request', async () => {
  const requested = await writer.post(reviewers(pulls[1]!), { reviewers: ['asg-reader', 'asg-owner'] });
  expect(requested.status).toBe(201);
  expect(requested.body).toMatchObject({ number: pulls[1], requested_reviewers: [ref(owner), ref(reader)] });

  const author = await owner.post(reviewers(pulls[1]!), { reviewers: ['asg-writer'] });
  expect(author.status).toBe(422);
  expect(author.body.error.details).toEqual([expect.objectContaining({ field: 'reviewers', code: 'invalid' })]);
  expect((await writer.post(reviewers(pulls[1]!), { reviewers: ['nobody-at-all'] })).status).toBe(422);
  expect((await reader.post(reviewers(pulls[1]!), { reviewers: ['asg-owner'] })).status).toBe(403);
  // A private repository: someone who cannot read it cannot review it.
  const unseen = await writer.post(`/repos/${privateRepo.id}/pulls/1/requested_reviewers`, { reviewers: ['asg-outsider'] });
  expect(unseen.status).toBe(422);
  expect((await writer.post(reviewers(issueNumber), { reviewers: ['asg-reader'] })).status).toBe(404); // an issue, not a pull request

  const review = await reader.post(`/repos/${repo.id}/pulls/${pulls[1]}/reviews`, { event: 'COMMENT', body: 'looks fine' });
  expect(review.status).toBe(201);
  expect((await reader.get(`/repos/${repo.id}/pulls/${pulls[1]}`)).body.requested_reviewers).toEqual([ref(owner)]);

  const removed = await writer.delete(reviewers(pulls[1]!), { body: { reviewers: ['asg-owner'] } });
  expect(removed.status).toBe(204);
  expect((await reader.get(`/repos/${repo.id}/pulls/${pulls[1]}`)).body.requested_reviewers).toEqual([]);
});

test('the pull request list filters by labels, assignee, creator and orders by sort and direction', async () => {
  expect((await writer.post(`/repos/${repo.id}/labels`, { name: 'ready', color: '00aa00' })).status).toBe(201);
  expect((await writer.post(`/repos/${repo.id}/issues/${pulls[2]}/labels`, { labels: ['ready'] })).status).toBe(200);
  const numbers = async (query: string) => {
    const res = await reader.get(`/repos/${repo.id}/pulls?${query}`);
    expect(res.status).toBe(200);
    return res.body.data.map((p: { number: number }) => p.number);
  };
  expect(await numbers('labels=ready')).toEqual([pulls[2]]);
  expect(await numbers('assignee=asg-helper1')).toEqual([pulls[0]]);
  expect(await numbers('assignee=none')).toEqual([pulls[2], pulls[1]]);
  expect(await numbers('creator=asg-writer&direction=asc')).toEqual(pulls);
  expect(await numbers('creator=asg-owner')).toEqual([]);
  expect((await numbers('sort=updated'))[0]).toBe(pulls[2]);
  expect((await reader.get(`/repos/${repo.id}/pulls?direction=sideways`)).status).toBe(422);

  const listed = await reader.get(`/repos/${repo.id}/pulls?labels=ready`);
  expect(listed.body.data[0]).toMatchObject({ labels: [{ name: 'ready', color: '00aa00' }], assignees: [], requested_reviewers: [] });
});

test('GraphQL through urql: labels, assignees and requested reviewers of each listed pull request', async () => {
  expect((await writer.post(reviewers(pulls[2]!), { reviewers: ['asg-helper2'] })).status).toBe(201);
  const result = await urqlClient(server, reader.token)
    .query(
      gql`
        query ($id: ID!) {
          repository(id: $id) {
            pullRequests(sort: CREATED, direction: ASC) {
              nodes {
                number
                labels {
                  name
                }
                assignees {
                  login
                }
                requestedReviewers {
                  login
                }
              }
            }
          }
        }
      `,
      { id: repo.id },
    )
    .toPromise();
  expect(result.error).toBeUndefined();
  expect(result.data.repository.pullRequests.nodes).toEqual([
    { number: pulls[0], labels: [], assignees: [{ login: 'asg-helper1' }], requestedReviewers: [] },
    { number: pulls[1], labels: [], assignees: [], requestedReviewers: [] },
    { number: pulls[2], labels: [{ name: 'ready' }], assignees: [], requestedReviewers: [{ login: 'asg-helper2' }] },
  ]);
});

test('webhooks: assigned, unassigned, labeled on issues and pull requests; review_requested, review_request_removed', async () => {
  await settledDeliveries(server, [hookId]);
  const got = receiver.received.filter((r) => r.path === '/asg');
  for (const r of got) expect(await verify(SECRET, r.raw.toString('utf8'), r.headers['x-cairn-signature-256'] as string)).toBe(true);
  const of = (event: string, action: string) => got.filter((r) => r.body.event === event && r.body.action === action).map((r) => r.body);

  const assigned = of('issues', 'assigned');
  expect(assigned.map((b) => b.assignee.login).sort()).toEqual(['asg-owner', 'asg-writer']);
  expect(assigned[0].issue).toMatchObject({ number: issueNumber, assignees: [ref(owner), ref(writer)] });
  expect(assigned[0].sender).toEqual(ref(writer));
  expect(of('issues', 'unassigned').map((b) => b.assignee)).toEqual([ref(owner)]); // helper0 was never assigned

  const prAssigned = of('pull_request', 'assigned');
  expect(prAssigned).toHaveLength(1);
  expect(prAssigned[0]).toMatchObject({ number: pulls[0], assignee: ref(helpers[1]!), pull_request: { assignees: [ref(helpers[1]!)] } });
  expect(of('pull_request', 'labeled')[0]).toMatchObject({ number: pulls[2], label: { name: 'ready' } });

  const requested = of('pull_request', 'review_requested');
  expect(requested.map((b) => `${b.number}:${b.requested_reviewer.login}`).sort()).toEqual(
    [`${pulls[1]}:asg-owner`, `${pulls[1]}:asg-reader`, `${pulls[2]}:asg-helper2`].sort(),
  );
  expect(of('pull_request', 'review_request_removed').map((b) => b.requested_reviewer)).toEqual([ref(owner)]);
  // The review fulfilled the reader's request without an event of its own: its record shows it gone.
  const submitted = of('pull_request_review', 'submitted');
  expect(submitted[0].pull_request.requested_reviewers).toEqual([ref(owner)]);
});

test('a repository deleted while labels, assignees, review requests and comments change on its pull request: never a 5xx', async () => {
  for (let round = 0; round < 3; round++) {
    const doomed = await PullRepo.create(server, sandbox, owner, `asg-doomed-${round}`);
    expect((await owner.put(`/repos/${doomed.id}/collaborators/asg-writer`, { permission: 'write' })).status).toBe(200);
    await doomed.commit('work', 'work', { 'work.txt': 'work\n' });
    await doomed.push(['work']);
    const opened = await owner.post(`/repos/${doomed.id}/pulls`, { title: 'doomed', head: 'work', base: 'main' });
    expect(opened.status).toBe(201);
    const number = opened.body.number as number;
    expect((await owner.post(`/repos/${doomed.id}/labels`, { name: 'bug', color: 'ff0000' })).status).toBe(201);
    const on = `/repos/${doomed.id}/issues/${number}`;
    if (round === 0) {
      // A closed pull request's issue record is closed, as a merged one's is (never `merged`).
      expect((await owner.patch(`/repos/${doomed.id}/pulls/${number}`, { state: 'closed' })).status).toBe(200);
      const closed = await owner.post(`${on}/assignees`, { assignees: ['asg-writer'] });
      expect(closed.body).toMatchObject({ state: 'closed', state_reason: null, pull_request: { number } });
    }
    const answers = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => [
        owner.post(`${on}/labels`, { labels: ['bug'] }),
        owner.delete(`${on}/labels/bug`),
        owner.post(`${on}/assignees`, { assignees: ['asg-writer'] }),
        owner.delete(`${on}/assignees`, { body: { assignees: ['asg-writer'] } }),
        owner.post(`${on}/comments`, { body: `comment ${i}` }),
        owner.post(`/repos/${doomed.id}/pulls/${number}/requested_reviewers`, { reviewers: ['asg-writer'] }),
      ]).flat(),
      owner.delete(`/repos/${doomed.id}`),
    ]);
    // 422: a label or a collaborator's write access the deletion's cascade took first.
    for (const answer of answers) expect([200, 201, 204, 404, 409, 422]).toContain(answer.status);
    expect(answers.at(-1)!.status).toBe(200);
  }
}, 120_000);

test('a login repeated tens of thousands of times is one login: answered at once; more distinct logins than the cap 422 before any lookup', async () => {
  const many = Array.from({ length: 60_000 }, (_, i) => (i % 2 ? 'asg-helper3' : 'ASG-HELPER3'));
  const started = Date.now();
  const added = await writer.post(`/repos/${repo.id}/issues/${issueNumber}/assignees`, { assignees: many });
  expect(added.status).toBe(201);
  const removed = await writer.delete(`/repos/${repo.id}/issues/${issueNumber}/assignees`, { body: { assignees: many } });
  expect(removed.status).toBe(204);
  const requested = await writer.post(reviewers(pulls[0]!), { reviewers: many.map(() => 'asg-reader') });
  expect(requested.status).toBe(201);
  expect((await writer.delete(reviewers(pulls[0]!), { body: { reviewers: ['asg-reader'] } })).status).toBe(204);
  expect(Date.now() - started).toBeLessThan(10_000);

  const sixteen = await writer.post(reviewers(pulls[0]!), { reviewers: Array.from({ length: 16 }, (_, i) => `nobody-${i}`) });
  expect(sixteen.status).toBe(422);
  expect(sixteen.body.error.details).toEqual([expect.objectContaining({ field: 'reviewers', code: 'too_many' })]);
  const eleven = await writer.delete(`/repos/${repo.id}/issues/${issueNumber}/assignees`, {
    body: { assignees: Array.from({ length: 11 }, (_, i) => `nobody-${i}`) },
  });
  expect(eleven.status).toBe(422);
});

test('a list filter names at most 100 labels (REST labels= and the GraphQL argument)', async () => {
  const names = (n: number) => Array.from({ length: n }, (_, i) => `l${i}`);
  expect((await reader.get(`/repos/${repo.id}/pulls?labels=${names(100).join(',')}`)).status).toBe(200);
  const rest = await reader.get(`/repos/${repo.id}/issues?labels=${names(101).join(',')}`);
  expect(rest.status).toBe(422);
  expect(rest.body.error.details).toEqual([expect.objectContaining({ field: 'labels', code: 'too_many' })]);
  const graphql = await reader.graphql(
    `query ($id: ID!, $labels: [String!]) { repository(id: $id) { issues(labels: $labels) { totalCount } } }`,
    { id: repo.id, labels: names(101) },
  );
  expect(JSON.stringify(graphql.errors)).toContain('too_many');
});

test('GraphQL through urql: each change of a mutation document answers what it left, not what an earlier field of the document loaded', async () => {
  const number = (await owner.post(`/repos/${privateRepo.id}/issues`, { title: 'assigned and unassigned at once' })).body.number;
  const result = await urqlClient(server, owner.token)
    .mutation(
      gql`
        mutation ($repositoryId: ID!, $number: Int!) {
          a: addAssignees(input: { repositoryId: $repositoryId, number: $number, assignees: ["asg-writer"] }) {
            assignees {
              login
            }
          }
          b: removeAssignees(input: { repositoryId: $repositoryId, number: $number, assignees: ["asg-writer"] }) {
            assignees {
              login
            }
          }
          c: addAssignees(input: { repositoryId: $repositoryId, number: $number, assignees: ["asg-owner"] }) {
            assignees {
              login
            }
          }
        }
      `,
      { repositoryId: privateRepo.id, number },
    )
    .toPromise();
  expect(result.error).toBeUndefined();
  expect(result.data).toEqual({
    a: { assignees: [{ login: 'asg-writer' }] },
    b: { assignees: [] },
    c: { assignees: [{ login: 'asg-owner' }] },
  });
  expect((await owner.get(`/repos/${privateRepo.id}/issues/${number}`)).body.assignees).toEqual([ref(owner)]);
});
