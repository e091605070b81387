import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { adminClient, Client, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer, ROOT } from './support/server.js';
import { scrape, type Sample } from './support/metrics.js';

/**
 * `GET /metrics` as the tools that read it see it: on a new service every metric the Grafana
 * dashboard in docs/ queries is there already, its counters at 0 for each label value they are
 * counted under (a panel over them reads 0, not "no data"); and `promtool check metrics`, the
 * Prometheus project's own linter, accepts the output after traffic. promtool is optional (Debian's
 * `prometheus` package has it): without it on PATH that test is skipped, saying so in its name.
 */

let server: CairnServer;
let git: GitSandbox;
/** The first scrape of the server, before any request but the start's readiness probes. */
let fresh: Sample[];

beforeAll(async () => {
  [server, git] = await Promise.all([CairnServer.start(), GitSandbox.create()]);
  fresh = await scrape(server.url);
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup()]);
});

async function metricsText(from: CairnServer): Promise<string> {
  const res = await fetch(`${from.url}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** Every `cairn_` name in the expressions of the dashboard's panels. */
async function dashboardMetrics(): Promise<string[]> {
  const dashboard = JSON.parse(await fs.readFile(path.join(ROOT, 'docs', 'grafana-dashboard.json'), 'utf8'));
  const panels: any[] = dashboard.panels.flatMap((panel: any) => [panel, ...(panel.panels ?? [])]);
  const exprs: string[] = panels.flatMap((panel) => (panel.targets ?? []).map((target: any) => target.expr));
  return [...new Set(exprs.flatMap((expr) => expr.match(/\bcairn_\w+/g) ?? []))].sort();
}

test('a new service exports every metric the dashboard queries, before any request', async () => {
  const queried = await dashboardMetrics();
  expect(queried.length).toBeGreaterThan(10);
  const exported = new Set(fresh.map((sample) => sample.name));
  expect(queried.filter((name) => !exported.has(name))).toEqual([]);
});

test('a new service exports its counters at 0 for each label value they are counted under', () => {
  const value = (name: string, labels: Record<string, string>) =>
    fresh.find((s) => s.name === name && Object.entries(labels).every(([key, v]) => s.labels[key] === v))?.value;
  const services = ['upload-pack', 'receive-pack'];
  const expected: Array<[string, Record<string, string>]> = [
    ...['core', 'creations', 'git'].map((resource): [string, Record<string, string>] => ['cairn_rate_limit_refusals_total', { resource }]),
    ...['succeeded', 'retrying', 'failed'].map((outcome): [string, Record<string, string>] => [
      'cairn_webhook_delivery_attempts_total',
      { outcome },
    ]),
    ...services.flatMap((service) =>
      ['ok', 'refused', 'failed', 'aborted'].map((outcome): [string, Record<string, string>] => [
        'cairn_git_requests_total',
        { service, outcome },
      ]),
    ),
    ...services.flatMap((service) =>
      ['in', 'out'].map((direction): [string, Record<string, string>] => ['cairn_git_bytes_total', { service, direction }]),
    ),
    ...services.map((service): [string, Record<string, string>] => ['cairn_git_request_duration_seconds_count', { service }]),
    ...['mergeable', 'conflicting', 'superseded', 'failed'].map((outcome): [string, Record<string, string>] => [
      'cairn_mergeability_checks_total',
      { outcome },
    ]),
    ['cairn_mergeability_queued_total', {}],
    ...['database', 'files'].map((store): [string, Record<string, string>] => ['cairn_disk_full_refusals_total', { store }]),
  ];
  const missing = expected
    .filter(([name, labels]) => value(name, labels) !== 0)
    .map(([name, labels]) => `${name} ${JSON.stringify(labels)}`);
  expect(missing).toEqual([]);
});

const promtool = spawnSync('promtool', ['--version']).error ? null : 'promtool';

(promtool ? test : test.skip)(
  `promtool check metrics accepts /metrics after traffic${promtool ? '' : ' (SKIPPED: promtool is not on PATH; Debian: apt-get install prometheus)'}`,
  async () => {
    // Traffic that fills every family with labelled series: REST (ok, refused, not found), GraphQL,
    // a push, an anonymous and an authenticated clone.
    const owner = await createUser(adminClient(server), 'tools-owner');
    expect((await owner.get('/repos')).status).toBe(200);
    expect((await new Client(server, 'cairn_pat_nonsense').get('/repos')).status).toBe(401);
    expect((await owner.get('/repos/no-such-repository')).status).toBe(404);
    expect((await owner.graphql('{ viewer { login } }')).status).toBe(200);
    const repo = await PullRepo.create(server, git, owner, 'tools-repo', { 'README.md': '# tools\n' });
    await git.git(['clone', '--quiet', remoteUrl(server, owner.login, repo.name), path.join(git.dir, 'anonymous')]);
    await git.git(['clone', '--quiet', remoteUrl(server, owner.login, repo.name, owner.token), path.join(git.dir, 'authenticated')]);

    const text = await metricsText(server);
    expect(text).toContain('cairn_git_requests_total{service="upload-pack",outcome="ok"} 2');
    const check = spawnSync(promtool!, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect({ status: check.status, output: `${check.stdout}${check.stderr}` }).toEqual({ status: 0, output: '' });
  },
  60_000,
);
