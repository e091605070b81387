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
 * Comments on lines of a pull request's diff, through the running server: real commits pushed with
 * the real git client, comments on added, changed, context and removed lines and on ranges, reviews
 * that carry comments, reply threads, permissions, threads outdated (or carried) by pushes, threads
 * resolved through urql, and the `pull_request_review_comment` deliveries a real receiver gets.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let receiver: Receiver;
let sandbox: GitSandbox;
let alice: User; // owns the repository
let bob: User; // write collaborator, author of the pull request
let carol: User; // a stranger who reviews
let dave: User; // a stranger whose token only reads
let repo: PullRepo;
let number: number;
let head: string;
let hookId: string;
const SECRET = 'review-comment-secret';

const lines = (count: number, word = 'line') => Array.from({ length: count }, (_, i) => `${word} ${i + 1}`);
const text = (rows: string[]) => rows.join('\n') + '\n';
const MOD = lines(40);

beforeAll(async () => {
  [server, receiver, sandbox] = await Promise.all([CairnServer.sharedServer(), Receiver.start(), GitSandbox.create()]);
  const admin = adminClient(server);
  [alice, bob, carol, dave] = await Promise.all([
    createUser(admin, 'rcalice', ['repo', 'admin:repo_hook']),
    createUser(admin, 'rcbob', ['repo']),
    createUser(admin, 'rccarol', ['repo']),
    createUser(admin, 'rcdave', ['repo:read']),
  ]);
  repo = await PullRepo.create(server, sandbox, alice, 'line-comments', {
    'README.md': '# lines\n',
    'mod.txt': text(MOD),
    'gone.txt': text(lines(5, 'gone')),
  });
  expect((await alice.put(`/repos/${repo.id}/collaborators/rcbob`, { permission: 'write' })).status).toBeLessThan(300);
  const hook = await alice.post(`/repos/${repo.id}/webhooks`, {
    url: receiver.url('/rc'),
    events: ['pull_request_review_comment'],
    secret: SECRET,
  });
  expect(hook.status).toBe(201);
  hookId = hook.body.id;
  const changed = [...MOD];
  changed[19] = 'line 20 changed';
  head = await repo.commit('feature', 'feature', { 'new.txt': text(lines(5, 'new')), 'mod.txt': text(changed), 'gone.txt': null });
  await repo.push(['feature']);
  const opened = await repo.open({ title: 'Feature', head: 'feature', base: 'main' }, bob);
  expect(opened.status).toBe(201);
  number = opened.body.number;
});
afterAll(async () => {
  await Promise.all([sandbox.cleanup(), receiver.close()]);
});

const commentsPath = () => `/repos/${repo.id}/pulls/${number}/comments`;
const commentPath = (id: string) => `/repos/${repo.id}/pulls/comments/${id}`;
const comment = (as: Client, body: Record<string, unknown>) => as.post(commentsPath(), body);

describe('commenting on lines', () => {
  test('an added line: 201 with the record, the hunk through the line, on the head', async () => {
    const res = await comment(carol, { body: 'why five?', path: 'new.txt', line: 2 });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^rvc_/),
      review_id: null,
      path: 'new.txt',
      line: 2,
      side: 'right',
      start_line: null,
      start_side: null,
      commit_id: head,
      original_commit_id: head,
      original_line: 2,
      original_start_line: null,
      diff_hunk: '@@ -0,0 +1,5 @@\n+new 1\n+new 2',
      body: 'why five?',
      user: { id: carol.userId, login: carol.login },
      in_reply_to_id: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      outdated: false,
    });
    expect((await carol.get(commentPath(res.body.id))).body).toEqual(res.body);
  });

  test('a changed line and a context line of its hunk (RIGHT), a removed line (LEFT)', async () => {
    const changed = await comment(carol, { body: 'changed', path: 'mod.txt', line: 20 });
    expect(changed.status).toBe(201);
    expect(changed.body.diff_hunk.split('\n').slice(-2)).toEqual(['-line 20', '+line 20 changed']);
    const context = await comment(carol, { body: 'context', path: 'mod.txt', line: 18, side: 'RIGHT' });
    expect(context.status).toBe(201);
    expect(context.body.diff_hunk.split('\n').at(-1)).toBe(' line 18');
    const removed = await comment(carol, { body: 'removed', path: 'gone.txt', line: 3, side: 'LEFT' });
    expect(removed.status).toBe(201);
    expect(removed.body).toMatchObject({ side: 'left', line: 3, diff_hunk: '@@ -1,5 +0,0 @@\n-gone 1\n-gone 2\n-gone 3' });
  });

  test('a range within one hunk', async () => {
    const res = await comment(carol, { body: 'these', path: 'mod.txt', start_line: 18, line: 21 });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ start_line: 18, start_side: 'right', line: 21, original_start_line: 18 });
    const backwards = await comment(carol, { body: 'these', path: 'mod.txt', start_line: 21, line: 18 });
    expect(backwards.status).toBe(422);
  });

  test('outside the hunks, an unknown path, a foreign commit, a blank body: 422 with details, nothing written', async () => {
    const before = (await carol.get(commentsPath())).body.total;
    const outside = await comment(carol, { body: 'x', path: 'mod.txt', line: 5 });
    expect(outside.status).toBe(422);
    expect(outside.body.error.code).toBe('validation_failed');
    expect(outside.body.error.details).toEqual([expect.objectContaining({ field: 'line', code: 'line_not_in_diff' })]);
    const removedOnRight = await comment(carol, { body: 'x', path: 'gone.txt', line: 3 });
    expect(removedOnRight.body.error.details[0].code).toBe('line_not_in_diff');
    const unknown = await comment(carol, { body: 'x', path: 'README.md', line: 1 });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.details[0]).toMatchObject({ field: 'path' });
    const mainSha = await repo.remoteSha('main');
    const foreign = await comment(carol, { body: 'x', path: 'new.txt', line: 1, commit_id: mainSha });
    expect(foreign.status).toBe(422);
    expect(foreign.body.error.details[0]).toMatchObject({ field: 'commit_id' });
    const blank = await comment(carol, { body: '  ', path: 'new.txt', line: 1 });
    expect(blank.status).toBe(422);
    const wrongType = await comment(carol, { body: 'x', path: 'new.txt', line: 'one' });
    expect(wrongType.status).toBe(422);
    expect((await carol.get(commentsPath())).body.total).toBe(before);
  });

  test('a review with two comments; one bad comment refuses the whole review', async () => {
    const bad = await carol.post(`/repos/${repo.id}/pulls/${number}/reviews`, {
      event: 'COMMENT',
      body: 'overall',
      comments: [
        { path: 'new.txt', line: 1, body: 'fine' },
        { path: 'mod.txt', line: 2, body: 'outside' },
      ],
    });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details).toEqual([expect.objectContaining({ field: 'comments[1].line', code: 'line_not_in_diff' })]);
    expect((await carol.get(`/repos/${repo.id}/pulls/${number}/reviews`)).body.total).toBe(0);

    const review = await carol.post(`/repos/${repo.id}/pulls/${number}/reviews`, {
      event: 'COMMENT',
      body: 'overall',
      comments: [
        { path: 'new.txt', line: 1, body: 'first of the review' },
        { path: 'mod.txt', line: 20, side: 'LEFT', body: 'second of the review' },
      ],
    });
    expect(review.status).toBe(201);
    const all = (await carol.get(`${commentsPath()}?limit=100`)).body.data;
    const ofReview = all.filter((c: any) => c.review_id === review.body.id);
    expect(ofReview.map((c: any) => [c.body, c.side, c.commit_id])).toEqual([
      ['first of the review', 'right', review.body.commit_id],
      ['second of the review', 'left', review.body.commit_id],
    ]);
  });

  test('a reply thread: replies name the first comment and share its place; the list is oldest first', async () => {
    const first = await comment(carol, { body: 'thread start', path: 'new.txt', line: 4 });
    const reply = await comment(bob, { body: 'reply', in_reply_to: first.body.id, path: 'ignored.txt', line: 999 });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({ in_reply_to_id: first.body.id, path: 'new.txt', line: 4, diff_hunk: first.body.diff_hunk });
    const replyToReply = await comment(alice, { body: 'again', in_reply_to: reply.body.id });
    expect(replyToReply.status).toBe(201);
    expect(replyToReply.body.in_reply_to_id).toBe(first.body.id);
    const unknownParent = await comment(alice, { body: 'x', in_reply_to: 'rvc_nothing' });
    expect(unknownParent.status).toBe(422);

    const page = await carol.get(`${commentsPath()}?limit=100`);
    expect(page.status).toBe(200);
    expect(Object.keys(page.body).sort()).toEqual(['data', 'hasMore', 'limit', 'offset', 'total']);
    const times = page.body.data.map((c: any) => `${c.created_at} ${c.id}`);
    expect(times).toEqual([...times].sort());
    expect(page.body.data.at(-1).id).toBe(replyToReply.body.id);
    const second = await carol.get(`${commentsPath()}?limit=1&offset=1`);
    expect(second.body).toMatchObject({ limit: 1, offset: 1, hasMore: true, data: [page.body.data[1]] });
    expect((await carol.get(`${commentsPath()}?limit=-1`)).status).toBe(400);
  });
});

describe('permissions', () => {
  test('401 without a token, 403 for a read-only token, 404 for an unknown pull request', async () => {
    expect((await carol.get(commentsPath(), { anonymous: true })).status).toBe(401);
    expect((await comment(dave, { body: 'x', path: 'new.txt', line: 1 })).status).toBe(403);
    expect((await dave.get(commentsPath())).status).toBe(200);
    expect((await carol.post(`/repos/${repo.id}/pulls/9999/comments`, { body: 'x', path: 'new.txt', line: 1 })).status).toBe(404);
  });

  test('edit: the author or a writer (others 403); delete: the author, a writer or admin; unknown 404', async () => {
    const mine = await comment(carol, { body: 'carol says', path: 'new.txt', line: 3 });
    const other = await comment(alice, { body: 'alice says', path: 'new.txt', line: 3 });
    expect((await carol.patch(commentPath(other.body.id), { body: 'hijack' })).status).toBe(403);
    expect((await carol.delete(commentPath(other.body.id))).status).toBe(403);
    expect((await carol.patch(commentPath(mine.body.id), { body: 'anything' }, { anonymous: true })).status).toBe(401);
    const edited = await carol.patch(commentPath(mine.body.id), { body: 'carol says more' });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ body: 'carol says more', id: mine.body.id });
    const byWriter = await bob.patch(commentPath(mine.body.id), { body: 'tidied by bob' });
    expect(byWriter.status).toBe(200);
    expect((await bob.patch(commentPath(mine.body.id), { body: '' })).status).toBe(422);
    expect((await carol.get(commentPath('rvc_unknown'))).status).toBe(404);
    const elsewhere = await PullRepo.create(server, sandbox, carol, 'line-comments-other');
    expect((await carol.get(`/repos/${elsewhere.id}/pulls/comments/${mine.body.id}`)).status).toBe(404);
    expect((await carol.delete(commentPath(mine.body.id))).status).toBe(204);
    expect((await carol.get(commentPath(mine.body.id))).status).toBe(404);
    expect((await bob.delete(commentPath(other.body.id))).status).toBe(204);
  });

  test('deleting the first comment of a thread: the next one starts it', async () => {
    const first = await comment(carol, { body: 'start', path: 'new.txt', line: 5 });
    const second = await comment(bob, { body: 'two', in_reply_to: first.body.id });
    const third = await comment(alice, { body: 'three', in_reply_to: first.body.id });
    expect((await carol.delete(commentPath(first.body.id))).status).toBe(204);
    expect((await bob.get(commentPath(second.body.id))).body.in_reply_to_id).toBeNull();
    expect((await bob.get(commentPath(third.body.id))).body.in_reply_to_id).toBe(second.body.id);
  });
});

describe('pushes', () => {
  test('a push elsewhere carries threads (lines shift with the diff); a push into the hunk outdates them', async () => {
    const onChanged = await comment(carol, { body: 'watch this', path: 'mod.txt', line: 21 });
    const onNew = await comment(carol, { body: 'and this', path: 'new.txt', line: 1 });
    const first = head;

    // Two lines at the top of mod.txt: a hunk of their own; the commented one moves down by two.
    const shifted = ['top 1', 'top 2', ...MOD];
    shifted[21] = 'line 20 changed';
    const second = await repo.commit('feature', 'top', { 'mod.txt': text(shifted) });
    await repo.push(['feature']);
    const carried = (await carol.get(commentPath(onChanged.body.id))).body;
    expect(carried).toMatchObject({ outdated: false, line: 23, commit_id: second, original_line: 21, original_commit_id: first });
    expect((await carol.get(commentPath(onNew.body.id))).body).toMatchObject({ outdated: false, line: 1, commit_id: second });

    // A change right next to the commented line: its hunk is another now.
    const touched = [...shifted];
    touched[23] = 'line 22 touched';
    await repo.commit('feature', 'touch', { 'mod.txt': text(touched) });
    await repo.push(['feature']);
    const outdated = (await carol.get(commentPath(onChanged.body.id))).body;
    expect(outdated).toMatchObject({
      outdated: true,
      line: null,
      original_line: 21,
      original_commit_id: first,
      diff_hunk: onChanged.body.diff_hunk,
    });
    expect((await carol.get(commentPath(onNew.body.id))).body).toMatchObject({ outdated: false, line: 1 });
    head = await repo.remoteSha('feature').then((sha) => sha!);
  });
});

describe('GraphQL', () => {
  const THREADS = gql`
    query ($id: ID!, $number: Int!) {
      repository(id: $id) {
        pullRequest(number: $number) {
          reviewThreads(limit: 50) {
            totalCount
            nodes {
              id
              path
              line
              side
              isResolved
              isOutdated
              resolvedBy {
                login
              }
              comments(limit: 5) {
                totalCount
                nodes {
                  id
                  body
                  inReplyToId
                }
              }
            }
          }
          reviews(limit: 10) {
            nodes {
              id
              comments(limit: 3) {
                nodes {
                  body
                }
              }
            }
          }
        }
      }
    }
  `;
  const RESOLVE = gql`
    mutation ($threadId: ID!) {
      resolveReviewThread(input: { threadId: $threadId }) {
        id
        isResolved
        resolvedBy {
          login
        }
      }
    }
  `;
  const UNRESOLVE = gql`
    mutation ($threadId: ID!) {
      unresolveReviewThread(input: { threadId: $threadId }) {
        id
        isResolved
        resolvedBy {
          login
        }
      }
    }
  `;

  test('threads with their comments, reviews with theirs; resolve and unresolve by the author, not a stranger', async () => {
    const start = await comment(carol, { body: 'graphql thread', path: 'new.txt', line: 2 });
    await comment(bob, { body: 'graphql reply', in_reply_to: start.body.id });
    const asBob = urqlClient(server, bob.token);
    const read = await asBob.query(THREADS, { id: repo.id, number }, { requestPolicy: 'network-only' }).toPromise();
    expect(read.error).toBeUndefined();
    const pull = read.data.repository.pullRequest;
    const thread = pull.reviewThreads.nodes.find((t: any) => t.comments.nodes[0]?.id === start.body.id);
    expect(thread).toMatchObject({ path: 'new.txt', line: 2, side: 'RIGHT', isResolved: false, isOutdated: false, resolvedBy: null });
    expect(thread.comments.nodes.map((c: any) => [c.body, c.inReplyToId])).toEqual([
      ['graphql thread', null],
      ['graphql reply', start.body.id],
    ]);
    expect(pull.reviewThreads.nodes.some((t: any) => t.isOutdated)).toBe(true);
    expect(pull.reviews.nodes[0].comments.nodes.map((c: any) => c.body)).toEqual(['first of the review', 'second of the review']);

    const asCarol = urqlClient(server, carol.token);
    const refused = await asCarol.mutation(RESOLVE, { threadId: thread.id }).toPromise();
    expect(refused.error?.graphQLErrors[0]?.extensions?.code).toBe('FORBIDDEN');
    const resolved = await asBob.mutation(RESOLVE, { threadId: thread.id }).toPromise();
    expect(resolved.data.resolveReviewThread).toEqual({ id: thread.id, isResolved: true, resolvedBy: { login: bob.login } });
    const unresolved = await urqlClient(server, alice.token).mutation(UNRESOLVE, { threadId: thread.id }).toPromise();
    expect(unresolved.data.unresolveReviewThread).toEqual({ id: thread.id, isResolved: false, resolvedBy: null });
  });
});

describe('webhooks', () => {
  test('created, edited (changes.body.from) and deleted reach a real receiver, signed', async () => {
    const made = await comment(carol, { body: 'hooked', path: 'new.txt', line: 3 });
    await carol.patch(commentPath(made.body.id), { body: 'hooked again' });
    await carol.delete(commentPath(made.body.id));
    await settledDeliveries(server, [hookId]);
    // Deliveries may arrive in any order: put them in the order of the changes.
    const order = ['created', 'edited', 'deleted'];
    const got = receiver
      .at('/rc')
      .filter((r) => r.body?.comment?.id === made.body.id)
      .sort((a, b) => order.indexOf(a.body.action) - order.indexOf(b.body.action));
    expect(got.map((r) => r.body.action)).toEqual(order);
    for (const delivery of got) {
      expect(delivery.headers['x-cairn-event']).toBe('pull_request_review_comment');
      expect(await verify(SECRET, delivery.raw.toString('utf8'), delivery.headers['x-cairn-signature-256'] as string)).toBe(true);
      expect(delivery.body.pull_request).toMatchObject({ number, head: { ref: 'feature', sha: head } });
      expect(delivery.body.sender).toEqual({ id: carol.userId, login: carol.login });
    }
    expect(got[0]!.body.comment).toEqual(made.body);
    expect(got[1]!.body.changes).toEqual({ body: { from: 'hooked' } });
    expect(got[1]!.body.comment.body).toBe('hooked again');
    expect(got[2]!.body.comment.body).toBe('hooked again');

    // One `created` for each comment of a submitted review.
    const review = await carol.post(`/repos/${repo.id}/pulls/${number}/reviews`, {
      event: 'COMMENT',
      body: 'two more',
      comments: [
        { path: 'new.txt', line: 4, body: 'hook one' },
        { path: 'new.txt', line: 5, body: 'hook two' },
      ],
    });
    expect(review.status).toBe(201);
    await settledDeliveries(server, [hookId]);
    const ofReview = receiver.at('/rc').filter((r) => r.body?.comment?.review_id === review.body.id);
    // Deliveries may arrive in any order: compare them sorted.
    expect(ofReview.map((r) => [r.body.action, r.body.comment.body]).sort()).toEqual([
      ['created', 'hook one'],
      ['created', 'hook two'],
    ]);
  });
});

describe('bounds', () => {
  test('a body over 65,536 characters: 422 too_long (alone and in a review), nothing written', async () => {
    const before = (await carol.get(commentsPath())).body.total;
    const long = 'x'.repeat(65_537);
    const alone = await comment(carol, { body: long, path: 'new.txt', line: 1 });
    expect(alone.status).toBe(422);
    expect(alone.body.error.details).toEqual([expect.objectContaining({ field: 'body', code: 'too_long' })]);
    const inReview = await carol.post(`/repos/${repo.id}/pulls/${number}/reviews`, {
      event: 'COMMENT',
      body: 'long one',
      comments: [{ path: 'new.txt', line: 1, body: long }],
    });
    expect(inReview.status).toBe(422);
    expect(inReview.body.error.details).toEqual([expect.objectContaining({ field: 'comments[0].body', code: 'too_long' })]);
    expect((await comment(carol, { body: 'x'.repeat(65_536), path: 'new.txt', line: 1 })).status).toBe(201);
    expect((await carol.get(commentsPath())).body.total).toBe(before + 1);
  });

  test('a review with more than 100 comments: 422 too_many, no review and no comment written', async () => {
    const before = await Promise.all([carol.get(commentsPath()), carol.get(`/repos/${repo.id}/pulls/${number}/reviews`)]);
    const many = Array.from({ length: 101 }, (_, i) => ({ path: 'new.txt', line: (i % 5) + 1, body: `many ${i}` }));
    const res = await carol.post(`/repos/${repo.id}/pulls/${number}/reviews`, { event: 'COMMENT', body: 'many', comments: many });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'comments', code: 'too_many' })]);
    const after = await Promise.all([carol.get(commentsPath()), carol.get(`/repos/${repo.id}/pulls/${number}/reviews`)]);
    expect(after.map((page) => page.body.total)).toEqual(before.map((page) => page.body.total));
    const hundred = await carol.post(`/repos/${repo.id}/pulls/${number}/reviews`, {
      event: 'COMMENT',
      body: 'a hundred',
      comments: many.slice(0, 100),
    });
    expect(hundred.status).toBe(201);
  });
});

describe('concurrent changes', () => {
  test('the first comment and the next deleted at once: the one left starts the thread', async () => {
    const threads = await Promise.all(
      [1, 2, 3, 4].map(async (line) => {
        const first = await comment(carol, { body: `race ${line}`, path: 'new.txt', line });
        const second = await comment(bob, { body: 'second', in_reply_to: first.body.id });
        const third = await comment(alice, { body: 'third', in_reply_to: first.body.id });
        return [first.body.id, second.body.id, third.body.id] as const;
      }),
    );
    const deletes = threads.flatMap(([first, second]) => [carol.delete(commentPath(first)), bob.delete(commentPath(second))]);
    expect((await Promise.all(deletes)).map((res) => res.status)).toEqual(deletes.map(() => 204));
    for (const [, , third] of threads) expect((await carol.get(commentPath(third))).body.in_reply_to_id).toBeNull();
  });
});

describe('threads gone meanwhile', () => {
  const THREAD_ID = gql`
    query ($id: ID!, $commentId: ID!) {
      repository(id: $id) {
        reviewComment(id: $commentId) {
          threadId
        }
      }
    }
  `;
  const RESOLVE = gql`
    mutation ($threadId: ID!) {
      resolveReviewThread(input: { threadId: $threadId }) {
        id
        isResolved
      }
    }
  `;

  test('resolving a thread while its last comment is deleted: resolved, or 404 once it is gone, never a stale thread', async () => {
    const made = await Promise.all([1, 2, 3, 4].map((line) => comment(carol, { body: `lone ${line}`, path: 'new.txt', line })));
    const asBob = urqlClient(server, bob.token);
    const threadOf = async (commentId: string) => {
      const read = await asBob.query(THREAD_ID, { id: repo.id, commentId }, { requestPolicy: 'network-only' }).toPromise();
      return read.data.repository.reviewComment.threadId as string;
    };
    const threads = await Promise.all(made.map((res) => threadOf(res.body.id)));
    const resolving = threads.map((threadId) => asBob.mutation(RESOLVE, { threadId }).toPromise());
    const deleting = made.map((res) => carol.delete(commentPath(res.body.id)));
    const [resolved, deleted] = await Promise.all([Promise.all(resolving), Promise.all(deleting)]);
    expect(deleted.map((res) => res.status)).toEqual(deleted.map(() => 204));
    for (const outcome of resolved) {
      if (outcome.error) expect(outcome.error.graphQLErrors[0]?.extensions?.code).toBe('NOT_FOUND');
      else expect(outcome.data.resolveReviewThread.isResolved).toBe(true);
    }
    for (const threadId of threads) {
      const again = await asBob.mutation(RESOLVE, { threadId }).toPromise();
      expect(again.error?.graphQLErrors[0]?.extensions?.code).toBe('NOT_FOUND');
    }
  });
});

describe('the head moving', () => {
  let older: number;
  let first: string;
  let second: string;
  const olderPath = () => `/repos/${repo.id}/pulls/${older}/comments`;

  beforeAll(async () => {
    // The first commit changes lines 10 and 30; the second adds two lines at the top and changes line 11
    // (line 10's hunk is another now; line 30's is the same, two lines down).
    const atFirst = [...MOD];
    atFirst[9] = 'line 10 first';
    atFirst[29] = 'line 30 first';
    first = await repo.commit('older', 'first', { 'mod.txt': text(atFirst) });
    const atSecond = ['top 1', 'top 2', ...atFirst];
    atSecond[12] = 'line 11 second';
    second = await repo.commit('older', 'second', { 'mod.txt': text(atSecond) });
    await repo.push(['older']);
    const opened = await repo.open({ title: 'Older', head: 'older', base: 'main' }, bob);
    expect(opened.status).toBe(201);
    older = opened.body.number;
  });

  test('a comment on an older commit: carried to the head when its hunk is unchanged, outdated at once when it changed', async () => {
    const changed = await carol.post(olderPath(), { body: 'hunk changed since', path: 'mod.txt', line: 10, commit_id: first });
    expect(changed.status).toBe(201);
    expect(changed.body).toMatchObject({ outdated: true, line: null, commit_id: first, original_commit_id: first, original_line: 10 });
    const same = await carol.post(olderPath(), { body: 'hunk unchanged', path: 'mod.txt', line: 30, commit_id: first });
    expect(same.status).toBe(201);
    expect(same.body).toMatchObject({ outdated: false, line: 32, commit_id: second, original_commit_id: first, original_line: 30 });
    expect((await carol.get(commentPath(same.body.id))).body).toEqual(same.body);
  });

  test('comments made while a push moves the head: refused (409) or left current on the new head, never on the old one', async () => {
    let pushing = true;
    const made: Array<{ status: number; body: any }> = [];
    const commenter = async () => {
      for (let i = 0; pushing && i < 200; i++) made.push(await carol.post(olderPath(), { body: 'racing', path: 'mod.txt', line: 32 }));
    };
    const pushes = (async () => {
      for (let round = 1; round <= 3; round++) {
        const rows = ['top 1', 'top 2', ...MOD];
        rows[11] = 'line 10 first';
        rows[12] = 'line 11 second';
        rows[31] = 'line 30 first';
        rows[41] = `line 40 round ${round}`;
        await repo.commit('older', `round ${round}`, { 'mod.txt': text(rows) });
        await repo.push(['older']);
      }
      pushing = false;
    })();
    await Promise.all([pushes, commenter(), commenter(), commenter()]);
    expect(made.length).toBeGreaterThan(0);
    for (const res of made) expect([201, 409]).toContain(res.status);
    const conflicts = made.filter((res) => res.status === 409);
    for (const res of conflicts) expect(res.body.error.code).toBe('conflict');
    const tip = await repo.remoteSha('older');
    const page = await carol.get(`${olderPath()}?limit=100&offset=0`);
    const racing = page.body.data.filter((c: any) => c.body === 'racing');
    expect(racing.length).toBe(made.length - conflicts.length);
    for (const c of racing) expect(c).toMatchObject({ outdated: false, commit_id: tip, line: 32 });
  });
});

describe('pages', () => {
  const NESTED = gql`
    query ($id: ID!, $limit: Int, $offset: Int) {
      repository(id: $id) {
        pullRequests(limit: 10) {
          nodes {
            number
            reviewThreads(limit: $limit, offset: $offset) {
              totalCount
              nodes {
                id
                comments(limit: 1, offset: 1) {
                  totalCount
                  nodes {
                    id
                  }
                }
              }
            }
          }
        }
      }
    }
  `;

  test('each page is its slice of the whole list, with the parent’s total; past the end, none', async () => {
    const whole = await carol.get(`${commentsPath()}?limit=100`);
    const pages = await Promise.all([0, 7, 14].map((offset) => carol.get(`${commentsPath()}?limit=7&offset=${offset}`)));
    expect(pages.flatMap((page) => page.body.data)).toEqual(whole.body.data.slice(0, 21));
    for (const page of pages) expect(page.body.total).toBe(whole.body.total);
    const past = await carol.get(`${commentsPath()}?limit=5&offset=${whole.body.total}`);
    expect(past.body).toMatchObject({ data: [], total: whole.body.total, hasMore: false });

    // The threads of several pull requests at once, and the comments of each thread, paged.
    const asCarol = urqlClient(server, carol.token);
    const query = (limit: number, offset: number) =>
      asCarol.query(NESTED, { id: repo.id, limit, offset }, { requestPolicy: 'network-only' }).toPromise();
    const [all, second] = await Promise.all([query(100, 0), query(3, 2)]);
    expect(all.error).toBeUndefined();
    const pulls = all.data.repository.pullRequests.nodes;
    expect(pulls.filter((pull: any) => pull.reviewThreads.totalCount > 0).length).toBeGreaterThan(1);
    second.data.repository.pullRequests.nodes.forEach((pull: any, i: number) => {
      expect(pull.reviewThreads.totalCount).toBe(pulls[i].reviewThreads.totalCount);
      expect(pull.reviewThreads.nodes).toEqual(pulls[i].reviewThreads.nodes.slice(2, 5));
    });
    const replied = pulls.flatMap((pull: any) => pull.reviewThreads.nodes).find((thread: any) => thread.comments.totalCount > 1);
    expect(replied.comments.nodes).toHaveLength(1);
  });
});

describe('many pull requests on one head', () => {
  test('a push re-checks the threads of at most 20 pull requests sharing its head: the newest; the others stay as they were', async () => {
    const bases = Array.from({ length: 21 }, (_, i) => `fan-base-${i + 1}`);
    await repo.push(bases.map((base) => `main:refs/heads/${base}`));
    const before = await repo.commit('fan', 'fan', { 'fan.txt': text(lines(5, 'fan')) });
    await repo.push(['fan']);
    const numbers: number[] = [];
    for (const base of bases) {
      const opened = await repo.open({ title: `Fan to ${base}`, head: 'fan', base }, bob);
      expect(opened.status).toBe(201);
      numbers.push(opened.body.number);
    }
    const made = await Promise.all(
      numbers.map((n) => carol.post(`/repos/${repo.id}/pulls/${n}/comments`, { body: 'fanned', path: 'fan.txt', line: 1 })),
    );
    expect(made.map((res) => res.status)).toEqual(made.map(() => 201));
    const after = await repo.commit('fan', 'elsewhere', { 'elsewhere.txt': 'elsewhere\n' });
    await repo.push(['fan']);
    const now = await Promise.all(made.map((res) => carol.get(commentPath(res.body.id))));
    // The oldest pull request (the first opened) is past the bound: its thread stays on the head it was on.
    expect(now.map((res) => res.body.commit_id)).toEqual([before, ...numbers.slice(1).map(() => after)]);
    for (const res of now) expect(res.body).toMatchObject({ outdated: false, line: 1 });
  });
});
