import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { eventually } from './support/receiver.js';
import { CairnServer, freePort, ROOT } from './support/server.js';

/**
 * The example bot of docs/webhooks.md ("For receivers written for GitHub"), run as the docs give it,
 * against the running service: a GitHub-minded receiver sees each new head of a pull request, its
 * merge, and a close without merge, with the signature checked by @octokit/webhooks-methods.
 */
const DOC = readFileSync(path.join(ROOT, 'docs/webhooks.md'), 'utf8');
const BOT = /## For receivers written for GitHub[\s\S]*?```js\n([\s\S]*?)```/.exec(DOC)?.[1];

let server: CairnServer;
let git: GitSandbox;
let bot: ChildProcess;
let said = '';
let port: number;

beforeAll(async () => {
  if (!BOT) throw new Error('docs/webhooks.md has no example bot');
  [server, git, port] = [CairnServer.sharedServer(), await GitSandbox.create(), await freePort()];
  bot = spawn(process.execPath, ['--input-type=module', '-e', BOT], {
    cwd: ROOT, // resolves @octokit/webhooks-methods as an installed package
    env: { PATH: process.env.PATH, PORT: String(port), CAIRN_WEBHOOK_SECRET: 'bot-secret' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [bot.stdout!, bot.stderr!]) stream.on('data', (chunk: Buffer) => (said += chunk.toString()));
  await eventually(
    async () => (await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' }).catch(() => null))?.status === 401,
    10_000,
    'the bot listening (an unsigned request refused)',
  );
});
afterAll(async () => {
  bot?.kill();
  await git?.cleanup();
});

test('the documented bot builds each new head, reports the merge, and cancels on a close without merge', async () => {
  const owner = await createUser(adminClient(server), 'bot-owner', ['repo', 'admin:repo_hook']);
  const repo = await PullRepo.create(server, git, owner, 'botted');
  const hook = await owner.post(`/repos/${repo.id}/webhooks`, {
    url: `http://127.0.0.1:${port}/`,
    events: ['pull_request'],
    secret: 'bot-secret',
  });
  expect(hook.status).toBe(201);

  const first = await repo.commit('feature', 'first', { 'f.txt': '1\n' });
  await repo.push(['feature']);
  const pr = (await repo.open({ title: 'Feature', head: 'feature' })).body;
  await eventually(async () => said.includes(`build #${pr.number} at ${first}`), 10_000, 'the build of the opened head');
  const second = await repo.commit('feature', 'second', { 'f.txt': '2\n' });
  await repo.push(['feature']);
  await eventually(async () => said.includes(`build #${pr.number} at ${second}`), 10_000, 'the build of the new head');
  await repo.mergeable(pr.number);
  const merged = await owner.put(`/repos/${repo.id}/pulls/${pr.number}/merge`, {});
  expect(merged.status).toBe(200);
  await eventually(async () => said.includes(`#${pr.number} merged as ${merged.body.sha}`), 10_000, 'the merge reported');

  await repo.commit('dropped', 'dropped', { 'd.txt': 'd\n' });
  await repo.push(['dropped']);
  const dropped = (await repo.open({ title: 'Dropped', head: 'dropped' })).body;
  expect((await owner.patch(`/repos/${repo.id}/pulls/${dropped.number}`, { state: 'closed' })).status).toBe(200);
  await eventually(async () => said.includes(`#${dropped.number} closed unmerged: cancel its builds`), 10_000, 'the close reported');

  // Every delivery was answered 204 by the bot: the signature it checked is the one Cairn made.
  const deliveries = await owner.get(`/repos/${repo.id}/webhooks/${hook.body.id}/deliveries?limit=100`);
  expect(deliveries.body.data.length).toBeGreaterThanOrEqual(5);
  await eventually(
    async () =>
      (await owner.get(`/repos/${repo.id}/webhooks/${hook.body.id}/deliveries?limit=100`)).body.data.every(
        (d: { status: string }) => d.status === 'succeeded',
      ),
    10_000,
    'every delivery succeeded',
  );
  expect(said).not.toMatch(/Error/);
});
