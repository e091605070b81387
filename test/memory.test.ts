import fs from 'node:fs/promises';
import autocannon from 'autocannon';
import { adminClient } from './support/client.js';
import { eventually } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/**
 * The service gives memory back once it goes quiet: after start-up, and after a load that grew its
 * heap; and it leaves V8's optimizing compilers idle until it has load. Measured from outside, as an
 * operator would: the process's resident memory in /proc, and the log lines the service writes.
 */

let server: CairnServer;

beforeAll(async () => {
  server = await CairnServer.start();
}, 60_000);
afterAll(async () => {
  await server?.destroy();
});

const GIVEN_BACK = 'memory given back while idle';
const COMPILERS_ON = 'optimizing compilers on';

/** Compactions the process has logged in its life (the kept output is only its tail: a load logs a lot). */
const compactions = () => server.logCount(GIVEN_BACK);

async function rssMb(): Promise<number> {
  const status = await fs.readFile(`/proc/${server.process!.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

test('start-up garbage goes back once the service is quiet, and so does what a load grew', async () => {
  await eventually(async () => compactions() >= 1, 15_000, 'the compaction after start-up');
  expect(compactions()).toBe(1);
  // Start-up, the readiness probes and the compaction's pause are not load: the compilers still wait
  // once the intervals that saw the pause (250 ms each) are over.
  await new Promise((resolve) => setTimeout(resolve, 600));
  expect(server.logCount(COMPILERS_ON)).toBe(0);
  // Nor are probes and scrapes, however many.
  for (let i = 0; i < 30; i++) expect((await fetch(`${server.url}/${['healthz', 'readyz', 'metrics'][i % 3]}`)).status).toBe(200);
  expect(server.logCount(COMPILERS_ON)).toBe(0);
  const [first] = server.logs().filter((line) => line.msg === GIVEN_BACK) as Array<{ rssBeforeMb: number; rssAfterMb: number }>;
  expect(first!.rssAfterMb).toBeLessThan(first!.rssBeforeMb);

  const admin = adminClient(server);
  const repo = (await admin.post('/repos', { name: 'memory', auto_init: true })).body as { id: string };
  // Use at a light pace, one request at a time, switches them on by the 20th request.
  for (let i = 0; i < 19; i++) expect((await admin.get(`/repos/${repo.id}`)).status).toBe(200);
  await eventually(async () => server.logCount(COMPILERS_ON) === 1, 5_000, 'the optimizing compilers on');
  expect(server.logs().find((line) => line.msg === COMPILERS_ON)).toMatchObject({ reason: 'requests' });
  const load = await autocannon({
    url: `${server.url}/repos/${repo.id}`,
    headers: { authorization: `Bearer ${server.adminToken}` },
    connections: 16,
    duration: 4,
  });
  expect(load.non2xx).toBe(0);
  expect(server.logCount(COMPILERS_ON)).toBe(1);
  const loaded = await rssMb();

  await eventually(async () => compactions() >= 2, 20_000, 'the compaction after the load');
  expect(compactions()).toBe(2);
  const settled = await rssMb();
  expect(settled).toBeLessThan(loaded - 5);
  // Nothing to give back: a quiet service does not collect again and again.
  await new Promise((resolve) => setTimeout(resolve, 4_000));
  expect(compactions()).toBe(2);
  // And it still answers.
  expect((await admin.get(`/repos/${repo.id}`)).status).toBe(200);
}, 60_000);
