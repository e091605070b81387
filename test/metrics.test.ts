import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { adminClient, Client, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { eventually } from './support/receiver.js';
import { CairnServer, ROOT } from './support/server.js';
import { parseSamples } from './support/metrics.js';

/**
 * `GET /metrics` after real work: clones (anonymous and authenticated) and pushes with the git
 * client, a pull request checked and merged, requests refused by rate limits; and the Grafana
 * dashboard in docs/ queries only metrics that exist.
 */

/** Small budgets on one process; the other, on the same database, has the suite's generous ones. */
const LIMITED = { CAIRN_RATE_LIMIT: '3', CAIRN_RATE_LIMIT_GIT_ANONYMOUS: '1' };

type User = Client & { login: string };

let limited: CairnServer;
let server: CairnServer;
let git: GitSandbox;
let owner: User;

beforeAll(async () => {
  limited = await CairnServer.start({ env: LIMITED });
  [server, git] = await Promise.all([CairnServer.start({ shareDatabaseWith: limited }), GitSandbox.create()]);
  owner = await createUser(adminClient(server), 'metrics-owner');
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.destroy(true), git?.cleanup()]); // the database is the limited server's
  await limited?.destroy();
});

interface Scrape {
  text: string;
  /** Sum of the samples of `name` whose labels include `labels`. */
  value(name: string, labels?: Record<string, string>): number;
}

async function scrape(from: CairnServer): Promise<Scrape> {
  const res = await fetch(`${from.url}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  const samples = parseSamples(text);
  return {
    text,
    value: (name, labels = {}) =>
      samples
        .filter((s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value))
        .reduce((sum, s) => sum + s.value, 0),
  };
}

describe('git', () => {
  test('pushes and clones (anonymous and authenticated) count by outcome, with durations and bytes', async () => {
    const before = await scrape(server);
    const blob = randomBytes(200 * 1024); // incompressible: the push carries at least this much
    const repo = await PullRepo.create(server, git, owner, 'metrics-git', {
      'README.md': '# metrics\n',
      'blob.bin': blob.toString('base64'),
    });
    const anonymous = path.join(git.dir, 'clone-anonymous');
    const authenticated = path.join(git.dir, 'clone-authenticated');
    await git.git(['clone', '--quiet', remoteUrl(server, owner.login, repo.name), anonymous]);
    await git.git(['clone', '--quiet', remoteUrl(server, owner.login, repo.name, owner.token), authenticated]);
    await git.git(['-c', 'protocol.version=0', 'clone', '--quiet', remoteUrl(server, owner.login, repo.name), `${anonymous}-v0`]);

    const after = await scrape(server);
    const delta = (name: string, labels?: Record<string, string>) => after.value(name, labels) - before.value(name, labels);
    expect(delta('cairn_git_requests_total', { service: 'receive-pack', outcome: 'ok' })).toBe(1);
    expect(delta('cairn_git_requests_total', { service: 'upload-pack', outcome: 'ok' })).toBe(3);
    // git's first, credential-less request is challenged; that is no refusal, nor is a v2 ref listing a fetch.
    expect(delta('cairn_git_requests_total', { outcome: 'refused' })).toBe(0);
    expect(delta('cairn_git_requests_total', { outcome: 'failed' })).toBe(0);
    expect(delta('cairn_git_request_duration_seconds_count', { service: 'receive-pack' })).toBe(1);
    expect(delta('cairn_git_request_duration_seconds_count', { service: 'upload-pack' })).toBe(3);
    expect(delta('cairn_git_request_duration_seconds_sum', { service: 'upload-pack' })).toBeGreaterThan(0);
    expect(delta('cairn_git_request_duration_seconds_sum', { service: 'upload-pack' })).toBeLessThan(60);
    // Base64 of 200 KiB of random bytes packs to about 200 KiB: in with the push, out with each clone.
    const pushed = delta('cairn_git_bytes_total', { service: 'receive-pack', direction: 'in' });
    expect(pushed).toBeGreaterThan(blob.length);
    expect(pushed).toBeLessThan(blob.length * 2);
    expect(delta('cairn_git_bytes_total', { service: 'receive-pack', direction: 'out' })).toBeGreaterThan(0);
    expect(delta('cairn_git_bytes_total', { service: 'upload-pack', direction: 'out' })).toBeGreaterThan(3 * blob.length);
    expect(delta('cairn_git_bytes_total', { service: 'upload-pack', direction: 'in' })).toBeGreaterThan(0);
    expect(delta('cairn_git_bytes_total', { service: 'upload-pack', direction: 'in' })).toBeLessThan(100 * 1024);
  }, 60_000);

  test('a push of a repository the pusher may not write is a refused push', async () => {
    const other = await createUser(adminClient(server), 'metrics-other');
    const repo = await PullRepo.create(server, git, owner, 'metrics-refused');
    const before = await scrape(server);
    const result = await git.run(['push', remoteUrl(server, owner.login, repo.name, other.token), 'main:other'], { cwd: repo.work });
    expect(result.code).not.toBe(0);
    const after = await scrape(server);
    const delta = (labels: Record<string, string>) =>
      after.value('cairn_git_requests_total', labels) - before.value('cairn_git_requests_total', labels);
    expect(delta({ service: 'receive-pack', outcome: 'refused' })).toBe(1);
    expect(delta({ service: 'receive-pack', outcome: 'ok' })).toBe(0);
  }, 60_000);
});

test('a pull request checked and merged: queued, checked by outcome, timed, queue drained', async () => {
  const before = await scrape(server);
  const repo = await PullRepo.create(server, git, owner, 'metrics-pulls', { 'a.txt': 'a\n' });
  await repo.commit('feature', 'feature', { 'b.txt': 'b\n' });
  await repo.push(['feature']);
  const opened = await repo.open({ title: 'Feature', head: 'feature', base: 'main' });
  expect(opened.status).toBe(201);
  expect((await repo.mergeable(opened.body.number)).mergeable).toBe(true);
  const merged = await owner.put(`/repos/${repo.id}/pulls/${opened.body.number}/merge`, {});
  expect(merged.status).toBe(200);

  const after = await eventually(
    async () => {
      const now = await scrape(server);
      return now.value('cairn_mergeability_queue_depth') === 0 ? now : null;
    },
    10_000,
    'an empty mergeability queue',
  );
  const delta = (name: string, labels?: Record<string, string>) => after.value(name, labels) - before.value(name, labels);
  expect(delta('cairn_mergeability_queued_total')).toBeGreaterThanOrEqual(1);
  expect(delta('cairn_mergeability_checks_total', { outcome: 'mergeable' })).toBeGreaterThanOrEqual(1);
  expect(delta('cairn_mergeability_checks_total', { outcome: 'failed' })).toBe(0);
  expect(delta('cairn_mergeability_check_duration_seconds_count')).toBe(delta('cairn_mergeability_checks_total'));
  expect(delta('cairn_mergeability_check_duration_seconds_sum')).toBeGreaterThan(0);
}, 60_000);

test('rate-limit refusals count by budget: core (REST and GraphQL) and anonymous git', async () => {
  const user = await createUser(adminClient(server), 'metrics-limited');
  const client = new Client(limited, user.token);
  const created = await client.post('/repos', { name: 'metrics-limited', private: false });
  expect(created.status).toBe(201);
  const before = await scrape(limited);
  for (let i = 0; i < 2; i++) expect((await client.get('/repos')).status).toBe(200);
  expect((await client.get('/repos')).status).toBe(429);
  expect((await client.graphql('{ viewer { login } }')).status).toBe(429);

  // One anonymous git request an hour from this address (the clones above, by the other process on this
  // database, may have spent it already): then refused (401, so that git offers credentials).
  const advertisement = `${limited.url}/${user.login}/metrics-limited.git/info/refs?service=git-upload-pack`;
  const statuses = [(await fetch(advertisement)).status, (await fetch(advertisement)).status];
  expect(statuses[1]).toBe(401);
  const gitRefusals = statuses.filter((status) => status === 401).length;

  const after = await scrape(limited);
  const delta = (name: string, labels?: Record<string, string>) => after.value(name, labels) - before.value(name, labels);
  expect(delta('cairn_rate_limit_refusals_total', { resource: 'core' })).toBe(2);
  expect(delta('cairn_rate_limit_refusals_total', { resource: 'git' })).toBe(gitRefusals);
  expect(delta('cairn_rate_limit_refusals_total', { resource: 'creations' })).toBe(0);
  expect(delta('cairn_git_requests_total', { service: 'upload-pack', outcome: 'refused' })).toBe(gitRefusals);
  expect(delta('cairn_git_requests_total', { service: 'upload-pack', outcome: 'ok' })).toBe(0); // the advertisement alone is no fetch
}, 60_000);

test('the Grafana dashboard in docs/ queries only metrics /metrics serves', async () => {
  const dashboard = JSON.parse(await fs.readFile(path.join(ROOT, 'docs', 'grafana-dashboard.json'), 'utf8'));
  expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
  expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })]);
  const panels: any[] = dashboard.panels.flatMap((panel: any) => [panel, ...(panel.panels ?? [])]);
  const ids = panels.map((panel) => panel.id);
  expect(new Set(ids).size).toBe(ids.length);
  const queried = new Set<string>();
  for (const panel of panels.filter((p) => p.type !== 'row')) {
    expect(panel.datasource).toEqual({ type: 'prometheus', uid: '${DS_PROMETHEUS}' });
    expect(panel.targets.length).toBeGreaterThan(0);
    for (const target of panel.targets) for (const name of target.expr.match(/\bcairn_\w+/g) ?? []) queried.add(name);
  }
  const { text } = await scrape(server);
  const families = new Set([...text.matchAll(/^# TYPE (\S+) (\w+)$/gm)].map((m) => m[1]));
  const missing = [...queried].filter((name) => !families.has(name) && !families.has(name.replace(/_(bucket|sum|count)$/, '')));
  expect(missing).toEqual([]);
  // Every new metric has a panel.
  for (const name of [
    'cairn_http_requests_total',
    'cairn_webhook_delivery_attempts_total',
    'cairn_webhook_queue_depth',
    'cairn_git_requests_total',
    'cairn_git_request_duration_seconds_bucket',
    'cairn_git_bytes_total',
    'cairn_mergeability_checks_total',
    'cairn_mergeability_queue_depth',
    'cairn_mergeability_check_duration_seconds_bucket',
    'cairn_rate_limit_refusals_total',
    'cairn_disk_available_bytes',
    'cairn_disk_full_refusals_total',
  ]) {
    expect(queried).toContain(name);
  }
});
