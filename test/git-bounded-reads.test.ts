import fs from 'node:fs/promises';
import path from 'node:path';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { gitCommandsIn, TreeGuard } from './support/process-tree.js';
import { eventually } from './support/receiver.js';
import { CairnServer, sleep } from './support/server.js';

/**
 * Reads of git data are paged and costed by what they can return, and background git work is
 * shared fairly: one account's expensive repository cannot stall another's mergeability, nor run
 * more than its share of merges at once.
 */
const GUARD_BYTES = 3 * 1024 ** 3;

let server: CairnServer;
let guard: TreeGuard;
let git: GitSandbox;
let alice: Awaited<ReturnType<typeof createUser>>;
let bob: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  [server, git] = await Promise.all([CairnServer.start(), GitSandbox.create()]);
  guard = new TreeGuard(server.process!.pid!, GUARD_BYTES);
  const admin = adminClient(server);
  alice = await createUser(admin, 'alice');
  bob = await createUser(admin, 'bob');
});
afterAll(async () => {
  guard.stop();
  await Promise.all([server.destroy(), git.cleanup()]);
});
afterEach(() => {
  expect(guard.exceeded).toBe(false);
});

/** Pushes a commit of one directory of `names` (each the empty blob) as `main` of a new repository of alice's. */
async function wideRepository(name: string, names: string[]): Promise<string> {
  const id = (await alice.post('/repos', { name })).body.id as string;
  const bare = git.path(`${name}.git`);
  await git.git(['init', '--quiet', '--bare', bare]);
  const empty = (await git.git(['hash-object', '-w', '-t', 'blob', '--stdin'], { cwd: bare, input: '' })).trim();
  const tree = (await git.git(['mktree'], { cwd: bare, input: names.map((n) => `100644 blob ${empty}\t${n}\n`).join('') })).trim();
  const sha = (await git.git(['commit-tree', tree, '-m', 'wide'], { cwd: bare })).trim();
  await git.git(['push', '--quiet', remoteUrl(server, 'alice', name, alice.token), `${sha}:refs/heads/main`], { cwd: bare });
  return id;
}

describe('browsing git data is paged and costed by what it can return', () => {
  test('thirty trees of a 40,000-file root: pages of entries, a small answer, a flat service', async () => {
    const id = await wideRepository(
      'wide',
      Array.from({ length: 40_000 }, (_, i) => `file-${String(i).padStart(5, '0')}.txt`),
    );
    const trees = Array.from({ length: 30 }, (_, i) => `t${i}: tree { totalCount hasMore truncated nodes { name type size } }`).join(' ');
    const started = performance.now();
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: `query($id: ID!) { repository(id: $id) { ${trees} } }`, variables: { id } }),
    });
    const text = await response.text();
    const elapsed = performance.now() - started;
    expect(response.status).toBe(200);
    const { data } = JSON.parse(text);
    expect(Object.keys(data.repository)).toHaveLength(30);
    expect(data.repository.t29).toMatchObject({ totalCount: 40_000, hasMore: true, truncated: false });
    expect(data.repository.t29.nodes).toHaveLength(30);
    expect(data.repository.t0.nodes[0]).toEqual({ name: 'file-00000.txt', type: 'BLOB', size: 0 });
    expect(text.length).toBeLessThan(200_000);
    console.log(`30 trees of 40,000 entries: ${Math.round(elapsed)} ms, ${text.length} bytes, service tree peak ${guard.peakMb} MB`);

    const last = await alice.gql('query($id: ID!) { repository(id: $id) { tree(limit: 100, offset: 39950) { hasMore nodes { name } } } }', {
      id,
    });
    expect(last.repository.tree.hasMore).toBe(false);
    expect(last.repository.tree.nodes.map((n: any) => n.name)).toEqual(
      Array.from({ length: 50 }, (_, i) => `file-${String(39_950 + i).padStart(5, '0')}.txt`),
    );
    // A tree may page at most 100 entries: a document asking for more is clamped, not served whole.
    const clamped = await alice.gql('query($id: ID!) { repository(id: $id) { tree(limit: 100000) { limit nodes { name } } } }', { id });
    expect(clamped.repository.tree.limit).toBe(100);
    expect(clamped.repository.tree.nodes).toHaveLength(100);
  });

  test('a directory whose listing is past 8 MiB is truncated there: counted and paged as far as it was read', async () => {
    const long = 'x'.repeat(150);
    const id = await wideRepository(
      'wider',
      Array.from({ length: 60_000 }, (_, i) => `${long}-${String(i).padStart(5, '0')}`),
    );
    const { repository } = await alice.gql(
      'query($id: ID!) { repository(id: $id) { tree(limit: 2) { totalCount truncated nodes { name } } } }',
      { id },
    );
    expect(repository.tree.truncated).toBe(true);
    expect(repository.tree.totalCount).toBeGreaterThan(30_000);
    expect(repository.tree.totalCount).toBeLessThan(60_000);
    expect(repository.tree.nodes.map((n: any) => n.name)).toEqual([`${long}-00000`, `${long}-00001`]);
  });
});

/**
 * A base and a head whose merge is expensive for git: `files` files of LINES lines renamed (and
 * changed) on the head, modified on the base — every rename is inexact, so merge-ort compares
 * every pair (FILES: some seconds of CPU; DEADLINE_FILES: far more than the 1 s deadline below,
 * on any machine, while what meets the deadline costs the test that second only).
 */
const FILES = 600;
const DEADLINE_FILES = 1000;
const LINES = 300;

async function expensiveWork(name: string, files = FILES): Promise<string> {
  const work = await git.init(name);
  const content = (file: number) =>
    Array.from({ length: LINES }, (_, line) => `line ${line} of file ${file} with some text to it\n`).join('');
  await fs.mkdir(path.join(work, 'a'));
  await Promise.all(Array.from({ length: files }, (_, i) => fs.writeFile(path.join(work, 'a', `f${i}.txt`), content(i))));
  await git.git(['add', '-A'], { cwd: work });
  await git.git(['commit', '--quiet', '-m', 'base'], { cwd: work });
  await git.git(['checkout', '--quiet', '-b', 'head'], { cwd: work });
  await fs.rm(path.join(work, 'a'), { recursive: true });
  await fs.mkdir(path.join(work, 'c'));
  await Promise.all(
    Array.from({ length: files }, (_, i) => fs.writeFile(path.join(work, 'c', `g${i}.txt`), content(i).replace('line 100 ', 'LINE 100 '))),
  );
  await git.git(['add', '-A'], { cwd: work });
  await git.git(['commit', '--quiet', '-m', 'renamed and changed'], { cwd: work });
  await git.git(['checkout', '--quiet', 'main'], { cwd: work });
  await Promise.all(
    Array.from({ length: files }, (_, i) => fs.writeFile(path.join(work, 'a', `f${i}.txt`), content(i).replace('line 200 ', 'LINE 200 '))),
  );
  await git.git(['commit', '--quiet', '-am', 'modified'], { cwd: work });
  return work;
}

/** A repository of `owner`'s with `branches` pushed from `work`. */
async function pushedRepository(owner: typeof alice, name: string, work: string, branches: string[]): Promise<string> {
  const id = (await owner.post('/repos', { name })).body.id as string;
  await git.git(['push', '--quiet', remoteUrl(server, owner.login, name, owner.token), ...branches], { cwd: work });
  return id;
}

const pullRequest = (owner: typeof alice, id: string, head: string) =>
  owner.post(`/repos/${id}/pulls`, { title: head, head, base: 'main' }).then((pr) => {
    expect(pr.status).toBe(201);
    return pr.body.number as number;
  });

const mergeable = async (owner: typeof alice, id: string, number: number) =>
  (await owner.get(`/repos/${id}/pulls/${number}`)).body.mergeable;

/** The directory of a repository on the server's disk (where its git commands run). */
const repositoryDir = (id: string) => path.join(server.dataDir, 'repositories', `${id}.git`);

/** Samples, every 50 ms until stopped, the most `git merge-tree` running at once in these repositories. */
function watchMergeTrees(ids: string[]): { stop: () => Promise<number> } {
  let most = 0;
  let watching = true;
  const sampling = (async () => {
    while (watching) {
      most = Math.max(most, await gitCommandsIn(server.process!.pid!, ids.map(repositoryDir), 'merge-tree'));
      await sleep(50);
    }
  })();
  return {
    stop: async () => {
      watching = false;
      await sampling;
      return most;
    },
  };
}

describe('background git work is shared fairly between repositories and accounts', () => {
  let work: string;
  beforeAll(async () => {
    work = await expensiveWork('expensive');
    for (const i of [1, 2, 3]) {
      await git.git(['checkout', '--quiet', '-b', `head${i}`, 'head'], { cwd: work });
      await git.git(['commit', '--quiet', '--allow-empty', '-m', `head ${i}`], { cwd: work });
    }
    await git.git(['checkout', '--quiet', 'main'], { cwd: work });
  }, 60_000);

  test("one repository's queue of expensive mergeability checks takes one slot: another repository's check is not held behind it", async () => {
    // Three pull requests against a base they merge into trivially; then one push makes all three expensive at once.
    const heavy = await pushedRepository(alice, 'heavy', work, ['main~1:refs/heads/main', 'head1', 'head2', 'head3']);
    const numbers = [];
    for (const head of ['head1', 'head2', 'head3']) numbers.push(await pullRequest(alice, heavy, head));
    for (const n of numbers) await eventually(async () => (await mergeable(alice, heavy, n)) === true, 30_000, 'the first checks');

    const light = (await bob.post('/repos', { name: 'light', auto_init: true })).body.id as string;
    const bobWork = git.path('light');
    await git.git(['clone', '--quiet', remoteUrl(server, 'bob', 'light', bob.token), bobWork]);
    await git.commit(bobWork, 'small', { 'small.txt': 'small\n' });
    await git.git(['push', '--quiet', 'origin', 'HEAD:refs/heads/small'], { cwd: bobWork });

    const watch = watchMergeTrees([heavy]);
    await git.git(['push', '--quiet', remoteUrl(server, 'alice', 'heavy', alice.token), 'main'], { cwd: work });
    await eventually(
      async () => (await gitCommandsIn(server.process!.pid!, [repositoryDir(heavy)], 'merge-tree')) > 0,
      10_000,
      'a heavy check under way',
    );
    const opened = performance.now();
    const small = await pullRequest(bob, light, 'small');
    await eventually(async () => (await mergeable(bob, light, small)) !== null, 30_000, "bob's check");
    const waited = performance.now() - opened;
    for (const n of numbers) await eventually(async () => (await mergeable(alice, heavy, n)) === true, 60_000, 'the heavy checks');
    const most = await watch.stop();
    console.log(`a small check beside a heavy repository's three: ${Math.round(waited)} ms; heavy merge-trees at once: ${most}`);
    expect(most).toBe(1); // two slots, but one repository holds one: the other stayed free...
    expect(waited).toBeLessThan(3000); // ...for the small check (a heavy one takes seconds)
  }, 120_000);

  test('an account runs at most two merges at once; its others wait their turn and land, and other accounts are not held', async () => {
    const ids: Array<{ id: string; number: number }> = [];
    for (const i of [1, 2, 3]) {
      const id = await pushedRepository(alice, `merge-${i}`, work, ['main', 'head']);
      ids.push({ id, number: await pullRequest(alice, id, 'head') });
    }
    for (const { id, number } of ids) await eventually(async () => (await mergeable(alice, id, number)) === true, 60_000, 'mergeable');

    const watch = watchMergeTrees(ids.map(({ id }) => id));
    const started = performance.now();
    const answeredAt: number[] = [];
    const merges = ids.map(({ id, number }) =>
      alice.put(`/repos/${id}/pulls/${number}/merge`, { merge_method: 'merge' }).then((answer) => {
        answeredAt.push(performance.now());
        return answer;
      }),
    );
    // Alice's merges under way, both of her slots taken.
    await eventually(
      async () =>
        (await gitCommandsIn(
          server.process!.pid!,
          ids.map(({ id }) => repositoryDir(id)),
          'merge-tree',
        )) >= 2,
      30_000,
      "two of alice's merges running",
    );
    // Bob's merge of his own small pull request does not wait behind alice's.
    const light = (await bob.get('/repos?owner=bob')).body.data[0].id as string;
    const bobs = (await bob.get(`/repos/${light}/pulls`)).body.data[0].number as number;
    const bobStarted = performance.now();
    expect((await bob.put(`/repos/${light}/pulls/${bobs}/merge`, {})).status).toBe(200);
    const bobAnsweredAt = performance.now();
    const bobMs = bobAnsweredAt - bobStarted;
    const answers = await Promise.all(merges);
    const most = await watch.stop();
    console.log(
      `3 expensive merges of one account: ${Math.round(performance.now() - started)} ms, at most ${most} merge-tree at once; another account's merge ${Math.round(bobMs)} ms, answered ${Math.round(Math.min(...answeredAt) - bobAnsweredAt)} ms before the first of them`,
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(most).toBe(2);
    // Held behind alice, bob's merge would start only once one of hers had finished: it is answered
    // before any of hers (each takes seconds of git), however loaded the machine.
    expect(answeredAt.every((at) => at > bobAnsweredAt)).toBe(true);
  }, 180_000);
});

describe('within git deadlines', () => {
  let tight: CairnServer;
  let carol: Awaited<ReturnType<typeof createUser>>;
  beforeAll(async () => {
    tight = await CairnServer.start({ env: { CAIRN_GIT_TIMEOUT: '1s' } });
    carol = await createUser(adminClient(tight), 'carol');
  });
  afterAll(() => tight.destroy());

  test('a check past the deadline is answered not mergeable and kept; the files are listed without renames', async () => {
    const work = await expensiveWork('past-the-deadline', DEADLINE_FILES);
    const id = (await carol.post('/repos', { name: 'deadline' })).body.id as string;
    await git.git(['push', '--quiet', remoteUrl(tight, 'carol', 'deadline', carol.token), 'main', 'head'], { cwd: work });
    const pr = await carol.post(`/repos/${id}/pulls`, { title: 'renames', head: 'head', base: 'main' });
    expect(pr.status).toBe(201);
    await eventually(async () => (await carol.get(`/repos/${id}/pulls/${pr.body.number}`)).body.mergeable !== null, 30_000, 'the check');
    const record = (await carol.get(`/repos/${id}/pulls/${pr.body.number}`)).body;
    expect(record).toMatchObject({ mergeable: false, conflicts: [] });
    expect(tight.logCount('a mergeability check met a bound of git; stored as not mergeable')).toBeGreaterThan(0);

    // Rename detection over 1,000 inexact renames takes longer than a quarter of a second: listed as removed and added.
    const files = await carol.get(`/repos/${id}/pulls/${pr.body.number}/files?limit=100`);
    expect(files.status).toBe(200);
    expect(files.body.total).toBe(2 * DEADLINE_FILES);
    expect(new Set(files.body.data.map((file: any) => file.status))).toEqual(new Set(['removed']));

    // Merging needs the same merge within the same deadline: refused with the bound, not a 5xx.
    const merged = await carol.put(`/repos/${id}/pulls/${pr.body.number}/merge`, {});
    expect(merged.status).toBe(422);
    expect(merged.body.error.code).toBe('git_limit_exceeded');
  }, 60_000);
});
