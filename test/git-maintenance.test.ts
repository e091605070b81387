import fs from 'node:fs/promises';
import path from 'node:path';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { eventually } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/**
 * Repository maintenance: an Agenda job per repository, CAIRN_GIT_MAINTENANCE_DELAY after its last
 * push (10 s by default), outside the push's request. Here the delay is longer than a burst of
 * pushes takes and short enough to wait for.
 */
const DELAY_S = 3;
let server: CairnServer;
let git: GitSandbox;
let alice: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  [server, git] = await Promise.all([CairnServer.start({ env: { CAIRN_GIT_MAINTENANCE_DELAY: `${DELAY_S}s` } }), GitSandbox.create()]);
  alice = await createUser(adminClient(server), 'alice');
});
afterAll(async () => {
  await Promise.all([server.destroy(), git.cleanup()]);
});

/** Creates alice's repository `name` with one commit pushed to main; answers its id. */
const pushedRepository = async (name: string) => (await PullRepo.create(server, git, alice, name)).id;

/** The repositories whose maintenance has run, as the log says. */
const maintained = () => new Set(server.logs().flatMap((line) => (line.msg === 'repository maintained' ? [line.repositoryId] : [])));

test('after a push, the maintenance job writes a commit-graph and a reachability bitmap (outside the request)', async () => {
  const id = await pushedRepository('maintained');
  const objects = path.join(server.dataDir, 'repositories', `${id}.git`, 'objects');
  const files = async () => [
    ...(await fs.readdir(path.join(objects, 'pack')).catch(() => [])),
    ...(await fs.readdir(path.join(objects, 'info', 'commit-graphs')).catch(() => [])),
  ];
  expect((await files()).some((name) => name.endsWith('.bitmap'))).toBe(false); // not inside the push
  await eventually(async () => maintained().has(id), 20_000, 'the maintenance run');
  expect(await files()).toEqual(expect.arrayContaining(['multi-pack-index', 'commit-graph-chain']));
  expect((await files()).some((name) => name.endsWith('.bitmap'))).toBe(true);
});

test('a burst of pushes to many repositories is maintained as fast as the jobs run, not a few per poll', async () => {
  // Two jobs run at once in a process and the queue is polled every 5 s. The burst is over before
  // the first job is due, so no push's scheduling wakes the queue while the jobs are due: unless
  // each finished job asks for the next, twelve would take six polls (25 s and more).
  const ids: string[] = [];
  for (let i = 0; i < 12; i += 4) {
    ids.push(...(await Promise.all([0, 1, 2, 3].map((j) => pushedRepository(`burst-${i + j}`)))));
  }
  const pushed = Date.now();
  await eventually(async () => ids.every((id) => maintained().has(id)), 40_000, 'twelve maintenance runs');
  console.log(`12 repositories maintained ${Date.now() - pushed} ms after the last push`);
  // Queued for each poll, they would end some 20 s after the first was due; here they end when the
  // runs themselves are done, which leaves a slow machine 13 s for 36 git commands two at a time.
  expect(Date.now() - pushed).toBeLessThan(DELAY_S * 1000 + 13_000);
});
