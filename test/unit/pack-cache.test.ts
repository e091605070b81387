import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { installPackCache } from '../../src/git/http/pack-cache.js';

/**
 * The pack cache's script, run as upload-pack runs it, with a stand-in for `pack-objects` whose
 * pace and failures the test sets (a real one is too quick to be caught mid-pack): what upload-pack
 * is sent, how often the command runs, and what is left behind.
 */
let root: string;
let cache: string[];
let cacheDir: string;

beforeAll(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-pack-cache-'));
  await fs.mkdir(path.join(root, 'hooks'));
  await fs.mkdir(path.join(root, 'objects')); // run in `root` as in a repository: its objects are what a pack is counted at
  await fs.mkdir(path.join(root, 'packs'));
  cache = (await installPackCache(path.join(root, 'packs'), path.join(root, 'hooks'), 1024 ** 3))!;
  cacheDir = cache[1]!;
});
afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});
afterEach(async () => {
  for (const name of await fs.readdir(cacheDir)) await fs.rm(path.join(cacheDir, name));
});

const CLONE = 'a'.repeat(40) + '\n--not\n\n';

/** A pack-objects stand-in: counts its runs in `runs`, reads its input, then runs `then` (shell). */
const standIn = (runs: string, then: string) => ['sh', '-c', `echo run >> ${runs}; cat >/dev/null; ${then}`];

/** Runs the script as upload-pack does: `hangUpAfter` bytes, upload-pack reads that much through a pipe and is gone. */
function run(command: string[], input: string, hangUpAfter?: number) {
  const script = [...cache, ...command];
  const child = hangUpAfter
    ? spawn('sh', ['-c', `"$@" | head -c ${hangUpAfter}`, 'upload-pack', ...script], { cwd: root, stdio: ['pipe', 'pipe', 'ignore'] })
    : spawn(script[0]!, script.slice(1), { cwd: root, stdio: ['pipe', 'pipe', 'ignore'] });
  child.stdin.end(input);
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = once(child, 'close').then(([code]) => ({ code: code as number | null, out }));
  return { child, exited };
}

const runsIn = async (file: string) => (await fs.readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
/** Processes of the stand-ins taking their time. */
async function sleepers(): Promise<number[]> {
  const pids = (await fs.readdir('/proc')).filter((name) => /^\d+$/.test(name));
  const lines = await Promise.all(pids.map((pid) => fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')));
  return pids.filter((_, i) => lines[i] === 'sleep\x005.123\x00').map(Number);
}

async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 3_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('the condition did not hold within 3 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const left = async (suffix: string) => (await fs.readdir(cacheDir)).filter((name) => name.endsWith(suffix));

test('a clone arriving while the pack is made waits for it and is sent the same bytes; the command ran once', async () => {
  const runs = path.join(root, 'runs-shared');
  const command = standIn(runs, 'printf part-; sleep 0.4; printf rest');
  const first = run(command, CLONE);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const second = run(command, CLONE);
  expect(await first.exited).toEqual({ code: 0, out: 'part-rest' });
  expect(await second.exited).toEqual({ code: 0, out: 'part-rest' });
  expect(await runsIn(runs)).toBe(1);
  expect(await left('.pack')).toHaveLength(1);
});

test('the maker stops when its own client leaves; the clone waiting on it makes the pack instead', async () => {
  const runs = path.join(root, 'runs-left');
  const go = path.join(root, 'go');
  // It writes once told to, then takes its time (as pack-objects counting objects would).
  const command = standIn(
    runs,
    `i=0; while [ ! -e ${go} ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done; printf part-; sleep 5.123; printf rest`,
  );
  const first = run(command, CLONE, 'part-'.length);
  await until(async () => (await runsIn(runs)) === 1); // the maker works, holding the lock
  const waiting = run(command, CLONE);
  await new Promise((resolve) => setTimeout(resolve, 100)); // waiting on the lock
  await fs.writeFile(go, '');
  expect((await first.exited).out).toBe('part-'); // the pipeline's status is head's
  // The maker is stopped (its sleep with it); the clone that waited is next in line and makes the pack.
  await until(async () => (await runsIn(runs)) === 2);
  await until(async () => (await sleepers()).length === 1);
  for (const pid of await sleepers()) process.kill(pid);
  expect(await waiting.exited).toEqual({ code: 0, out: 'part-rest' });
  expect(await left('.pack')).toHaveLength(1);
  expect((await fs.readdir(cacheDir)).filter((name) => name.endsWith('.tmp') || name.endsWith('.held'))).toEqual([]);
});

test('a maker that fails fails its own clone only; of the clones that waited, the next in line makes the pack for the others', async () => {
  const runs = path.join(root, 'runs-failed');
  const flag = path.join(root, 'failed-once');
  const command = standIn(runs, `printf pack; sleep 0.3; if [ ! -e ${flag} ]; then touch ${flag}; exit 1; fi`);
  const first = run(command, CLONE);
  await until(async () => (await runsIn(runs)) === 1);
  const waiting = [run(command, CLONE), run(command, CLONE)];
  expect((await first.exited).code).not.toBe(0);
  expect(await Promise.all(waiting.map((clone) => clone.exited))).toEqual([
    { code: 0, out: 'pack' },
    { code: 0, out: 'pack' },
  ]);
  expect(await runsIn(runs)).toBe(2);
  expect(await left('.tmp')).toEqual([]);
});

test('a pack is sent for five minutes after it was made; an older one is made again', async () => {
  const runs = path.join(root, 'runs-aged');
  const command = standIn(runs, 'printf pack');
  expect(await run(command, CLONE).exited).toEqual({ code: 0, out: 'pack' });
  expect(await run(command, CLONE).exited).toEqual({ code: 0, out: 'pack' });
  expect(await runsIn(runs)).toBe(1);
  const [pack] = await left('.pack');
  const sixMinutesAgo = new Date(Date.now() - 6 * 60_000);
  await fs.utimes(path.join(cacheDir, pack!), sixMinutesAgo, sixMinutesAgo);
  expect(await run(command, CLONE).exited).toEqual({ code: 0, out: 'pack' });
  expect(await runsIn(runs)).toBe(2);
  expect(await left('.pack')).toEqual([pack]);
});

test('a fetch (objects after --not) is never cached', async () => {
  const runs = path.join(root, 'runs-fetch');
  const command = standIn(runs, 'printf pack');
  const fetch = 'a'.repeat(40) + '\n--not\n' + 'b'.repeat(40) + '\n\n';
  expect(await run(command, fetch).exited).toEqual({ code: 0, out: 'pack' });
  expect(await run(command, fetch).exited).toEqual({ code: 0, out: 'pack' });
  expect(await runsIn(runs)).toBe(2);
  expect(await left('.pack')).toEqual([]);
});

test('packs being made count at their repository’s size: of two clones at once that together pass the budget, one is cached', async () => {
  const small = path.join(root, 'small');
  await fs.mkdir(path.join(small, 'hooks'), { recursive: true });
  await fs.mkdir(path.join(small, 'objects'));
  await fs.writeFile(path.join(small, 'objects', 'pack'), Buffer.alloc(600 * 1024, 1)); // 600 KiB of a 1 MiB budget
  await fs.mkdir(path.join(small, 'packs'));
  const smallCache = (await installPackCache(path.join(small, 'packs'), path.join(small, 'hooks'), 1024 ** 2))!;
  const runs = path.join(root, 'runs-budget');
  const command = standIn(runs, 'sleep 0.3; printf pack');
  const clones = ['a', 'b'].map((id) => {
    const child = spawn(smallCache[0]!, [...smallCache.slice(1), ...command], { cwd: small, stdio: ['pipe', 'pipe', 'ignore'] });
    child.stdin.end(id.repeat(40) + '\n--not\n\n');
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    return once(child, 'close').then(([code]) => ({ code: code as number | null, out }));
  });
  expect(await Promise.all(clones)).toEqual([
    { code: 0, out: 'pack' },
    { code: 0, out: 'pack' },
  ]);
  expect(await runsIn(runs)).toBe(2);
  const names = await fs.readdir(smallCache[1]!);
  expect(names.filter((name) => name.endsWith('.pack'))).toHaveLength(1);
  expect(names.filter((name) => name.endsWith('.held') || name.endsWith('.tmp'))).toEqual([]);
});
