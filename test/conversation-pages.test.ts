import { gql } from '@urql/core';
import { adminClient, createUser, type Client } from './support/client.js';
import { eventsOf, GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * A frontend's two pages, rendered from GraphQL alone through urql: an issue page (its labels,
 * assignees and a timeline of comments, label and assignee changes, a close and a reopen) and a pull
 * request page (a timeline with a review carrying line comments, a comment, commits pushed; its review
 * threads with a reply). Each page's SQL statements (`Server-Timing: sql;count=N`) are counted, and
 * stay the same once the conversation has grown.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let git: GitSandbox;
let owner: User;
let dev: User;
let reviewer: User;
let repo: PullRepo;
let issue: number;
let pull: number;
/** The Server-Timing statement count of each GraphQL answer, in order. */
const statements: number[] = [];

beforeAll(async () => {
  [server, git] = [CairnServer.sharedServer(), await GitSandbox.create()];
  const admin = adminClient(server);
  owner = await createUser(admin, 'page-owner');
  dev = await createUser(admin, 'page-dev');
  reviewer = await createUser(admin, 'page-reviewer');
  repo = await PullRepo.create(server, git, owner, 'pages', {
    'app.js': Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') + '\n',
  });
  const ok = (res: { status: number; text: string }, status: number) => {
    if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  };
  ok(await owner.put(`/repos/${repo.id}/collaborators/${dev.login}`, { permission: 'write' }), 200);
  ok(await owner.post(`/repos/${repo.id}/labels`, { name: 'bug', color: 'd73a4a', description: 'Something is wrong' }), 201);

  // The issue: reported, labelled, assigned, discussed, closed and reopened.
  const opened = await reviewer.post(`/repos/${repo.id}/issues`, { title: 'Crash on start', body: 'It crashes.' });
  ok(opened, 201);
  issue = opened.body.number;
  ok(await owner.post(`/repos/${repo.id}/issues/${issue}/labels`, { labels: ['bug'] }), 200);
  ok(await owner.post(`/repos/${repo.id}/issues/${issue}/assignees`, { assignees: [dev.login] }), 201);
  ok(await reviewer.post(`/repos/${repo.id}/issues/${issue}/comments`, { body: 'Still crashing on 1.2.' }), 201);
  ok(await dev.post(`/repos/${repo.id}/issues/${issue}/comments`, { body: 'Looking into it.' }), 201);
  ok(await dev.patch(`/repos/${repo.id}/issues/${issue}`, { state: 'closed', state_reason: 'not_planned' }), 200);
  ok(await dev.patch(`/repos/${repo.id}/issues/${issue}`, { state: 'open' }), 200);

  // The pull request: opened by dev, labelled, assigned, a review requested and given with a line comment, answered.
  await repo.commit('fix', 'Fix the crash', {
    'app.js': 'line 1\nline 2\nline three\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\n',
  });
  await repo.push(['fix']);
  const pr = await repo.open({ title: 'Fix the crash', head: 'fix', body: `Fixes #${issue}` }, dev);
  ok(pr, 201);
  pull = pr.body.number;
  ok(await owner.post(`/repos/${repo.id}/issues/${pull}/labels`, { labels: ['bug'] }), 200);
  ok(await owner.post(`/repos/${repo.id}/issues/${pull}/assignees`, { assignees: [dev.login] }), 201);
  ok(await dev.post(`/repos/${repo.id}/pulls/${pull}/requested_reviewers`, { reviewers: [reviewer.login] }), 201);
  ok(
    await reviewer.post(`/repos/${repo.id}/pulls/${pull}/reviews`, {
      event: 'REQUEST_CHANGES',
      body: 'One thing.',
      comments: [{ path: 'app.js', line: 3, body: 'Spell the number out everywhere?' }],
    }),
    201,
  );
  const lineComments = await reviewer.get(`/repos/${repo.id}/pulls/${pull}/comments`);
  ok(lineComments, 200);
  ok(
    await dev.post(`/repos/${repo.id}/pulls/${pull}/comments`, {
      body: 'Only here, on purpose.',
      in_reply_to: lineComments.body.data[0].id,
    }),
    201,
  );
  ok(await owner.post(`/repos/${repo.id}/issues/${pull}/comments`, { body: 'Thanks for this!' }), 201);
  await repo.commit('fix', 'Add a test', { 'test.js': 'test\n' });
  await repo.push(['fix']);
  ok(await reviewer.post(`/repos/${repo.id}/pulls/${pull}/reviews`, { event: 'APPROVE' }), 201);
  // Known mergeability, as a page usually finds it: a clean pull request's view also reads its
  // branch's rule and its head's statuses, which one still being checked after the push does not.
  await repo.mergeable(pull);
}, 90_000);
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup()]);
});

const ISSUE_PAGE = gql`
  query IssuePage($id: ID!, $number: Int!) {
    repository(id: $id) {
      fullName
      issue(number: $number) {
        number
        title
        body
        state
        user {
          login
        }
        labels {
          name
          color
          description
        }
        assignees {
          login
        }
        commentCount
        timeline(limit: 50) {
          totalCount
          nodes {
            kind
            createdAt
            actor {
              login
            }
            comment {
              body
              user {
                login
              }
            }
            label {
              name
              color
            }
            assignee {
              login
            }
            stateReason
          }
        }
      }
    }
  }
`;

const PULL_PAGE = gql`
  query PullPage($id: ID!, $number: Int!) {
    repository(id: $id) {
      pullRequest(number: $number) {
        number
        title
        body
        state
        mergeable
        user {
          login
        }
        head {
          ref
          sha
        }
        base {
          ref
        }
        labels {
          name
          color
        }
        assignees {
          login
        }
        requestedReviewers {
          login
        }
        commitsCount
        reviewThreads(limit: 10) {
          nodes {
            path
            line
            isResolved
            isOutdated
            comments(limit: 10) {
              nodes {
                body
                user {
                  login
                }
              }
            }
          }
        }
        timeline(limit: 20) {
          nodes {
            kind
            actor {
              login
            }
            comment {
              body
            }
            review {
              state
              body
              comments(limit: 5) {
                nodes {
                  path
                  line
                  body
                }
              }
            }
            label {
              name
            }
            assignee {
              login
            }
            requestedReviewer {
              login
            }
            beforeSha
            afterSha
          }
        }
      }
    }
  }
`;

/** urql with a fetch that keeps each answer's statement count. */
function frontend() {
  return urqlClient(server, reviewer.token, {
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      const count = /(?:^|,)\s*sql;count=(\d+)/.exec(res.headers.get('server-timing') ?? '');
      statements.push(count ? Number(count[1]) : NaN);
      return res;
    },
  });
}

async function render(query: typeof ISSUE_PAGE, number: number) {
  const result = await frontend().query(query, { id: repo.id, number }, { requestPolicy: 'network-only' }).toPromise();
  expect(result.error).toBeUndefined();
  return { data: result.data, statements: statements.at(-1)! };
}

test('an issue page: labels, assignees and a timeline of comments, label and assignee changes, close and reopen', async () => {
  const { data, statements: sql } = await render(ISSUE_PAGE, issue);
  const page = data.repository.issue;
  expect(page).toMatchObject({
    title: 'Crash on start',
    state: 'OPEN',
    user: { login: reviewer.login },
    labels: [{ name: 'bug', color: 'd73a4a', description: 'Something is wrong' }],
    assignees: [{ login: dev.login }],
    commentCount: 2,
  });
  const timeline = page.timeline.nodes.map((item: any) => [
    item.kind,
    item.actor.login,
    item.comment?.body ?? item.label?.name ?? item.assignee?.login ?? item.stateReason,
  ]);
  expect(timeline).toEqual([
    ['LABELED', owner.login, 'bug'],
    ['ASSIGNED', owner.login, dev.login],
    ['COMMENTED', reviewer.login, 'Still crashing on 1.2.'],
    ['COMMENTED', dev.login, 'Looking into it.'],
    ['CLOSED', dev.login, 'not_planned'],
    ['REOPENED', dev.login, 'reopened'],
  ]);
  expect(page.timeline.totalCount).toBe(6);
  expect(sql).toBeGreaterThan(0);
  expect(sql).toBeLessThanOrEqual(12);
});

test('a pull request page: a review with a line comment and its reply, a comment, commits pushed', async () => {
  const { data, statements: sql } = await render(PULL_PAGE, pull);
  const page = data.repository.pullRequest;
  expect(page).toMatchObject({
    title: 'Fix the crash',
    body: `Fixes #${issue}`,
    user: { login: dev.login },
    labels: [{ name: 'bug', color: 'd73a4a' }],
    assignees: [{ login: dev.login }],
    requestedReviewers: [], // the requested reviewer reviewed
    commitsCount: 2,
  });
  expect(page.reviewThreads.nodes).toEqual([
    {
      path: 'app.js',
      line: 3,
      isResolved: false,
      isOutdated: false, // the second push did not touch that hunk
      comments: {
        nodes: [
          { body: 'Spell the number out everywhere?', user: { login: reviewer.login } },
          { body: 'Only here, on purpose.', user: { login: dev.login } },
        ],
      },
    },
  ]);
  const kinds = page.timeline.nodes.map((item: any) => item.kind);
  expect(kinds).toEqual(['LABELED', 'ASSIGNED', 'REVIEW_REQUESTED', 'REVIEWED', 'COMMENTED', 'HEAD_PUSHED', 'REVIEWED']);
  const [, , requested, changes, comment, pushed, approval] = page.timeline.nodes;
  expect(requested.requestedReviewer).toEqual({ login: reviewer.login });
  expect(changes.review).toEqual({
    state: 'CHANGES_REQUESTED',
    body: 'One thing.',
    comments: { nodes: [{ path: 'app.js', line: 3, body: 'Spell the number out everywhere?' }] },
  });
  expect(comment).toMatchObject({ actor: { login: owner.login }, comment: { body: 'Thanks for this!' } });
  expect(pushed).toMatchObject({
    actor: { login: owner.login },
    afterSha: page.head.sha,
    beforeSha: expect.stringMatching(/^[0-9a-f]{40}$/),
  });
  expect(approval.review).toMatchObject({ state: 'APPROVED', comments: { nodes: [] } });
  expect(sql).toBeGreaterThan(0);
  expect(sql).toBeLessThanOrEqual(25);
});

/**
 * A page's statements, the fewest of three renders in a row. A render may also check the token
 * (trusted for 2 s) or note its use (once a minute), which is the request's and not the page's; and
 * two lists asked for in different subtrees (the comments of review threads, of reviews) share a
 * statement only when their parents arrive in the same tick, which a busy machine can split.
 */
async function settled(query: typeof ISSUE_PAGE, number: number): Promise<number> {
  const counts = [];
  for (let i = 0; i < 3; i++) counts.push((await render(query, number)).statements);
  return Math.min(...counts);
}

test('each page costs the same statements once its conversation has grown', async () => {
  const before = [await settled(ISSUE_PAGE, issue), await settled(PULL_PAGE, pull)];
  for (let i = 0; i < 5; i++) {
    expect((await dev.post(`/repos/${repo.id}/issues/${issue}/comments`, { body: `more ${i}` })).status).toBe(201);
    expect((await dev.post(`/repos/${repo.id}/issues/${pull}/comments`, { body: `more ${i}` })).status).toBe(201);
    expect(
      (
        await reviewer.post(`/repos/${repo.id}/pulls/${pull}/reviews`, {
          event: 'COMMENT',
          body: `again ${i}`,
          comments: [{ path: 'app.js', line: 3, body: `note ${i}` }],
        })
      ).status,
    ).toBe(201);
  }
  expect((await owner.post(`/repos/${repo.id}/labels`, { name: 'urgent', color: 'ff9900' })).status).toBe(201);
  expect((await owner.post(`/repos/${repo.id}/issues/${issue}/labels`, { labels: ['urgent'] })).status).toBe(200);
  expect((await owner.post(`/repos/${repo.id}/issues/${issue}/assignees`, { assignees: [owner.login] })).status).toBe(201);
  const after = [await settled(ISSUE_PAGE, issue), await settled(PULL_PAGE, pull)];
  expect(after).toEqual(before);
});

test("a comment's event carries the issue or pull request with its labels and assignees", async () => {
  const comments = (await eventsOf(server, repo.id)).filter((e) => e.type === 'issue_comment' && e.action === 'created');
  const onIssue = comments.findLast((e) => e.payload.issue.number === issue)!;
  const onPull = comments.findLast((e) => e.payload.issue.number === pull)!;
  expect(onIssue.payload.issue).toMatchObject({ labels: [{ name: 'bug' }], assignees: [{ login: dev.login }] });
  expect(onIssue.payload.pull_request).toBeUndefined();
  expect(onPull.payload.issue).toMatchObject({
    labels: [{ name: 'bug' }],
    assignees: [{ login: dev.login }],
    pull_request: { number: pull },
  });
  expect(onPull.payload.pull_request).toMatchObject({ number: pull, labels: [{ name: 'bug' }] });
});

/**
 * A list page reads the labels (and the assignees) of all its items in one statement, batched from
 * the fields of each, where an issue alone reads its own: both must answer the same, whichever of
 * the two the page shows, directly or through a fragment. So must the fields the entity computes
 * with getters: the page's issues are mapped from rows, the issue alone is loaded by the ORM.
 */
test("an issues page shows each issue's labels and assignees as the issue alone does", async () => {
  // commentCount and repositoryId are getters of the entity, read as plain properties (plain-fields.ts).
  const PARTS = `labels { id name color description } assignees { id login } commentCount repositoryId`;
  const ask = async (query: string) => {
    const result = await frontend().query(gql(query), { id: repo.id, number: issue }, { requestPolicy: 'network-only' }).toPromise();
    expect(result.error).toBeUndefined();
    return result.data.repository;
  };
  const alone = (await ask(`query($id: ID!, $number: Int!) { repository(id: $id) { issue(number: $number) { ${PARTS} } } }`)).issue;
  expect(alone.labels).toContainEqual(expect.objectContaining({ name: 'bug', description: 'Something is wrong' }));
  expect(alone.assignees).toContainEqual({ id: dev.userId, login: dev.login });
  expect(alone.repositoryId).toBe(repo.id);
  expect(alone.commentCount).toBeGreaterThanOrEqual(2); // and more, from the tests before
  const shown = (repository: { issues: { nodes: Array<{ number: number }> } }) =>
    repository.issues.nodes.find((node) => node.number === issue);

  const both = await ask(`query($id: ID!) { repository(id: $id) { issues(state: ALL) { nodes { number ${PARTS} } } } }`);
  expect(shown(both)).toEqual({ number: issue, ...alone });
  const throughFragment = await ask(
    `query($id: ID!) { repository(id: $id) { issues(state: ALL) { ...Page } } } fragment Page on IssueConnection { nodes { number ... on Issue { ${PARTS} } } }`,
  );
  expect(shown(throughFragment)).toEqual({ number: issue, ...alone });
  const assigneesOnly = await ask(
    `query($id: ID!) { repository(id: $id) { issues(state: ALL) { nodes { number assignees { id login } } } } }`,
  );
  expect(shown(assigneesOnly)).toEqual({ number: issue, assignees: alone.assignees });
  const labelsOnly = await ask(`query($id: ID!) { repository(id: $id) { issues(state: ALL) { nodes { number labels { name } } } } }`);
  expect(shown(labelsOnly)).toEqual({ number: issue, labels: alone.labels.map(({ name }: { name: string }) => ({ name })) });
});
