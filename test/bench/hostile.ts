/**
 * `npm run bench:hostile`: what one account's hostile repository costs the service — peak resident
 * memory of the service's whole process tree (the service, its git helper and every git, from /proc)
 * and elapsed time — for the three attacks that used to take it down:
 *  1. a push of 100,000 empty files with names of 246 characters (one commit, a 420 KB pack);
 *  2. a push of an 833-byte "git bomb" (10^10 paths);
 *  3. one GraphQL query of 30 `tree` fields on a root of 40,000 files.
 * Each runs against a fresh service on its embedded database. The tree is killed past GUARD_GB, and
 * the figures say so: run against a build from before the bounds, that is what happens.
 */
import { adminClient } from '../support/client.js';
import { GitSandbox, remoteUrl } from '../support/git.js';
import { TreeGuard } from '../support/process-tree.js';
import { CairnServer, sleep } from '../support/server.js';

const GUARD_GB = 6;

interface Outcome {
  attack: string;
  ms: number;
  peakMb: number;
  /** What the attacker saw: git's exit code, or the HTTP status. */
  answer: string;
  /** Whether the service was still up afterwards. */
  up: boolean;
  killedAtGuard: boolean;
}

async function commitOf(git: GitSandbox, bare: string, entries: string): Promise<string> {
  const tree = (await git.git(['mktree'], { cwd: bare, input: entries })).trim();
  return (await git.git(['commit-tree', tree, '-m', 'hostile'], { cwd: bare })).trim();
}

async function bomb(git: GitSandbox, bare: string): Promise<string> {
  const blob = (await git.git(['hash-object', '-w', '--stdin'], { cwd: bare, input: 'boom\n' })).trim();
  let tree = (
    await git.git(['mktree'], { cwd: bare, input: Array.from({ length: 10 }, (_, i) => `100644 blob ${blob}\tf${i}\n`).join('') })
  ).trim();
  for (let level = 0; level < 9; level++) {
    tree = (
      await git.git(['mktree'], { cwd: bare, input: Array.from({ length: 10 }, (_, i) => `040000 tree ${tree}\td${i}\n`).join('') })
    ).trim();
  }
  return (await git.git(['commit-tree', tree, '-m', 'bomb'], { cwd: bare })).trim();
}

/** `count` entries of the empty blob at the root, named `<prefix><number>`. */
async function emptyFiles(git: GitSandbox, bare: string, count: number, prefix = 'f'): Promise<string> {
  const empty = (await git.git(['hash-object', '-w', '-t', 'blob', '--stdin'], { cwd: bare, input: '' })).trim();
  return commitOf(
    git,
    bare,
    Array.from({ length: count }, (_, i) => `100644 blob ${empty}\t${prefix}${String(i).padStart(6, '0')}\n`).join(''),
  );
}

async function isUp(server: CairnServer): Promise<boolean> {
  try {
    return (await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(5000) })).status === 200;
  } catch {
    return false;
  }
}

/** Runs one attack against a fresh service, watched. */
async function attack(name: string, run: (server: CairnServer, git: GitSandbox, token: string) => Promise<string>): Promise<Outcome> {
  const git = await GitSandbox.create();
  const server = await CairnServer.start({ embedded: true, detached: true });
  const guard = new TreeGuard(server.process!.pid!, GUARD_GB * 1024 ** 3);
  try {
    const token = server.adminToken;
    await adminClient(server).post('/repos', { name: 'hostile' });
    const started = performance.now();
    const answer = await run(server, git, token).catch((error: unknown) => `failed: ${String(error).slice(0, 80)}`);
    const ms = performance.now() - started;
    await sleep(1000);
    return { attack: name, ms, peakMb: guard.peakMb, answer, up: await isUp(server), killedAtGuard: guard.exceeded };
  } finally {
    guard.stop();
    await server.killAll().catch(() => undefined);
    await server.destroy().catch(() => undefined);
    await git.cleanup();
  }
}

const push = async (server: CairnServer, git: GitSandbox, token: string, make: (bare: string) => Promise<string>) => {
  const bare = git.path('hostile.git');
  await git.git(['init', '--quiet', '--bare', bare]);
  const sha = await make(bare);
  const pushed = await git.run(['push', '--quiet', remoteUrl(server, 'admin', 'hostile', token), `${sha}:refs/heads/main`], { cwd: bare });
  return `git push exit ${pushed.code}`;
};

const outcomes: Outcome[] = [];
outcomes.push(
  // Names of 246 characters: listed whole, 25 MB of paths, twice in the push event.
  await attack('push of 100,000 empty files', (server, git, token) =>
    push(server, git, token, (bare) => emptyFiles(git, bare, 100_000, 'p'.repeat(240))),
  ),
);
outcomes.push(
  await attack('push of a git bomb (10^10 paths)', (server, git, token) => push(server, git, token, (bare) => bomb(git, bare))),
);
outcomes.push(
  await attack('30 trees of a 40,000-file root', async (server, git, token) => {
    await push(server, git, token, (bare) => emptyFiles(git, bare, 40_000));
    const id = (await adminClient(server).get('/repos/admin/hostile/resolve')).body.id;
    // Today's schema pages trees; one from before the bounds answers the same field as a plain list.
    const paged = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __type(name: "TreeEntryConnection") { name } }' }),
    }).then(async (r) => ((await r.json()) as { data?: { __type: unknown } }).data?.__type !== null);
    const selection = paged ? '{ nodes { name path type mode sha size } }' : '{ name path type mode sha size }';
    const trees = Array.from({ length: 30 }, (_, i) => `t${i}: tree ${selection}`).join(' ');
    const answer = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: `query($id: ID!) { repository(id: $id) { ${trees} } }`, variables: { id } }),
    });
    return `HTTP ${answer.status}, ${(await answer.arrayBuffer()).byteLength} bytes`;
  }),
);

for (const o of outcomes) {
  console.error(
    `${o.attack.padEnd(34)} ${`${Math.round(o.ms)} ms`.padStart(9)}  peak ${`${o.peakMb} MB`.padStart(8)}  ${o.answer}${o.killedAtGuard ? `  (killed at the ${GUARD_GB} GB guard)` : ''}  service ${o.up ? 'up' : 'DOWN'}`,
  );
}
console.log(JSON.stringify({ bench: 'hostile', outcomes }));
