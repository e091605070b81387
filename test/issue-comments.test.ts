import { verify } from '@octokit/webhooks-methods';
import { gql } from '@urql/core';
import { adminClient, createUser, type Client } from './support/client.js';
import { settledDeliveries } from './support/deliveries.js';
import { GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { Receiver } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * Comments on issues and pull requests, as a client sees them: REST and GraphQL (through urql),
 * the counts on the issue, every permission case, and the `issue_comment` webhook delivered to a
 * loopback receiver with its signature verified.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let receiver: Receiver;
let sandbox: GitSandbox;
let owner: User; // owns the repositories
let writer: User; // write collaborator
let reader: User; // read collaborator of the private repository; anyone on the public one
let stranger: User; // sees only public repositories
let readOnly: User; // a read collaborator whose token lacks the repo scope
let repo: PullRepo; // public, with a pull request
let secret: { id: string }; // private repository
let issue: number;
let pull: number;
let hookId: string;

const SECRET = 'comments-secret';

beforeAll(async () => {
  [server, receiver, sandbox] = await Promise.all([CairnServer.sharedServer(), Receiver.start(), GitSandbox.create()]);
  const admin = adminClient(server);
  owner = await createUser(admin, 'comments-owner', ['repo', 'admin:repo_hook']);
  writer = await createUser(admin, 'comments-writer', ['repo']);
  reader = await createUser(admin, 'comments-reader', ['repo']);
  stranger = await createUser(admin, 'comments-stranger', ['repo']);
  readOnly = await createUser(admin, 'comments-readonly', ['repo:read']);
  repo = await PullRepo.create(server, sandbox, owner, 'comments-app');
  await repo.commit('feature', 'a feature', { 'feature.txt': 'new\n' });
  await repo.push(['feature']);
  const created = await owner.post('/repos', { name: 'comments-secret', private: true });
  expect(created.status).toBe(201);
  secret = created.body;
  for (const [id, login, permission] of [
    [repo.id, 'comments-writer', 'write'],
    [repo.id, 'comments-readonly', 'read'],
    [secret.id, 'comments-reader', 'read'],
  ] as const) {
    expect((await owner.put(`/repos/${id}/collaborators/${login}`, { permission })).status).toBe(200);
  }
  const hook = await owner.post(`/repos/${repo.id}/webhooks`, {
    url: receiver.url('/comments'),
    events: ['issue_comment'],
    secret: SECRET,
  });
  expect(hook.status).toBe(201);
  hookId = hook.body.id;
  issue = (await owner.post(`/repos/${repo.id}/issues`, { title: 'an issue to talk about' })).body.number;
  const opened = await repo.open({ title: 'a pull request to talk about', head: 'feature', base: 'main' });
  expect(opened.status).toBe(201);
  pull = opened.body.number;
});
afterAll(async () => {
  await Promise.all([sandbox.cleanup(), receiver.close(), server.destroy()]);
});

const ref = (user: User) => ({ id: user.userId, login: user.login });
const commentsOf = (number: number, repoId = repo.id) => `/repos/${repoId}/issues/${number}/comments`;
const commentAt = (id: string, repoId = repo.id) => `/repos/${repoId}/issues/comments/${id}`;

describe.each([
  ['an issue', () => issue, (as: Client, n: number) => as.get(`/repos/${repo.id}/issues/${n}`)],
  ['a pull request', () => pull, (as: Client, n: number) => as.get(`/repos/${repo.id}/issues/${n}/comments?limit=0`)],
])('on %s', (_kind, numberOf, record) => {
  test('add, list oldest first in pages, read, edit, delete; the count follows', async () => {
    const number = numberOf();
    const first = await reader.post(commentsOf(number), { body: 'first!' });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      id: expect.stringMatching(/^cmt_[0-9a-z]{26}$/),
      body: 'first!',
      user: ref(reader),
      created_at: expect.any(String),
      updated_at: first.body.created_at,
      issue_number: number,
    });
    const second = (await writer.post(commentsOf(number), { body: 'second' })).body;
    const third = (await owner.post(commentsOf(number), { body: 'third' })).body;

    const list = await stranger.get(commentsOf(number));
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [first.body, second, third], total: 3, limit: 30, offset: 0, hasMore: false });
    const paged = await stranger.get(`${commentsOf(number)}?limit=1&offset=1`);
    expect(paged.body).toEqual({ data: [second], total: 3, limit: 1, offset: 1, hasMore: true });
    for (const bad of ['limit=-1', 'offset=-3', 'limit=abc', 'offset=1.5']) {
      const res = await stranger.get(`${commentsOf(number)}?${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_pagination');
    }
    expect((await stranger.get(commentAt(second.id))).body).toEqual(second);

    const edited = await reader.patch(commentAt(first.body.id), { body: 'first, edited' });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ id: first.body.id, body: 'first, edited', created_at: first.body.created_at });
    expect(edited.body.updated_at >= first.body.updated_at).toBe(true);
    expect((await stranger.get(commentAt(first.body.id))).body).toEqual(edited.body);

    const deleted = await reader.delete(commentAt(first.body.id));
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await stranger.get(commentAt(first.body.id))).status).toBe(404);
    expect((await reader.delete(commentAt(first.body.id))).status).toBe(404);
    expect((await stranger.get(commentsOf(number))).body).toMatchObject({ data: [second, third], total: 2 });

    // The count: the issue record's `comments` (for a pull request, its comments' total).
    const counted = await record(stranger, number);
    expect(counted.status).toBe(200);
    if (number === issue) expect(counted.body.comments).toBe(2);
    else expect(counted.body.total).toBe(2);
    const [row] = await query<{ comments: number }>(
      server,
      `select comments from ${number === issue ? 'issues' : 'pull_requests'} where repository_id = $1 and number = $2`,
      [repo.id, number],
    );
    expect(row!.comments).toBe(2);
  });
});

test('permissions: 401 without a token, 403 without scope or authorship, 404 where nothing is visible', async () => {
  const mine = (await reader.post(commentsOf(issue), { body: 'the reader says' })).body;
  expect(mine.id).toBeDefined();

  expect((await stranger.post(commentsOf(issue), { body: 'x' }, { anonymous: true })).status).toBe(401);
  expect((await stranger.get(commentsOf(issue), { anonymous: true })).status).toBe(401);
  expect((await stranger.patch(commentAt(mine.id), { body: 'x' }, { anonymous: true })).status).toBe(401);

  // A token without the repo scope reads but does not comment, edit or delete.
  expect((await readOnly.get(commentsOf(issue))).status).toBe(200);
  const noScope = await readOnly.post(commentsOf(issue), { body: 'x' });
  expect(noScope.status).toBe(403);
  expect(noScope.body.error.code).toBe('forbidden');

  // Someone else's comment: a reader may neither edit nor delete it; a writer and the owner may.
  expect((await stranger.patch(commentAt(mine.id), { body: 'hijacked' })).status).toBe(403);
  expect((await stranger.delete(commentAt(mine.id))).status).toBe(403);
  expect((await stranger.get(commentAt(mine.id))).body.body).toBe('the reader says');
  expect((await writer.patch(commentAt(mine.id), { body: 'tidied by a writer' })).status).toBe(200);
  expect((await owner.delete(commentAt(mine.id))).status).toBe(204);

  // A private repository is not there for whoever cannot read it.
  const hidden = await owner.post(`/repos/${secret.id}/issues`, { title: 'private matters' });
  const inside = await reader.post(commentsOf(hidden.body.number, secret.id), { body: 'a read collaborator comments' });
  expect(inside.status).toBe(201);
  for (const res of [
    await stranger.get(commentsOf(hidden.body.number, secret.id)),
    await stranger.post(commentsOf(hidden.body.number, secret.id), { body: 'x' }),
    await stranger.get(commentAt(inside.body.id, secret.id)),
    await stranger.patch(commentAt(inside.body.id, secret.id), { body: 'x' }),
    await stranger.delete(commentAt(inside.body.id, secret.id)),
  ]) {
    expect(res.status).toBe(404);
  }
  // A comment exists only in its own repository; unknown numbers and ids are not found.
  expect((await owner.get(commentAt(inside.body.id))).status).toBe(404);
  expect((await owner.patch(commentAt(inside.body.id), { body: 'x' })).status).toBe(404);
  expect((await owner.delete(commentAt(inside.body.id))).status).toBe(404);
  expect((await owner.get(commentAt(inside.body.id, secret.id))).status).toBe(200);
  for (const id of ['cmt_00000000000000000000000000', 'nope', '1']) {
    expect((await owner.get(commentAt(id))).status).toBe(404);
    expect((await owner.patch(commentAt(id), { body: 'x' })).status).toBe(404);
    expect((await owner.delete(commentAt(id))).status).toBe(404);
  }
  for (const number of ['9999', '0', 'abc']) {
    expect((await owner.get(`/repos/${repo.id}/issues/${number}/comments`)).status).toBe(404);
    expect((await owner.post(`/repos/${repo.id}/issues/${number}/comments`, { body: 'x' })).status).toBe(404);
  }
});

test('invalid bodies: 422 with details, 413 past the request limit; nothing changes', async () => {
  const target = (await owner.post(commentsOf(issue), { body: 'to edit' })).body;
  const before = (await owner.get(commentsOf(issue))).body.total;
  for (const body of [{}, { body: '' }, { body: '  \n ' }, { body: 5 }, { body: null }, { body: ['x'] }, { body: 'b'.repeat(65_537) }]) {
    const created = await reader.post(commentsOf(issue), body);
    expect(created.status).toBe(422);
    expect(created.body.error.code).toBe('validation_failed');
    expect(created.body.error.details.length).toBeGreaterThan(0);
    const edited = await owner.patch(commentAt(target.id), body);
    expect(edited.status).toBe(422);
  }
  const blank = await reader.post(commentsOf(issue), { body: ' ' });
  expect(blank.body.error.details).toEqual([expect.objectContaining({ field: 'body', code: 'missing' })]);
  const long = await reader.post(commentsOf(issue), { body: 'b'.repeat(65_537) });
  expect(long.body.error.details).toEqual([expect.objectContaining({ field: 'body', code: 'too_long' })]);
  expect((await reader.post(commentsOf(issue), { body: 'b'.repeat(65_536) })).status).toBe(201);
  const huge = await reader.post(commentsOf(issue), { body: 'b'.repeat(2 * 1024 * 1024) });
  expect(huge.status).toBe(413);
  expect((await owner.get(commentsOf(issue))).body.total).toBe(before + 1);
  expect((await owner.get(commentAt(target.id))).body.body).toBe('to edit');
});

test('issue_comment webhooks: created, edited, deleted; pull_request only for a pull request; signed', async () => {
  const onIssue = (await writer.post(commentsOf(issue), { body: 'hooked on an issue' })).body;
  const onPull = (await writer.post(commentsOf(pull), { body: 'hooked on a pull request' })).body;
  expect((await owner.patch(commentAt(onIssue.id), { body: 'hooked, edited' })).status).toBe(200);
  expect((await owner.delete(commentAt(onPull.id))).status).toBe(204);
  await settledDeliveries(server, [hookId]);

  const got = receiver.received.filter((r) => r.path === '/comments' && [onIssue.id, onPull.id].includes(r.body?.comment?.id));
  expect(got.map((r) => `${r.body.action}:${r.body.comment.id}`).sort()).toEqual(
    [`created:${onIssue.id}`, `created:${onPull.id}`, `edited:${onIssue.id}`, `deleted:${onPull.id}`].sort(),
  );
  for (const delivery of got) {
    expect(delivery.headers['x-cairn-event']).toBe('issue_comment');
    expect(await verify(SECRET, delivery.raw.toString('utf8'), delivery.headers['x-cairn-signature-256'] as string)).toBe(true);
    expect(delivery.body).toMatchObject({ event: 'issue_comment', repository: { id: repo.id }, sender: { id: expect.any(String) } });
  }
  const of = (action: string, id: string) => got.find((r) => r.body.action === action && r.body.comment.id === id)!.body;

  const issueRecord = (await owner.get(`/repos/${repo.id}/issues/${issue}`)).body;
  const created = of('created', onIssue.id);
  expect(created.comment).toEqual(onIssue);
  expect(created.sender).toEqual(ref(writer));
  expect(created).not.toHaveProperty('pull_request');
  expect(created).not.toHaveProperty('changes');
  // The issue as the API shows it, its count as it was after this comment.
  expect(created.issue).toEqual({ ...issueRecord, comments: expect.any(Number), updated_at: expect.any(String) });
  expect(created.issue.comments).toBeGreaterThanOrEqual(1);

  const edited = of('edited', onIssue.id);
  expect(edited.changes).toEqual({ body: { from: 'hooked on an issue' } });
  expect(edited.comment).toMatchObject({ id: onIssue.id, body: 'hooked, edited' });
  expect(edited.sender).toEqual(ref(owner));
  expect(edited.issue.comments).toBe(issueRecord.comments);

  const onPr = of('created', onPull.id);
  const pullRecord = (await owner.get(`/repos/${repo.id}/pulls/${pull}`)).body;
  expect(onPr.pull_request).toMatchObject({ id: pullRecord.id, number: pull, title: pullRecord.title, head: pullRecord.head });
  expect(onPr.issue).toEqual({
    id: pullRecord.id,
    number: pull,
    title: pullRecord.title,
    body: pullRecord.body,
    state: 'open',
    user: pullRecord.user,
    comments: expect.any(Number),
    created_at: pullRecord.created_at,
    updated_at: expect.any(String),
    closed_at: null,
    repository_id: repo.id,
    labels: [],
    assignees: [],
    pull_request: { number: pull },
  });
  const deleted = of('deleted', onPull.id);
  expect(deleted.comment).toEqual(onPull);
  expect(deleted.pull_request).toMatchObject({ number: pull });
  expect(deleted.issue.comments).toBe(onPr.issue.comments - 1);
});

test('GraphQL through urql: comments as connections of issues and pull requests, counts, one comment, the mutations', async () => {
  const client = urqlClient(server, writer.token);
  const fresh = (await owner.post(`/repos/${repo.id}/issues`, { title: 'talked about in GraphQL' })).body.number;
  const added = await client
    .mutation(
      gql`
        mutation ($input: AddCommentInput!) {
          addComment(input: $input) {
            id
            body
            issueNumber
            user {
              login
            }
          }
        }
      `,
      { input: { repositoryId: repo.id, number: fresh, body: 'from urql' } },
    )
    .toPromise();
  expect(added.error).toBeUndefined();
  expect(added.data.addComment).toMatchObject({ body: 'from urql', issueNumber: fresh, user: { login: writer.login } });
  await client
    .mutation(
      gql`
        mutation ($input: AddCommentInput!) {
          addComment(input: $input) {
            id
          }
        }
      `,
      {
        input: { repositoryId: repo.id, number: fresh, body: 'and again' },
      },
    )
    .toPromise();

  const read = await client
    .query(
      gql`
        query ($id: ID!, $number: Int!, $pull: Int!, $commentId: ID!) {
          repository(id: $id) {
            issue(number: $number) {
              commentCount
              comments(limit: 1, offset: 1) {
                nodes {
                  body
                }
                totalCount
                hasMore
              }
            }
            issues(state: ALL, limit: 100) {
              nodes {
                number
                commentCount
                comments(limit: 2) {
                  totalCount
                  nodes {
                    issueNumber
                  }
                }
              }
            }
            pullRequest(number: $pull) {
              commentCount
              comments {
                totalCount
                nodes {
                  issueNumber
                }
              }
            }
            issueComment(id: $commentId) {
              body
            }
          }
        }
      `,
      { id: repo.id, number: fresh, pull, commentId: added.data.addComment.id },
      { requestPolicy: 'network-only' },
    )
    .toPromise();
  expect(read.error).toBeUndefined();
  const repository = read.data.repository;
  expect(repository.issue).toEqual({ commentCount: 2, comments: { nodes: [{ body: 'and again' }], totalCount: 2, hasMore: false } });
  expect(repository.issueComment).toEqual({ body: 'from urql' });
  for (const listed of repository.issues.nodes) {
    expect(listed.comments.totalCount).toBe(listed.commentCount);
    expect(listed.comments.nodes.length).toBe(Math.min(2, listed.commentCount));
    for (const node of listed.comments.nodes) expect(node.issueNumber).toBe(listed.number);
  }
  expect(repository.pullRequest.commentCount).toBe(repository.pullRequest.comments.totalCount);
  expect(repository.pullRequest.comments.nodes.every((n: { issueNumber: number }) => n.issueNumber === pull)).toBe(true);

  const updated = await client
    .mutation(
      gql`
        mutation ($input: UpdateCommentInput!) {
          updateComment(input: $input) {
            body
          }
        }
      `,
      {
        input: { repositoryId: repo.id, commentId: added.data.addComment.id, body: 'from urql, edited' },
      },
    )
    .toPromise();
  expect(updated.data.updateComment.body).toBe('from urql, edited');
  const removed = await client
    .mutation(
      gql`
        mutation ($input: DeleteCommentInput!) {
          deleteComment(input: $input)
        }
      `,
      {
        input: { repositoryId: repo.id, commentId: added.data.addComment.id },
      },
    )
    .toPromise();
  expect(removed.data.deleteComment).toBe(true);
  const denied = await urqlClient(server, stranger.token)
    .mutation(
      gql`
        mutation ($input: DeleteCommentInput!) {
          deleteComment(input: $input)
        }
      `,
      {
        input: { repositoryId: repo.id, commentId: added.data.addComment.id },
      },
    )
    .toPromise();
  expect(denied.error?.graphQLErrors[0]?.extensions.code).toBe('NOT_FOUND');
});

test('comments arriving together on one conversation: each written once, counted once, each event with its own count', async () => {
  const number = (await owner.post(`/repos/${repo.id}/issues`, { title: 'a busy thread' })).body.number;
  const N = 40;
  const posted = await Promise.all(
    Array.from({ length: N }, (_, i) => [reader, writer, stranger][i % 3]!.post(commentsOf(number), { body: `comment ${i}` })),
  );
  expect(posted.map((res) => res.status)).toEqual(Array(N).fill(201));
  expect((await owner.get(`/repos/${repo.id}/issues/${number}`)).body.comments).toBe(N);
  const listed = await owner.get(`${commentsOf(number)}?limit=100`);
  expect(listed.body.total).toBe(N);
  expect(new Set(listed.body.data.map((c: { id: string }) => c.id))).toEqual(new Set(posted.map((res) => res.body.id)));

  await settledDeliveries(server, [hookId]);
  const counts = receiver.received
    .filter((r) => r.path === '/comments' && r.body?.action === 'created' && r.body.issue.number === number)
    .map((r) => r.body.issue.comments as number)
    .sort((a, b) => a - b);
  expect(counts).toEqual(Array.from({ length: N }, (_, i) => i + 1));
});
