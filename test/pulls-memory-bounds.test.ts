import { adminClient, createUser } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { TreeGuard } from './support/process-tree.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer } from './support/server.js';

/**
 * Pull request work that reads what an account pushed into the service's memory, whatever it
 * pushed: the lines of a file's diff for comments, the messages of the commits a squash lists or a
 * rebase replays. Each of these once took the service past its heap (192 MB, as `npm start` runs
 * it) with a push of a few files or commits; here the same requests are answered and the service
 * stays up. Its process tree is killed past GUARD_BYTES, so a regression fails here.
 */
const GUARD_BYTES = 3 * 1024 ** 3;

let server: CairnServer;
let guard: TreeGuard;
let git: GitSandbox;
let alice: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  [server, git] = await Promise.all([CairnServer.start(), GitSandbox.create()]);
  guard = new TreeGuard(server.process!.pid!, GUARD_BYTES);
  alice = await createUser(adminClient(server), 'alice', ['repo']);
});
afterAll(async () => {
  guard.stop();
  await Promise.all([server.destroy(), git.cleanup()]);
});
afterEach(() => {
  expect(guard.exceeded).toBe(false);
  server.assertRunning(); // a service that died (at its heap's limit, say) fails the test that killed it
});

/** A million empty lines: 1,000,000 bytes, under the 1 MiB past which a file is binary. */
const MILLION_LINES = '\n'.repeat(1_000_000);
const lines = (count: number) => Array.from({ length: count }, (_, i) => `line ${i}\n`).join('');

async function pull(repo: PullRepo, head: string): Promise<number> {
  const created = await alice.post(`/repos/${repo.id}/pulls`, { title: 't', head, base: 'main' });
  expect(created.status).toBe(201);
  return created.body.number as number;
}

describe('comments on lines of huge diffs', () => {
  test('files whose diffs are past 20,000 lines have no lines to comment on; many files at once are refused; threads outdate', async () => {
    const repo = await PullRepo.create(server, git, alice, 'hunks');
    const files: Record<string, string> = { 'small.txt': 'a\nb\nc\n' };
    for (let i = 0; i < 3; i++) files[`big${i}.txt`] = MILLION_LINES;
    for (let i = 0; i < 6; i++) files[`mid${i}.txt`] = lines(19_000);
    await repo.commit('feature', 'files', files);
    await repo.push(['feature']);
    const number = await pull(repo, 'feature');
    const reviews = `/repos/${repo.id}/pulls/${number}/reviews`;

    const refused = await alice.post(reviews, {
      event: 'COMMENT',
      body: 'b',
      comments: [0, 1, 2].map((i) => ({ path: `big${i}.txt`, line: 1, body: 'x' })),
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.details).toEqual(
      [0, 1, 2].map((i) =>
        expect.objectContaining({ field: `comments[${i}].line`, code: 'line_not_in_diff', message: expect.stringContaining('too large') }),
      ),
    );

    // 6 × 19,000 lines: each file may be commented on, not all of them in one request.
    const together = await alice.post(reviews, {
      event: 'COMMENT',
      body: 'b',
      comments: [0, 1, 2, 3, 4, 5].map((i) => ({ path: `mid${i}.txt`, line: 1, body: 'x' })),
    });
    expect(together.status).toBe(422);
    expect(together.body.error.code).toBe('git_limit_exceeded');
    expect((await alice.get(reviews)).body.total).toBe(0);
    const onMid = await alice.post(`/repos/${repo.id}/pulls/${number}/comments`, { body: 'x', path: 'mid0.txt', line: 18_999 });
    expect(onMid.status).toBe(201);

    const onSmall = await alice.post(`/repos/${repo.id}/pulls/${number}/comments`, { body: 'x', path: 'small.txt', line: 2 });
    expect(onSmall.status).toBe(201);
    // The commented file grows a million lines: the thread has no diff to stay in.
    await repo.commit('feature', 'grow', { 'small.txt': MILLION_LINES });
    await repo.push(['feature']);
    expect((await alice.get(`/repos/${repo.id}/pulls/comments/${onSmall.body.id}`)).body).toMatchObject({ outdated: true, line: null });
    expect((await alice.get(`/repos/${repo.id}/pulls/comments/${onMid.body.id}`)).body).toMatchObject({ outdated: false, line: 18_999 });
  }, 120_000);
});

describe('merges of commits with huge messages', () => {
  /** 7.5 MB of ASCII text: eight of them passed the heap when a squash held them whole, several times over. */
  const HUGE = `big message\n\n${'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor\n'.repeat(100_000)}`;

  /** Commits on `branch` from main, one file each, every one with the HUGE message; returns their shas. */
  async function hugeCommits(repo: PullRepo, branch: string, count: number): Promise<string[]> {
    let tip = (await repo.run(['rev-parse', 'main'])).trim();
    const shas: string[] = [];
    for (let i = 0; i < count; i++) {
      const blob = (await git.git(['hash-object', '-w', '--stdin'], { cwd: repo.work, input: `${branch} ${i}\n` })).trim();
      const base = (await repo.run(['ls-tree', tip])).trim();
      const tree = (await git.git(['mktree'], { cwd: repo.work, input: `${base}\n100644 blob ${blob}\t${branch}-${i}.txt\n` })).trim();
      tip = (await git.git(['commit-tree', tree, '-p', tip, '-F', '-'], { cwd: repo.work, input: HUGE })).trim();
      shas.push(tip);
    }
    await repo.run(['branch', '-f', branch, tip]);
    return shas;
  }

  test('a squash of 8 of them lists each message cut at 64 KiB; a rebase of 3 replays them byte for byte', async () => {
    const repo = await PullRepo.create(server, git, alice, 'messages');
    await hugeCommits(repo, 'squashed', 8);
    const replayed = await hugeCommits(repo, 'rebased', 3);
    await repo.push(['squashed', 'rebased']);
    const squashed = await pull(repo, 'squashed');
    const rebased = await pull(repo, 'rebased');

    const squash = await alice.put(`/repos/${repo.id}/pulls/${squashed}/merge`, { merge_method: 'squash' });
    expect(squash.status).toBe(200);
    await repo.run(['fetch', '--quiet', 'origin']);
    const message = await repo.run(['log', '-1', '--format=%B', 'origin/main']);
    expect(message.startsWith(`t (#${squashed})\n\n* big message`)).toBe(true);
    const [listing, trailers] = message.split('\n\nCo-authored-by: ');
    expect(trailers?.trim()).toBe('Test User <test@example.test>');
    const bullets = listing!.split('\n\n* ').slice(1);
    expect(bullets).toHaveLength(8);
    for (const bullet of bullets) expect(bullet.trimEnd().endsWith('…')).toBe(true);
    expect(message.length).toBeLessThan(8 * 65 * 1024);

    const rebase = await alice.put(`/repos/${repo.id}/pulls/${rebased}/merge`, { merge_method: 'rebase' });
    expect(rebase.status).toBe(200);
    await repo.run(['fetch', '--quiet', 'origin']);
    const tips = (await repo.run(['rev-list', '--max-count=3', '--reverse', 'origin/main'])).trim().split('\n');
    for (const [i, sha] of tips.entries()) {
      expect(sha).not.toBe(replayed[i]);
      const raw = await repo.run(['cat-file', 'commit', sha]);
      expect(raw.slice(raw.indexOf('\n\n') + 2)).toBe(HUGE);
    }
  }, 180_000);
});
