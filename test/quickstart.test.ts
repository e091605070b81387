import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PULL_ROUTES } from '../rest-facade/pull-routes.js';
import { ROUTES } from '../rest-facade/routes.js';
import { WEBHOOK_ROUTES } from '../rest-facade/webhook-routes.js';
import { CairnServer, freePort, ROOT } from './support/server.js';

const run = promisify(execFile);

/** The README itself, so the quickstart and the endpoint table cannot drift from the service. */
async function readme(): Promise<string> {
  return fs.readFile(path.join(ROOT, 'README.md'), 'utf8');
}

/** The text of one `## ` section, up to the next `## `. */
function section(text: string, title: string): string {
  const start = text.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README has no "## ${title}" section`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** Runs the README's one script as a user pastes it, beside `server`; its outcome, failed or not. */
async function runQuickstart(server: CairnServer): Promise<{ code: number; stdout: string; stderr: string }> {
  const blocks = [...section(await readme(), 'Quickstart').matchAll(/```sh\n([\s\S]*?)```/g)];
  expect(blocks).toHaveLength(1); // one script, pasted whole
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-quickstart-'));
  try {
    // A plain bash, as a pasted script meets it: the script sets its own options.
    const { stdout, stderr } = await run('bash', ['--norc', '-c', blocks[0]![1]!], {
      cwd: ROOT, // `npx cairn` is this checkout's CLI, as beside `npm start`
      timeout: 90_000,
      env: {
        PATH: `${path.join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
        HOME: home,
        TMPDIR: home,
        GIT_TERMINAL_PROMPT: '0',
        CAIRN: server.url,
        DATA: server.dataDir,
        HOOK_PORT: String(await freePort()),
      },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  } finally {
    await fs.rm(home, { recursive: true, force: true });
  }
}

describe('README quickstart', () => {
  test('the script, pasted as it stands, runs end to end against a service started as the Quickstart says', async () => {
    const server = await CairnServer.start({ env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' } });
    try {
      const { code, stdout, stderr } = await runQuickstart(server);
      expect({ code, stderr: code ? stderr : '' }).toEqual({ code: 0, stderr: '' });
      expect(stdout).toContain(`${server.url}/admin/hello.git`); // read by the id resolve gave
      expect(stdout).toMatch(/"login":"admin"/); // GraphQL
      expect(stdout).toMatch(/^write$/m); // alice is a collaborator
      expect(stdout).toMatch(/^signature ok$/m);
      expect(stdout).toMatch(/^\S+ +push +- +succeeded +200 /m); // the CLI's deliveries table
    } finally {
      await server.destroy();
    }
  }, 120_000);

  test("against a service started without the loopback setting it stops at the webhook, with the service's own message", async () => {
    const server = await CairnServer.start();
    try {
      const started = Date.now();
      const { code, stdout, stderr } = await runQuickstart(server);
      expect(code).not.toBe(0);
      expect(stderr).toMatch(/Cairn answered 422: .*127\.0\.0\.1 is not an allowed webhook destination \(CAIRN_WEBHOOK_ALLOWED_HOSTS\)/);
      expect(stdout).not.toMatch(/signature/); // stopped there: no wait for an event that cannot come
      expect(stderr).not.toMatch(/SyntaxError|No such file/);
      expect(Date.now() - started).toBeLessThan(30_000);
    } finally {
      await server.destroy();
    }
  }, 120_000);
});

describe('README endpoint table', () => {
  test('lists every REST route with its method and success status', async () => {
    const api = section(await readme(), 'API');
    for (const route of [...ROUTES, ...PULL_ROUTES, ...WEBHOOK_ROUTES]) {
      const status = route.kind === 'empty' ? 204 : route.status;
      const row = `| ${route.method.toUpperCase()} | \`${route.path}\` | ${status} |`;
      expect(api.replace(/ {2,}/g, ' ')).toContain(row);
    }
  });
});
