import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { adminClient, Client, createUser } from './support/client.js';
import { eventually, Receiver } from './support/receiver.js';
import { CairnServer, ROOT } from './support/server.js';

const run = promisify(execFile);

let server: CairnServer;
let receiver: Receiver;
let admin: Client;
let ops: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  receiver = await Receiver.start();
  server = await CairnServer.start({ env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' } });
  admin = adminClient(server);
  ops = await createUser(admin, 'ops', ['repo', 'admin:repo_hook']);
});
afterAll(async () => {
  await server.destroy();
  await receiver.close();
});

const cli = (...args: string[]) =>
  run(process.execPath, [path.join(ROOT, 'dist/src/cli.js'), ...args], {
    env: { ...process.env, CAIRN_DATA_DIR: server.dataDir, CAIRN_BASE_URL: server.url, CAIRN_TOKEN: '' },
  });

interface Failure {
  code: number;
  stdout: string;
  stderr: string;
}
const failing = (...args: string[]) =>
  cli(...args).then(
    (ok) => {
      throw new Error(`expected cairn ${args.join(' ')} to fail, it printed ${ok.stdout}`);
    },
    (error: Failure) => error,
  );

/** The rows of a table as their cells, found by the header's column starts (cells may hold spaces: `LAST USED`). */
function cells(stdout: string): Record<string, string>[] {
  const [header, ...rows] = stdout.trimEnd().split('\n');
  const names = header!.split(/ {2,}/);
  const starts = names.map((name) => header!.indexOf(name));
  return rows.map((row) => {
    // Every cell starts exactly under its header: the columns are aligned.
    starts.slice(1).forEach((start) => expect(row[start - 1]).toBe(' '));
    return Object.fromEntries(names.map((name, i) => [name, row.slice(starts[i], starts[i + 1]).trim()]));
  });
}

describe('cairn user list', () => {
  test('a table of every user, aligned, and the same records with --json', async () => {
    const { stdout } = await cli('user', 'list');
    expect(stdout.split('\n')[0]).toMatch(/^ID +LOGIN +EMAIL +ADMIN +CREATED$/);
    const rows = cells(stdout);
    expect(rows.map((r) => r.LOGIN)).toEqual(expect.arrayContaining(['admin', 'ops']));
    expect(rows.find((r) => r.LOGIN === 'ops')).toMatchObject({
      ID: ops.userId,
      EMAIL: 'ops@example.test',
      ADMIN: 'no',
      CREATED: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });

    const json = JSON.parse((await cli('user', 'list', '--json')).stdout);
    expect(json).toEqual(
      expect.arrayContaining([{ id: ops.userId, login: 'ops', email: 'ops@example.test', admin: false, createdAt: expect.any(String) }]),
    );
  });

  test('--limit pages, and says on stderr how to get the rest', async () => {
    const page = await cli('user', 'list', '--limit', '1');
    expect(cells(page.stdout)).toHaveLength(1);
    expect(page.stderr).toMatch(/more: --offset 1/);
    const rest = JSON.parse((await cli('user', 'list', '--json', '--offset', '1')).stdout);
    expect(rest.map((u: { login: string }) => u.login)).toContain('ops');
    expect(await failing('user', 'list', '--limit', 'ten')).toMatchObject({ code: 1, stderr: expect.stringContaining('--limit must be') });
  });

  test("a non-admin token is refused with the reason, and sees no one's address", async () => {
    const refused = await failing('user', 'list', '--token', ops.token);
    expect(refused).toMatchObject({ code: 1, stdout: '', stderr: expect.stringContaining('site admin token with the admin scope') });
    expect(refused.stderr).not.toContain('@example.test');
  });
});

describe('cairn user commit-email', () => {
  test("sets and clears the token's own user's public commit email; an invalid one is refused with the reason", async () => {
    const noreply = `${ops.userId}+ops@users.noreply.${new URL(server.url).hostname}`;
    const set = await cli('user', 'commit-email', 'ops.public@example.org', '--token', ops.token);
    expect(set.stdout.trim()).toBe('commits Cairn makes for ops carry ops.public@example.org');
    expect((await ops.gql('{ viewer { commitEmail } }')).viewer.commitEmail).toBe('ops.public@example.org');

    const refused = await failing('user', 'commit-email', 'not an address', '--token', ops.token);
    expect(refused).toMatchObject({ code: 1, stdout: '', stderr: expect.stringContaining('commitEmail is not an address') });
    expect((await ops.gql('{ viewer { commitEmail } }')).viewer.commitEmail).toBe('ops.public@example.org');

    const cleared = await cli('user', 'commit-email', '--clear', '--token', ops.token);
    expect(cleared.stdout.trim()).toBe(`commits Cairn makes for ops carry ${noreply} (no-reply)`);
    expect((await ops.gql('{ viewer { commitEmail } }')).viewer.commitEmail).toBeNull();
  });
});

describe('cairn token list', () => {
  test("a user's tokens with --login: name, scopes, times, revoked; never a secret", async () => {
    await ops.gql('{ viewer { login } }'); // so its token has been used
    const created = await cli('token', 'create', '--login', 'ops', '--name', 'ci runner', '--scopes', 'repo:read');
    const [id] = created.stdout.match(/tok_\w+/)!;
    const secret = created.stdout.trim().split('\n').pop()!;
    await cli('token', 'revoke', id);

    const { stdout } = await cli('token', 'list', '--login', 'ops');
    expect(stdout.split('\n')[0]).toMatch(/^ID +NAME +SCOPES +CREATED +LAST USED +EXPIRES +REVOKED$/);
    const rows = cells(stdout);
    expect(rows[0]).toMatchObject({ ID: id, NAME: 'ci runner', SCOPES: 'repo:read', 'LAST USED': '-', EXPIRES: '-' });
    expect(rows[0]!.REVOKED).toMatch(/^\d{4}-.*Z$/);
    expect(rows[1]).toMatchObject({ NAME: 'token for ops', SCOPES: 'repo,admin:repo_hook', REVOKED: '-' });
    expect(rows[1]!['LAST USED']).toMatch(/Z$/);
    expect(stdout).not.toContain(secret);
    expect(stdout).not.toContain(ops.token);

    const json = JSON.parse((await cli('token', 'list', '--login', 'ops', '--json')).stdout);
    expect(json[0]).toEqual({
      id,
      name: 'ci runner',
      scopes: ['repo:read'],
      createdAt: expect.any(String),
      lastUsedAt: null,
      expiresAt: null,
      revokedAt: expect.any(String),
    });
    expect(JSON.stringify(json)).not.toMatch(/cairn_pat_/);
  });

  test('without --login, the caller’s own; a non-admin token may list its own but not another user’s', async () => {
    const own = JSON.parse((await cli('token', 'list', '--json')).stdout);
    expect(own.map((t: { name: string }) => t.name)).not.toContain('token for ops');
    expect(own.length).toBeGreaterThan(0);

    const mine = JSON.parse((await cli('token', 'list', '--json', '--token', ops.token)).stdout);
    expect(mine.map((t: { name: string }) => t.name)).toContain('token for ops');
    expect(await failing('token', 'list', '--login', 'admin', '--token', ops.token)).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('site admin token with the admin scope'),
    });
    expect(await failing('token', 'list', '--login', 'nobody')).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/user.*not found|not found/i),
    });
  });
});

describe('cairn webhook deliveries', () => {
  test('recent deliveries after pings, newest first, by owner/name or id, as a table or JSON', async () => {
    const repo = (await ops.post('/repos', { name: 'watched' })).body.id as string;
    const hook = (await ops.post(`/repos/${repo}/webhooks`, { url: receiver.url('/cli'), events: ['issues'] })).body.id as string;
    const ping = 'mutation($id: ID!, $repo: ID) { pingWebhook(id: $id, repositoryId: $repo) { id } }';
    const first = (await ops.gql(ping, { id: hook, repo })).pingWebhook.id as string;
    await receiver.waitFor('/cli', 1);
    receiver.on('/cli', { status: 503 });
    const second = (await ops.gql(ping, { id: hook, repo })).pingWebhook.id as string;
    await receiver.waitFor('/cli', 2);

    // Deliveries are recorded after the answer: wait until both are settled (the 503 is retried later: pending).
    const json = await eventually(async () => {
      const list = JSON.parse((await cli('webhook', 'deliveries', 'ops/watched', hook, '--json')).stdout);
      return list.length === 2 && list.every((d: { statusCode: number | null }) => d.statusCode !== null) && list;
    });
    expect(json.map((d: { id: string }) => d.id)).toEqual([second, first]);
    expect(json[1]).toEqual({
      id: first,
      event: 'ping',
      action: null,
      status: 'SUCCEEDED',
      statusCode: 200,
      durationMs: expect.any(Number),
      createdAt: expect.any(String),
    });
    expect(json[0]).toMatchObject({ id: second, statusCode: 503 });

    const { stdout } = await cli('webhook', 'deliveries', repo, hook);
    expect(stdout.split('\n')[0]).toMatch(/^ID +EVENT +ACTION +STATUS +CODE +DURATION +TIME$/);
    const rows = cells(stdout);
    expect(rows.map((r) => r.ID)).toEqual([second, first]);
    expect(rows[1]).toMatchObject({
      EVENT: 'ping',
      ACTION: '-',
      STATUS: 'succeeded',
      CODE: '200',
      DURATION: expect.stringMatching(/^\d+ ms$/),
    });
    expect(rows[0]).toMatchObject({ CODE: '503', STATUS: expect.stringMatching(/^(pending|failed)$/) });

    const newest = cells((await cli('webhook', 'deliveries', 'OPS/Watched', hook, '--limit', '1')).stdout);
    expect(newest.map((r) => r.ID)).toEqual([second]);

    expect(await failing('webhook', 'deliveries', 'ops/nothing', hook)).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/not found/i),
    });
    expect(await failing('webhook', 'deliveries', 'ops/watched', 'hook_nonesuch')).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/not found/i),
    });
    expect(await failing('webhook', 'deliveries', 'a/b/c', hook)).toMatchObject({ code: 1, stderr: expect.stringContaining('owner/name') });
  });
});

describe('cairn protection list', () => {
  test("a repository's branch rules, by owner/name or id, as a table or JSON; someone else's is refused", async () => {
    const repo = (await ops.post('/repos', { name: 'guarded' })).body.id as string;
    await ops.put(`/repos/${repo}/branches/main/protection`, {
      required_approving_review_count: 2,
      required_status_checks: { strict: true, contexts: ['ci', 'lint'] },
    });
    await ops.put(`/repos/${repo}/branches/${encodeURIComponent('release/*')}/protection`, { allow_deletions: true, enforce_admins: true });
    const rows = cells((await cli('protection', 'list', 'ops/guarded', '--token', ops.token)).stdout);
    expect(rows).toEqual([
      {
        BRANCH: 'main',
        'PULL REQUEST': 'no',
        APPROVALS: '2',
        'STATUS CHECKS': 'ci,lint (strict)',
        ADMINS: 'bypass',
        'FORCE-PUSH': 'no',
        DELETE: 'no',
        LINEAR: 'no',
      },
      {
        BRANCH: 'release/*',
        'PULL REQUEST': 'no',
        APPROVALS: '0',
        'STATUS CHECKS': '-',
        ADMINS: 'bound',
        'FORCE-PUSH': 'no',
        DELETE: 'yes',
        LINEAR: 'no',
      },
    ]);
    const json = JSON.parse((await cli('protection', 'list', repo, '--json', '--token', ops.token)).stdout);
    expect(json.map((rule: { pattern: string }) => rule.pattern)).toEqual(['main', 'release/*']);
    const stranger = await createUser(admin, 'stranger');
    expect(await failing('protection', 'list', 'ops/guarded', '--token', stranger.token)).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/admin permission/i),
    });
  });
});

describe('errors', () => {
  test('a missing flag or argument names itself', async () => {
    const cases: [string[], string][] = [
      [['user', 'create'], '<login> is required'],
      [['user', 'create', 'zed'], '--email is required'],
      [['token', 'create', '--scopes', 'repo'], '--name is required'],
      [['token', 'create', '--name', 'x'], '--scopes is required'],
      [['token', 'revoke'], '<token-id> is required'],
      [['user', 'commit-email'], 'give either <email> or --clear'],
      [['user', 'commit-email', 'a@example.org', '--clear'], 'give either <email> or --clear'],
      [['webhook', 'deliveries'], '<repo> is required'],
      [['webhook', 'deliveries', 'ops/watched'], '<hook> is required'],
      [['protection', 'list'], '<repo> is required'],
    ];
    for (const [args, message] of cases) {
      const error = await failing(...args);
      expect(error).toMatchObject({ code: 1, stdout: '' });
      expect(error.stderr.split('\n')[0]).toBe(message);
    }
    // Nothing was created by the refused command.
    expect(JSON.parse((await cli('user', 'list', '--json')).stdout).map((u: { login: string }) => u.login)).not.toContain('zed');
  });

  test('an unknown command prints the usage', async () => {
    for (const args of [['user', 'frobnicate'], ['webhook'], ['tokens', 'list']]) {
      const error = await failing(...args);
      expect(error).toMatchObject({ code: 1, stderr: expect.stringContaining('usage:') });
      expect(error.stderr).toContain('cairn webhook deliveries');
    }
  });
});
