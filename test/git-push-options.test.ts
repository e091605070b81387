import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { adminClient, createUser } from './support/client.js';
import { eventsOf, GitSandbox, lastEventId, remoteUrl } from './support/git.js';
import { Receiver } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/**
 * What a push says beside its refs reaches the `push` webhooks: its options (`git push -o`) and
 * whether its certificate (`git push --signed`) verified with the server's keyring.
 */

let server: CairnServer;
let receiver: Receiver;
let git: GitSandbox;
let owner: Awaited<ReturnType<typeof createUser>>;
/** A throw-away signing key, in a keyring of its own (the client's). */
let gnupgHome: string;
let fingerprint: string;

beforeAll(async () => {
  [server, receiver, git] = await Promise.all([CairnServer.sharedServer(), Receiver.start(), GitSandbox.create()]);
  owner = await createUser(adminClient(server), 'signer', ['repo', 'admin:repo_hook']);
  gnupgHome = git.path('gnupg');
  await fs.mkdir(gnupgHome, { mode: 0o700 });
  await gpg(gnupgHome, ['--quick-gen-key', 'Test Signer <signer@example.test>', 'ed25519', 'sign', 'never']);
  const listed = await gpg(gnupgHome, ['--list-secret-keys', '--with-colons']);
  fingerprint = /^fpr:+([0-9A-F]{40}):/m.exec(listed)![1]!;
});
afterAll(async () => {
  await run('gpgconf', ['--kill', 'gpg-agent'], { GNUPGHOME: gnupgHome }).catch(() => undefined);
  await Promise.all([server.destroy(), receiver.close(), git.cleanup()]);
});

function run(command: string, args: string[], env: Record<string, string> = {}, input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { PATH: process.env.PATH, LANG: 'C', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.stdin.on('error', () => undefined); // a command that exits before reading its input fails below, with its stderr
    child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`${command} ${args.join(' ')}: ${code}\n${stderr}`))));
    child.stdin.end(input);
  });
}

const gpg = (home: string, args: string[], input = '') =>
  run('gpg', ['--homedir', home, '--batch', '--pinentry-mode', 'loopback', '--passphrase', '', ...args], {}, input);

interface Repo {
  id: string;
  work: string;
  hook: string;
}

/** A repository with a `push` webhook to its own path on the receiver, and a work tree with one commit whose origin it is. */
async function setUp(name: string): Promise<Repo> {
  const id = (await owner.post('/repos', { name })).body.id as string;
  const hook = `/${name}`;
  expect((await owner.post(`/repos/${id}/webhooks`, { url: receiver.url(hook), events: ['push'] })).status).toBe(201);
  const work = await git.init(`${name}-work`);
  await git.commit(work, 'first', { 'a.txt': 'a\n' });
  await git.git(['remote', 'add', 'origin', remoteUrl(server, 'signer', name, owner.token)], { cwd: work });
  return { id, work, hook };
}

/** Commits, runs `git push <args> origin main`, and returns the push and the payload of the `push` webhook it caused. */
async function push(repo: Repo, args: string[], client: { env?: Record<string, string>; config?: string[] } = {}) {
  const delivered = receiver.at(repo.hook).length;
  await git.commit(repo.work, `commit ${delivered}`, { 'n.txt': `${delivered}\n` });
  const result = await git.run([...(client.config ?? []), 'push', ...args, 'origin', 'main'], { cwd: repo.work, env: client.env });
  if (result.code !== 0) return { result, payload: null };
  const got = await receiver.waitFor(repo.hook, delivered + 1);
  return { result, payload: got[delivered]!.body };
}

/** The client's signing set-up: its keyring and key. */
const signing = () => ({ env: { GNUPGHOME: gnupgHome }, config: ['-c', `user.signingkey=${fingerprint}`] });

describe('push options', () => {
  test('`git push -o ci.skip -o deploy=prod` reaches the push webhook; a push without options has none', async () => {
    const repo = await setUp('options');
    const withOptions = await push(repo, ['-o', 'ci.skip', '-o', 'deploy=prod']);
    expect(withOptions.result.code).toBe(0);
    expect(withOptions.payload).toMatchObject({
      event: 'push',
      ref: 'refs/heads/main',
      push_options: ['ci.skip', 'deploy=prod'],
      push_certificate: null,
    });
    const without = await push(repo, []);
    expect(without.result.code).toBe(0);
    expect(without.payload).toMatchObject({ push_options: [], push_certificate: null });
  });

  test('options are passed verbatim, up to 32 of up to 1024 bytes', async () => {
    const repo = await setUp('verbatim');
    const odd = ['$(touch /tmp/cairn-pwned)', `"quoted" 'single' \\back`, 'ünïcødé ✓', '%s%n', 'a=b=c', ''];
    const filler = Array.from({ length: 32 - odd.length - 1 }, (_, i) => `o${i}`);
    const longest = 'x'.repeat(1024);
    const options = [...odd, ...filler, longest];
    const { result, payload } = await push(
      repo,
      options.flatMap((option) => ['-o', option]),
    );
    expect(result.code).toBe(0);
    expect(payload.push_options).toEqual(options);
    await expect(fs.stat('/tmp/cairn-pwned')).rejects.toThrow();
  });

  test.each([
    ['33 options', Array.from({ length: 33 }, (_, i) => `o${i}`), /it sends 33 push options, at most 32 are accepted/],
    ['an option of 1025 bytes', ['ok', 'é'.repeat(512) + 'x'], /push option 2 is longer than 1024 bytes/],
  ])('%s: the push is refused with the reason and changes nothing', async (_, options, reason) => {
    const repo = await setUp(`too-many-${options.length}`);
    expect((await git.run(['push', 'origin', 'main'], { cwd: repo.work })).code).toBe(0);
    await receiver.waitFor(repo.hook, 1);
    const before = await lastEventId(server);
    const head = (await git.git(['rev-parse', 'origin/main'], { cwd: repo.work })).trim();
    const { result } = await push(
      repo,
      options.flatMap((option) => ['-o', option]),
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(reason);
    expect(result.stderr).toContain('! [remote rejected] main -> main (pre-receive hook declined)');
    expect(await eventsOf(server, repo.id, before)).toEqual([]);
    const remote = await git.git(['ls-remote', 'origin', 'refs/heads/main'], { cwd: repo.work });
    expect(remote.split('\t')[0]).toBe(head);
  });
});

describe('signed pushes', () => {
  test('`git push --signed` is accepted; the payload says the certificate could not be checked with the server keyring', async () => {
    const repo = await setUp('signed');
    const { result, payload } = await push(repo, ['--signed'], signing());
    expect(result.stderr).not.toContain('does not support --signed');
    expect(result.code).toBe(0);
    expect(payload.push_certificate).toEqual({
      status: 'E',
      verified: false,
      signer: null,
      key: fingerprint.slice(-16),
      nonce_status: 'OK',
    });
    expect(payload.push_options).toEqual([]);
  });

  test('a key the server keyring trusts verifies; --signed=if-asked signs too, with push options', async () => {
    const repo = await setUp('trusted');
    const serverKeyring = path.join(server.dataDir, 'gnupg');
    const publicKey = await gpg(gnupgHome, ['--armor', '--export', fingerprint]);
    await gpg(serverKeyring, ['--import'], publicKey);
    await gpg(serverKeyring, ['--import-ownertrust'], `${fingerprint}:6:\n`);
    const signed = await push(repo, ['--signed=if-asked', '-o', 'ci.skip'], signing());
    expect(signed.result.code).toBe(0);
    expect(signed.payload).toMatchObject({
      push_options: ['ci.skip'],
      push_certificate: {
        status: 'G',
        verified: true,
        signer: 'Test Signer <signer@example.test>',
        key: fingerprint.slice(-16),
        nonce_status: 'OK',
      },
    });
  });
});
