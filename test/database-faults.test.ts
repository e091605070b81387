import { execFileSync } from 'node:child_process';
import { adminClient, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer, sleep } from './support/server.js';

/**
 * The database goes away under a running service — its PostgreSQL killed with -9 (as the OOM killer
 * does), or one of its backends — and comes back. Clients meanwhile get answers, 503 with
 * `Retry-After` while it is away, never a 500 or a dropped connection; the service stays up, its
 * own PostgreSQL is started again, and writes succeed within seconds. Nothing acknowledged is lost.
 */
let server: CairnServer;
let alice: Awaited<ReturnType<typeof createUser>>;
let repo: string;
let receiver: Receiver;
let git: GitSandbox;

beforeAll(async () => {
  [server, receiver, git] = await Promise.all([
    CairnServer.start({ embedded: true, detached: true, env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' } }),
    Receiver.start(),
    GitSandbox.create(),
  ]);
  alice = await createUser(adminClient(server), 'alice', ['repo', 'admin:repo_hook']);
  repo = (await alice.post('/repos', { name: 'faults', auto_init: true })).body.id;
  const hook = await alice.post(`/repos/${repo}/webhooks`, { url: receiver.url('/hook'), events: ['issues', 'push'], secret: 's' });
  expect(hook.status).toBe(201);
});
afterAll(() => Promise.all([server.destroy(), receiver.close(), git.cleanup()]));

/**
 * After a fault every connection works again: a write's event is delivered (the job queue), a push
 * lands (the repository locks) and is delivered too.
 */
async function expectEverythingWorks(round: string): Promise<void> {
  const created = await alice.post(`/repos/${repo}/issues`, { title: `after ${round}` });
  expect(created.status).toBe(201);
  const work = git.path(`clone-${round}`);
  await git.git(['clone', '--quiet', remoteUrl(server, 'alice', 'faults', alice.token), work]);
  const sha = await git.commit(work, round, { [`${round}.txt`]: round });
  expect((await git.run(['push', '--quiet', 'origin', 'HEAD'], { cwd: work })).code).toBe(0);
  const delivered = () => receiver.at('/hook').map((r) => r.body);
  await eventually(async () => delivered().some((body) => body.issue?.title === `after ${round}`), 20_000, 'the issue delivered');
  await eventually(async () => delivered().some((body) => body.after === sha), 20_000, 'the push delivered');
}

/** Backends of the embedded PostgreSQL serving the service (its connections), newest first. */
function backends(postmaster: number): number[] {
  return execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster), '--sort=-start_time'], { encoding: 'utf8' })
    .split('\n')
    .map(Number)
    .filter((pid) => pid > 0 && /postgres: postgres cairn/.test(readCmdline(pid)));
}

function readCmdline(pid: number): string {
  try {
    return execFileSync('cat', [`/proc/${pid}/cmdline`], { encoding: 'utf8' }).replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

interface Outcome {
  status: number | 'dropped';
  retryAfter: string | null;
  at: number;
}

/**
 * Writes issues and reads the repository, REST and GraphQL, back to back until `stop()`; every
 * answer is kept. Returns the titles acknowledged with 201.
 */
function traffic(label: string) {
  const outcomes: Outcome[] = [];
  const acknowledged: string[] = [];
  let running = true;
  let n = 0;
  const record = async (request: Promise<Response>) => {
    try {
      const response = await request;
      outcomes.push({ status: response.status, retryAfter: response.headers.get('retry-after'), at: Date.now() });
      return response;
    } catch {
      outcomes.push({ status: 'dropped', retryAfter: null, at: Date.now() });
      return null;
    }
  };
  const headers = { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' };
  const loop = (async () => {
    while (running) {
      const title = `${label} ${n++}`;
      const created = await record(
        fetch(`${server.url}/repos/${repo}/issues`, { method: 'POST', headers, body: JSON.stringify({ title }) }),
      );
      if (created?.status === 201) acknowledged.push(title);
      await record(fetch(`${server.url}/repos/${repo}`, { headers }));
      await record(
        fetch(`${server.url}/graphql`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ query: 'query($id: ID!) { repository(id: $id) { name } }', variables: { id: repo } }),
        }),
      );
      await sleep(50); // the load's pace (a client's think time), not a wait for anything
    }
  })();
  return {
    outcomes,
    acknowledged,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

async function expectAllKept(titles: string[]): Promise<void> {
  const seen = new Set<string>();
  for (let offset = 0; ; offset += 100) {
    const body = (await alice.get(`/repos/${repo}/issues?limit=100&offset=${offset}&state=all`)).body;
    for (const issue of body.data) seen.add(issue.title);
    if (body.data.length < 100) break;
  }
  expect(titles.filter((title) => !seen.has(title))).toEqual([]);
}

/** The first write acknowledged after a fault at `faultAt` that came after a 503 (else after the fault at all), if any yet. */
function recovery(outcomes: Outcome[], faultAt: number): Outcome | undefined {
  const firstAfter = outcomes.find(
    (o) => o.at > faultAt && o.status === 201 && outcomes.some((p) => p.status === 503 && p.at < o.at && p.at > faultAt),
  );
  return firstAfter ?? outcomes.find((o) => o.at > faultAt && o.status === 201);
}

/** Writes the load has had acknowledged since its recovery from the fault at `faultAt` (none before it recovered). */
function writesSinceRecovery(outcomes: Outcome[], faultAt: number): number {
  const recovered = recovery(outcomes, faultAt);
  return recovered ? outcomes.filter((o) => o.at >= recovered.at && o.status === 201).length : 0;
}

/**
 * Writes the load goes on for after its recovery before it stops: what the service answers once it
 * has recovered is judged too (no 500 from a connection that came back broken, say). As many as
 * the fixed six seconds this was gave on a loaded machine (55 to 65 here).
 */
const WRITES_AFTER_RECOVERY = 50;

/** Checks what clients saw around a fault at `faultAt`; returns ms from the fault to the first 201 after it. */
function judge(outcomes: Outcome[], faultAt: number): number {
  const statuses = new Set(outcomes.map((o) => o.status));
  if ([...statuses].some((status) => ![200, 201, 503].includes(status as number))) {
    console.log(server.logs().filter((line) => Number(line.level) >= 50));
  }
  for (const status of statuses) expect([200, 201, 503]).toContain(status);
  for (const o of outcomes.filter((o) => o.status === 503)) expect(Number(o.retryAfter)).toBeGreaterThan(0);
  const recovered = recovery(outcomes, faultAt)!;
  expect(recovered).toBeDefined();
  return recovered.at - faultAt;
}

test('kill -9 of the embedded PostgreSQL: 503s while it is away, then it is started again and writes go on', async () => {
  const postmaster = server.postmasterPid()!;
  expect(postmaster).toBeGreaterThan(0);
  const load = traffic('postmaster');
  await eventually(async () => load.acknowledged.length >= 5, 10_000, 'the load to be under way');
  const faultAt = Date.now();
  process.kill(postmaster, 'SIGKILL');
  await eventually(
    async () =>
      server.logCount('embedded PostgreSQL restarted') > 0 && writesSinceRecovery(load.outcomes, faultAt) >= WRITES_AFTER_RECOVERY,
    30_000,
    `PostgreSQL restarted, and ${WRITES_AFTER_RECOVERY} writes acknowledged since the load recovered`,
  );
  await load.stop();
  const recoveredMs = judge(load.outcomes, faultAt);
  console.log(
    `postmaster killed: ${load.outcomes.filter((o) => o.status === 503).length} answers 503, first write ${recoveredMs} ms after`,
  );
  expect(recoveredMs).toBeLessThan(10_000);
  expect(server.process!.exitCode).toBeNull();
  expect(server.postmasterPid()).not.toBe(postmaster);
  expect(server.logCount('embedded PostgreSQL restarted')).toBe(1);
  await expectAllKept(load.acknowledged);
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  await expectEverythingWorks('postmaster');
}, 60_000);

test('kill -9 of one backend: PostgreSQL restarts its backends, the service reconnects every connection', async () => {
  const postmaster = server.postmasterPid()!;
  const load = traffic('backend');
  await eventually(async () => load.acknowledged.length >= 5, 10_000, 'the load to be under way');
  const victim = backends(postmaster)[0]!;
  expect(victim).toBeGreaterThan(0);
  const faultAt = Date.now();
  process.kill(victim, 'SIGKILL');
  await eventually(
    async () => writesSinceRecovery(load.outcomes, faultAt) >= WRITES_AFTER_RECOVERY,
    30_000,
    `${WRITES_AFTER_RECOVERY} writes acknowledged since the load recovered`,
  );
  await load.stop();
  const recoveredMs = judge(load.outcomes, faultAt);
  console.log(`backend killed: ${load.outcomes.filter((o) => o.status === 503).length} answers 503, first write ${recoveredMs} ms after`);
  expect(recoveredMs).toBeLessThan(10_000);
  expect(server.process!.exitCode).toBeNull();
  expect(server.postmasterPid()).toBe(postmaster); // PostgreSQL's own recovery, not ours
  await expectAllKept(load.acknowledged);
  await expectEverythingWorks('backend');
}, 60_000);

test('after the faults the service still stops cleanly, its PostgreSQL with it', async () => {
  const code = await server.stop();
  // A stop that fails says why in the service's last lines (a shutdown step past its bound, say).
  if (code !== 0) console.log(`the service's last output:\n${server.output.split('\n').slice(-40).join('\n')}`);
  expect(code).toBe(0);
  expect(server.postmasterPid()).toBeUndefined();
}, 60_000);
