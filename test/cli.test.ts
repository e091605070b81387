import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

/** The bin package.json names, run as a shell runs it: by its `#!/usr/bin/env node` line, with this Node first on PATH. */
const BIN = path.join(ROOT, (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin: { cairn: string } }).bin.cairn);
const cli = (...args: string[]) =>
  run(BIN, args, {
    env: {
      ...process.env,
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
      CAIRN_DATA_DIR: server.dataDir,
      CAIRN_BASE_URL: server.url,
      CAIRN_TOKEN: '',
    },
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
    expect(await failing('user', 'list', '--limit', 'ten')).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('The limit must be a positive integer'),
    });
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
      status: 'succeeded', // as the table shows it, not GraphQL's SUCCEEDED
      statusCode: 200,
      durationMs: expect.any(Number),
      createdAt: expect.any(String),
    });
    expect(json[0]).toMatchObject({ id: second, statusCode: 503, status: expect.stringMatching(/^(pending|failed)$/) });

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

describe('help', () => {
  test('`cairn help` lists every command, on stdout, exit code 0', async () => {
    const { stdout, stderr } = await cli('help');
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^Usage: cairn \[options\] \[command\]/);
    for (const command of ['user', 'token', 'webhook', 'protection', 'backup <dir>', 'restore <dir>', 'help']) {
      expect(stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
    expect(stdout).toContain('--token <token>');
    expect((await cli('--help')).stdout).toBe(stdout);
  });

  test("`cairn help user` and `cairn user --help` print the group's commands; `cairn help token create` one command's options", async () => {
    const { stdout } = await cli('help', 'user');
    expect(stdout).toMatch(/^Usage: cairn user \[options\] \[command\]/);
    for (const command of ['create', 'list', 'commit-email']) expect(stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    expect((await cli('user', '--help')).stdout).toBe(stdout);

    const create = (await cli('help', 'token', 'create')).stdout;
    expect(create).toMatch(/^Usage: cairn token create \[options\]/);
    expect(create).toContain('--scopes <scope,scope>');
    expect(create).toContain('repo:status'); // the scopes there are
    expect(create).toContain('--url <base url>'); // and the connection options, which every command takes
    expect((await cli('token', 'create', '--help')).stdout).toBe(create);
  });

  test("`cairn user` alone is a mistake: the group's help on stderr, exit code 1", async () => {
    const error = await failing('user');
    expect(error).toMatchObject({ code: 1, stdout: '' });
    expect(error.stderr).toMatch(/^Usage: cairn user \[options\] \[command\]/);
    expect(error.stderr).toMatch(/^ {2}commit-email /m);
    expect(await failing()).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/^Usage: cairn /) });
  });
});

describe('errors', () => {
  /** A mistake on the command line: stdout empty, exit code 1, and on stderr exactly the message then where the help is. */
  async function mistake(args: string[], help: string): Promise<string> {
    const error = await failing(...args);
    expect(error).toMatchObject({ code: 1, stdout: '' });
    const lines = error.stderr.trimEnd().split('\n');
    expect(lines.at(-1)).toBe(`see \`${help} --help\``);
    return lines.slice(0, -1).join('\n');
  }

  test('a missing argument or option names itself in one line', async () => {
    const cases: [string[], string, string][] = [
      [['user', 'create'], 'cairn user create', "error: missing required argument 'login'"],
      [['user', 'create', 'zed'], 'cairn user create', "error: required option '--email <email>' not specified"],
      [['token', 'create', '--scopes', 'repo'], 'cairn token create', "error: required option '--name <name>' not specified"],
      [['token', 'create', '--name', 'x'], 'cairn token create', "error: required option '--scopes <scope,scope>' not specified"],
      [
        ['token', 'create', '--name', '', '--scopes', 'repo'],
        'cairn token create',
        "error: option '--name <name>' argument '' is invalid. It must not be empty.",
      ],
      [['token', 'revoke'], 'cairn token revoke', "error: missing required argument 'token-id'"],
      [['user', 'commit-email'], 'cairn user commit-email', 'error: give either <email> or --clear'],
      [['user', 'commit-email', 'a@example.org', '--clear'], 'cairn user commit-email', 'error: give either <email> or --clear'],
      [['webhook', 'deliveries'], 'cairn webhook deliveries', "error: missing required argument 'repo'"],
      [['webhook', 'deliveries', 'ops/watched'], 'cairn webhook deliveries', "error: missing required argument 'webhook-id'"],
      [['protection', 'list'], 'cairn protection list', "error: missing required argument 'repo'"],
      [['backup'], 'cairn backup', "error: missing required argument 'dir'"],
      [['restore'], 'cairn restore', "error: missing required argument 'dir'"],
    ];
    for (const [args, help, message] of cases) expect(await mistake(args, help)).toBe(message);
    // Nothing was created by the refused command.
    expect(JSON.parse((await cli('user', 'list', '--json')).stdout).map((u: { login: string }) => u.login)).not.toContain('zed');
  });

  test('--limit and --offset take integers, 1 or more and 0 or more, and say so', async () => {
    const invalid = (option: string, value: string, rule: string) =>
      `error: option '${option} <n>' argument '${value}' is invalid. ${rule}`;
    expect(await mistake(['user', 'list', '--limit', '-5'], 'cairn user list')).toBe(
      invalid('--limit', '-5', 'The limit must be a positive integer.'),
    );
    expect(await mistake(['user', 'list', '--limit', 'abc'], 'cairn user list')).toBe(
      invalid('--limit', 'abc', 'The limit must be a positive integer.'),
    );
    expect(await mistake(['token', 'list', '--limit', '0'], 'cairn token list')).toBe(
      invalid('--limit', '0', 'The limit must be a positive integer.'),
    );
    expect(await mistake(['token', 'list', '--offset', '-1'], 'cairn token list')).toBe(
      invalid('--offset', '-1', 'The offset must be a non-negative integer.'),
    );
    expect(await mistake(['webhook', 'deliveries', 'a/b', 'h', '--offset', '1.5'], 'cairn webhook deliveries')).toBe(
      invalid('--offset', '1.5', 'The offset must be a non-negative integer.'),
    );
    expect(await mistake(['user', 'list', '--limit', '3000000000'], 'cairn user list')).toBe(
      invalid('--limit', '3000000000', 'The limit must be at most 2147483647.'),
    );
    expect(cells((await cli('user', 'list', '--offset', '0', '--limit', '1')).stdout)).toHaveLength(1);
  });

  test("--expires-at takes an ISO 8601 date-time or a date, and says so in the CLI's words", async () => {
    expect(await mistake(['token', 'create', '--name', 'x', '--scopes', 'repo', '--expires-at', 'yesterday'], 'cairn token create')).toBe(
      "error: option '--expires-at <ISO date>' argument 'yesterday' is invalid. It must be an ISO 8601 date-time such as 2030-01-31T12:00:00Z, or a date such as 2030-01-31.",
    );
    const created = await cli('token', 'create', '--name', 'dated', '--scopes', 'repo', '--expires-at', '2030-01-31');
    expect(created.stdout).toContain('expires 2030-01-31T00:00:00.000Z');
  });

  test('an unknown command is named, with the close one when there is one', async () => {
    expect(await mistake(['tokens', 'list'], 'cairn')).toBe("error: unknown command 'tokens'\n(Did you mean token?)");
    expect(await mistake(['usr'], 'cairn')).toBe("error: unknown command 'usr'\n(Did you mean user?)");
    expect(await mistake(['help', 'usr'], 'cairn')).toBe("error: unknown command 'usr'\n(Did you mean user?)");
    expect(await mistake(['user', 'lst'], 'cairn user')).toBe("error: unknown command 'lst'\n(Did you mean list?)");
    expect(await mistake(['user', 'frobnicate'], 'cairn user')).toBe("error: unknown command 'frobnicate'");
    expect(await mistake(['user', 'list', '--jsn'], 'cairn user list')).toBe("error: unknown option '--jsn'\n(Did you mean --json?)");
    expect(await mistake(['backup', 'a', 'b'], 'cairn backup')).toMatch(/^error: too many arguments for 'backup'/);
  });
});
