import fs from 'node:fs/promises';
import path from 'node:path';
import { adminClient, createUser, type ApiResponse } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer, query } from './support/server.js';

/**
 * Pull requests and ref changes at the same time. Everything that locks several rows takes them in
 * one order (recorded refs by name, then pull requests, then the repository), and deleting a
 * repository waits for the ref changes in flight: concurrent opening, editing, pushing, merging and
 * deleting never deadlock into a 5xx, and what they leave is consistent with the branches.
 */

let server: CairnServer;
let git: GitSandbox;
let owner: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  [server, git] = [CairnServer.sharedServer(), await GitSandbox.create()];
  owner = await createUser(adminClient(server), 'racer');
});
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup()]);
});

/** No 5xx; when there is one, the failure shows what the service logged about it. */
const noServerError = (responses: ApiResponse[]) => {
  const failed = responses.filter((res) => res.status >= 500);
  // The errors logged (on the shared server, any file's: the last few show what a 5xx was about).
  const logged = failed.length
    ? server.output
        .split('\n')
        .filter((line) => line.includes('"level":50'))
        .slice(-5)
    : [];
  expect(failed.map((res) => `${res.status} ${res.text}`).concat(logged)).toEqual([]);
};

test('opening and retargeting race pushes that delete and recreate their branches: no 5xx, open pull requests follow the branches', async () => {
  const repo = await PullRepo.create(server, git, owner, 'racing');
  await repo.commit('feature', 'feature 0', { 'f.txt': '0\n' });
  await repo.commit('topic', 'topic 0', { 't.txt': '0\n' });
  await repo.push(['feature', 'topic', 'main:refs/heads/release']);
  const answers: ApiResponse[] = [];
  for (let round = 1; round <= 8; round++) {
    await repo.commit('feature', `feature ${round}`, { 'f.txt': `${round}\n` });
    const [pushed, ...api] = await Promise.all([
      git.run(['push', '--quiet', 'origin', ':release', 'feature'], { cwd: repo.work }),
      repo.open({ title: `feature into release ${round}`, head: 'feature', base: 'release' }),
      repo.open({ title: `topic into release ${round}`, head: 'topic', base: 'release' }),
      owner.get(`/repos/${repo.id}/pulls?state=all&limit=100`),
    ]);
    expect(pushed.stderr).not.toMatch(/fatal|could not be recorded/);
    answers.push(...api);
    await repo.push(['main:refs/heads/release']);
    const open = (await owner.get(`/repos/${repo.id}/pulls`)).body.data as any[];
    answers.push(...(await Promise.all(open.map((pr) => owner.patch(`/repos/${repo.id}/pulls/${pr.number}`, { base: 'main' })))));
  }
  noServerError(answers);
  expect(answers.every((res) => [200, 201, 422].includes(res.status))).toBe(true);

  const tips = new Map<string, string>();
  for (const line of (await repo.run(['ls-remote', 'origin', 'refs/heads/*'])).split('\n').filter(Boolean)) {
    const [sha, ref] = line.split('\t');
    tips.set(ref!.slice('refs/heads/'.length), sha!);
  }
  const all = (await owner.get(`/repos/${repo.id}/pulls?state=all&limit=100`)).body.data as any[];
  expect(all.length).toBeGreaterThan(0);
  for (const pr of all.filter((p) => p.state === 'open')) {
    expect({ number: pr.number, head: pr.head.sha, base: pr.base.sha }).toEqual({
      number: pr.number,
      head: tips.get(pr.head.ref),
      base: tips.get(pr.base.ref),
    });
  }
});

test('deleting a repository while pushes and merges to it run: no 5xx, it is gone with everything it had', async () => {
  for (let round = 1; round <= 3; round++) {
    const repo = await PullRepo.create(server, git, owner, `doomed-${round}`);
    const numbers: number[] = [];
    for (const branch of ['a', 'b']) {
      await repo.commit(branch, branch, { [`${branch}.txt`]: `${branch}\n` });
      await repo.push([branch]);
      numbers.push((await repo.open({ title: branch, head: branch })).body.number);
    }
    await repo.commit('main', `main ${round}`, { 'main.txt': `${round}\n` });
    const [deleted, mergeA, pushed, mergeB] = await Promise.all([
      owner.delete(`/repos/${repo.id}`),
      owner.put(`/repos/${repo.id}/pulls/${numbers[0]}/merge`),
      git.run(['push', '--quiet', 'origin', 'main'], { cwd: repo.work }),
      owner.put(`/repos/${repo.id}/pulls/${numbers[1]}/merge`),
    ]);
    noServerError([deleted, mergeA, mergeB]);
    expect(deleted.status).toBe(200);
    for (const merged of [mergeA, mergeB]) expect([200, 404, 405, 409]).toContain(merged.status);
    expect(pushed.stderr).not.toMatch(/could not be recorded/);

    expect((await owner.get(`/repos/${repo.id}`)).status).toBe(404);
    for (const table of ['git_refs', 'pull_requests', 'git_push_journal']) {
      expect(await query(server, `select 1 from ${table} where repository_id = $1`, [repo.id])).toEqual([]);
    }
    await expect(fs.stat(path.join(server.dataDir, 'repositories', `${repo.id}.git`))).rejects.toThrow();
  }
});
